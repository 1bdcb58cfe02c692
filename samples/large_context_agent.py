"""An agent whose working context (5 MiB of retrieved documents and notes) travels with every step.

The service limits each payload to 1 MiB. With ``payload_store=`` on the client and the worker, every payload
over 256 KiB is stored outside the message (here a local folder; pass ``--blob-connection-string`` for Azure
Blob Storage or Azurite) and a token travels instead: the orchestration, its activities and the client see the
full values, the service sees tokens.

Steps: ``retrieve`` builds the context (5 MiB) for a question, ``think`` (the scripted "model") reads the whole
context and appends notes, a reviewer sends back feedback as an event, and ``answer`` writes the final answer
from the context. The last lines show what the service itself holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from _support import Runtime, parse_args

from durabletask import task
from durabletask.payload import FilePayloadStore, PayloadStore

CONTEXT_BYTES = 5 * 1024 * 1024


def retrieve(ctx: task.ActivityContext, question: str) -> dict[str, Any]:
    """Retrieval: documents relevant to the question (synthetic, deterministic text here)."""
    docs = []
    per_doc = CONTEXT_BYTES // 8
    for i in range(8):
        line = f"[doc {i}] notes on {question}: clause {i} applies to shipments over {100 * i} kg. "
        docs.append({"id": f"doc-{i}", "text": (line * (per_doc // len(line) + 1))[:per_doc]})
    return {"question": question, "documents": docs, "notes": []}


def think(ctx: task.ActivityContext, context: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: reads every document and records a note per step."""
    size = sum(len(d["text"]) for d in context["documents"])
    context["notes"].append(f"step {len(context['notes']) + 1}: read {len(context['documents'])} documents, "
                            f"{size} characters")
    return context


def answer(ctx: task.ActivityContext, context: dict[str, Any]) -> dict[str, Any]:
    digest = hashlib.sha256(json.dumps(context, sort_keys=True).encode()).hexdigest()[:12]
    return {"answer": f"clause 3 applies ({len(context['notes'])} notes)", "context_digest": digest}


def agent(ctx: task.OrchestrationContext, question: str) -> Any:
    context = yield ctx.call_activity(retrieve, input=question)
    context = yield ctx.call_activity(think, input=context)
    ctx.set_custom_status({"stage": "waiting for review", "notes": context["notes"]})
    feedback = yield ctx.wait_for_external_event("review")
    context["notes"].append(f"reviewer: {feedback['comment']} ({len(feedback['attachment'])} characters attached)")
    context = yield ctx.call_activity(think, input=context)
    result = yield ctx.call_activity(answer, input=context)
    return {**result, "context_bytes": len(json.dumps(context))}


def _store(args: Any, folder: str) -> PayloadStore:
    if args.blob_connection_string:
        from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

        return BlobPayloadStore(BlobPayloadStoreOptions(connection_string=args.blob_connection_string))
    return FilePayloadStore(folder)


def main() -> None:
    args = parse_args(__doc__ or "", lambda p: p.add_argument("--blob-connection-string",
                                                               help="store payloads in Azure Blob Storage"))
    with tempfile.TemporaryDirectory() as folder, Runtime.from_args(args) as rt:
        store = _store(args, folder)
        with rt.worker(payload_store=store) as w, rt.client() as plain:
            w.add_orchestrator(agent)
            for fn in (retrieve, think, answer):
                w.add_activity(fn)
            w.start()
            c = rt.client(payload_store=store)
            iid = c.schedule_new_orchestration(agent, input="which clause applies to heavy shipments?",
                                               instance_id="agent-large-context")
            c.wait_for_orchestration_start(iid, timeout=30)
            c.raise_orchestration_event(iid, "review", data={"comment": "check clause 3",
                                                             "attachment": "r" * (2 * 1024 * 1024)})
            state = c.wait_for_orchestration_completion(iid, timeout=120)
            assert state is not None
            out = state.get_output()
            print(f"{iid}: {state.runtime_status.name}, answer {out['answer']!r}, context of "
                  f"{out['context_bytes']} bytes, digest {out['context_digest']}")
            history = c.get_orchestration_history(iid)
            print(f"history: {len(history)} events, payloads restored by the client")
            # A client without the store sees what the service holds: tokens where the large payloads were.
            events = plain.get_orchestration_history(iid)
            values = [getattr(e, f.name) for e in events for f in dataclasses.fields(e)]
            tokens = [v for v in values if isinstance(v, str) and v.startswith("blob:v1:")]
            print(f"the service holds {len(tokens)} payloads as tokens, e.g. {tokens[0]}")
            c.close()
            if not args.blob_connection_string:
                stored = [p for p in Path(folder).rglob("*") if p.is_file()]
                print(f"payloads stored outside the messages: {len(stored)} files, "
                      f"{sum(p.stat().st_size for p in stored)} bytes compressed")


if __name__ == "__main__":
    main()
