"""``durabletask.task`` and ``durabletask.serialization`` offer every name and parameter Microsoft's 1.12 does.

Extra parameters of ours must be optional keywords, so every call written for Microsoft's SDK works here.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.interop

MODULES = {
    "durabletask.task": [
        "OrchestrationContext", "ReplaySafeLogger", "FailureDetails", "TaskFailedError", "NonDeterminismError",
        "OrchestrationStateError", "TaskCancelledError", "Task", "CompositeTask", "WhenAllTask", "CompletableTask",
        "CancellableTask", "RetryableTask", "TimerTask", "WhenAnyTask", "when_all", "when_any", "ActivityContext",
        "Orchestrator", "Activity", "Entity", "RetryPolicy", "get_entity_name", "get_name",
    ],
    "durabletask.serialization": ["DataConverter", "JsonDataConverter", "DEFAULT_DATA_CONVERTER"],
    "durabletask.entities": ["EntityContext", "DurableEntity", "EntityInstanceId", "EntityLock"],
}
# Constructors the runtime owns; user code never builds these (none at present: RetryableTask takes Microsoft's).
INTERNAL_SIGNATURES: set[str] = set()

_DESCRIBE = r'''
import importlib, inspect, json, sys

def params(fn):
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [[p.name, p.kind.name, None if p.default is p.empty else repr(p.default)]
            for p in signature.parameters.values()]

def describe(modules):
    out = {}
    for module_name, names in modules.items():
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name, None)
            key = f"{module_name}.{name}"
            if obj is None:
                out[key] = None
                continue
            entry = {"members": {}}
            if inspect.isfunction(obj):
                entry["members"][""] = params(obj)
            elif inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if member.startswith("_") and member != "__init__":
                        continue
                    if isinstance(value, property):
                        entry["members"][member] = "property"
                    elif inspect.isfunction(value):
                        entry["members"][member] = params(value)
            out[key] = entry
    return out

print(json.dumps(describe(json.loads(sys.argv[1]))))
'''


def describe_ours() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(_DESCRIBE.replace("print(json.dumps(describe(json.loads(sys.argv[1]))))", ""), namespace)
    result: dict[str, Any] = namespace["describe"](MODULES)
    return result


@pytest.fixture(scope="module")
def theirs(peer_py: Path) -> dict[str, Any]:
    done = subprocess.run([str(peer_py), "-c", _DESCRIBE, json.dumps(MODULES)], capture_output=True, check=False,
                          cwd=tempfile.gettempdir(), env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    described: dict[str, Any] = json.loads(done.stdout)
    return described


def _compatible(mine: list[list[Any]], reference: list[list[Any]]) -> str | None:
    by_name = {p[0]: p for p in mine}
    for name, kind, default in reference:
        if name not in by_name:
            return f"missing parameter {name}"
        _, my_kind, my_default = by_name[name]
        if my_kind != kind:
            return f"parameter {name} is {my_kind}, expected {kind}"
        if default is not None and my_default is None:
            return f"parameter {name} must have a default"
    positional_kinds = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    my_positional = [p[0] for p in mine if p[1] in positional_kinds]
    ref_positional = [p[0] for p in reference if p[1] in positional_kinds]
    if my_positional[:len(ref_positional)] != ref_positional:
        return "positional parameters differ"
    reference_names = {p[0] for p in reference}
    for name, kind, default in mine:
        if name not in reference_names and kind not in ("VAR_KEYWORD", "VAR_POSITIONAL") and default is None:
            return f"extra parameter {name} must be optional"
    return None


def test_every_public_name_and_parameter_is_offered(theirs: dict[str, Any]) -> None:
    ours = describe_ours()
    problems = []
    for key, reference in theirs.items():
        mine = ours.get(key)
        if mine is None:
            problems.append(f"{key}: missing")
            continue
        for member, ref_params in reference["members"].items():
            qualified = f"{key}.{member}" if member else key
            if member not in mine["members"] and not hasattr(_resolve(key), member or "__call__"):
                problems.append(f"{qualified}: missing")
                continue
            if not isinstance(ref_params, list) or qualified in INTERNAL_SIGNATURES:
                continue
            my_params = mine["members"].get(member) or _params_of(_resolve(key), member)
            problem = _compatible(my_params, ref_params) if my_params is not None else "not inspectable"
            if problem:
                problems.append(f"{qualified}: {problem}")
    assert not problems, "\n".join(problems)


def _resolve(key: str) -> Any:
    module_name, _, name = key.rpartition(".")
    module = __import__(module_name, fromlist=[name])
    return getattr(module, name)


def _params_of(obj: Any, member: str) -> list[list[Any]] | None:
    # Inherited members are not in vars(cls); look them up through the class.
    fn = getattr(obj, member, None) if member else obj
    if fn is None:
        return None
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [[p.name, p.kind.name, None if p.default is p.empty else repr(p.default)]
            for p in signature.parameters.values()]
