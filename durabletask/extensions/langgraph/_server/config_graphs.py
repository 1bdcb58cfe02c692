"""One graph of ``langgraph.json``: where it lives, how it is imported, and how a factory is called.

A graph entry is ``path.py:attr`` or ``package.module:attr``; the attribute is a compiled graph, a ``StateGraph``
(compiled here), or a factory: a function, sync or async, taking nothing, ``config``, ``runtime`` (the
``ServerRuntime`` of ``langgraph_sdk.runtime``) or both, and returning a graph or a context manager yielding one.
As in LangGraph's server, a factory is called for every use with the access context that use stands for
(``threads.create_run`` for a run, ``threads.read``, ``threads.update``, ``assistants.read``), and every graph
gets the server's store and no checkpointer of its own (a thread's history is its orchestration's).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ATTR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
ACCESS_CONTEXTS = ("threads.create_run", "threads.update", "threads.read", "assistants.read")
_IMPORT_LOCK = threading.RLock()


class GraphSpecError(ValueError):
    """A graph of ``langgraph.json`` cannot be loaded or built; the message names the graph and why."""


@dataclass(frozen=True)
class GraphSpec:
    """A graph of ``langgraph.json``.

    Args:
        graph_id: Its key under ``graphs`` (also its assistant's ``graph_id``).
        source: The file (``./agent.py``) or module (``pkg.agent``) as written.
        attr: The attribute holding the graph or its factory.
        base_dir: The folder of ``langgraph.json``: relative files are read from it.
        description: The entry's ``description``, if it gave one.
    """

    graph_id: str
    source: str
    attr: str
    base_dir: Path
    description: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, graph_id: str, entry: Any, base_dir: Path, *, where: str) -> GraphSpec:
        """The spec of one ``graphs`` entry (a string, or an object with ``path`` and ``description``)."""
        description = None
        if isinstance(entry, dict):
            unknown = sorted(set(entry) - {"path", "description"})
            if unknown:
                raise GraphSpecError(f"{where}: unknown key '{unknown[0]}' (known: path, description)")
            description = entry.get("description")
            if description is not None and not isinstance(description, str):
                raise GraphSpecError(f"{where}.description must be a string")
            entry = entry.get("path")
        if not isinstance(entry, str) or ":" not in entry:
            raise GraphSpecError(
                f"{where}: expected 'path/to/file.py:attribute' or 'package.module:attribute', got {entry!r}"
            )
        source, _, attr = entry.rpartition(":")
        if not source or not _ATTR.match(attr):
            raise GraphSpecError(f"{where}: {entry!r} does not end in ':attribute' naming a Python variable")
        spec = cls(graph_id, source, attr, base_dir, description)
        file = spec.file
        if file is not None and file.suffix != ".py":
            raise GraphSpecError(f"{where}: only Python graphs are served here, and '{source}' is not a .py file")
        if file is not None and not file.is_file():
            raise GraphSpecError(f"{where}: file '{source}' does not exist ({file})")
        return spec

    @property
    def file(self) -> Path | None:
        """The graph's file, or ``None`` when it names a module."""
        if not self.source.endswith(".py") and _MODULE.match(self.source):
            return None
        return (self.base_dir / self.source).resolve()

    def load(self) -> Any:
        """The object the entry names (a graph or a factory), importing its module once.

        Raises:
            GraphSpecError: The module cannot be imported, or has no such attribute.
        """
        if "object" not in self._cache:
            module = self._import()
            target: Any = module
            for part in self.attr.split("."):
                if not hasattr(target, part):
                    raise GraphSpecError(f"graphs.{self.graph_id}: {self.source} has no attribute '{self.attr}'")
                target = getattr(target, part)
            if not is_graph(target) and not callable(target):
                raise GraphSpecError(
                    f"graphs.{self.graph_id}: {self.source}:{self.attr} is a {type(target).__name__}, "
                    "neither a graph nor a function that makes one"
                )
            self._cache["object"] = target
        return self._cache["object"]

    @property
    def is_factory(self) -> bool:
        """Whether the entry names a function that makes the graph (called for every use)."""
        return not is_graph(self.load())

    def _import(self) -> Any:
        file = self.file
        with _IMPORT_LOCK:
            try:
                if file is None:
                    return importlib.import_module(self.source)
                name = module_name_for(file)
                if name in sys.modules:
                    return sys.modules[name]
                if _importable(name, file):
                    return importlib.import_module(name)
                spec = importlib.util.spec_from_file_location(name, file)
                if spec is None or spec.loader is None:
                    raise GraphSpecError(f"graphs.{self.graph_id}: cannot import {file}")
                module = importlib.util.module_from_spec(spec)
                # Registered before it runs, as import does, so its classes can be found by name (pickling,
                # pydantic, LangGraph's serializer) in every process that loads the same project.
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    sys.modules.pop(name, None)
                    raise
                return module
            except GraphSpecError:
                raise
            except Exception as error:
                raise GraphSpecError(
                    f"graphs.{self.graph_id}: importing {self.source} failed: {type(error).__name__}: {error}"
                ) from error

    @contextlib.asynccontextmanager
    async def open(
        self,
        access_context: str,
        *,
        config: Mapping[str, Any] | None = None,
        context: Any = None,
        store: Any = None,
    ) -> AsyncIterator[Any]:
        """The compiled graph for one use, as LangGraph's server gives it to that use.

        A factory is called now with ``config`` and a ``ServerRuntime`` for ``access_context`` (``context`` only
        reaches it for ``threads.create_run``); a context manager it returns stays open for the ``async with``.

        Args:
            access_context: Why the graph is needed (one of ``ACCESS_CONTEXTS``).
            config: The run's ``RunnableConfig`` (its ``configurable`` holds ``thread_id``).
            context: The run's ``context`` (for the graph's ``context_schema``).
            store: The store the graph's nodes get (``runtime.store``); when ``None``, the one of ``use_store``,
                else (for a factory's runtime) an in-memory one.
        """
        if access_context not in ACCESS_CONTEXTS:
            raise ValueError(f"access_context must be one of {', '.join(ACCESS_CONTEXTS)}, got {access_context!r}")
        target = self.load()
        if store is None:
            store = self._cache.get("default_store")
        if is_graph(target):
            yield self._prepared(target, store)
            return
        store = store if store is not None else _memory_store(self._cache)
        runtime = server_runtime(access_context, store, context)
        made = call_factory(self.graph_id, target, dict(config or {}), runtime)
        if inspect.isawaitable(made):
            made = await made
        if hasattr(made, "__aenter__") and not is_graph(made):
            async with made as graph:
                yield self._prepared(graph, store, cache=False)
        elif hasattr(made, "__enter__") and not is_graph(made):
            with made as graph:
                yield self._prepared(graph, store, cache=False)
        else:
            yield self._prepared(made, store, cache=False)

    def use_store(self, store: Any) -> None:
        """The store ``open`` gives the graph (and a factory's ``runtime.store``) when it is not given one."""
        self._cache["default_store"] = store

    def _prepared(self, graph: Any, store: Any, *, cache: bool = True) -> Any:
        key = f"prepared:{id(store)}"
        if cache and key in self._cache:
            return self._cache[key]
        compiled = prepare_graph(self.graph_id, graph, store)
        if cache:
            self._cache[key] = compiled
        return compiled


def is_graph(value: Any) -> bool:
    """Whether ``value`` is a graph (compiled, or a ``StateGraph`` to compile) rather than a factory."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    return isinstance(value, Pregel | StateGraph)


def prepare_graph(graph_id: str, graph: Any, store: Any) -> Any:
    """``graph`` compiled, without a checkpointer, and with ``store`` when it brought none of its own."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    if isinstance(graph, StateGraph):
        graph = graph.compile()
    if not isinstance(graph, Pregel):
        raise GraphSpecError(f"graphs.{graph_id}: the factory returned a {type(graph).__name__}, not a graph")
    update: dict[str, Any] = {}
    if getattr(graph, "checkpointer", None) not in (None, False):
        update["checkpointer"] = None  # the thread's orchestration is its record, as LangGraph's server replaces it
    if store is not None and getattr(graph, "store", None) is None:
        update["store"] = store
    return graph.copy(update=update) if update else graph


def server_runtime(access_context: str, store: Any, context: Any = None) -> Any:
    """The ``ServerRuntime`` of ``langgraph_sdk.runtime`` that LangGraph's server hands a factory."""
    from langgraph_sdk import runtime as sdk_runtime

    if access_context == "threads.create_run":
        return sdk_runtime._ExecutionRuntime(access_context="threads.create_run", store=store, context=context)
    return sdk_runtime._ReadRuntime(access_context=access_context, store=store)  # type: ignore[arg-type]


def _role(parameter: inspect.Parameter, index: int, count: int) -> str:
    """Which of ``config`` and ``runtime`` a factory's parameter takes: by annotation, by name, by position."""
    annotation = parameter.annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    if "Runtime" in text:
        return "runtime"
    if "Config" in text:
        return "config"
    if parameter.name in ("config", "runtime"):
        return parameter.name
    return "config" if index == 0 and count <= 2 else "runtime"


def call_factory(graph_id: str, factory: Any, config: dict[str, Any], runtime: Any) -> Any:
    """Call a graph factory with what its parameters ask for (nothing, ``config``, ``runtime``, or both)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return factory()
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
    ]
    if len(positional) > 2:
        names = ", ".join(p.name for p in positional)
        raise GraphSpecError(
            f"graphs.{graph_id}: a graph factory takes at most (config, runtime); this one needs {names}"
        )
    values = {"config": config, "runtime": runtime}
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for index, parameter in enumerate(positional):
        value = values[_role(parameter, index, len(positional))]
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        else:
            args.append(value)
    return factory(*args, **kwargs)


def module_name_for(file: Path) -> str:
    """The module name a graph file is imported under: its name on ``sys.path`` when it has one there, else a
    name made from its path (the same in every process that loads the project from the same folder)."""
    best: tuple[int, str] | None = None
    for entry in sys.path:
        try:
            root = Path(entry or ".").resolve()
            relative = file.with_suffix("").relative_to(root)
        except (OSError, ValueError):
            continue
        name = ".".join(relative.parts)
        if _MODULE.match(name) and (best is None or len(name) < best[0]):
            best = (len(name), name)
    if best is not None:
        return best[1]
    digest = hashlib.sha256(str(file).encode()).hexdigest()[:12]
    stem = re.sub(r"\W", "_", file.stem)
    return f"langgraph_project_{stem}_{digest}"


def _importable(name: str, file: Path) -> bool:
    """Whether ``import name`` finds exactly ``file`` (then it is imported the ordinary way, packages included)."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = getattr(found, "origin", None)
    return origin is not None and Path(origin).resolve() == file


def _memory_store(cache: dict[str, Any]) -> Any:
    if "memory_store" not in cache:
        from langgraph.store.memory import InMemoryStore

        cache["memory_store"] = InMemoryStore()
    return cache["memory_store"]
