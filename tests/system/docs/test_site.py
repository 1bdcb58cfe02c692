"""The documentation site builds strictly: a broken link or anchor, a missing page, a reference that does not
resolve or a docstring that fails to render fails the build, and so this test.

The build runs offline from the packages of the dev extra (mkdocs, mkdocs-material, mkdocstrings[python]).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.system.docs.public_api import ROOT, exported, public_modules

MKDOCS = [sys.executable, "-m", "mkdocs"]
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def _build(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MKDOCS, "build", "--strict", "--config-file", str(config), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=240,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("docs")
    proc = _build(tmp_path, ROOT / "mkdocs.yml")
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0, "the site does not build strictly:\n" + "\n".join(warnings or [proc.stderr[-5000:]])
    return tmp_path / "site"


@pytest.mark.timeout(300)
def test_every_public_module_has_a_rendered_reference_page(site: Path) -> None:
    for module in public_modules():
        page = site / "reference" / "api" / module / "index.html"
        assert page.is_file(), f"no reference page for {module}"
        assert 'class="doc doc-object doc-module"' in page.read_text(encoding="utf-8"), f"{module}: nothing rendered"
    client = (site / "reference" / "api" / "durabletask.client" / "index.html").read_text(encoding="utf-8")
    assert 'id="durabletask.client.TaskHubGrpcClient.schedule_new_orchestration"' in client


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its subcommands, at any depth, but the help flags."""
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
        elif not isinstance(action, argparse._HelpAction):
            found.update(action.option_strings)
    return found


@pytest.mark.timeout(300)
def test_the_reference_shows_every_name_a_public_module_exports(site: Path) -> None:
    missing = []
    for module_name in public_modules():
        html = (site / "reference" / "api" / module_name / "index.html").read_text(encoding="utf-8")
        missing += [f"{module_name}.{name}" for name, _ in exported(importlib.import_module(module_name))
                    if f'id="{module_name}.{name}"' not in html]
    assert not missing, f"names missing from the API reference: {missing}"


@pytest.mark.timeout(300)
def test_the_command_references_list_every_option_the_parsers_have(site: Path) -> None:
    from dtscale_emulator.__main__ import build_parser as emulator_parser
    from durabletask._cli.parser import build_parser

    for page, parser in (("cli-durabletask", build_parser()), ("cli-durabletask-emulator", emulator_parser())):
        html = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        for option in _options(parser):
            assert f"<code>{option}</code>" in html, f"{page} does not show {option}"
    assert "durabletask schedules create" in (site / "reference" / "cli-durabletask" / "index.html").read_text()


@pytest.mark.timeout(300)
def test_the_benchmark_page_draws_the_ratios_of_the_results(site: Path) -> None:
    html = (site / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert html.count('class="bench-chart"') >= 5


@pytest.mark.timeout(300)
def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    # A copy of the site's configuration over a docs folder holding only one page whose link leads nowhere.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](no-such-page.md).\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        "site_name: probe\nstrict: true\ndocs_dir: docs\nvalidation:\n  not_found: warn\n  anchors: warn\n",
        encoding="utf-8",
    )
    proc = _build(tmp_path, config)
    assert proc.returncode != 0 and "no-such-page.md" in proc.stderr, proc.stderr[-2000:]


def test_the_readme_is_short_and_its_links_lead_to_files_that_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200, "README.md is the short overview; the rest belongs on a page of docs/"
    assert "python3 dev.py demo" in text and "python3 dev.py test" in text
    targets = re.findall(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)", text)
    local = [t.split("#", 1)[0] for t in targets if not re.match(r"^[a-z]+:|^#", t)]
    assert any(t.startswith("docs/") for t in local), "the README links into the site"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_dev_py_builds_or_serves_the_site() -> None:
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    assert dev.docs_command([])[-2:] == ["mkdocs", "build"]
    assert dev.docs_command(["--serve", "-a", "127.0.0.1:9000"])[-4:] == ["mkdocs", "serve", "-a", "127.0.0.1:9000"]
