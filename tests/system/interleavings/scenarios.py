"""The scenarios run under the interleaver: each drives the client side of one kind of work and says what to check.

A scenario returns the instances whose histories and statuses the general checks read, and the problems it
found itself (values lost, repeated or out of order). Client calls that race with the work (a suspend that
lands after the instance finished) are allowed to fail; what they left behind is still checked.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from durabletask import client
from durabletask.client import OrchestrationState, OrchestrationStatus
from durabletask.entities import EntityInstanceId
from tests.support.reliability import wait_until

from .invariants import at_most_once_in_order, exactly_once_in_order, journal_problems
from .rig import Rig

WAIT = 60.0  # generous for a loaded machine; a scenario that needs longer has lost work
COMPLETED = OrchestrationStatus.COMPLETED
TERMINATED = OrchestrationStatus.TERMINATED


@dataclass
class Run:
    """One scenario's share of one seed's run: its rig, unique names, and its own random choices."""

    rig: Rig
    tag: str
    rng: random.Random
    workdir: Path
    started: list[str] = field(default_factory=list)

    def id(self, name: str) -> str:
        return f"{self.tag}-{name}"

    @property
    def client(self) -> client.TaskHubGrpcClient:
        return self.rig.client

    def start(self, name: str, orchestrator: str, value: Any) -> str:
        instance_id = self.id(name)
        self.started.append(instance_id)
        self.client.schedule_new_orchestration(orchestrator, input=value, instance_id=instance_id)
        return instance_id

    def finish(self, instance_id: str) -> OrchestrationState:
        state = self.client.wait_for_orchestration_completion(instance_id, timeout=WAIT)
        assert state is not None, f"{instance_id} vanished"
        return state

    def jitter(self) -> None:
        """A short, seed-chosen gap between two client calls, so they land at different points of the work."""
        time.sleep(self.rng.choice((0.0, 0.0, 0.005, 0.02, 0.05)))


@dataclass
class Outcome:
    instances: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def expect(self, state: OrchestrationState, status: OrchestrationStatus, output: Any = None) -> None:
        self.instances.append(state.instance_id)
        if state.runtime_status != status:
            failure = state.failure_details
            why = f" ({failure.error_type}: {failure.message})" if failure is not None else ""
            self.problems.append(f"{state.instance_id}: {state.runtime_status.name}, expected {status.name}{why}")
        elif output is not None and _output(state) != output:
            self.problems.append(f"{state.instance_id}: output {_output(state)!r}, expected {output!r}")


def _output(state: OrchestrationState) -> Any:
    return json.loads(state.serialized_output) if state.serialized_output else None


def _racing(call: Callable[[], None]) -> None:
    # The instance may have finished first, which refuses the call; the checks read what it left.
    try:
        call()
    except Exception:  # any refusal will do
        return


def events_saved(run: Run) -> Outcome:
    """Events raised back to back at an orchestration that continues as new on each, carrying the rest over."""
    sent = list(range(1, 9))
    iid = run.start("saved", "collect", {"n": len(sent), "seen": [], "save": True})
    for value in sent:
        run.client.raise_orchestration_event(iid, "e", data=value)
    outcome = Outcome()
    state = run.finish(iid)
    outcome.expect(state, COMPLETED)
    outcome.problems.extend(f"{iid}: {p}" for p in exactly_once_in_order(_output(state) or [], sent))
    return outcome


def events_suspended(run: Run) -> Outcome:
    """Events raised back to back while the orchestration is suspended and resumed between them."""
    sent = list(range(1, 9))
    iid = run.start("suspended", "collect", {"n": len(sent), "seen": [], "save": True})
    for value in sent:
        run.client.raise_orchestration_event(iid, "e", data=value)
        if value in (2, 5):
            run.client.suspend_orchestration(iid)
            run.jitter()
            run.client.resume_orchestration(iid)
    outcome = Outcome()
    state = run.finish(iid)
    outcome.expect(state, COMPLETED)
    outcome.problems.extend(f"{iid}: {p}" for p in exactly_once_in_order(_output(state) or [], sent))
    return outcome


def events_unsaved(run: Run) -> Outcome:
    """The same without save_events: events a turn does not take are dropped, the rest arrive in order, once."""
    last = 6
    iid = run.start("unsaved", "collect", {"n": last, "seen": [], "save": False})
    value = 0
    for value in range(1, last + 1):
        run.client.raise_orchestration_event(iid, "e", data=value)
    state = None
    for value in range(last + 1, last + 40):  # the last one may have been dropped: send more until one is taken
        try:
            state = run.client.wait_for_orchestration_completion(iid, timeout=0.5)
            break
        except TimeoutError:
            run.client.raise_orchestration_event(iid, "e", data=value)
    state = state or run.finish(iid)
    outcome = Outcome()
    outcome.expect(state, COMPLETED)
    seen = _output(state) or []
    outcome.problems.extend(f"{iid}: {p}" for p in at_most_once_in_order(seen))
    if not seen or seen[-1] < last:
        outcome.problems.append(f"{iid}: ended having seen {seen}")
    return outcome


def messages(run: Run) -> Outcome:
    """An orchestration sends numbered events to another, which continues as new on each."""
    count = 7
    target = run.start("target", "collect", {"n": count, "seen": [], "save": True})
    source = run.start("source", "sender", {"target": target, "count": count})
    outcome = Outcome()
    outcome.expect(run.finish(source), COMPLETED, count)
    state = run.finish(target)
    outcome.expect(state, COMPLETED)
    outcome.problems.extend(
        f"{target}: {p}" for p in exactly_once_in_order(_output(state) or [], list(range(1, count + 1)))
    )
    return outcome


def entities(run: Run) -> Outcome:
    """Two orchestrations signal, call and lock one entity while the client signals it too."""
    key, count, signals = run.tag, 5, 6  # odd: the last operation before the lock is a signal
    users = [run.start(f"user{n}", "entity_user", {"key": key, "count": count}) for n in range(2)]
    journal_id = EntityInstanceId("journal", key)
    for seq in range(1, signals + 1):
        run.client.signal_entity(journal_id, "add", input=["client", seq])
        run.jitter()
    outcome = Outcome()
    for user in users:
        outcome.expect(run.finish(user), COMPLETED, "done")
    total = signals + len(users) * (count + 3)
    entity = f"@journal@{key}"
    try:
        wait_until(lambda: len(run.rig.entity_state(entity) or []) >= total, WAIT, f"{total} journal entries")
    except AssertionError as error:
        outcome.problems.append(str(error))
    sent = {"client": list(range(1, signals + 1)), **{u: list(range(1, count + 4)) for u in users}}
    locked = {u: list(range(count + 1, count + 4)) for u in users}
    outcome.problems.extend(
        f"{entity}: {p}" for p in journal_problems(run.rig.entity_state(entity) or [], sent, locked)
    )
    return outcome


def entity_signals(run: Run) -> Outcome:
    """An entity signals another as it runs each operation; the client signals the second one too."""
    key, count = f"{run.tag}-relay", 8
    for seq in range(1, count + 1):
        run.client.signal_entity(EntityInstanceId("relay", key), "forward", input=seq)
        run.client.signal_entity(EntityInstanceId("journal", key), "add", input=["client", seq])
        run.jitter()
    outcome = Outcome()
    entity = f"@journal@{key}"
    try:
        wait_until(lambda: len(run.rig.entity_state(entity) or []) >= 2 * count, WAIT, f"{2 * count} journal entries")
    except AssertionError as error:
        outcome.problems.append(str(error))
    sent = {"client": list(range(1, count + 1)), f"relay-{key}": list(range(1, count + 1))}
    entries = run.rig.entity_state(entity) or []
    outcome.problems.extend(f"{entity}: {p}" for p in journal_problems(entries, sent, {}))
    return outcome


def sub_orchestrations(run: Run) -> Outcome:
    count = 3
    iid = run.start("parent", "parent", count)
    outcome = Outcome()
    outcome.expect(run.finish(iid), COMPLETED, [2 * n for n in range(count)])
    for n in range(count):
        outcome.expect(run.finish(f"{iid}-c{n}"), COMPLETED, 2 * n)
    return outcome


def timers(run: Run) -> Outcome:
    iid = run.start("timers", "timers", None)
    raise_it = run.rng.random() < 0.6
    if raise_it:
        run.jitter()
        run.client.raise_orchestration_event(iid, "go", data=True)
    state = run.finish(iid)
    outcome = Outcome()
    outcome.expect(state, COMPLETED, None if raise_it else "timer")
    if _output(state) not in ("timer", "event"):
        outcome.problems.append(f"{iid}: output {_output(state)!r}")
    return outcome


def retries(run: Run) -> Outcome:
    name = run.id("retrying")
    iid = run.start("retrying", "retrying", {"failures": 2, "dir": str(run.workdir), "name": name})
    outcome = Outcome()
    outcome.expect(run.finish(iid), COMPLETED, "ok")
    return outcome


def countdown(run: Run) -> Outcome:
    """Continue-as-new without events, one activity per execution."""
    iid = run.start("countdown", "countdown", 4)
    outcome = Outcome()
    outcome.expect(run.finish(iid), COMPLETED, "liftoff")
    return outcome


def rewind(run: Run) -> Outcome:
    marker = run.workdir / run.id("mended")
    iid = run.start("rewind", "rewindable", str(marker))
    outcome = Outcome()
    failed = run.finish(iid)
    if failed.runtime_status != OrchestrationStatus.FAILED:
        outcome.expect(failed, OrchestrationStatus.FAILED)
        return outcome
    marker.touch()
    run.client.rewind_orchestration(iid, reason="mended")
    outcome.expect(run.finish(iid), COMPLETED, [2, "mended"])
    return outcome


def rewind_tree(run: Run) -> Outcome:
    """A parent failed by its sub-orchestration is rewound: the child is rewound with it, and both complete."""
    marker = run.workdir / run.id("mended")
    iid = run.start("tree", "rewindable_parent", str(marker))
    outcome = Outcome()
    failed = run.finish(iid)
    if failed.runtime_status != client.OrchestrationStatus.FAILED:
        outcome.expect(failed, client.OrchestrationStatus.FAILED)
        return outcome
    marker.touch()
    run.client.rewind_orchestration(iid, reason="mended")
    outcome.expect(run.finish(iid), COMPLETED, [4, [2, "mended"]])
    outcome.expect(run.finish(f"{iid}-child"), COMPLETED, [2, "mended"])
    return outcome


def lifecycle(run: Run) -> Outcome:
    """Suspend and resume during turns (it completes); terminate during turns (it ends, one way or the other);
    terminate an orchestration that continues as new on every event."""
    paused = run.start("paused", "steps", 8)
    stopped = run.start("stopped", "steps", 8)
    carried = run.start("carried", "collect", {"n": 100, "seen": [], "save": True})
    for round_ in range(2):
        run.jitter()
        _racing(lambda: run.client.suspend_orchestration(paused))
        run.jitter()
        _racing(lambda: run.client.resume_orchestration(paused))
        run.client.raise_orchestration_event(carried, "e", data=round_)
    run.jitter()
    _racing(lambda: run.client.terminate_orchestration(stopped, output="stop"))
    for value in range(2, 6):
        run.client.raise_orchestration_event(carried, "e", data=value)
    run.client.terminate_orchestration(carried, output="stop")
    outcome = Outcome()
    outcome.expect(run.finish(paused), COMPLETED, sum(2 * n for n in range(8)))
    state = run.finish(stopped)
    outcome.expect(state, TERMINATED if state.runtime_status == TERMINATED else COMPLETED)
    outcome.expect(run.finish(carried), TERMINATED)
    return outcome


def terminate_tree(run: Run) -> Outcome:
    """A recursive terminate while a parent's sub-orchestrations run: the whole tree ends, each one once."""
    count = 3
    iid = run.start("tree", "parent", count)
    run.jitter()
    run.jitter()
    _racing(lambda: run.client.terminate_orchestration(iid, output="cut", recursive=True))
    outcome = Outcome()
    state = run.finish(iid)
    finished = state.runtime_status == COMPLETED
    outcome.expect(state, COMPLETED if finished else TERMINATED)
    for n in range(count):
        child = f"{iid}-c{n}"
        if run.client.get_orchestration_state(child) is None:
            if finished:
                outcome.problems.append(f"{child}: missing under a completed parent")
            continue  # terminated before the parent created it
        child_state = run.finish(child)
        outcome.expect(
            child_state,
            child_state.runtime_status if child_state.runtime_status in (COMPLETED, TERMINATED) else TERMINATED,
        )
    return outcome


SCENARIOS: dict[str, Callable[[Run], Outcome]] = {
    "events_saved": events_saved,
    "events_suspended": events_suspended,
    "events_unsaved": events_unsaved,
    "messages": messages,
    "entities": entities,
    "entity_signals": entity_signals,
    "sub_orchestrations": sub_orchestrations,
    "timers": timers,
    "retries": retries,
    "countdown": countdown,
    "rewind": rewind,
    "rewind_tree": rewind_tree,
    "lifecycle": lifecycle,
    "terminate_tree": terminate_tree,
}
