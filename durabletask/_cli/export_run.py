"""Runs a history export from the command line: list terminal instances page by page, export each, checkpoint."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from durabletask import client as dt_client
from durabletask._cli.export_checkpoint import Checkpoint


class Lister(Protocol):
    """The one client call the listing needs (``TaskHubGrpcClient.list_instance_ids``)."""

    def list_instance_ids(
        self,
        runtime_status: list[dt_client.OrchestrationStatus] | None = None,
        completed_time_from: datetime | None = None,
        completed_time_to: datetime | None = None,
        page_size: int | None = None,
        continuation_token: str | None = None,
    ) -> Any: ...


# Exports one instance; returns ``None`` on success or the reason it was not exported.
ExportOne = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Selection:
    """Which instances an export covers: terminal in these statuses, completed in [since, until)."""

    since: datetime
    until: datetime
    statuses: list[dt_client.OrchestrationStatus]
    page_size: int = 100


@dataclass(frozen=True)
class Progress:
    """Counts after each instance: ``done`` of ``total`` handled so far across runs, of which ``failed``."""

    done: int
    total: int | None
    exported_now: int
    failed: int


@dataclass(frozen=True)
class Summary:
    """What one run did and where the export as a whole stands."""

    exported_now: int
    skipped: int
    exported_total: int
    failed: dict[str, str]
    complete: bool
    pages: int


def _pages(lister: Lister, sel: Selection, token: str | None) -> Iterator[tuple[list[str], str | None]]:
    """Pages of matching instance IDs from ``token`` on, each with the token of the page after it."""
    while True:
        page = lister.list_instance_ids(
            runtime_status=sel.statuses,
            completed_time_from=sel.since,
            completed_time_to=sel.until,
            page_size=sel.page_size,
            continuation_token=token,
        )
        yield list(page.items), page.continuation_token
        if page.continuation_token is None:
            return
        token = page.continuation_token


def count_matching(lister: Lister, sel: Selection) -> int:
    """How many instances the selection holds now (a listing pass of IDs only, nothing kept)."""
    counting = Selection(sel.since, sel.until, sel.statuses, page_size=1000)
    return sum(len(ids) for ids, _ in _pages(lister, counting, None))


#: Seconds between checkpoint saves within a page (each page's end, and a run's end however it ends, save too).
SAVE_EVERY = 1.0


class Exporter:
    """Exports a selection with up to ``parallel`` instances in flight, checkpointing as it goes.

    Memory stays bounded by one listing page and ``parallel`` histories, whatever the number of instances.
    Each instance is recorded only after its file is written, and files are named from the instance's
    completion, so a run killed before the record reached the checkpoint file rewrites the same file on
    the re-run instead of adding one. That is what lets the checkpoint be saved once a second (and at each
    page's end, and when a run stops on an error or Ctrl-C) rather than after every instance: saving it,
    a page's worth of IDs each time, took most of the exporter's own time.
    """

    def __init__(
        self,
        lister: Lister,
        export_one: ExportOne,
        checkpoint: Checkpoint,
        *,
        parallel: int = 8,
        on_progress: Callable[[Progress], None] | None = None,
        save_every: float = SAVE_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lister = lister
        self._export_one = export_one
        self._cp = checkpoint
        self._parallel = parallel
        self._on_progress = on_progress
        self._lock = threading.Lock()
        self._now = 0
        self._total: int | None = None
        self._save_every = save_every
        self._clock = clock
        self._saved_at = clock()

    def run(self, sel: Selection, total: int | None = None) -> Summary:
        cp, skipped, pages = self._cp, 0, 0
        self._total = total
        cp.runs += 1
        self._save()
        try:
            with ThreadPoolExecutor(max_workers=self._parallel, thread_name_prefix="export") as pool:
                if cp.complete:
                    self._handle(pool, sorted(cp.failed))  # a finished export retries only what failed
                else:
                    for ids, next_token in _pages(self._lister, sel, cp.page_token):
                        pages += 1
                        seen = set(cp.done_in_page)
                        todo = [i for i in ids if i not in seen]
                        skipped += len(ids) - len(todo)
                        self._handle(pool, todo)
                        with self._lock:
                            cp.next_page(next_token)
                            self._save()
        finally:
            with self._lock:
                self._save()  # also after an error or Ctrl-C: what was recorded is not exported again
        return Summary(self._now, skipped, cp.exported, dict(cp.failed), cp.complete, pages)

    def _save(self) -> None:
        self._cp.save()
        self._saved_at = self._clock()

    def _handle(self, pool: ThreadPoolExecutor, ids: list[str]) -> None:
        for iid, error in zip(ids, pool.map(self._safe_export, ids), strict=True):
            with self._lock:
                self._cp.record(iid, error)
                if self._clock() - self._saved_at >= self._save_every:
                    self._save()
                if error is None:
                    self._now += 1
                if self._on_progress is not None:
                    done = self._cp.exported + len(self._cp.failed)
                    self._on_progress(Progress(done, self._total, self._now, len(self._cp.failed)))

    def _safe_export(self, instance_id: str) -> str | None:
        try:
            return self._export_one(instance_id)
        except Exception as exc:  # one instance's failure is recorded, the export goes on
            return f"{type(exc).__name__}: {exc}"


def library_export_one(client: Any, writer: Any, destination: Mapping[str, Any]) -> ExportOne:
    """One instance exported exactly as the export job's activity does (same checks, file name and format)."""
    from durabletask.extensions.history_export import ExportFormat, HistoryExportContext, run_export_instance_history

    context = HistoryExportContext(client=client, writer=writer)
    fmt = ExportFormat().to_dict()  # gzipped JSON lines, the job's default

    def export_one(instance_id: str) -> str | None:
        result = run_export_instance_history(
            context, {"instance_id": instance_id, "destination": dict(destination), "format": fmt}
        )
        return None if result.get("success") else str(result.get("error"))

    return export_one
