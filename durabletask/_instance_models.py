"""The client's public data types: instance status and state, queries, pages and operation results."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from durabletask._attach.fingerprint import split_tags
from durabletask._errors import DurableTaskError
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.serialization import DEFAULT_DATA_CONVERTER
from durabletask.serialization import DataConverter as DataConverter

if TYPE_CHECKING:
    from durabletask.task import FailureDetails

T = TypeVar("T")
TItem = TypeVar("TItem")


#: The converter used when a client is given none (the JSON text Microsoft's converter writes).
DEFAULT_CONVERTER: DataConverter = DEFAULT_DATA_CONVERTER


class OrchestrationStatus(Enum):
    """The runtime status of an orchestration instance (values are the wire enum numbers)."""

    RUNNING = pb.ORCHESTRATION_STATUS_RUNNING
    COMPLETED = pb.ORCHESTRATION_STATUS_COMPLETED
    CONTINUED_AS_NEW = pb.ORCHESTRATION_STATUS_CONTINUED_AS_NEW
    FAILED = pb.ORCHESTRATION_STATUS_FAILED
    CANCELED = pb.ORCHESTRATION_STATUS_CANCELED
    TERMINATED = pb.ORCHESTRATION_STATUS_TERMINATED
    PENDING = pb.ORCHESTRATION_STATUS_PENDING
    SUSPENDED = pb.ORCHESTRATION_STATUS_SUSPENDED

    def __str__(self) -> str:
        return self.name

    @property
    def is_terminal(self) -> bool:
        """Whether the instance has finished (completed, failed, terminated or canceled)."""
        return self in _TERMINAL


_TERMINAL = frozenset(
    {
        OrchestrationStatus.COMPLETED,
        OrchestrationStatus.FAILED,
        OrchestrationStatus.TERMINATED,
        OrchestrationStatus.CANCELED,
    }
)


class OrchestrationFailedError(DurableTaskError):
    """Raised by :meth:`OrchestrationState.raise_if_failed` for a failed instance."""

    def __init__(self, message: str, failure_details: FailureDetails) -> None:
        super().__init__(message)
        self._failure_details = failure_details

    @property
    def failure_details(self) -> FailureDetails:
        """What the orchestration failed with."""
        return self._failure_details


@dataclass
class OrchestrationState:
    """A snapshot of an orchestration instance as reported by the service.

    Payloads are kept as the JSON text sent over the wire (``serialized_*``); ``get_input``,
    ``get_output`` and ``get_custom_status`` decode them, optionally into a given type.
    Timestamps are timezone-aware (UTC).
    """

    instance_id: str
    name: str
    runtime_status: OrchestrationStatus
    created_at: datetime
    last_updated_at: datetime
    serialized_input: str | None
    serialized_output: str | None
    serialized_custom_status: str | None
    failure_details: FailureDetails | None
    _data_converter: DataConverter = field(default=DEFAULT_CONVERTER, compare=False, repr=False)
    version: str | None = field(default=None, kw_only=True)
    execution_id: str | None = field(default=None, kw_only=True)
    scheduled_start_at: datetime | None = field(default=None, kw_only=True)
    completed_at: datetime | None = field(default=None, kw_only=True)
    parent_instance_id: str | None = field(default=None, kw_only=True)
    tags: dict[str, str] | None = field(default=None, kw_only=True)
    # The attach fingerprint recorded in the stored tags; kept apart so ``tags`` shows only the caller's own.
    _fingerprint_tags: dict[str, str] = field(default_factory=dict, kw_only=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.tags, reserved = split_tags(self.tags)
        self._fingerprint_tags = {**self._fingerprint_tags, **reserved}

    @overload
    def get_input(self, expected_type: type[T]) -> T | None: ...
    @overload
    def get_input(self, expected_type: None = ...) -> Any: ...
    def get_input(self, expected_type: Any = None) -> Any:
        """The decoded input (``None`` if there is none), rebuilt as ``expected_type`` if given.

        Args:
            expected_type: A class to rebuild the decoded JSON as (through the client's data converter); ``None``
                returns the plain decoded value.
        """
        return self._decode(self.serialized_input, expected_type)

    @overload
    def get_output(self, expected_type: type[T]) -> T | None: ...
    @overload
    def get_output(self, expected_type: None = ...) -> Any: ...
    def get_output(self, expected_type: Any = None) -> Any:
        """The decoded output (``None`` if there is none), rebuilt as ``expected_type`` if given.

        Args:
            expected_type: A class to rebuild the decoded JSON as; ``None`` returns the plain decoded value.
        """
        return self._decode(self.serialized_output, expected_type)

    @overload
    def get_custom_status(self, expected_type: type[T]) -> T | None: ...
    @overload
    def get_custom_status(self, expected_type: None = ...) -> Any: ...
    def get_custom_status(self, expected_type: Any = None) -> Any:
        """The decoded custom status (``None`` if unset), rebuilt as ``expected_type`` if given.

        Args:
            expected_type: A class to rebuild the decoded JSON as; ``None`` returns the plain decoded value.
        """
        return self._decode(self.serialized_custom_status, expected_type)

    def _decode(self, text: str | None, expected_type: Any) -> Any:
        if text is None:
            return None
        return self._data_converter.deserialize(text, expected_type)

    def raise_if_failed(self) -> None:
        """Raise :class:`OrchestrationFailedError` if the instance carries failure details."""
        if self.failure_details is not None:
            raise OrchestrationFailedError(
                f"Orchestration '{self.instance_id}' failed: {self.failure_details.message}",
                self.failure_details,
            )


@dataclass
class OrchestrationQuery:
    """Filters for :meth:`TaskHubGrpcClient.get_all_orchestration_states`.

    ``max_instance_count`` is the page size used while fetching; every page is returned.
    """

    created_time_from: datetime | None = None
    created_time_to: datetime | None = None
    runtime_status: list[OrchestrationStatus] | None = None
    # Some backends mishandle an absent page size, so the default asks for "as many as possible".
    max_instance_count: int | None = (1 << 31) - 1
    fetch_inputs_and_outputs: bool = False
    instance_id_prefix: str | None = None


@dataclass
class EntityQuery:
    """Filters for :meth:`TaskHubGrpcClient.get_all_entities`."""

    instance_id_starts_with: str | None = None
    last_modified_from: datetime | None = None
    last_modified_to: datetime | None = None
    include_state: bool = True
    include_transient: bool = False
    page_size: int | None = None


@dataclass
class PurgeInstancesResult:
    """How many instances a purge removed; ``is_complete`` is ``None`` when the backend does not say."""

    deleted_instance_count: int
    is_complete: bool | None


@dataclass
class Page(Generic[TItem]):
    """One page of results; pass ``continuation_token`` back to get the next one (``None``: last page)."""

    items: list[TItem]
    continuation_token: str | None


@dataclass
class CleanEntityStorageResult:
    """What :meth:`TaskHubGrpcClient.clean_entity_storage` removed."""

    empty_entities_removed: int
    orphaned_locks_released: int
