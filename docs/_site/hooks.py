"""MkDocs hooks of the documentation site: the generated API and command-line reference, repository files
included into pages, links into the repository, and pages that join the navigation without being listed.

Everything here is read from the code and the repository at build time, so the site cannot drift from them.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# MkDocs puts this file's folder on sys.path while it loads the hooks.
import bench_charts
import cli_reference
import refpages
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.dtscale")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE_SECTION = "Reference"
API_DIR = "reference/api"
# A page in docs/ that the nav of mkdocs.yml does not list joins this section, so a new guide needs no other edit.
UNLISTED_SECTION = "Guides"
# Repository files that pages link to are published under this folder of the site.
SOURCE_DIR = "source"

# Repository files included into a page (<!-- include: path -->), and that page: links to the file lead there.
_INCLUDED: dict[Path, str] = {}
_INCLUDE = re.compile(r"^<!-- include: (?P<path>\S+) -->$", re.MULTILINE)
_CLI = re.compile(r"^<!-- cli-reference: (?P<prog>\S+) -->$", re.MULTILINE)
_CHARTS = re.compile(r"^<!-- bench-charts: (?P<path>\S+) -->$", re.MULTILINE)
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,5}) ", re.MULTILINE)
_FENCE = re.compile(r"^\s*(```|~~~)")


def _nav_paths(nav: Any) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_paths(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_paths(value)


def _section(nav: list[Any], title: str) -> list[Any]:
    for item in nav:
        if isinstance(item, dict) and title in item and isinstance(item[title], list):
            return item[title]  # type: ignore[no-any-return]
    raise ValueError(f"mkdocs.yml: the nav has no section {title!r}")


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").replace("_", " ").capitalize()


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds a reference page per public module, and puts unlisted pages of docs/ in the Guides section."""
    nav = config.nav
    assert isinstance(nav, list), "mkdocs.yml must list a nav"
    listed = set(_nav_paths(nav))
    api = _section(_section(nav, REFERENCE_SECTION), "API")
    for module in refpages.public_modules():
        uri = f"{API_DIR}/{module}.md"
        files.append(File.generated(config, uri, content=refpages.reference_page(module)))
        api.append({module: uri})
    unlisted = sorted(
        f.src_uri
        for f in files
        if f.is_documentation_page() and not f.generated_by and f.src_uri not in listed
        and f.inclusion is InclusionLevel.INCLUDED
    )
    _INCLUDED.clear()
    for f in files:
        if f.is_documentation_page() and not f.generated_by:
            for match in _INCLUDE.finditer(Path(f.abs_src_path or "").read_text(encoding="utf-8")):
                _INCLUDED[(ROOT / match["path"]).resolve()] = f.src_uri
    guides = _section(nav, UNLISTED_SECTION)
    for uri in unlisted:
        guides.append({_title(DOCS / uri): uri})
    return files


def _shift_headings(text: str) -> str:
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        out.append("#" + line if not fenced and _HEADING.match(line) else line)
    return "\n".join(out)


def _include(match: re.Match[str], page: Page) -> str:
    path = (ROOT / match["path"]).resolve()
    if not path.is_file():
        log.warning("%s: <!-- include: %s --> names no file of the repository", page.file.src_uri, match["path"])
        return ""
    text = path.read_text(encoding="utf-8")
    body = text.split("\n", 1)[1] if text.startswith("# ") else text  # the page has its own title
    # Links of the included file are relative to its own folder: make them relative to the repository.
    folder = path.parent.relative_to(ROOT)

    def rebase(link: re.Match[str]) -> str:
        target = link["target"]
        if re.match(r"^[a-z]+:|^#|^/", target):
            return link.group(0)
        return f"[{link['text']}]({_page_relative(page, folder / target)})"

    return _LINK.sub(rebase, _shift_headings(body))


def _page_relative(page: Page, repo_path: Path) -> str:
    """``repo_path`` (relative to the repository) as a link from ``page``'s source file."""
    return os.path.relpath(ROOT / repo_path, (DOCS / page.file.src_uri).parent).replace(os.sep, "/")


def _repository_link(match: re.Match[str], page: Page, config: MkDocsConfig, files: Files) -> str:
    """A link from a page to a repository file outside docs/ points at the file's copy published with the site."""
    target = match["target"]
    if re.match(r"^[a-z]+:|^#|^/", target):
        return match.group(0)
    path_part, _, anchor = target.partition("#")
    resolved = ((DOCS / page.file.src_uri).parent / path_part).resolve()
    if resolved.is_relative_to(DOCS) or not resolved.is_relative_to(ROOT):
        return match.group(0)  # a page of the site (MkDocs checks it) or something it reports as not found
    if not resolved.exists():
        log.warning("%s: the link %r names no file of the repository", page.file.src_uri, target)
        return match.group(0)
    repo_path = resolved.relative_to(ROOT).as_posix()
    if resolved == ROOT / "README.md":
        # The README is short and points into the site: a link to it (or to a section it had) leads home.
        return f"[{match['text']}]({_page_relative(page, Path('docs/index.md'))})"
    if resolved in _INCLUDED:
        suffix = f"#{anchor}" if anchor else ""
        return f"[{match['text']}]({_page_relative(page, Path('docs') / _INCLUDED[resolved])}{suffix})"
    if resolved.suffix == ".md":
        log.warning("%s: the link %r leads to a Markdown file of the repository that no page includes",
                    page.file.src_uri, target)
        return match.group(0)
    if resolved.is_dir():
        return f"[{match['text']}]({_repo_url(config)}{repo_path})" if _repo_url(config) else match["text"]
    uri = f"{SOURCE_DIR}/{repo_path}"
    if files.get_file_from_path(uri) is None:
        files.append(File.generated(config, uri, abs_src_path=str(resolved)))
    return f"[{match['text']}]({_page_relative(page, Path('docs') / uri)})"


def _repo_url(config: MkDocsConfig) -> str:
    url = config.repo_url or ""
    return f"{url.rstrip('/')}/tree/main/" if url else ""


def _outside_fences(text: str, transform: Any) -> str:
    parts, chunk, fenced, out = [], [], False, []
    for line in text.split("\n"):
        if _FENCE.match(line):
            if not fenced:
                parts.append(("text", chunk))
                chunk = []
            chunk.append(line)
            if fenced:
                parts.append(("code", chunk))
                chunk = []
            fenced = not fenced
            continue
        chunk.append(line)
    parts.append(("code" if fenced else "text", chunk))
    for kind, lines in parts:
        joined = "\n".join(lines)
        out.append(transform(joined) if kind == "text" else joined)
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Expands the include, CLI-reference and benchmark-chart markers and points repository links at copies."""
    markdown = _INCLUDE.sub(lambda m: _include(m, page), markdown)
    markdown = _CLI.sub(lambda m: cli_reference.render(m["prog"]), markdown)
    markdown = _CHARTS.sub(lambda m: bench_charts.render(ROOT / m["path"]), markdown)
    return _outside_fences(markdown, lambda text: _LINK.sub(lambda m: _repository_link(m, page, config, files), text))
