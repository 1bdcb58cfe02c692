"""Every ```python block of docs/ and README.md runs on the embedded emulator, or says why it cannot.

The blocks of one page run in order in one fresh interpreter, sharing their names like the cells of a notebook,
so a page may set something up once and use it in later blocks. Each block is compiled under its own file and
line, so a failure's traceback names the page and the line of the example.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.system.docs.markdown_blocks import ROOT, Block, MarkerError, pages, python_blocks

_RUNNER = """
import json, sys
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for where, line, code in blocks:
    print(f"--- {where}", flush=True)
    exec(compile("\\n" * (line) + code, where.rsplit(":", 1)[0], "exec"), namespace)
"""


def _runnable(page: Path) -> list[Block]:
    return [b for b in python_blocks(page) if b.norun is None]


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


RUNNABLE = [p for p in pages() if _runnable(p)]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("page", RUNNABLE, ids=_page_id)
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path) -> None:
    blocks = [[b.where, b.line, b.code] for b in _runnable(page)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(blocks),
        cwd=tmp_path,  # files an example writes land here
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, f"{_page_id(page)}: an example failed\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"


def test_every_block_that_does_not_run_says_why() -> None:
    problems = []
    for page in pages():
        try:
            python_blocks(page)
        except MarkerError as error:
            problems.append(str(error))
    assert not problems, "\n".join(problems)


def test_the_marker_convention() -> None:
    text = "\n".join([
        "```python", "a = 1", "```",
        "<!-- norun: needs managed DTS -->", "```python", "b = 2", "```",
        "* a list item:", "", "  ```python", "  c = 3", "  ```",
        "```bash", "echo not python", "```",
    ])
    blocks = python_blocks(ROOT / "README.md", text)
    assert [(b.line, b.code, b.norun) for b in blocks] == [
        (1, "a = 1\n", None), (5, "b = 2\n", "needs managed DTS"), (10, "c = 3\n", None),
    ]
    with pytest.raises(MarkerError, match="must say why"):
        python_blocks(ROOT / "README.md", "<!-- norun -->\n```python\nx = 1\n```")
    with pytest.raises(MarkerError, match="must say why"):
        python_blocks(ROOT / "README.md", "<!-- norun: -->\n```python\nx = 1\n```")
