"""The public names of the SDK and of the emulator's surface, walked from the modules the site documents."""

from __future__ import annotations

import enum
import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
OURS = ("durabletask", "dtscale_emulator")


def _refpages() -> ModuleType:
    # The module list the site's hooks generate reference pages from (docs/_site is not a package).
    sys.path.insert(0, str(ROOT / "docs" / "_site"))
    try:
        return importlib.import_module("refpages")
    finally:
        sys.path.remove(str(ROOT / "docs" / "_site"))


def public_modules() -> list[str]:
    """Every module the API reference has a page for."""
    return list(_refpages().public_modules())


def _ours(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in OURS and "_pb2" not in module and "._proto" not in module


def exported(module: ModuleType) -> Iterator[tuple[str, Any]]:
    """The public names of ``module``: its ``__all__``, or else what it defines without a leading underscore."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", None)
                 == module.__name__]
    for name in names:
        if hasattr(module, name):
            yield name, getattr(module, name)


def _own_doc(obj: Any) -> str:
    return (obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)) or ""


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    for name, value in vars(cls).items():
        if name.startswith("_") or (issubclass(cls, enum.Enum) and not callable(value)):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            yield name, value


def _documented_member(cls: type, name: str, value: Any) -> bool:
    if (getattr(value, "__doc__", None) or "").strip():
        return True
    # An override documented where it is declared (a base class or protocol) keeps that documentation.
    return any(
        (getattr(base.__dict__.get(name), "__doc__", None) or "").strip() for base in cls.__mro__[1:]
    )


def undocumented() -> list[str]:
    """``module.name`` (or ``module.Class.member``) of every public name of ours that has no docstring."""
    missing: list[str] = []
    seen: set[int] = set()
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for _name, obj in exported(module):
            if id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _ours(obj):
                continue
            seen.add(id(obj))
            where = f"{obj.__module__}.{obj.__qualname__}"
            if not _own_doc(obj).strip():
                missing.append(where)
            if inspect.isclass(obj):
                missing += [f"{where}.{n}" for n, v in _members(obj) if not _documented_member(obj, n, v)]
    return sorted(set(missing))


_SKIPPED_PARAMS = {"self", "cls"}
_SECTION = ("Args:", "Arguments:", "Parameters:", "Keyword Args:", "Keyword Arguments:", "Other Parameters:")


def _params(func: Any) -> list[str]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    return [
        p.name for p in signature.parameters.values()
        if p.name not in _SKIPPED_PARAMS and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def documented_params(doc: str) -> set[str]:
    """The names a Google-style docstring documents in its ``Args:`` (or keyword-arguments) sections."""
    names: set[str] = set()
    lines = inspect.cleandoc(doc).splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() not in _SECTION:
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        i += 1
        entry: int | None = None
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            line = lines[i]
            depth = len(line) - len(line.lstrip())
            if line.strip() and (entry is None or depth <= entry):
                entry = depth
                head = line.strip().split(":", 1)[0].split(" (", 1)[0].strip().lstrip("*")
                names.update(n.strip() for n in head.split(","))
            i += 1
    return names


def _member_docs(cls: type | None, name: str, value: Any) -> list[str]:
    docs = [getattr(value, "__doc__", None) or ""]
    if cls is not None:
        docs += [getattr(base.__dict__.get(name), "__doc__", None) or "" for base in cls.__mro__[1:]]
    return docs


def _missing_params(cls: type | None, name: str, func: Any) -> list[str]:
    wanted = _params(func)
    if not wanted:
        return []
    documented: set[str] = set()
    for doc in _member_docs(cls, name, func):
        documented |= documented_params(doc)
    return [p for p in wanted if p not in documented]


def undocumented_params(only: set[str] | None = None) -> dict[str, list[str]]:
    """``module.function`` (or ``module.Class.method``) → the parameters its docstring's ``Args:`` leaves out.

    ``only`` limits the walk to objects defined in those modules (their ``__module__``).
    """
    missing: dict[str, list[str]] = {}
    seen: set[int] = set()
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for _name, obj in exported(module):
            if id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _ours(obj):
                continue
            seen.add(id(obj))
            if only is not None and obj.__module__ not in only:
                continue
            where = f"{obj.__module__}.{obj.__qualname__}"
            if inspect.isfunction(obj):
                if gaps := _missing_params(None, obj.__name__, obj):
                    missing[where] = gaps
                continue
            for member, value in _members(obj):
                if inspect.isfunction(value) and (gaps := _missing_params(obj, member, value)):
                    missing[f"{where}.{member}"] = gaps
    return dict(sorted(missing.items()))
