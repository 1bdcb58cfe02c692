"""Fan-out/fan-in: count the words of many documents in parallel activities, then add the counts up."""

from __future__ import annotations

from typing import Any

from _support import Runtime, parse_args

from durabletask import client, task

DOCUMENTS = {f"doc-{i}": " ".join(["word"] * (i + 1)) for i in range(25)}


def list_documents(ctx: task.ActivityContext, _: Any) -> list[str]:
    return sorted(DOCUMENTS)


def count_words(ctx: task.ActivityContext, name: str) -> int:
    return len(DOCUMENTS[name].split())


def word_count(ctx: task.OrchestrationContext, _: Any) -> Any:
    names = yield ctx.call_activity(list_documents)
    counts = yield task.when_all([ctx.call_activity(count_words, input=n) for n in names])
    return {"documents": len(names), "words": sum(counts)}


def main() -> int:
    args = parse_args(__doc__ or "")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        w.add_orchestrator(word_count)
        w.add_activity(list_documents)
        w.add_activity(count_words)
        w.start()
        c = rt.client()
        instance_id = c.schedule_new_orchestration(word_count)
        state = c.wait_for_orchestration_completion(instance_id, timeout=60)
        assert state is not None
        print(f"{instance_id}: {state.runtime_status.name} {state.serialized_output}")
        return 0 if state.runtime_status == client.OrchestrationStatus.COMPLETED else 1


if __name__ == "__main__":
    raise SystemExit(main())
