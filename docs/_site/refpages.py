"""The public modules whose API reference the site generates, found in the source tree without importing it.

A module is public when no part of its dotted name starts with an underscore and it is not under an ``internal``
package (Microsoft's layout keeps implementation details there). The emulator's public surface is its top-level
package, whose ``__all__`` names what it exports.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "durabletask"
EMULATOR_SURFACE = ("dtscale_emulator",)


def sdk_modules() -> list[str]:
    """Dotted names of the SDK's public modules and packages, sorted."""
    found = []
    for path in SDK.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(p.startswith("_") or p == "internal" for p in parts):
            continue
        found.append(".".join(parts))
    return sorted(found)


def public_modules() -> list[str]:
    """Every module the API reference has a page for: the SDK's public modules, then the emulator's surface."""
    return [*sdk_modules(), *EMULATOR_SURFACE]


def _in_namespace_package(module: str) -> bool:
    """Whether ``module`` sits in a folder without ``__init__.py``, which mkdocstrings' static analysis skips."""
    parts = module.split(".")
    roots = (ROOT, ROOT / "emulator")
    return any(
        (root.joinpath(*parts[:i])).is_dir() and not (root.joinpath(*parts[:i]) / "__init__.py").exists()
        for root in roots
        for i in range(2, len(parts))
    )


def _runtime_section(package: str, name: str, obj: Any) -> str:
    """A reference entry for ``obj`` read from the imported object: its signature, docstring and public methods."""
    out = [f"## `{name}` {{#{package}.{name}}}", ""]
    try:
        signature = f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        signature = name
    keyword = "class " if inspect.isclass(obj) else ""
    out += ["```python", f"{keyword}{signature}", "```", "", inspect.getdoc(obj) or "", ""]
    if inspect.isclass(obj):
        for attr, value in vars(obj).items():
            if attr.startswith("_") or not callable(value):
                continue
            doc = inspect.getdoc(getattr(obj, attr)) or ""
            out += [f"### `{name}.{attr}` {{#{package}.{name}.{attr}}}", "", "```python",
                    f"{attr}{inspect.signature(value)}", "```", "", doc, ""]
    return "\n".join(out)


def reference_page(module: str) -> str:
    """The Markdown of ``module``'s reference page: mkdocstrings renders its public members from the source.

    Names the module exports from a namespace package (the emulator's layers are folders without ``__init__.py``)
    are beyond mkdocstrings' static analysis, which would leave them out without a word: they are rendered from
    the imported objects instead.
    """
    page = f"# `{module}`\n\n::: {module}\n"
    imported = importlib.import_module(module)
    for name in getattr(imported, "__all__", ()):
        obj = getattr(imported, name)
        if _in_namespace_package(getattr(obj, "__module__", "") or ""):
            page += "\n" + _runtime_section(module, name, obj)
    return page
