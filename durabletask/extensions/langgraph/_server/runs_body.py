"""The body of a run's creation checked field by field: a :class:`RunRequest`, or a 422 naming the field."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from langgraph.version import __version__ as LANGGRAPH_VERSION

from durabletask.extensions.langgraph._server.errors import bad_request
from durabletask.extensions.langgraph._server.runs_stream import SDK_MODES
from durabletask.extensions.langgraph._server.services import RunRequest

_CHOICES = {
    "multitask_strategy": ("reject", "enqueue", "interrupt", "rollback"),
    "if_not_exists": ("create", "reject"),
    "on_disconnect": ("cancel", "continue"),
    "on_completion": ("delete", "keep"),
    "durability": ("sync", "async", "exit"),
}
_OBJECTS = ("config", "context", "metadata", "checkpoint", "command")
# Options LangGraph's server knows: each is honoured when it asks what our runs do, else refused naming why.
_OPTIONS = ("feedback_keys", "langsmith_tracer", "checkpoint_during", "strict_resume", "stream_version")
_KNOWN = (
    "assistant_id",
    "input",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "interrupt_before",
    "interrupt_after",
    "checkpoint_id",
    "after_seconds",
    "webhook",
    *_CHOICES,
    *_OBJECTS,
    *_OPTIONS,
)
#: The largest metadata of a run or a thread, as JSON text: records keep it, and travel whole in each write.
MAX_METADATA_CHARS = 64 * 1024
#: Longest delay ``after_seconds`` may ask (a day).
MAX_AFTER_SECONDS = 86_400.0


def _choice(body: Mapping[str, Any], name: str, default: str) -> Any:
    value = body.get(name)
    if value is None:
        return default
    if value not in _CHOICES[name]:
        raise bad_request(f"'{name}' must be one of {', '.join(_CHOICES[name])}, not {value!r}")
    return value


def _object(body: Mapping[str, Any], name: str) -> Any:
    value = body.get(name)
    if value is not None and not isinstance(value, dict):
        raise bad_request(f"'{name}' must be an object, not {type(value).__name__}")
    return value


def bounded_metadata(metadata: Any, name: str = "metadata") -> dict[str, Any]:
    """``metadata`` (an object or ``None``) if it fits ``MAX_METADATA_CHARS`` as JSON; 422 naming the limit."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise bad_request(f"'{name}' must be an object, not {type(metadata).__name__}")
    size = len(json.dumps(metadata))
    if size > MAX_METADATA_CHARS:
        raise bad_request(f"'{name}' is {size} characters of JSON; the limit is {MAX_METADATA_CHARS}")
    return metadata


def _modes(value: Any) -> tuple[str, ...]:
    if value is None:
        return ("values",)
    modes = [value] if isinstance(value, str) else value
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        raise bad_request("'stream_mode' must be a stream mode or a list of them")
    for mode in modes:
        if mode not in SDK_MODES:
            raise bad_request(f"'stream_mode' {mode!r} is not supported; supported: {', '.join(SDK_MODES)}")
    return tuple(dict.fromkeys(modes)) or ("values",)


def _nodes(body: Mapping[str, Any], name: str) -> Any:
    value = body.get(name)
    if value is None or value == "*":
        return value
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise bad_request(f"'{name}' must be '*' or a list of node names")
    return value


def _flag(body: Mapping[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad_request(f"'{name}' must be true or false, not {value!r}")
    return value


def _command(body: Mapping[str, Any]) -> Any:
    command = _object(body, "command")
    if command is None:
        return None
    unknown = sorted(set(command) - {"resume", "update", "goto"})
    if unknown:
        raise bad_request(f"'command.{unknown[0]}' is not a Command field (resume, update, goto)")
    return command


def _checkpoint(body: Mapping[str, Any]) -> Any:
    checkpoint = _object(body, "checkpoint")
    checkpoint_id = body.get("checkpoint_id")
    if checkpoint_id is not None:
        if not isinstance(checkpoint_id, str):
            raise bad_request(f"'checkpoint_id' must be a string, not {type(checkpoint_id).__name__}")
        checkpoint = {**(checkpoint or {}), "checkpoint_id": checkpoint_id}
    return checkpoint


def _after(body: Mapping[str, Any]) -> float | None:
    after = body.get("after_seconds")
    if after is None:
        return None
    if isinstance(after, bool) or not isinstance(after, (int, float)) or not 0 <= after <= MAX_AFTER_SECONDS:
        raise bad_request(f"'after_seconds' must be a number from 0 to {MAX_AFTER_SECONDS:g}, not {after!r}")
    return float(after)


def server_metadata() -> dict[str, Any]:
    """What LangGraph's server adds to every run's config metadata, of what holds here: the ``langgraph`` version, the
    kind of host (``self-hosted``: what LangGraph's server says off LangChain's cloud) and ``LANGGRAPH_API_URL``
    (``None`` when unset, as there). Left out: ``langgraph_api_version`` and ``langgraph_plan`` (the version and the
    licence of LangChain's server, which this is not), and ``run_attempt`` (a node's activity is not told its attempt:
    the run's stream numbers attempts, in its ``metadata`` events)."""
    return {
        "langgraph_version": LANGGRAPH_VERSION,
        "langgraph_host": "self-hosted",
        "langgraph_api_url": os.environ.get("LANGGRAPH_API_URL"),
    }


def _run_config(config: Any, metadata: dict[str, Any]) -> dict[str, Any]:
    """The run's config with LangGraph's server's metadata: the config's, under the run's, under the server's."""
    found = dict(config or {})
    found["metadata"] = {**dict(found.get("metadata") or {}), **metadata, **server_metadata()}
    return found


def _check_config(config: Any) -> None:
    """The parts of a run's config the run reads itself: its recursion limit, configurable, metadata and tags."""
    if config is None:
        return
    limit = config.get("recursion_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1_000_000):
        raise bad_request(f"'config.recursion_limit' must be an integer from 1 to 1000000, not {limit!r}")
    for name in ("configurable", "metadata"):
        if config.get(name) is not None and not isinstance(config[name], dict):
            raise bad_request(f"'config.{name}' must be an object")
    tags = config.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        raise bad_request("'config.tags' must be a list of strings")


def _check_options(body: Mapping[str, Any]) -> None:
    """The options of ``_OPTIONS``: ``null`` or what our runs always do, else a 422 naming the field and why."""
    for name in ("feedback_keys", "langsmith_tracer"):
        if body.get(name) is not None:
            raise bad_request(f"'{name}' is not supported: this server sends nothing to LangSmith")
    for name in ("checkpoint_during", "strict_resume"):
        value = body.get(name)
        if value is not None and not isinstance(value, bool):
            raise bad_request(f"'{name}' must be true or false, not {value!r}")
    if body.get("checkpoint_during") is False:
        raise bad_request(
            "'checkpoint_during' false is not supported: the thread's orchestration checkpoints every superstep"
        )
    if body.get("strict_resume") is False:
        raise bad_request(
            "'strict_resume' false is not supported: a resume that answers no waiting interrupt is always refused"
        )
    if body.get("stream_version") is not None:
        raise bad_request("'stream_version' is not supported: this server streams one event format, LangGraph's SSE")


def run_request(body: Any, *, threadless: bool = False) -> RunRequest:
    """The run a creation body asks for (422 naming the first field that is wrong)."""
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be a JSON object, not {type(body).__name__}")
    unknown = sorted(set(body) - set(_KNOWN))
    if unknown:
        raise bad_request(f"'{unknown[0]}' is not a field of a run's creation")
    assistant_id = body.get("assistant_id")
    if not isinstance(assistant_id, str) or not assistant_id:
        raise bad_request("'assistant_id' is required: an assistant ID or a graph ID")
    if body.get("input") is not None and body.get("command") is not None:
        raise bad_request("'input' and 'command' cannot both be given")
    webhook = body.get("webhook")
    if webhook is not None and (not isinstance(webhook, str) or not webhook):
        raise bad_request("'webhook' must be a non-empty URL string")
    _check_config(_object(body, "config"))
    _check_options(body)
    metadata = bounded_metadata(_object(body, "metadata"))
    return RunRequest(
        assistant_id=assistant_id,
        input=body.get("input"),
        command=_command(body),
        config=_run_config(_object(body, "config"), metadata),
        context=_object(body, "context"),
        metadata=metadata,
        stream_mode=_modes(body.get("stream_mode")),
        stream_subgraphs=_flag(body, "stream_subgraphs"),
        stream_resumable=_flag(body, "stream_resumable"),
        interrupt_before=_nodes(body, "interrupt_before"),
        interrupt_after=_nodes(body, "interrupt_after"),
        checkpoint=_checkpoint(body),
        multitask_strategy=_choice(body, "multitask_strategy", "enqueue"),
        if_not_exists=_choice(body, "if_not_exists", "create" if threadless else "reject"),
        on_disconnect=_choice(body, "on_disconnect", "continue"),
        on_completion=_choice(body, "on_completion", "delete" if threadless else "keep"),
        after_seconds=_after(body),
        durability=_choice(body, "durability", "async") if body.get("durability") is not None else None,
        webhook=webhook,
    )
