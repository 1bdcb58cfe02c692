"""Constructor keywords and defaults match the compatible package's azuremanaged classes.

Reads the compatible package's source (never imports it) and skips when it is not installed.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from tests.conftest import peer_python


def _peer_package() -> Path:
    python = peer_python()
    if python is None:
        return Path("/nonexistent")
    found = sorted(python.parent.parent.glob("lib/python3*/site-packages/durabletask/azuremanaged"))
    return found[0] if found else Path("/nonexistent")


PEER_PACKAGE = _peer_package()

CLASSES = [
    ("client", "DurableTaskSchedulerClient"),
    ("client", "AsyncDurableTaskSchedulerClient"),
    ("worker", "DurableTaskSchedulerWorker"),
]


def _peer_keywords(module: str, class_name: str) -> dict[str, str | None]:
    """``{keyword: default source or None}`` of the compatible class's ``__init__``."""
    source = PEER_PACKAGE / f"{module}.py"
    if not source.exists():
        pytest.skip(f"the compatible package is not installed at {PEER_PACKAGE}")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
            defaults = [None if d is None else ast.unparse(d) for d in init.args.kw_defaults]
            return {arg.arg: default for arg, default in zip(init.args.kwonlyargs, defaults, strict=True)}
    raise AssertionError(f"{class_name} not found in {source}")


@pytest.mark.parametrize(("module", "class_name"), CLASSES)
def test_constructor_keywords_and_defaults_match(module: str, class_name: str) -> None:
    expected = _peer_keywords(module, class_name)
    cls = getattr(importlib.import_module(f"durabletask.azuremanaged.{module}"), class_name)
    parameters = inspect.signature(cls.__init__).parameters
    ours = {
        name: None if p.default is inspect.Parameter.empty else repr(p.default)
        for name, p in parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert ours == expected
