"""Replacing large string payloads in protobuf messages by store tokens, and tokens by their payloads.

Every payload the protocol carries (inputs, outputs, results, event data, custom status, entity state) is a
``google.protobuf.StringValue``, so a walk over the set fields of a message finds all of them, wherever they
sit (requests, work items, history events, entity batches), without a list per message type to keep in step.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from google.protobuf import wrappers_pb2
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from durabletask._errors import DurableTaskError, PayloadTooLargeError
from durabletask._json_codec import utf8_size

if TYPE_CHECKING:
    from durabletask.payload.store import PayloadStore

logger = logging.getLogger("durabletask-payloads")


class PayloadStoreError(DurableTaskError):
    """A payload could not be stored or fetched back; names the instance, the field and the token."""

    def __init__(
        self, message: str, *, instance_id: str | None, field: str, token: str | None = None, permanent: bool = False
    ) -> None:
        super().__init__(message)
        self.instance_id = instance_id
        self.field = field
        self.token = token
        #: Retrying cannot help (a missing blob, a token no store reads) as opposed to an unreachable store.
        self.permanent = permanent


class StoredPayloadTooLargeError(PayloadTooLargeError):
    """A payload is over the store's ``max_stored_payload_bytes``."""

    def __init__(self, field: str, size: int, limit: int, instance_id: str | None) -> None:
        super().__init__(field, size, limit, instance_id)
        self.args = (
            f"{field} of instance {instance_id!r} is {size} bytes, over the payload store's "
            f"max_stored_payload_bytes of {limit} bytes",
        )


def string_payloads(
    msg: Message, prefix: str = "", instance_id: str | None = None
) -> Iterator[tuple[str, wrappers_pb2.StringValue, str | None]]:
    """Every set ``StringValue`` inside ``msg``: its field path (``events[3].taskCompleted.result``), the value,
    and the instance it belongs to (the nearest enclosing message naming one, else ``instance_id``).

    Args:
        msg: The message to walk (maps and repeated fields included).
        prefix: Put before each field path (the walk's own recursion passes the path so far).
        instance_id: The instance to report where no enclosing message names one.
    """
    instance_id = instance_of(msg) or instance_id
    for fd, value in msg.ListFields():
        if fd.message_type is None or not _may_hold_strings(fd.message_type):
            continue
        name = prefix + fd.name
        if fd.message_type.GetOptions().map_entry:
            items: Iterator[tuple[str, object]] = ((f"{name}[{k!r}]", v) for k, v in value.items())
        elif fd.is_repeated:
            items = ((f"{name}[{i}]", v) for i, v in enumerate(value))
        else:
            items = iter(((name, value),))
        for path, item in items:
            if isinstance(item, wrappers_pb2.StringValue):
                yield path, item, instance_id
            elif isinstance(item, Message):
                yield from string_payloads(item, path + ".", instance_id)


@functools.cache
def _may_hold_strings(descriptor: Descriptor) -> bool:
    """Whether a message type has a ``StringValue`` at some depth: walks skip the others (timestamps, ...)."""
    seen: set[str] = set()
    pending = [descriptor]
    while pending:
        current = pending.pop()
        if current.full_name == _STRING_VALUE:
            return True
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        pending.extend(f.message_type for f in current.fields if f.message_type is not None)
    return False


_STRING_VALUE = wrappers_pb2.StringValue.DESCRIPTOR.full_name
_INSTANCE_FIELDS = ("instanceId", "orchestrationInstance", "instance")


def instance_of(msg: Message) -> str | None:
    """The instance a message is about, for error messages and for grouping stored blobs.

    Args:
        msg: Any protobuf message; its ``instanceId``, ``orchestrationInstance`` or ``instance`` field is read.
    """
    fields = msg.DESCRIPTOR.fields_by_name
    for field in _INSTANCE_FIELDS:
        if field not in fields:
            continue
        value = getattr(msg, field)
        if isinstance(value, str):
            return value or None
        inner = getattr(value, "instanceId", None)
        if isinstance(inner, str) and inner:
            return inner
    return None


#: No token is longer than this; a longer value is a payload.
MAX_TOKEN_BYTES = _MAX_TOKEN_BYTES = 4096

#: What any version of the token format starts with (``blob:v1:`` today). A payload is JSON text (or a data
#: converter's), which never starts like this, so such a value is a token, read or refused, never passed on.
_looks_like_token = re.compile(r"blob:v\d+:").match


def _utf8_size(sv: wrappers_pb2.StringValue) -> int:
    """The UTF-8 length of ``sv.value``, from one copy of the text dropped at once (see :func:`_short_text`)."""
    return utf8_size(sv.value)


def _stored_size(store: PayloadStore, path: str, sv: wrappers_pb2.StringValue, instance_id: str | None) -> int | None:
    """The UTF-8 size of ``sv``'s text when it goes to the store, ``None`` when it stays inline."""
    options = store.options
    size = _utf8_size(sv)
    if size <= options.threshold_bytes:
        return None
    if size <= _MAX_TOKEN_BYTES and store.is_known_token(sv.value):
        return None
    if size > options.max_stored_payload_bytes:
        raise StoredPayloadTooLargeError(path, size, options.max_stored_payload_bytes, instance_id)
    return size


def _text_bytes(store: PayloadStore, sv: wrappers_pb2.StringValue, size: int) -> bytes | memoryview | str:
    if getattr(store, "reads_text", False):
        # The text itself, which the store encodes in pieces: one copy. (Serializing the wrapper builds its
        # encoding in protobuf's own memory before copying it out as bytes: two copies for a moment.)
        return sv.value
    # The text's UTF-8 bytes are the tail of the wrapper's encoding: one copy (and a second for a moment),
    # where reading the text out (a str) and encoding it would make two at once.
    encoded = sv.SerializeToString()
    text = memoryview(encoded)[len(encoded) - size :]
    return text if getattr(store, "reads_buffers", False) else text.tobytes()


def _short_text(sv: wrappers_pb2.StringValue) -> str | None:
    """``sv``'s text when it is short enough to be a token, else ``None``.

    Reading the text out copies it once, for a moment; asking protobuf (upb) for the wrapper's ``ByteSize()``
    instead serializes the whole wrapper into memory of its own, which for a large inline payload is two copies.
    """
    text = sv.value
    return text if len(text) <= _MAX_TOKEN_BYTES else None  # a token is ASCII: characters are bytes


def _token_in(store: PayloadStore, path: str, sv: wrappers_pb2.StringValue, instance_id: str | None) -> str | None:
    """The token ``sv`` holds, ``None`` for an inline payload; a malformed or foreign token is an error."""
    text = _short_text(sv)
    if text is None:
        return None
    if not _looks_like_token(text) and not store.is_known_token(text):
        return None
    if not store.is_known_token(text):
        raise PayloadStoreError(
            f"the {path} of instance {instance_id!r} holds a payload token this store cannot read: {text[:120]!r}",
            instance_id=instance_id,
            field=path,
            token=text,
            permanent=True,
        )
    return text


def holds_tokens(msg: Message, store: PayloadStore) -> bool:
    """Whether ``msg`` holds a value that :func:`deexternalize_payloads` would fetch or reject, without fetching.

    Args:
        msg: The message to look through.
        store: The store whose tokens to recognize.
    """
    for _, sv, _ in string_payloads(msg):
        text = _short_text(sv)
        if text is not None and (_looks_like_token(text) or store.is_known_token(text)):
            return True
    return False


def _is_missing(exc: Exception) -> bool:
    # FileNotFoundError from the file store, HTTP 404 (ResourceNotFoundError) from Azure Storage.
    return isinstance(exc, FileNotFoundError | UnicodeDecodeError) or getattr(exc, "status_code", None) == 404


def _fetch_failed(exc: Exception, path: str, token: str, instance_id: str | None) -> PayloadStoreError:
    return PayloadStoreError(
        f"cannot fetch the {path} of instance {instance_id!r} from the payload store (token {token!r}): "
        + _first_line(exc),
        instance_id=instance_id,
        field=path,
        token=token,
        permanent=_is_missing(exc),
    )


def _first_line(exc: Exception) -> str:
    # Storage errors carry the service's whole XML answer after their first line.
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def _store_failed(exc: Exception, path: str, instance_id: str | None) -> PayloadStoreError:
    return PayloadStoreError(
        f"cannot store the {path} of instance {instance_id!r} in the payload store: " + _first_line(exc),
        instance_id=instance_id,
        field=path,
    )


def _put_back(sv: wrappers_pb2.StringValue, data: bytes, path: str, token: str, instance_id: str | None) -> None:
    # Assigning the bytes checks they are UTF-8 and copies them once; decoding to str first would copy twice.
    try:
        sv.value = data  # type: ignore[assignment]
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fetch_failed(exc, path, token, instance_id) from exc


def externalize_payloads(msg: Message, store: PayloadStore, *, instance_id: str | None = None) -> None:
    """Replace, in place, every payload in ``msg`` over the store's threshold by the token of its stored copy.

    Raises :class:`StoredPayloadTooLargeError` for a payload over ``max_stored_payload_bytes`` and
    :class:`PayloadStoreError` when the store fails; both name the instance and the field.

    Args:
        msg: The message to change in place.
        store: Where the large payloads go; its options give the threshold and the size limit.
        instance_id: The instance named in errors and used for grouping when no enclosing message names one.
    """
    externalize(msg, store, instance_id=instance_id)


def externalize(
    msg: Message,
    store: PayloadStore,
    *,
    instance_id: str | None = None,
    before_first: Callable[[], object] | None = None,
) -> None:
    """:func:`externalize_payloads`, calling ``before_first`` once before the first payload is copied out.

    Args:
        msg: The message to change in place.
        store: Where the large payloads go.
        instance_id: The instance used when no enclosing message names one.
        before_first: Called once before the first payload is stored (e.g. to copy a message shared with others).

    Raises:
        StoredPayloadTooLargeError: A payload is over ``max_stored_payload_bytes``.
        PayloadStoreError: The store failed.
    """
    for path, sv, owner in string_payloads(msg, instance_id=instance_id):
        size = _stored_size(store, path, sv, owner)
        if size is None:
            continue
        if before_first is not None:
            before_first()
            before_first = None
        data = _text_bytes(store, sv, size)
        try:
            token = store.upload(data, instance_id=owner)  # type: ignore[arg-type]
        except Exception as exc:
            raise _store_failed(exc, path, owner) from exc
        sv.value = token
        logger.debug("stored the %d-byte %s of %s as %s", size, path, owner, token)
        del data


def deexternalize_payloads(msg: Message, store: PayloadStore, *, instance_id: str | None = None) -> None:
    """Replace, in place, every payload token in ``msg`` by the payload it stands for.

    Raises :class:`PayloadStoreError` naming the instance and the field for a token the store cannot read
    (malformed, or of another store) and for a payload it cannot fetch (missing, store unreachable).

    Args:
        msg: The message to change in place.
        store: The store the tokens came from.
        instance_id: The instance named in errors when no enclosing message names one.
    """
    for path, sv, owner in string_payloads(msg, instance_id=instance_id):
        token = _token_in(store, path, sv, owner)
        if token is None:
            continue
        try:
            data = store.download(token)
        except Exception as exc:
            raise _fetch_failed(exc, path, token, owner) from exc
        _put_back(sv, data, path, token, owner)


def fetch_payloads(
    msg: Message, store: PayloadStore, *, instance_id: str | None = None, skip: tuple[str, ...] = ()
) -> dict[str, str]:
    """The payload text of every token in ``msg``, by token, leaving the tokens where they are.

    For a reader that takes each payload when it decodes it: the message never holds the payload (protobuf
    would keep that copy for as long as any part of the message lives). Fields whose path holds one of
    ``skip`` are not fetched (their tokens are still checked). Raises as :func:`deexternalize_payloads` does,
    naming the instance and the field.

    Args:
        msg: The message whose tokens to read; it is not changed.
        store: The store the tokens came from.
        instance_id: The instance named in errors when no enclosing message names one.
        skip: Field names (e.g. ``"input"``) whose payloads are not fetched.

    Returns:
        The payload text keyed by token.

    Raises:
        PayloadStoreError: A token is unreadable or its payload cannot be fetched or is not UTF-8.
    """
    fetched: dict[str, str] = {}
    for path, sv, owner in string_payloads(msg, instance_id=instance_id):
        token = _token_in(store, path, sv, owner)
        if token is not None and any(part in f".{path}" for part in skip):
            continue
        if token is not None and token not in fetched:
            fetched[token] = fetch_text(store, token, path, owner)
    return fetched


def fetch_text(store: PayloadStore, token: str, path: str, instance_id: str | None) -> str:
    """The payload stored under ``token`` as text; a store or UTF-8 failure names ``path`` and the instance.

    Args:
        store: The store the token came from.
        token: The token to fetch.
        path: The field the token was found in (for the error message).
        instance_id: The instance the field belongs to (for the error message).

    Raises:
        PayloadStoreError: The store failed or the payload is not UTF-8.
    """
    try:
        data = store.download(token)
    except Exception as exc:
        raise _fetch_failed(exc, path, token, instance_id) from exc
    try:
        return str(data, "utf-8")  # the bytes go when this returns: the text alone is kept
    except UnicodeDecodeError as exc:
        raise _fetch_failed(exc, path, token, instance_id) from exc


async def externalize_payloads_async(msg: Message, store: PayloadStore, *, instance_id: str | None = None) -> None:
    """:func:`externalize_payloads` with the store's asyncio methods.

    Args:
        msg: The message to change in place.
        store: Where the large payloads go.
        instance_id: The instance used when no enclosing message names one.

    Raises:
        StoredPayloadTooLargeError: A payload is over ``max_stored_payload_bytes``.
        PayloadStoreError: The store failed.
    """
    for path, sv, owner in string_payloads(msg, instance_id=instance_id):
        size = _stored_size(store, path, sv, owner)
        if size is None:
            continue
        data = _text_bytes(store, sv, size)
        try:
            token = await store.upload_async(data, instance_id=owner)  # type: ignore[arg-type]
        except Exception as exc:
            raise _store_failed(exc, path, owner) from exc
        sv.value = token


async def deexternalize_payloads_async(msg: Message, store: PayloadStore, *, instance_id: str | None = None) -> None:
    """:func:`deexternalize_payloads` with the store's asyncio methods.

    Args:
        msg: The message to change in place.
        store: The store the tokens came from.
        instance_id: The instance named in errors when no enclosing message names one.

    Raises:
        PayloadStoreError: A token is unreadable or its payload cannot be fetched.
    """
    for path, sv, owner in string_payloads(msg, instance_id=instance_id):
        token = _token_in(store, path, sv, owner)
        if token is None:
            continue
        try:
            data = await store.download_async(token)
        except Exception as exc:
            raise _fetch_failed(exc, path, token, owner) from exc
        _put_back(sv, data, path, token, owner)
