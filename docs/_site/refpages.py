"""The public modules whose API reference the site generates, found in the source tree without importing it.

A module is public when no part of its dotted name starts with an underscore and it is not under an ``internal``
package (Microsoft's layout keeps implementation details there). The emulator's public surface is its top-level
package, whose ``__all__`` names what it exports.
"""

from __future__ import annotations

from pathlib import Path

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


def reference_page(module: str) -> str:
    """The Markdown of ``module``'s reference page: mkdocstrings renders its public members from the source."""
    return f"# `{module}`\n\n::: {module}\n"
