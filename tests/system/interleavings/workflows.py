"""Orchestrators, activities and entities of the interleaving scenarios, written once against the public API.

The same source runs under Microsoft's SDK (the peer imports this folder's modules as top-level ones) and
under ours, so it uses only names both packages export. Every function records what it saw in its output
or its state, where the checks look for lost, repeated or reordered work.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from pathlib import Path
from typing import Any

from durabletask import task
from durabletask.entities import EntityInstanceId

Orchestration = Generator[Any, Any, Any]
EVENT = "e"


# Activities ------------------------------------------------------------------------------------------------------


def double(ctx: task.ActivityContext, n: int) -> int:
    return n * 2


def flaky(ctx: task.ActivityContext, args: dict[str, Any]) -> str:
    """Fails until it has been attempted ``args['failures']`` times (counted in a file any process can see)."""
    path = Path(args["dir"]) / args["name"]
    with path.open("a", encoding="utf-8") as handle:
        handle.write("x\n")
    attempts = len(path.read_text(encoding="utf-8").splitlines())
    if attempts <= args["failures"]:
        raise RuntimeError(f"attempt {attempts} failed")
    return "ok"


def fragile(ctx: task.ActivityContext, args: dict[str, Any]) -> str:
    """Fails until the file ``args['marker']`` exists."""
    if not Path(args["marker"]).exists():
        raise RuntimeError("not yet")
    return "mended"


# Entities --------------------------------------------------------------------------------------------------------


def journal(ctx: Any, entry: Any) -> Any:
    """Appends each ``add`` entry (``[sender, seq]``) to its state, so the order operations ran in can be read."""
    entries = ctx.get_state(list, [])
    if ctx.operation == "add":
        entries.append(entry)
        ctx.set_state(entries)
        return len(entries)
    if ctx.operation == "get":
        return entries
    raise ValueError(f"unknown operation {ctx.operation}")


def relay(ctx: Any, seq: int) -> None:
    """Passes each ``forward`` on to the journal of its own key as a signal, naming itself as the sender."""
    if ctx.operation != "forward":
        raise ValueError(f"unknown operation {ctx.operation}")
    me = ctx.entity_id
    ctx.signal_entity(EntityInstanceId("journal", me.key), "add", [f"relay-{me.key}", seq])


# Orchestrators ---------------------------------------------------------------------------------------------------


def collect(ctx: task.OrchestrationContext, state: dict[str, Any]) -> Orchestration:
    """Takes one event per execution and continues as new with the values seen so far.

    With ``save`` it carries the events not yet taken over and ends after ``n`` values; without, those are
    dropped and it ends at the first value of ``n`` or more.
    """
    value = yield ctx.wait_for_external_event(EVENT)
    seen = [*state["seen"], value]
    if (state["save"] and len(seen) >= state["n"]) or (not state["save"] and value >= state["n"]):
        return seen
    ctx.continue_as_new({**state, "seen": seen}, save_events=state["save"])
    return None


def sender(ctx: task.OrchestrationContext, args: dict[str, Any]) -> Orchestration:
    """Sends ``count`` numbered events to ``target``, some of them in the same turn, some in turns of their own."""
    for seq in range(1, args["count"] + 1):
        ctx.send_event(args["target"], EVENT, data=seq)
        if seq % 3 == 0:
            yield ctx.call_activity(double, input=seq)
    return args["count"]


def entity_user(ctx: task.OrchestrationContext, args: dict[str, Any]) -> Orchestration:
    """Signals and calls the journal, then calls it inside a critical section; every entry names this instance."""
    journal_id = EntityInstanceId("journal", args["key"])
    me = ctx.instance_id
    for seq in range(1, args["count"] + 1):
        if seq % 2:
            ctx.signal_entity(journal_id, "add", [me, seq])
        else:
            yield ctx.call_entity(journal_id, "add", [me, seq])
    lock = yield ctx.lock_entities([journal_id])
    with lock:
        for seq in range(args["count"] + 1, args["count"] + 4):
            yield ctx.call_entity(journal_id, "add", [me, seq])
    return "done"


def child(ctx: task.OrchestrationContext, n: int) -> Orchestration:
    doubled = yield ctx.call_activity(double, input=n)
    yield ctx.create_timer(timedelta(seconds=0.5))
    return doubled


def parent(ctx: task.OrchestrationContext, count: int) -> Orchestration:
    calls = [ctx.call_sub_orchestrator(child, input=n, instance_id=f"{ctx.instance_id}-c{n}") for n in range(count)]
    return (yield task.when_all(calls))


def timers(ctx: task.OrchestrationContext, _: Any) -> Orchestration:
    """Races a timer against an event, then waits on a second timer."""
    timer = ctx.create_timer(timedelta(seconds=1))
    winner = yield task.when_any([timer, ctx.wait_for_external_event("go")])
    first = "timer" if winner is timer else "event"
    yield ctx.create_timer(timedelta(seconds=0.5))
    return first


def retrying(ctx: task.OrchestrationContext, args: dict[str, Any]) -> Orchestration:
    policy = task.RetryPolicy(
        first_retry_interval=timedelta(seconds=0.5),
        max_number_of_attempts=args["failures"] + 1,
        backoff_coefficient=1.0,
    )
    return (yield ctx.call_activity(flaky, input=args, retry_policy=policy))


def countdown(ctx: task.OrchestrationContext, n: int) -> Orchestration:
    """Continues as new ``n`` times, one activity per execution."""
    if n <= 0:
        return "liftoff"
    yield ctx.call_activity(double, input=n)
    ctx.continue_as_new(n - 1)
    return None


def rewindable(ctx: task.OrchestrationContext, marker: str) -> Orchestration:
    first = yield ctx.call_activity(double, input=1)
    second = yield ctx.call_activity(fragile, input={"marker": marker})
    return [first, second]


def rewindable_parent(ctx: task.OrchestrationContext, marker: str) -> Orchestration:
    """Fails through its sub-orchestration until the marker exists; a rewind reruns the failed child."""
    first = yield ctx.call_activity(double, input=2)
    second = yield ctx.call_sub_orchestrator(rewindable, input=marker, instance_id=f"{ctx.instance_id}-child")
    return [first, second]


def steps(ctx: task.OrchestrationContext, count: int) -> Orchestration:
    """Activities one after another: many turns for a terminate, suspend or resume to land in."""
    total = 0
    for n in range(count):
        total += yield ctx.call_activity(double, input=n)
    return total


ORCHESTRATORS = (
    collect,
    sender,
    entity_user,
    child,
    parent,
    timers,
    retrying,
    countdown,
    rewindable,
    rewindable_parent,
    steps,
)
ACTIVITIES = (double, flaky, fragile)
ENTITIES = (journal, relay)
