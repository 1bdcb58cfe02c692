"""The pure orchestration executor: history events in, orchestrator actions out; no I/O, no wall clock."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from durabletask._codec import Codec, PayloadSource
from durabletask._errors import ProtocolError, exception_message
from durabletask._json_codec import MAX_PAYLOAD_BYTES
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._registry import Registry
from durabletask._replay import entities, rewind
from durabletask._replay.controlled_activity import finish_turn
from durabletask._replay.failures import OrchestrationStateError
from durabletask._replay.handlers import HandlerTable
from durabletask._replay.runtime import EntitySupport, RuntimeContext
from durabletask.exception_properties import ExceptionPropertiesProvider, properties_reader

if TYPE_CHECKING:
    from durabletask.serialization import DataConverter

DEFAULT_MAXIMUM_TIMER_INTERVAL = timedelta(days=3)


class ExecutionResults:
    """What one orchestration episode produced: its actions and its custom status (JSON text, ``None`` if never set).

    Microsoft's executor returns a class of this name and shape (``durabletask.worker.ExecutionResults``); the
    trace context is the orchestration's span, which our worker's tracing keeps elsewhere (``None`` here).
    """

    actions: list[pb.OrchestratorAction]
    encoded_custom_status: str | None

    def __init__(
        self,
        actions: list[pb.OrchestratorAction],
        encoded_custom_status: str | None,
        orchestration_trace_context: pb.TraceContext | None = None,
    ) -> None:
        self.actions = actions
        self.encoded_custom_status = encoded_custom_status
        self._orchestration_trace_context = orchestration_trace_context

    def __repr__(self) -> str:
        return f"ExecutionResults(actions=<{len(self.actions)}>, encoded_custom_status={self.encoded_custom_status!r})"


class OrchestrationExecutor:
    """Replays an orchestration's history through its orchestrator function and returns the new actions.

    Orchestration-level problems (user exceptions, an unregistered orchestrator, non-determinism) become a
    failed ``CompleteOrchestrationAction``; only malformed input raises (:class:`ProtocolError`).

    After :meth:`execute`, the executor keeps the live orchestration so that :meth:`resume` can apply
    just the events that arrived since, without replaying the past again.
    """

    def __init__(
        self,
        registry: Registry,
        *,
        logger: logging.Logger | None = None,
        maximum_timer_interval: timedelta | None = DEFAULT_MAXIMUM_TIMER_INTERVAL,
        data_converter: DataConverter | None = None,
        first_sequence_id: int = 1,
        entity_support: Callable[[RuntimeContext], EntitySupport] | None = None,
        exception_properties_provider: ExceptionPropertiesProvider | None = None,
        payload_limit: int = MAX_PAYLOAD_BYTES,
        payloads: PayloadSource | None = None,
    ) -> None:
        self._registry = registry
        self._logger = logger or logging.getLogger("durabletask.replay")
        self._maximum_timer_interval = maximum_timer_interval
        self._codec = Codec(data_converter, payload_limit, payloads=payloads)
        self._first_sequence_id = first_sequence_id
        self._handlers = HandlerTable(registry.get_orchestrator)
        if entity_support is None:
            # Built-in entity support unless a caller plugs in its own (with its own event handlers).
            entities.install(self._handlers)
            entity_support = entities.OrchestrationEntities
        self._entity_support = entity_support
        self._runtime: RuntimeContext | None = None
        self._properties_of = properties_reader(exception_properties_provider, self._logger)

    @property
    def handlers(self) -> HandlerTable:
        """The event-kind → handler table, open for extension."""
        return self._handlers

    @property
    def is_complete(self) -> bool:
        """Whether the live orchestration has ended (nothing more to resume)."""
        return self._runtime is not None and self._runtime.done

    def execute(
        self, instance_id: str, old_events: Sequence[pb.HistoryEvent], new_events: Sequence[pb.HistoryEvent]
    ) -> ExecutionResults:
        """Replay ``old_events``, then apply ``new_events``, and return the resulting actions.

        A rewind request (``executionRewound`` arriving after a failed execution) does not run the
        orchestrator: the only action is a ``rewindOrchestration`` carrying the history to store instead.
        """
        if rewind.is_rewind_request(old_events, new_events):
            self._runtime = None
            self._logger.info("%s: rewinding the failed orchestration", instance_id)
            return ExecutionResults(
                actions=[rewind.rewind_action(instance_id, old_events, new_events)], encoded_custom_status=None
            )
        rt = RuntimeContext(
            instance_id,
            self._codec.for_instance(instance_id),
            maximum_timer_interval=self._maximum_timer_interval,
            entity_support=self._entity_support,
            logger=self._logger,
            first_sequence_id=self._first_sequence_id,
        )
        versioning = getattr(self._registry, "versioning", None)
        rt.default_sub_version = getattr(versioning, "default_version", None)
        rt.properties_of = self._properties_of
        self._runtime = rt
        if self._run(rt, old_events, replaying=True):
            self._run(rt, new_events, replaying=False)
        if not rt.started:
            raise ProtocolError(f"history of orchestration '{instance_id}' has no executionStarted event")
        return self._result(rt)

    def resume(self, new_events: Sequence[pb.HistoryEvent]) -> ExecutionResults:
        """Apply only the events that arrived since the last call (an extended session)."""
        rt = self._runtime
        if rt is None:
            raise OrchestrationStateError("resume() needs a previous execute() on this executor")
        if rt.done:
            raise OrchestrationStateError(f"orchestration '{rt.instance_id}' has already ended")
        self._run(rt, new_events, replaying=False)
        return self._result(rt)

    def _run(self, rt: RuntimeContext, events: Sequence[pb.HistoryEvent], *, replaying: bool) -> bool:
        rt.is_replaying_flag = replaying
        try:
            self._handlers.apply(rt, events)
            if rt.at_turn_end:
                finish_turn(rt)  # the last turn's: its events end here, as they ended when the turn was run
        except ProtocolError:
            raise
        except BaseException as error:  # SystemExit, GeneratorExit and the like fail it too
            # Logged whether the code raised on new events or while replaying old ones: either way the
            # orchestration fails now, in this turn (Microsoft's executor logs both at INFO too). An exception
            # outside ``Exception`` fails it the same way: let through, it would end the work item's job with
            # no response, and the instance would wait for its lease to run out, then fail the same way again.
            self._logger.info(
                "%s: orchestration '%s' failed: %s: %s",
                rt.instance_id,
                rt.name,
                type(error).__name__,
                exception_message(error),
            )
            rt.fail(error)
            return False
        finally:
            rt.end_batch()
        return True

    def _result(self, rt: RuntimeContext) -> ExecutionResults:
        try:
            actions = rt.drain_actions()
        except Exception as error:  # an action the wire format cannot carry: fail rather than raise
            rt.pending.clear()
            rt.fail(error, force=True)
            actions = rt.drain_actions()
        return ExecutionResults(actions=actions, encoded_custom_status=rt.custom_status)
