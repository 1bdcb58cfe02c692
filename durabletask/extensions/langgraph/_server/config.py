"""``langgraph.json``, read as LangGraph reads it: graphs, dependencies, env and ``http.cors``.

Reading the file has no side effects; ``apply_environment`` puts the dependencies on ``sys.path`` and the
``env`` into ``os.environ``, and a graph's module is imported when it is first loaded.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from durabletask.extensions.langgraph._naming import check_graph_name
from durabletask.extensions.langgraph._server.config_graphs import GraphSpec, GraphSpecError
from durabletask.extensions.langgraph._server.config_store import StoreIndexSettings, parse_store
from durabletask.extensions.langgraph._server.config_ttl import parse_checkpointer
from durabletask.extensions.langgraph._server.config_webhooks import WebhookSettings, parse_webhooks

__all__ = [
    "ConfigError",
    "CorsSettings",
    "GraphSpec",
    "GraphSpecError",
    "ProjectConfig",
    "ServerSettings",
    "apply_environment",
    "load_config",
]

CONFIG_FILE = "langgraph.json"

# Keys that only shape the image LangGraph's CLI builds (base image, Python version, Dockerfile lines):
# nothing in them changes how a graph runs, so a project that has them runs here as it is.
_BUILD_KEYS = frozenset(
    {
        "$schema",
        "python_version",
        "node_version",
        "pip_config_file",
        "pip_installer",
        "dockerfile_lines",
        "image_distro",
        "base_image",
        "api_version",
        "keep_pkg_tools",
    }
)
# Keys of LangGraph's server that this one does not implement: refused, never silently dropped.
_UNSUPPORTED_KEYS = {
    "auth": "custom auth handlers are not supported; guard the server with --auth-token",
    "ui": "generative UI components are not supported",
    "semantic_search": "semantic search is not supported",
}
_KNOWN_KEYS = frozenset({"graphs", "dependencies", "env", "http", "webhooks", "checkpointer", "store"})
_CORS_LISTS = ("allow_origins", "allow_methods", "allow_headers", "expose_headers")
_CORS_KEYS = frozenset({*_CORS_LISTS, "allow_origin_regex", "allow_credentials", "max_age"})
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([<>=!~;@ ].*)?$")


class ConfigError(GraphSpecError):
    """``langgraph.json`` cannot be served as it is; the message names the file and the key."""


@dataclass(frozen=True)
class CorsSettings:
    """``http.cors``: which browser origins may call the server (none when the key is absent).

    The origins are the gate: methods and headers not listed are all allowed, as with LangGraph's server.
    """

    allow_origins: tuple[str, ...] = ()
    allow_origin_regex: str | None = None
    allow_methods: tuple[str, ...] = ("*",)
    allow_headers: tuple[str, ...] = ("*",)
    expose_headers: tuple[str, ...] = ()
    allow_credentials: bool = False
    max_age: int = 600

    def allows(self, origin: str) -> bool:
        """Whether ``origin`` may call the server."""
        if "*" in self.allow_origins or origin in self.allow_origins:
            return True
        return self.allow_origin_regex is not None and re.fullmatch(self.allow_origin_regex, origin) is not None


@dataclass(frozen=True)
class ProjectConfig:
    """What ``langgraph.json`` says.

    Args:
        path: The file.
        graphs: Each graph's spec (``GraphSpec``), by graph ID, in the file's order.
        dependencies: Folders to put on ``sys.path``.
        env: Environment variables for the graphs.
        cors: ``http.cors``; ``None``: no cross-origin calls.
        env_file: The ``.env`` file ``env`` names, if it names one.
        webhooks: ``webhooks`` and ``http.disable_webhooks``: how run webhooks are checked and sent.
        thread_ttl: ``checkpointer.ttl``: the TTL of a thread made without one (``{"strategy", "ttl_minutes"}``).
        store_index: ``store.index``: how the store embeds items for a search's ``query`` (``None``: it does not).
    """

    path: Path
    graphs: Mapping[str, Any]
    dependencies: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cors: CorsSettings | None = None
    env_file: Path | None = None
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)
    thread_ttl: Mapping[str, Any] | None = None
    store_index: StoreIndexSettings | None = None

    @property
    def base_dir(self) -> Path:
        """The project's folder: relative paths in the file are read from it."""
        return self.path.parent


#: The largest request body the server reads by default (``ServerSettings.max_body_bytes``).
DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
#: Seconds a connection may go without a whole request head by default (``ServerSettings.idle_timeout``).
DEFAULT_IDLE_TIMEOUT = 60.0
#: Seconds a request's whole body may take to arrive by default (``ServerSettings.body_timeout``).
DEFAULT_BODY_TIMEOUT = 60.0


@dataclass(frozen=True)
class ServerSettings:
    """How one HTTP server runs.

    Args:
        project: The project's ``langgraph.json``.
        auth_token: The bearer token every request must carry; ``None``: no token is asked for.
        max_body_bytes: The largest request body read; a larger one gets 413 naming the limit.
        task_hub: The task hub's name, as ``/info`` reports it.
        host: The interface the server listens on (``None``: not known). Without a token, a loopback one means
            only loopback names are answered in ``Host`` (see ``middleware_browser.browser_guard``).
        idle_timeout: Seconds a connection may wait for a whole request head, from when it opened or its last
            answer was sent; then it is closed. This closes idle keep-alive connections, and those of a client
            that sends a head slowly or only half of it.
        body_timeout: Seconds a request's whole body may take to arrive once its head has; a slower one gets 408
            and its connection is closed.
    """

    project: ProjectConfig
    auth_token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    task_hub: str | None = None
    host: str | None = None
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT

    @property
    def cors(self) -> CorsSettings | None:
        """``http.cors`` of the project; ``None``: cross-origin calls are refused."""
        return self.project.cors


def load_config(path: str | os.PathLike[str]) -> ProjectConfig:
    """Read and check ``langgraph.json`` (a file, or a folder that holds one); imports nothing.

    Raises:
        ConfigError: The file is missing, not JSON, or a key is wrong; the message names the key.
    """
    file = Path(path)
    if file.is_dir():
        file = file / CONFIG_FILE
    file = file.resolve()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{file}: cannot read the project's configuration: {error}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{file}: not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: the configuration must be a JSON object, got {type(raw).__name__}")
    _check_keys(file, raw)
    base = file.parent
    env = _env(file, raw.get("env", {}))
    try:
        webhooks = parse_webhooks(
            file, raw.get("webhooks"), disabled=_disable_webhooks(file, raw.get("http")), environ={**env, **os.environ}
        )
        thread_ttl = parse_checkpointer(raw.get("checkpointer"))
        store_index = parse_store(raw.get("store"), base)
    except ValueError as error:
        raise ConfigError(f"{file}: {error}") from None
    try:
        graphs = {
            graph_id: GraphSpec.parse(graph_id, entry, base, where=f"{file}: graphs.{graph_id}")
            for graph_id, entry in _graph_entries(file, raw.get("graphs")).items()
        }
    except ConfigError:
        raise
    except GraphSpecError as error:
        raise ConfigError(str(error)) from None
    return ProjectConfig(
        path=file,
        graphs=graphs,
        dependencies=_dependencies(file, raw.get("dependencies", [])),
        env=env,
        cors=_http(file, raw.get("http")),
        env_file=(base / raw["env"]).resolve() if isinstance(raw.get("env"), str) else None,
        webhooks=webhooks,
        thread_ttl=thread_ttl,
        store_index=store_index,
    )


def _check_keys(file: Path, raw: dict[str, Any]) -> None:
    for key in raw:
        if key in _UNSUPPORTED_KEYS:
            raise ConfigError(f"{file}: key '{key}': {_UNSUPPORTED_KEYS[key]}")
        if key not in _BUILD_KEYS and key not in _KNOWN_KEYS:
            raise ConfigError(f"{file}: unknown key '{key}'")


def _graph_entries(file: Path, graphs: Any) -> dict[str, Any]:
    if not isinstance(graphs, dict) or not graphs:
        raise ConfigError(
            f"{file}: key 'graphs' must be an object mapping graph IDs to 'path.py:attr', e.g. "
            '{"agent": "./agent.py:graph"}'
        )
    for graph_id in graphs:
        try:
            check_graph_name(graph_id)
        except ValueError as error:
            raise ConfigError(f"{file}: graphs.{graph_id}: {error}") from None
    return graphs


def _dependencies(file: Path, deps: Any) -> tuple[Path, ...]:
    if not isinstance(deps, list) or not all(isinstance(d, str) and d.strip() for d in deps):
        raise ConfigError(f"{file}: key 'dependencies' must be a list of folders or package names")
    folders: list[Path] = []
    for index, dep in enumerate(deps):
        if dep.startswith((".", "/", "~")) or os.sep in dep or "/" in dep:
            folder = (file.parent / Path(dep).expanduser()).resolve()
            if not folder.is_dir():
                raise ConfigError(f"{file}: dependencies[{index}]: folder '{dep}' does not exist ({folder})")
            folders.append(folder)
            if (folder / "src").is_dir() and any((folder / name).is_file() for name in ("pyproject.toml", "setup.py")):
                # a package in the src layout, which LangGraph's build would install: its import root is src/
                folders.append(folder / "src")
        else:
            _check_installed(file, index, dep)
    return tuple(folders)


def _check_installed(file: Path, index: int, requirement: str) -> None:
    """A package named in ``dependencies`` must be installed: LangGraph's image build would install it."""
    from importlib import metadata

    match = _REQUIREMENT.match(requirement.strip())
    if match is None:
        raise ConfigError(f"{file}: dependencies[{index}]: '{requirement}' is neither a folder nor a package")
    try:
        metadata.distribution(match.group(1))
    except metadata.PackageNotFoundError:
        raise ConfigError(
            f"{file}: dependencies[{index}]: package '{match.group(1)}' is not installed; "
            f"run: pip install '{requirement.strip()}'"
        ) from None


def _env(file: Path, env: Any) -> dict[str, str]:
    if isinstance(env, str):
        return _read_env_file(file, file.parent / env)
    if not isinstance(env, dict):
        raise ConfigError(f"{file}: key 'env' must be an object of strings or the path of a .env file")
    for key, value in env.items():
        if not isinstance(value, str):
            raise ConfigError(f"{file}: env.{key} must be a string, got {type(value).__name__}")
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ConfigError(f"{file}: env: {key!r} cannot name an environment variable")
    return dict(env)


def _read_env_file(file: Path, env_file: Path) -> dict[str, str]:
    """A ``.env`` file: ``KEY=value`` lines, ``#`` comments, an optional ``export``, quoted values."""
    try:
        lines = env_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{file}: env: cannot read '{env_file}': {error}") from None
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        text = text.removeprefix("export ").strip()
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            raise ConfigError(f"{file}: env file {env_file}, line {number}: expected KEY=value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        found[key] = value
    return found


def _http(file: Path, http: Any) -> CorsSettings | None:
    if http is None:
        return None
    if not isinstance(http, dict):
        raise ConfigError(f"{file}: key 'http' must be an object")
    for key in http:
        if key not in ("cors", "disable_webhooks"):
            raise ConfigError(
                f"{file}: http.{key} is not supported by this server (only http.cors and http.disable_webhooks are)"
            )
    cors = http.get("cors")
    if cors is None:
        return None
    if not isinstance(cors, dict):
        raise ConfigError(f"{file}: http.cors must be an object")
    return _cors(file, cors)


def _disable_webhooks(file: Path, http: Any) -> bool:
    value = http.get("disable_webhooks", False) if isinstance(http, dict) else False
    if not isinstance(value, bool):
        raise ConfigError(f"{file}: http.disable_webhooks must be true or false")
    return value


def _cors(file: Path, cors: dict[str, Any]) -> CorsSettings:
    for key in cors:
        if key not in _CORS_KEYS:
            raise ConfigError(f"{file}: http.cors.{key} is unknown; known: {', '.join(sorted(_CORS_KEYS))}")
    lists: dict[str, tuple[str, ...]] = {}
    for key in _CORS_LISTS:
        if key in cors:
            value = cors[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{file}: http.cors.{key} must be a list of strings")
            lists[key] = tuple(value)
    regex = cors.get("allow_origin_regex")
    if regex is not None:
        try:
            re.compile(regex)
        except (re.error, TypeError) as error:
            raise ConfigError(f"{file}: http.cors.allow_origin_regex is not a regular expression: {error}") from None
    credentials = cors.get("allow_credentials", False)
    if not isinstance(credentials, bool):
        raise ConfigError(f"{file}: http.cors.allow_credentials must be true or false")
    max_age = cors.get("max_age", 600)
    if isinstance(max_age, bool) or not isinstance(max_age, int) or max_age < 0:
        raise ConfigError(f"{file}: http.cors.max_age must be a whole number of seconds, at least 0")
    return CorsSettings(allow_origin_regex=regex, allow_credentials=credentials, max_age=max_age, **lists)


def apply_environment(config: ProjectConfig) -> None:
    """Put the project's dependency folders on ``sys.path`` and its ``env`` into ``os.environ``.

    Variables the process already has are kept: the environment a server is started with wins over the file.
    """
    for folder in config.dependencies:
        if str(folder) not in sys.path:
            sys.path.append(str(folder))
    for key, value in config.env.items():
        os.environ.setdefault(key, value)
