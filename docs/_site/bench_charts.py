"""Bar charts of the ratios recorded in bench/RESULTS.md, drawn as plain HTML and CSS at build time.

Every table of the results whose column holds ratios (cells such as ``1.21x`` or ``0.74x``) becomes a chart under
the heading of its section, one bar per row, so the figures are looked at rather than read and cannot fall out of
step with the file.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

_RATIO = re.compile(r"^\**\s*(\d+(?:\.\d+)?)\s*x\s*\**$")
_ROW = re.compile(r"^\|.*\|\s*$")
_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(section heading, header cells, rows) of every Markdown table, outside code fences."""
    found, section, fenced = [], "", False
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            section = line[3:].strip()
        elif not fenced and _ROW.match(line) and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            header, rows, i = _cells(line), [], i + 2
            while i < len(lines) and _ROW.match(lines[i]):
                rows.append(_cells(lines[i]))
                i += 1
            found.append((section, header, rows))
            continue
        i += 1
    return found


def _ratio_columns(header: list[str], rows: list[list[str]]) -> list[int]:
    columns = []
    for col in range(1, len(header)):
        cells = [r[col] for r in rows if col < len(r) and r[col]]
        ratios = [c for c in cells if _RATIO.match(c)]
        if len(ratios) >= 2 and len(ratios) * 2 >= len(cells):
            columns.append(col)
    return columns


def _chart(title: str, bars: list[tuple[str, float]]) -> str:
    # Widths on a log scale around 1x: ratios span 0.5x to hundreds, and 1x (parity) sits at a fixed mark.
    top = max(math.log10(max(v, 1.0)) for _, v in bars) or 1.0
    bottom = min(math.log10(min(v, 1.0)) for _, v in bars)
    span = top - bottom or 1.0
    parity = 100 * (0 - bottom) / span
    out = [f'<figure class="bench-chart"><figcaption>{html.escape(title)}</figcaption>']
    for label, value in bars:
        left = 100 * (min(math.log10(value), 0) - bottom) / span if value > 0 else 0
        width = max(100 * abs(math.log10(value)) / span, 0.5) if value > 0 else 0.5
        side = "above" if value >= 1 else "below"
        out.append(
            f'<div class="bench-row"><span class="bench-label">{html.escape(label)}</span>'
            f'<span class="bench-track"><span class="bench-parity" style="left:{parity:.1f}%"></span>'
            f'<span class="bench-bar bench-{side}" style="left:{left:.1f}%;width:{width:.1f}%"></span></span>'
            f'<span class="bench-value">{value:g}x</span></div>'
        )
    out.append("</figure>")
    return "\n".join(out)


def render(path: Path) -> str:
    """Markdown with an HTML bar chart for every ratio column of the tables in ``path``, by section."""
    out: list[str] = []
    current = None
    for section, header, rows in _tables(path.read_text(encoding="utf-8")):
        for col in _ratio_columns(header, rows):
            bars = []
            for row in rows:
                match = _RATIO.match(row[col]) if col < len(row) else None
                if match:
                    label = " · ".join(c.strip("*` ") for c in row[: min(col, 2)] if c) or "(row)"
                    bars.append((label, float(match.group(1))))
            if not bars:
                continue
            if section != current:
                out += [f"### {section}", ""]
                current = section
            title = f"{header[col] or 'ratio'} (by {header[0] or 'row'})"
            out += [_chart(title, bars), ""]
    return "\n".join(out)
