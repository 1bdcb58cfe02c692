"""The thread-centric protocol's commands (langgraph-sdk 0.4, ``threads.stream``): parsing and validation, no I/O.

A command is ``{"id": <uint>, "method": "...", "params": {...}}``; its answer is ``{"type": "success", "id", "result",
"meta"}`` or ``{"type": "error", "id", "error": <code>, "message"}``. Every refusal names the field and the limit,
as ``params.assistant_id`` or ``params.responses[1].interrupt_id``, so a client sees what to fix.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from durabletask.extensions.langgraph._server.errors import HttpError

ErrorCode = Literal[
    "invalid_argument",
    "unknown_command",
    "unknown_error",
    "no_such_run",
    "no_such_subscription",
    "no_such_namespace",
    "no_such_interrupt",
    "no_such_checkpoint",
    "permission_denied",
    "not_supported",
]

_log = logging.getLogger("durabletask.langgraph.server.protocol")
_STATUS_CODES: dict[int, ErrorCode] = {401: "permission_denied", 403: "permission_denied"}
#: The channels a subscription names (plus ``custom:<name>``).
CHANNELS = ("values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks", "custom")
#: JSON integers a JavaScript client reads exactly (command IDs, sequence numbers).
MAX_UINT = 2**53 - 1
#: Bounds on what a filter may name, so a request cannot make the server match against unbounded lists.
MAX_NAMESPACES = 64
MAX_NAMESPACE_SEGMENTS = 32
MAX_SEGMENT_CHARS = 512
MAX_DEPTH = 64
MAX_CHANNELS = 64
MAX_KEYS = 256
MAX_RESPONSES = 256
MAX_LIST_LIMIT = 1000


class ProtocolError(Exception):
    """A command or a subscription the protocol refuses, with its error code and a message naming the field.

    Args:
        code: The protocol's error code (``invalid_argument``, ``unknown_command``, ``no_such_run``, ...).
        message: What is wrong, for the caller.
    """

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message


@dataclass(frozen=True)
class Command:
    """A command envelope once checked: its ID, method and (still unchecked) params."""

    id: int
    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Filter:
    """Which events a subscription (or an event stream) receives, and from where.

    Attributes:
        channels: Channel names, ``custom:<name>`` included.
        namespaces: Namespace prefixes (``None``: every namespace).
        depth: How many levels below a prefix (``None``: any).
        since: Only events with a greater ``seq`` (``None``: see ``protocol_stream``).
    """

    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None
    since: int | None = None


@dataclass(frozen=True)
class RunStart:
    assistant_id: str
    input: Any = None
    config: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Answer:
    namespace: tuple[str, ...]
    interrupt_id: str
    response: Any


@dataclass(frozen=True)
class Respond:
    answers: tuple[Answer, ...]
    update: Mapping[str, Any] | None = None
    goto: Any = None
    config: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Inject:
    namespace: tuple[str, ...]
    role: str
    content: str
    name: str | None = None


@dataclass(frozen=True)
class StateGet:
    namespace: tuple[str, ...]
    keys: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ListCheckpoints:
    namespace: tuple[str, ...]
    limit: int = 10
    before: str | None = None


@dataclass(frozen=True)
class Fork:
    checkpoint_id: str
    input: Any = None
    config: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Unsubscribe:
    subscription_id: str


@dataclass(frozen=True)
class Reconnect:
    run_id: str
    last_event_id: str | None = None
    subscriptions: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GetTree:
    run_id: str | None = None


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _bad(field: str, expected: str, value: Any) -> ProtocolError:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return ProtocolError("invalid_argument", f"{field}: expected {expected}, got {_type_name(value)} {shown}")


def uint(value: Any, field: str, *, maximum: int = MAX_UINT) -> int:
    """A JSON integer ``0 <= value <= maximum`` (booleans are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise _bad(field, f"an integer from 0 to {maximum}", value)
    return value


def text(value: Any, field: str, *, limit: int = 1024, empty: bool = False) -> str:
    """A string of at most ``limit`` characters (non-empty unless ``empty``)."""
    if not isinstance(value, str) or len(value) > limit or (not empty and not value):
        what = "a string" if empty else "a non-empty string"
        raise _bad(field, f"{what} of at most {limit} characters", value)
    return value


def _mapping(value: Any, field: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _bad(field, "an object", value)
    return value


def namespace(value: Any, field: str) -> tuple[str, ...]:
    """A namespace: a list of at most 32 segments (strings of at most 512 characters)."""
    if not isinstance(value, list) or len(value) > MAX_NAMESPACE_SEGMENTS:
        raise _bad(field, f"a list of at most {MAX_NAMESPACE_SEGMENTS} strings", value)
    return tuple(text(segment, f"{field}[{i}]", limit=MAX_SEGMENT_CHARS) for i, segment in enumerate(value))


def _channel(value: Any, field: str) -> str:
    name = text(value, field, limit=256)
    if name in CHANNELS or (name.startswith("custom:") and len(name) > len("custom:")):
        return name
    raise ProtocolError(
        "invalid_argument", f"{field}: unknown channel {name!r}; expected one of {', '.join(CHANNELS)} or custom:<name>"
    )


def parse_filter(params: Any, field: str = "params", *, allow_since: bool = True) -> Filter:
    """A subscription's filter: ``{channels, namespaces?, depth?, since?}`` (``since`` only where allowed)."""
    if not isinstance(params, Mapping):
        raise _bad(field, "an object", params)
    channels = params.get("channels")
    if not isinstance(channels, list) or not channels or len(channels) > MAX_CHANNELS:
        raise _bad(f"{field}.channels", f"a non-empty list of at most {MAX_CHANNELS} channel names", channels)
    names = frozenset(_channel(value, f"{field}.channels[{i}]") for i, value in enumerate(channels))
    namespaces: tuple[tuple[str, ...], ...] | None = None
    raw = params.get("namespaces")
    if raw is not None:
        if not isinstance(raw, list) or len(raw) > MAX_NAMESPACES:
            raise _bad(f"{field}.namespaces", f"a list of at most {MAX_NAMESPACES} namespaces", raw)
        namespaces = tuple(namespace(ns, f"{field}.namespaces[{i}]") for i, ns in enumerate(raw))
    depth = params.get("depth")
    depth = None if depth is None else uint(depth, f"{field}.depth", maximum=MAX_DEPTH)
    since = params.get("since")
    if since is not None and not allow_since:
        raise ProtocolError("invalid_argument", f"{field}.since: not accepted here (use subscription.reconnect)")
    since = None if since is None else uint(since, f"{field}.since")
    return Filter(names, namespaces, depth, since)


def parse_command(body: Any) -> Command:
    """The envelope of a command: ``id`` (an unsigned integer), ``method`` (a string) and ``params`` (an object).

    Raises:
        ProtocolError: ``invalid_argument`` naming the field (the error's ``id`` is then unknown: ``None``).
    """
    if not isinstance(body, Mapping):
        raise _bad("command", "a JSON object {id, method, params}", body)
    uint(body.get("id"), "id")
    method = text(body.get("method"), "method", limit=64)
    params = body.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise _bad("params", "an object", params)
    return Command(int(body["id"]), method, params)


def command_id_of(body: Any) -> int | None:
    """The ``id`` of a body that may be malformed, when it is a valid one (for an error's ``id``)."""
    if isinstance(body, Mapping):
        value = body.get("id")
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_UINT:
            return value
    return None


def _run_start(p: Mapping[str, Any]) -> RunStart:
    if p.get("langsmith_tracer") is not None:
        raise ProtocolError("not_supported", "params.langsmith_tracer: this server sends no traces to LangSmith")
    return RunStart(
        assistant_id=text(p.get("assistant_id"), "params.assistant_id", limit=256),
        input=p.get("input"),
        config=_mapping(p.get("config"), "params.config"),
        metadata=_mapping(p.get("metadata"), "params.metadata"),
    )


def _answer(value: Any, field: str) -> Answer:
    if not isinstance(value, Mapping):
        raise _bad(field, "an object {namespace, interrupt_id, response}", value)
    if "response" not in value:
        raise ProtocolError("invalid_argument", f"{field}.response: required")
    return Answer(
        namespace=namespace(value.get("namespace", []), f"{field}.namespace"),
        interrupt_id=text(value.get("interrupt_id"), f"{field}.interrupt_id", limit=256),
        response=value["response"],
    )


def _respond(p: Mapping[str, Any]) -> Respond:
    many = p.get("responses")
    if many is not None:
        if not isinstance(many, list) or not many or len(many) > MAX_RESPONSES:
            raise _bad("params.responses", f"a non-empty list of at most {MAX_RESPONSES} answers", many)
        answers = tuple(_answer(item, f"params.responses[{i}]") for i, item in enumerate(many))
    else:
        answers = (_answer(p, "params"),)
    ids = [answer.interrupt_id for answer in answers]
    if len(set(ids)) != len(ids):
        raise ProtocolError("invalid_argument", "params.responses: an interrupt_id is answered twice")
    return Respond(
        answers=answers,
        update=_mapping(p.get("update"), "params.update"),
        goto=_goto(p.get("goto")),
        config=_mapping(p.get("config"), "params.config"),
        metadata=_mapping(p.get("metadata"), "params.metadata"),
    )


def _goto(value: Any) -> Any:
    """``goto``: a node name, ``{node, input?}`` (a Send), or a list of those."""
    items = value if isinstance(value, list) else [value]
    if value is None:
        return None
    for i, item in enumerate(items):
        field = f"params.goto[{i}]" if isinstance(value, list) else "params.goto"
        if isinstance(item, str) and item:
            continue
        if isinstance(item, Mapping) and isinstance(item.get("node"), str) and item["node"]:
            continue
        raise _bad(field, "a node name or {node, input}", item)
    return value


def _inject(p: Mapping[str, Any]) -> Inject:
    message = p.get("message")
    if not isinstance(message, Mapping):
        raise _bad("params.message", "an object {role, content, name?}", message)
    role = message.get("role")
    if role not in ("user", "system"):
        raise _bad("params.message.role", "'user' or 'system'", role)
    name = message.get("name")
    return Inject(
        namespace=namespace(p.get("namespace", []), "params.namespace"),
        role=str(role),
        content=text(message.get("content"), "params.message.content", limit=1_000_000, empty=True),
        name=None if name is None else text(name, "params.message.name", limit=256),
    )


def _state_get(p: Mapping[str, Any]) -> StateGet:
    keys = p.get("keys")
    if keys is not None:
        if not isinstance(keys, list) or len(keys) > MAX_KEYS:
            raise _bad("params.keys", f"a list of at most {MAX_KEYS} state keys", keys)
        keys = tuple(text(key, f"params.keys[{i}]", limit=256) for i, key in enumerate(keys))
    return StateGet(namespace(p.get("namespace", []), "params.namespace"), keys)


def _list_checkpoints(p: Mapping[str, Any]) -> ListCheckpoints:
    limit = p.get("limit")
    before = p.get("before")
    return ListCheckpoints(
        namespace=namespace(p.get("namespace", []), "params.namespace"),
        limit=10 if limit is None else max(1, uint(limit, "params.limit", maximum=MAX_LIST_LIMIT)),
        before=None if before is None else text(before, "params.before", limit=256),
    )


def _fork(p: Mapping[str, Any]) -> Fork:
    return Fork(
        checkpoint_id=text(p.get("checkpoint_id"), "params.checkpoint_id", limit=256),
        input=p.get("input"),
        config=_mapping(p.get("config"), "params.config"),
    )


def _unsubscribe(p: Mapping[str, Any]) -> Unsubscribe:
    return Unsubscribe(text(p.get("subscription_id"), "params.subscription_id", limit=64))


def _reconnect(p: Mapping[str, Any]) -> Reconnect:
    subs = p.get("subscriptions")
    if subs is not None:
        if not isinstance(subs, list) or len(subs) > MAX_NAMESPACES:
            raise _bad("params.subscriptions", f"a list of at most {MAX_NAMESPACES} subscription IDs", subs)
        subs = tuple(text(s, f"params.subscriptions[{i}]", limit=64) for i, s in enumerate(subs))
    last = p.get("last_event_id")
    return Reconnect(
        run_id=text(p.get("run_id"), "params.run_id", limit=256),
        last_event_id=None if last is None else text(last, "params.last_event_id", limit=256),
        subscriptions=subs,
    )


def _get_tree(p: Mapping[str, Any]) -> GetTree:
    run_id = p.get("run_id")
    return GetTree(None if run_id is None else text(run_id, "params.run_id", limit=256))


_PARSERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "run.start": _run_start,
    "input.respond": _respond,
    "input.inject": _inject,
    "state.get": _state_get,
    "state.listCheckpoints": _list_checkpoints,
    "state.fork": _fork,
    "subscription.subscribe": lambda p: parse_filter(p, "params", allow_since=True),
    "subscription.unsubscribe": _unsubscribe,
    "subscription.reconnect": _reconnect,
    "agent.getTree": _get_tree,
}

#: Every method the protocol defines, in the order its specification lists them.
METHODS = tuple(_PARSERS)


def parse_params(command: Command) -> Any:
    """The command's params as the typed request its method takes.

    Raises:
        ProtocolError: ``unknown_command`` for a method the protocol does not define, ``invalid_argument`` naming
            the field otherwise.
    """
    parser = _PARSERS.get(command.method)
    if parser is None:
        raise ProtocolError(
            "unknown_command", f"method: unknown command {command.method!r}; expected one of {', '.join(METHODS)}"
        )
    return parser(command.params)


def refusal(error: Exception, thread_id: str) -> ProtocolError:
    """A failed command's error as the protocol's: an HTTP error of a service keeps its message; anything else is
    ``unknown_error`` (never a 500), and logged."""
    if isinstance(error, ProtocolError):
        return error
    if isinstance(error, HttpError):
        code = _STATUS_CODES.get(error.status, "unknown_error" if error.status >= 500 else "invalid_argument")
        return ProtocolError(code, error.detail)
    _log.exception("the protocol command on thread %r failed", thread_id, exc_info=error)
    message = f"the command failed on the server: {type(error).__name__}: {error}"
    return ProtocolError("unknown_error", message[:1000])


def success(command_id: int | None, result: Mapping[str, Any], *, seq: int | None = None) -> dict[str, Any]:
    """A success answer; ``seq`` (the stream's last sequence number the command has seen) goes in ``meta``."""
    answer: dict[str, Any] = {"type": "success", "id": command_id, "result": dict(result)}
    if seq is not None:
        answer["meta"] = {"applied_through_seq": seq}
    return answer


def failure(command_id: int | None, error: ProtocolError) -> dict[str, Any]:
    """An error answer."""
    return {"type": "error", "id": command_id, "error": error.code, "message": error.message}
