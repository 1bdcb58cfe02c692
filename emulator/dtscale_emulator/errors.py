"""Emulator error types; the servicer maps each to one gRPC status code."""

from __future__ import annotations


class EmulatorError(Exception):
    """Base of every error the emulator reports to a caller."""

    code_name = "INTERNAL"


class NotFoundError(EmulatorError):
    """The instance, task hub or work item does not exist."""

    code_name = "NOT_FOUND"


class AlreadyExistsError(EmulatorError):
    """An instance with that ID exists and may not be replaced."""

    code_name = "ALREADY_EXISTS"


class InvalidArgumentError(EmulatorError):
    """A request field is malformed or over a configured limit."""

    code_name = "INVALID_ARGUMENT"


class FailedPreconditionError(EmulatorError):
    """The request is valid but the current state does not allow it (e.g. a stale completion token)."""

    code_name = "FAILED_PRECONDITION"


class UnimplementedError(EmulatorError):
    """The emulator does not support this operation yet."""

    code_name = "UNIMPLEMENTED"


class UnavailableError(EmulatorError):
    """The emulator is stopping or restarting; the same call can succeed once it serves again."""

    code_name = "UNAVAILABLE"


class ResourceExhaustedError(EmulatorError):
    """A configured size limit (e.g. history length) would be exceeded."""

    code_name = "RESOURCE_EXHAUSTED"


class StreamDroppedError(EmulatorError):
    """A GetWorkItems stream ended by the emulator itself (an injected drop); the worker connects again."""

    code_name = "CANCELLED"


def stale_token(token: str) -> FailedPreconditionError:
    """The error for a completion or abandon whose token no longer names an outstanding work item."""
    return FailedPreconditionError(
        f"completion token '{token}' is no longer valid (unknown, already used, abandoned or redelivered)"
    )


class StorageError(EmulatorError):
    """The database refused a write (disk full, I/O error); the change was rolled back and the call may be retried.

    The message carries an error ID; the database's own message is in the server log under that ID.
    """

    code_name = "UNAVAILABLE"


class DatabaseInUseError(EmulatorError):
    """Another emulator process already serves this database file."""

    code_name = "FAILED_PRECONDITION"


class StoreUnusableError(EmulatorError):
    """The file given as the store cannot serve as one (missing folder, read-only, not a store, damaged, too new).

    Raised before anything in the file is changed; the message names the file, the cause and what to do.
    """

    code_name = "FAILED_PRECONDITION"
