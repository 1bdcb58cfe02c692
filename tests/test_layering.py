"""The layering of the SDK and the emulator, read from their import graph (docs/architecture.md draws it).

Every import counts: module level, inside functions (a deferred import is still a dependency) and under
``TYPE_CHECKING``. A failure names the importing file and line and the edge that breaks the rule.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each import package and the folder that holds it: the SDK at the top, the emulator's distribution in emulator/.
PACKAGE_HOMES = {"durabletask": ROOT, "dtscale_emulator": ROOT / "emulator"}
PACKAGES = tuple(PACKAGE_HOMES)

# The layers of docs/architecture.md, bottom first: a module imports only from its own layer or lower ones.
# A module belongs to the layer of its longest matching prefix (a bare package name means its __init__).
SDK_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "SDK foundations",
        (
            "durabletask._proto",
            "durabletask.internal",
            "durabletask._errors",
            "durabletask._json_codec",
            "durabletask._logging",
            "durabletask._grpc_polling",
            "durabletask._coercion",
            "durabletask.exception_properties",
            "durabletask._registry",
            "durabletask._protocol_extensions",
            "durabletask._trace_context",
            "durabletask._attach",
            "durabletask.payload",
        ),
    ),
    (
        "replay core and models",
        (
            "durabletask._replay",
            "durabletask._codec",
            "durabletask.task",
            "durabletask.entities",
            "durabletask.history",
            "durabletask.serialization",
            "durabletask.grpc_options",
            "durabletask._instance_models",
            "durabletask._streams",
        ),
    ),
    (
        "scheduled-task entity and models",
        (
            "durabletask.scheduled._timing",
            "durabletask.scheduled._wire",
            "durabletask.scheduled.exceptions",
            "durabletask.scheduled.models",
            "durabletask.scheduled.orchestrator",
            "durabletask.scheduled.schedule_entity",
            "durabletask.scheduled.schedule_status",
            "durabletask.scheduled.transitions",
        ),
    ),
    ("gRPC and tracing", ("durabletask._grpc", "durabletask._tracing")),
    ("client and worker", ("durabletask._client", "durabletask._worker")),
    (
        "SDK entry points",
        (
            "durabletask",
            "durabletask.client",
            "durabletask.worker",
            "durabletask.azuremanaged",
            "durabletask.cli",
            "durabletask._cli",
            "durabletask._replay_check",
            "durabletask.scheduled",
            "durabletask.scheduled._ops",
            "durabletask.scheduled.client",
            "durabletask.extensions",
            "durabletask.streams",
            "dtscale_emulator.dashboard",
        ),
    ),
]
EMULATOR_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "emulator foundations",
        (
            "dtscale_emulator.errors",
            "dtscale_emulator.protocol",
            "dtscale_emulator.limits",
            "dtscale_emulator.ops.clock",
            "dtscale_emulator.ops.aio_loop",
            "dtscale_emulator.ops.stop_signal",
            "dtscale_emulator.rpc.auth",
            "dtscale_emulator.engine.events",
            "dtscale_emulator.engine.work",
            "dtscale_emulator.engine.changes",
        ),
    ),
    ("storage", ("dtscale_emulator.storage",)),
    ("state machine", ("dtscale_emulator.engine.state_machine", "dtscale_emulator.engine.actions")),
    ("engine", ("dtscale_emulator.engine",)),
    ("WorkDispatcher", ("dtscale_emulator.dispatch", "dtscale_emulator.ops.tracing")),
    ("RPC surface", ("dtscale_emulator.rpc", "dtscale_emulator.ops.faults")),
    ("dashboard", ("dtscale_emulator.dashboard",)),
    (
        "emulator server",
        (
            "dtscale_emulator",
            "dtscale_emulator.server",
            "dtscale_emulator.__main__",
            "dtscale_emulator.ops.healthcheck",
        ),
    ),
]
# The emulator distribution imports nothing of the SDK, so its layers lie below all of the SDK's: the SDK's
# in-process test backend starts the emulator, and its `durabletask dashboard` command serves the emulator's
# dashboard.
LAYERS = [*EMULATOR_LAYERS, *SDK_LAYERS, ("in-memory test backend", ("durabletask.testing",))]

# Public data models: what the protocol converter converts, so they must not need it.
MODELS = ("durabletask.task", "durabletask.history", "durabletask.entities", "durabletask._instance_models")
UPPER = ("durabletask._worker", "durabletask._client", "durabletask._grpc")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # path:line of the import statement

    def __str__(self) -> str:
        return f"{self.where}: {self.source} -> {self.target}"


def module_name(path: Path, home: Path) -> str:
    parts = list(path.relative_to(home).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, Path]:
    return {
        module_name(path, home): path
        for package, home in PACKAGE_HOMES.items()
        for path in sorted((home / package).rglob("*.py"))
    }


def within(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _imported(source: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    known = modules()
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: resolve against the importing module's package
        package = source.split(".") if path.name == "__init__.py" else source.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    for alias in node.names:
        # ``from package import module`` imports the module; ``from module import name`` the module itself.
        candidate = f"{base}.{alias.name}"
        yield candidate if candidate in known else base


@functools.cache
def edges() -> tuple[Edge, ...]:
    found: list[Edge] = []
    for source, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.extend(Edge(source, target, where) for target in _imported(source, path, node))
    return tuple(found)


def internal_edges() -> list[Edge]:
    known = modules()
    return [e for e in edges() if e.target in known and e.target != e.source]


def broken(sources: Iterable[str], forbidden: Iterable[str]) -> list[str]:
    sources, forbidden = tuple(sources), tuple(forbidden)
    return [str(e) for e in edges() if within(e.source, sources) and within(e.target, forbidden)]


def no_edges(found: list[str], rule: str) -> None:
    if found:
        pytest.fail(f"{rule}; these imports break it:\n  " + "\n  ".join(found))


def layer_of(name: str) -> int:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for level, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # A top-level package name stands for its __init__ only, so every other module must be placed.
            matches = name == prefix if prefix in PACKAGES else within(name, [prefix])
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), level)
    if best is None:
        raise AssertionError(f"{name} is in no layer; add it to LAYERS and to docs/architecture.md")
    return best[1]


def test_the_graph_is_read() -> None:
    # Guards the checks below against passing on an empty or misread graph.
    targets = {e.target for e in edges() if e.source == "durabletask._replay.executor"}
    assert {"durabletask._registry", "durabletask._replay.handlers"} <= targets
    assert "dtscale_emulator.storage" in {e.target for e in edges() if e.source == "dtscale_emulator.engine.instances"}


def test_every_import_points_to_the_same_or_a_lower_layer() -> None:
    upward = [
        f"{e} ({LAYERS[layer_of(e.source)][0]} -> {LAYERS[layer_of(e.target)][0]})"
        for e in internal_edges()
        if layer_of(e.target) > layer_of(e.source)
    ]
    no_edges(upward, "imports point down the layers of docs/architecture.md")


def test_the_replay_core_imports_no_worker_client_or_grpc() -> None:
    no_edges(broken(["durabletask._replay"], [*UPPER, "grpc"]), "the replay core imports no worker, client or gRPC")


# Packages whose modules share a layer in LAYERS still stack: the one on the left sits above the one on the
# right, so it may import it but never the reverse. A piece both need lives below both.
PACKAGE_ORDER = (
    ("durabletask._client", "durabletask._grpc"),
    ("durabletask._worker", "durabletask._client"),
    ("durabletask._replay", "durabletask.entities"),
)


def test_packages_of_one_layer_point_one_way() -> None:
    found = [edge for upper, lower in PACKAGE_ORDER for edge in broken([lower], [upper])]
    no_edges(found, "a lower package imports nothing of the one above it")


def test_models_do_not_import_the_grpc_layer() -> None:
    no_edges(broken(MODELS, ["durabletask._grpc", "grpc"]), "models do not import the gRPC layer")


def test_the_emulator_imports_nothing_of_the_sdk() -> None:
    # It installs beside any SDK, Microsoft's included, whose files may then sit in ``durabletask/``.
    no_edges(broken(["dtscale_emulator"], ["durabletask"]), "the emulator distribution imports nothing of durabletask")


def test_the_sdk_uses_the_emulator_only_for_testing_and_the_dashboard() -> None:
    allowed = {
        "durabletask.testing": ("dtscale_emulator",),
        "durabletask._cli.commands.dashboard": ("dtscale_emulator.dashboard",),
        # `durabletask langgraph dev` runs the emulator in its own process, as `langgraph dev` runs its server.
        "durabletask.extensions.langgraph._server.launch": ("dtscale_emulator",),
    }
    found = [
        str(e)
        for e in edges()
        if within(e.source, ["durabletask"])
        and within(e.target, ["dtscale_emulator"])
        and not any(within(e.source, [src]) and within(e.target, targets) for src, targets in allowed.items())
    ]
    no_edges(found, "the SDK imports the emulator only in durabletask.testing, the dashboard and langgraph dev")


def test_the_dashboard_reaches_an_endpoint_only_through_the_protocol() -> None:
    # It serves any DTS endpoint, so it may not lean on the emulator's engine, storage or RPC internals.
    inside = ["dtscale_emulator.dashboard", "dtscale_emulator.protocol", "dtscale_emulator.ops.aio_loop"]
    found = [
        str(e)
        for e in edges()
        if within(e.source, ["dtscale_emulator.dashboard"])
        and within(e.target, ["dtscale_emulator"])
        and not within(e.target, inside)
    ]
    no_edges(found, "the dashboard uses the emulator's protocol stubs only")


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for e in internal_edges():
        graph[e.source].add(e.target)
        # Importing a.b.c runs a and a.b first: a package's __init__ imports are dependencies too.
        parts = e.target.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent in graph and not within(e.source, [parent]):
                graph[e.source].add(parent)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_find_cycle_reports_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles() -> None:
    cycle = find_cycle(_graph())
    if cycle is None:
        return
    where = {(e.source, e.target): e.where for e in internal_edges()}
    steps = [f"{a} -> {b} ({where.get((a, b), 'via its package __init__')})" for a, b in itertools.pairwise(cycle)]
    pytest.fail("import cycle:\n  " + "\n  ".join(steps))


EXTENSION_HOMES = (
    ROOT / "durabletask" / "_protocol_extensions.py",
    ROOT / "emulator" / "dtscale_emulator" / "protocol" / "extensions.py",
)
BUILD_OUTPUT = {"build", "dist"}
EXTENSION_NAMES = (
    "EXTENDED_SESSIONS_CAPABILITY",
    "INCLUDE_PAST_EVENTS",
    "WORKER_VIEW_SERVICE",
    "WORKER_VIEW_METHOD",
    "ENTITY_WAIT_MS",
    "ENTITY_VERSION",
    "ENTITY_WAIT_INSTANCE",
)


def test_the_private_protocol_extensions_are_defined_once_per_distribution() -> None:
    definitions = []
    for top in ("durabletask", "emulator", "tests"):
        for path in sorted((ROOT / top).rglob("*.py")):
            # A wheel built from the checkout leaves copies in build/ (git-ignored): they are not sources.
            if path in EXTENSION_HOMES or BUILD_OUTPUT.intersection(path.relative_to(ROOT).parts):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                targets = getattr(node, "targets", [getattr(node, "target", None)])
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                assigned = isinstance(node, ast.Assign | ast.AnnAssign) and bool(set(EXTENSION_NAMES) & set(names))
                extension_values = (1001, "IncludePastEvents")
                literal = top != "tests" and isinstance(node, ast.Constant) and node.value in extension_values
                if assigned or literal:
                    definitions.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    no_edges(definitions, "the extensions' values are defined only in their one module per distribution")


def test_both_distributions_define_the_same_extensions() -> None:
    # The two sides of one wire contract, kept in two packages that do not import each other.
    from dtscale_emulator.protocol import extensions as emulator
    from durabletask import _protocol_extensions as sdk

    assert {n: getattr(sdk, n) for n in EXTENSION_NAMES} == {n: getattr(emulator, n) for n in EXTENSION_NAMES}


# The suite's own layers, bottom first: each folder under tests/ is one, and a test module imports only from its
# own layer or lower ones (the top-level conftest counts as support). docs/architecture.md describes each.
TEST_LAYERS = ("support", "unit", "e2e", "interop", "integration", "system", "langgraph_server")
TESTS = ROOT / "tests"


def _test_layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "tests":
        return None
    if len(parts) == 1 or parts[1] == "conftest":
        return 0
    return TEST_LAYERS.index(parts[1]) if parts[1] in TEST_LAYERS else None


def _test_imports(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)


def test_the_suite_has_one_folder_per_layer_and_only_house_checks_beside_them() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(TEST_LAYERS)
    files = {p.name for p in TESTS.glob("*.py")}
    assert files - {"__init__.py", "conftest.py"} == {p.name for p in TESTS.glob("test_*.py")}
    assert not list((TESTS / "support").rglob("test_*.py")), "tests/support holds helpers, not tests"


def test_every_test_module_imports_only_its_own_layer_of_the_suite_or_lower_ones() -> None:
    found = []
    for own, layer in enumerate(TEST_LAYERS):
        for path in sorted((TESTS / layer).rglob("*.py")):
            for line, module in _test_imports(path):
                target = _test_layer(module)
                if target is None and module.startswith("tests."):
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {module}, in no layer of the suite")
                elif target is not None and target > own:
                    found.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports {module} ({TEST_LAYERS[target]})")
    no_edges(found, "a test module imports only from its own layer of the suite or lower ones")


def test_a_layer_of_the_suite_that_imports_a_higher_one_is_reported() -> None:
    assert _test_layer("tests.system.recovery.worker_app") == TEST_LAYERS.index("system")
    assert _test_layer("tests.conftest") == 0 and _test_layer("tests.elsewhere") is None
    assert _test_layer("durabletask.task") is None
