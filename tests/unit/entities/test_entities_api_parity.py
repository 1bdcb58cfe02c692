"""``durabletask.entities`` offers every name and parameter Microsoft's 1.12 does (extra ones are optional)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.unit.replay.test_api_parity import _DESCRIBE, _compatible, _params_of, _resolve

pytestmark = pytest.mark.interop

MODULES = {
    "durabletask.entities": ["EntityInstanceId", "DurableEntity", "EntityLock", "EntityContext", "EntityMetadata",
                             "EntityOperationFailedException"],
}
# Built by the worker and the runtime only; user code never constructs these.
INTERNAL = {"durabletask.entities.EntityContext.__init__", "durabletask.entities.EntityMetadata.__init__"}


def describe(python: str) -> dict[str, Any]:
    done = subprocess.run([python, "-c", _DESCRIBE, json.dumps(MODULES)], capture_output=True, check=False,
                          cwd=tempfile.gettempdir(), env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    described: dict[str, Any] = json.loads(done.stdout)
    return described


def test_entity_names_and_parameters_match_the_compatible_api(peer_py: Path) -> None:
    theirs = describe(str(peer_py))
    ours = describe_ours()
    problems = []
    for key, reference in theirs.items():
        mine = ours.get(key)
        if mine is None:
            problems.append(f"{key}: missing")
            continue
        for member, ref_params in reference["members"].items():
            qualified = f"{key}.{member}" if member else key
            if not hasattr(_resolve(key), member or "__call__"):
                problems.append(f"{qualified}: missing")
                continue
            if not isinstance(ref_params, list) or qualified in INTERNAL:
                continue
            my_params = mine["members"].get(member) or _params_of(_resolve(key), member)
            problem = _compatible(my_params, ref_params) if my_params is not None else "not inspectable"
            if problem:
                problems.append(f"{qualified}: {problem}")
    assert not problems, "\n".join(problems)


def describe_ours() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(_DESCRIBE.replace("print(json.dumps(describe(json.loads(sys.argv[1]))))", ""), namespace)
    result: dict[str, Any] = namespace["describe"](MODULES)
    return result
