"""The ```python blocks of the documentation, with the convention that exempts one from running.

A block runs unless the line right before its opening fence is ``<!-- norun: <reason> -->``; the reason is
required. A page's ``<!-- include: path -->`` marker (expanded by the site's hooks) brings the included file's
blocks into the page at that point, so what the site shows is what runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
NORUN = re.compile(r"^<!--\s*norun\b(?P<rest>.*?)-->$")
_REASON = re.compile(r"^:\s*(?P<reason>\S.*?)\s*$")
_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
_INCLUDE = re.compile(r"^<!-- include: (?P<path>\S+) -->$")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: where it starts, its code, and why it does not run (None when it runs)."""

    source: Path
    line: int
    code: str
    norun: str | None

    @property
    def where(self) -> str:
        return f"{self.source.relative_to(ROOT)}:{self.line}"


class MarkerError(ValueError):
    """A ``norun`` marker without a reason."""


def pages() -> list[Path]:
    """Every Markdown page of the site's source, and the README."""
    found = [p for p in DOCS.rglob("*.md") if "_site" not in p.relative_to(DOCS).parts]
    return [*sorted(found), ROOT / "README.md"]


def python_blocks(source: Path, text: str | None = None) -> list[Block]:
    """The Python blocks of ``source`` in order, those of files it includes in their place."""
    lines = (source.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        include = _INCLUDE.match(lines[i])
        if include:
            blocks += python_blocks(ROOT / include["path"])
        opening = _OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, lang = opening["indent"], opening["fence"], opening["lang"].lower()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if lang in {"python", "py"}:
            blocks.append(Block(source, i + 1, "\n".join(body) + "\n", _norun(source, lines, i)))
        i = j + 1
    return blocks


def _norun(source: Path, lines: list[str], fence: int) -> str | None:
    before = lines[fence - 1].strip() if fence > 0 else ""
    marker = NORUN.match(before)
    if marker is None:
        return None
    reason = _REASON.match(marker["rest"].strip())
    if reason is None:
        raise MarkerError(f"{source.relative_to(ROOT)}:{fence}: a norun marker must say why: <!-- norun: <reason> -->")
    return reason["reason"]
