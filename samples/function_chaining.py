"""Function chaining: an orchestration calls three activities in sequence, each taking the previous result."""

from __future__ import annotations

from typing import Any

from _support import Runtime, parse_args

from durabletask import client, task


def greet(ctx: task.ActivityContext, name: str) -> str:
    return f"Hello, {name}!"


def sequence(ctx: task.OrchestrationContext, _: Any) -> Any:
    greetings = []
    for city in ("Tokyo", "Seattle", "London"):
        greetings.append((yield ctx.call_activity(greet, input=city)))
    return greetings


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        w.add_orchestrator(sequence)
        w.add_activity(greet)
        w.start()
        c = rt.client()
        instance_id = c.schedule_new_orchestration(sequence)
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
        assert state is not None
        print(f"{instance_id}: {state.runtime_status.name} {state.serialized_output}")
        return 0 if state.runtime_status == client.OrchestrationStatus.COMPLETED else 1


if __name__ == "__main__":
    raise SystemExit(main())
