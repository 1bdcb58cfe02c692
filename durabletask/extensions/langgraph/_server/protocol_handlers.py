"""The protocol's commands carried out with the run and thread services (``run.start``, ``input.*``, ``state.*``,
``agent.getTree``), the same over HTTP and on a WebSocket."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from durabletask.extensions.langgraph._server import protocol_commands as pc
from durabletask.extensions.langgraph._server.context import ServerContext
from durabletask.extensions.langgraph._server.errors import HttpError
from durabletask.extensions.langgraph._server.protocol_events import RUN_MODES
from durabletask.extensions.langgraph._server.services import (
    RunRequest,
    RunService,
    ThreadService,
    run_service,
    thread_service,
)

#: Seconds an answer waits for the thread's record to show the interrupt it answers before it is refused.
RECORD_LAG = 5.0


class Commands:
    """Carries out the protocol's commands on one thread with the run and thread services."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    @property
    def runs(self) -> RunService:
        return run_service(self.ctx)

    @property
    def threads(self) -> ThreadService:
        return thread_service(self.ctx)

    async def answer(self, thread_id: str, body: Any) -> dict[str, Any]:
        """The answer to one command (a success, or the protocol's error naming what is wrong)."""
        command_id = pc.command_id_of(body)
        try:
            command = pc.parse_command(body)
            request = pc.parse_params(command)
            handler = getattr(self, "_" + command.method.replace(".", "_"))
            result: dict[str, Any] = await handler(thread_id, request)
        except Exception as error:
            return pc.failure(command_id, pc.refusal(error, thread_id))
        return pc.success(command_id, result)

    async def _run(self, thread_id: str, assistant_id: str, **fields: Any) -> str:
        request = RunRequest(
            assistant_id=assistant_id,
            stream_mode=RUN_MODES,
            stream_subgraphs=True,
            if_not_exists="create",
            multitask_strategy="enqueue",
            **fields,
        )
        run = await self.runs.create(thread_id, request)
        return str(run["run_id"])

    async def _pending_interrupts(self, thread_id: str) -> dict[str, Any]:
        """The thread's interrupts waiting for an answer, by interrupt ID (none for a thread not created yet)."""
        try:
            thread = await self.threads.get(thread_id)
        except HttpError as error:
            if error.status == 404:
                return {}
            raise
        found: dict[str, Any] = {}
        interrupts = thread.get("interrupts") or {}
        for items in interrupts.values() if isinstance(interrupts, Mapping) else []:
            for item in items if isinstance(items, list) else []:
                if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                    found[item["id"]] = item.get("value")
        return found

    async def _run_start(self, thread_id: str, request: pc.RunStart) -> dict[str, Any]:
        # Input for a thread that waits on interrupts answers them, as LangGraph's server does.
        pending = await self._pending_interrupts(thread_id)
        fields: dict[str, Any] = {"config": request.config, "metadata": dict(request.metadata or {})}
        if pending and request.input is not None:
            fields["command"] = {"resume": request.input}
        else:
            fields["input"] = request.input
        return {"run_id": await self._run(thread_id, request.assistant_id, **fields)}

    async def _assistant_of(self, thread_id: str) -> str:
        """The assistant of the thread's newest run (the one a resume or an injected message continues)."""
        newest = await self.runs.list(thread_id, limit=1)
        if newest and newest[0].get("assistant_id"):
            return str(newest[0]["assistant_id"])
        thread = await self.threads.get(thread_id)
        graph_id = (thread.get("metadata") or {}).get("graph_id")
        if isinstance(graph_id, str) and graph_id:
            return graph_id
        raise pc.ProtocolError("no_such_run", "this thread has no run yet: start one with run.start")

    async def _awaited(self, thread_id: str, wanted: set[str]) -> dict[str, Any]:
        """The thread's pending interrupts, once they include ``wanted`` or a few seconds have passed: a client
        answers as soon as the stream announces an interrupt, and the thread's record may not show it yet."""
        pause, waited = 0.05, 0.0
        while True:
            pending = await self._pending_interrupts(thread_id)
            if wanted <= pending.keys() or waited >= RECORD_LAG:
                return pending
            await asyncio.sleep(pause)
            waited += pause
            pause = min(pause * 2, 0.5)

    async def _input_respond(self, thread_id: str, request: pc.Respond) -> dict[str, Any]:
        pending = await self._awaited(thread_id, {answer.interrupt_id for answer in request.answers})
        for i, answer in enumerate(request.answers):
            if answer.interrupt_id not in pending:
                field = "params.interrupt_id" if len(request.answers) == 1 else f"params.responses[{i}].interrupt_id"
                known = ", ".join(sorted(pending)) or "none"
                raise pc.ProtocolError(
                    "no_such_interrupt", f"{field}: {answer.interrupt_id!r} is not pending on this thread ({known})"
                )
        command: dict[str, Any] = {"resume": {a.interrupt_id: a.response for a in request.answers}}
        if request.update is not None:
            command["update"] = dict(request.update)
        if request.goto is not None:
            command["goto"] = request.goto
        fields = {"command": command, "config": request.config, "metadata": dict(request.metadata or {})}
        return {"run_id": await self._run(thread_id, await self._assistant_of(thread_id), **fields)}

    async def _input_inject(self, thread_id: str, request: pc.Inject) -> dict[str, Any]:
        if request.namespace:
            raise pc.ProtocolError("not_supported", "params.namespace: messages are injected at the root ([]) only")
        message: dict[str, Any] = {"role": request.role, "content": request.content}
        if request.name is not None:
            message["name"] = request.name
        run_id = await self._run(thread_id, await self._assistant_of(thread_id), input={"messages": [message]})
        return {"run_id": run_id}

    async def _state_get(self, thread_id: str, request: pc.StateGet) -> dict[str, Any]:
        if request.namespace:
            raise pc.ProtocolError("no_such_namespace", "params.namespace: only the root graph's state ([]) is read")
        state = await self.threads.get_state(thread_id)
        values = state.get("values") or {}
        if request.keys is not None and isinstance(values, Mapping):
            values = {key: values[key] for key in request.keys if key in values}
        result: dict[str, Any] = {"values": values}
        checkpoint = state.get("checkpoint") or {}
        if checkpoint.get("checkpoint_id"):
            result["checkpoint"] = {"id": checkpoint["checkpoint_id"], "ns": checkpoint.get("checkpoint_ns", "")}
        return result

    async def _state_listCheckpoints(self, thread_id: str, request: pc.ListCheckpoints) -> dict[str, Any]:
        if request.namespace:
            raise pc.ProtocolError(
                "no_such_namespace", "params.namespace: only the root graph's checkpoints are listed"
            )
        before = None if request.before is None else {"checkpoint_id": request.before}
        states = await self.threads.history(thread_id, limit=request.limit, before=before)
        return {"checkpoints": [_summary(state) for state in states]}

    async def _state_fork(self, thread_id: str, request: pc.Fork) -> dict[str, Any]:
        checkpoint = {"checkpoint_id": request.checkpoint_id}
        try:
            found = await self.threads.get_state(thread_id, checkpoint=checkpoint)
        except HttpError as error:
            if error.status != 404:
                raise
            found = {}
        # LangGraph reads an unknown checkpoint as an empty state without metadata.
        if found.get("metadata") is None:
            raise pc.ProtocolError(
                "no_such_checkpoint", f"params.checkpoint_id: no checkpoint {request.checkpoint_id!r} on this thread"
            )
        fields = {"input": request.input, "config": request.config, "checkpoint": checkpoint}
        run_id = await self._run(thread_id, await self._assistant_of(thread_id), **fields)
        return {"run_id": run_id, "thread_id": thread_id}

    async def run_of(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """The run named by a command (``no_such_run`` when the thread has none of that ID)."""
        try:
            return await self.runs.get(thread_id, run_id)
        except HttpError as error:
            if error.status != 404:
                raise
        raise pc.ProtocolError("no_such_run", f"params.run_id: no run {run_id!r} on this thread")

    async def _agent_getTree(self, thread_id: str, request: pc.GetTree) -> dict[str, Any]:
        run = await self.run_of(thread_id, request.run_id) if request.run_id else None
        if run is None:
            newest = await self.runs.list(thread_id, limit=1)
            run = newest[0] if newest else {}
        status = {"pending": "started", "running": "running", "success": "completed"}.get(
            str(run.get("status")), "failed"
        )
        if run.get("status") == "success" and await self._pending_interrupts(thread_id):
            status = "interrupted"
        graph = run.get("assistant_id") or "graph"
        return {"tree": {"namespace": [], "status": status if run else "completed", "graph_name": str(graph)}}

    async def _subscription_subscribe(self, thread_id: str, request: Any) -> dict[str, Any]:
        raise pc.ProtocolError(
            "not_supported",
            "subscription commands travel on the WebSocket; over HTTP each POST /threads/{id}/stream/events "
            "is its own subscription",
        )

    _subscription_unsubscribe = _subscription_subscribe
    _subscription_reconnect = _subscription_subscribe


def _summary(state: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint summary ``{id, timestamp, step, node_name?, metadata}`` of a ``ThreadState``."""
    checkpoint = state.get("checkpoint") or {}
    metadata = state.get("metadata") or {}
    summary: dict[str, Any] = {
        "id": checkpoint.get("checkpoint_id"),
        "timestamp": state.get("created_at") or "",
        "step": metadata.get("step", -1),
        "metadata": metadata,
    }
    writes = metadata.get("writes")
    if isinstance(writes, Mapping) and len(writes) == 1:
        summary["node_name"] = next(iter(writes))
    return summary
