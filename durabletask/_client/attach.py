"""The carrier-run attach operation and the handles both clients return from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from durabletask._attach.decision import AttachAction, plan_attach
from durabletask._attach.fingerprint import Fingerprint
from durabletask._client import operations as ops
from durabletask._client import requests as rq
from durabletask._client import validation as check
from durabletask._errors import DurableTaskError
from durabletask._grpc.errors import AlreadyExistsError
from durabletask._instance_models import DataConverter, OrchestrationState
from durabletask._json_codec import MAX_PAYLOAD_BYTES


# The handles need only a way to wait; typing them by these protocols keeps this module below the clients.
class _CompletionWaiter(Protocol):
    def wait_for_orchestration_completion(
        self, instance_id: str, *, fetch_payloads: bool = True, timeout: float = 60
    ) -> OrchestrationState | None: ...


class _AsyncCompletionWaiter(Protocol):
    async def wait_for_orchestration_completion(
        self, instance_id: str, *, fetch_payloads: bool = True, timeout: float = 60
    ) -> OrchestrationState | None: ...


# A start that must never replace anything: an existing instance of any status makes it fail.
_NEVER_REPLACE: list[Any] = []


def attach_orchestration(
    orchestrator: Callable[..., Any] | str,
    *,
    instance_id: str,
    input: Any,
    version: str | None,
    tags: dict[str, str] | None,
    rewind_if_failed: bool,
    converter: DataConverter,
    payload_limit: int = MAX_PAYLOAD_BYTES,
) -> ops.Operation[tuple[AttachAction, OrchestrationState | None]]:
    """Start the instance, or attach to it when it already runs the same orchestrator with the same input."""
    check.instance_id(instance_id)
    name = check.orchestrator_name(orchestrator)
    wanted = Fingerprint.compute(
        name,
        version,
        check.payload(converter, input, "input", payload_limit),
        orchestrator if callable(orchestrator) else None,
    )
    # Two rounds: another process may create the instance between our read and our start.
    for _ in range(2):
        state = yield from ops.get_orchestration_state(instance_id, fetch_payloads=True, converter=converter)
        plan = plan_attach(instance_id, state, wanted, rewind_if_failed=rewind_if_failed)
        if plan.action is AttachAction.STARTED:
            request = rq.build_schedule_new_orchestration_request(
                orchestrator,
                input=input,
                instance_id=instance_id,
                reuse_id_policy=_NEVER_REPLACE,
                tags=tags,
                version=version,
                converter=converter,
                payload_limit=payload_limit,
            )
            try:
                yield request
            except AlreadyExistsError:
                continue
            return AttachAction.STARTED, None
        if plan.action is AttachAction.REWOUND:
            yield rq.build_rewind_orchestration_request(instance_id, reason="rewound by attach_orchestration")
        return plan.action, state
    raise DurableTaskError(f"instance '{instance_id}' kept changing while attaching; try again")


@dataclass
class AttachedOrchestration:
    """What :meth:`TaskHubGrpcClient.attach_orchestration` did, and a way to wait for the outcome.

    Attributes:
        instance_id: The instance attached to.
        action: ``STARTED`` (it did not exist), ``ATTACHED`` (it was running), ``ALREADY_COMPLETED`` (its recorded
            result is reused; nothing runs) or ``REWOUND`` (it had failed and was rewound).
        state: The instance's state when attaching (``None`` when it was just started).
    """

    instance_id: str
    action: AttachAction
    state: OrchestrationState | None
    _client: _CompletionWaiter = field(repr=False, compare=False)

    def wait(self, timeout: float = 60) -> OrchestrationState:
        """Wait for the instance to finish; a completed instance returns at once.

        Args:
            timeout: Seconds to wait.

        Raises:
            TimeoutError: The instance did not finish in time.
            DurableTaskError: The instance disappeared (was purged) while waiting.
        """
        if self.action is AttachAction.ALREADY_COMPLETED and self.state is not None:
            return self.state
        state = self._client.wait_for_orchestration_completion(self.instance_id, timeout=timeout)
        if state is None:
            raise DurableTaskError(f"instance '{self.instance_id}' disappeared while waiting (was it purged?)")
        return state

    def result(self, timeout: float = 60, expected_type: type | None = None) -> Any:
        """The instance's output once it finishes; raises ``OrchestrationFailedError`` if it failed.

        Args:
            timeout: Seconds to wait.
            expected_type: A class to rebuild the output as; ``None`` returns the decoded JSON value.

        Raises:
            OrchestrationFailedError: The instance failed.
            TimeoutError: The instance did not finish in time.
        """
        state = self.wait(timeout)
        state.raise_if_failed()
        return state.get_output(expected_type)


@dataclass
class AsyncAttachedOrchestration:
    """The asyncio counterpart of :class:`AttachedOrchestration`."""

    instance_id: str
    action: AttachAction
    state: OrchestrationState | None
    _client: _AsyncCompletionWaiter = field(repr=False, compare=False)

    async def wait(self, timeout: float = 60) -> OrchestrationState:
        """Wait for the instance to finish; a completed instance returns at once.

        Args:
            timeout: Seconds to wait.

        Raises:
            TimeoutError: The instance did not finish in time.
            DurableTaskError: The instance disappeared (was purged) while waiting.
        """
        if self.action is AttachAction.ALREADY_COMPLETED and self.state is not None:
            return self.state
        state = await self._client.wait_for_orchestration_completion(self.instance_id, timeout=timeout)
        if state is None:
            raise DurableTaskError(f"instance '{self.instance_id}' disappeared while waiting (was it purged?)")
        return state

    async def result(self, timeout: float = 60, expected_type: type | None = None) -> Any:
        """The instance's output once it finishes; raises ``OrchestrationFailedError`` if it failed.

        Args:
            timeout: Seconds to wait.
            expected_type: A class to rebuild the output as; ``None`` returns the decoded JSON value.

        Raises:
            OrchestrationFailedError: The instance failed.
            TimeoutError: The instance did not finish in time.
        """
        state = await self.wait(timeout)
        state.raise_if_failed()
        return state.get_output(expected_type)
