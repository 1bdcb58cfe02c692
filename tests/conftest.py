"""Suite-wide fixtures: where Microsoft's SDK (the interop peer) lives, Azurite, and how property tests pick inputs.

Property tests (hypothesis) use fixed inputs locally, so a local run never fails on an input it has not
failed on before. In CI (``CI=true``) every run draws a fresh seed and tries ``FUZZ_SCALE`` times more
examples; the seed is printed at the end of the run, and ``FUZZ_SEED=<seed>`` (with the same
``FUZZ_SCALE``) replays exactly those inputs anywhere.
"""

from __future__ import annotations

import logging
import os
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from tests.support.azurite import Azurite, azurite_or_skip

ROOT = Path(__file__).resolve().parent.parent
# --backend / --connection-string: the scenario suites against an external DTS endpoint.
pytest_plugins = ("tests.support.external.plugin",)


def running_in_ci() -> bool:
    """Whether the suite runs in CI (``CI=true``, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _int_from_env(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(f"{name} must be an integer, got {raw!r}") from None


#: How many times the local number of examples each property test tries (3 in CI).
FUZZ_SCALE = max(1, _int_from_env("FUZZ_SCALE", 3 if running_in_ci() else 1) or 1)


def fuzz_examples(local: int) -> int:
    """The number of examples for a property test that tries ``local`` of them in a local run."""
    return local * FUZZ_SCALE


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Runs before hypothesis's own plugin reads --hypothesis-seed, so FUZZ_SEED and CI can set it.
    seed = config.getoption("hypothesis_seed", None)
    if seed is None:
        seed = _int_from_env("FUZZ_SEED", random.SystemRandom().randrange(2**32) if running_in_ci() else None)
        if seed is not None:
            config.option.hypothesis_seed = str(seed)
    # A seed only counts when inputs are not derived from each test's name (derandomize).
    hypothesis_settings.register_profile(
        "dtscale", derandomize=seed is None, print_blob=True, max_examples=fuzz_examples(100)
    )
    hypothesis_settings.load_profile("dtscale")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    seed = config.getoption("hypothesis_seed", None)
    if seed is None:
        terminalreporter.write_line("hypothesis: fixed inputs (set FUZZ_SEED=<n> or CI=true for fresh ones)")
    else:
        terminalreporter.write_line(
            f"hypothesis: seed {seed}, {FUZZ_SCALE}x examples; replay with FUZZ_SEED={seed} FUZZ_SCALE={FUZZ_SCALE}"
        )


class LogWatch(logging.Handler):
    """Counts the records whose message starts with ``prefix``, so a test can wait for something logged."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix
        self._count = 0
        self._changed = threading.Condition()

    @property
    def count(self) -> int:
        with self._changed:
            return self._count

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.prefix):
            with self._changed:
                self._count += 1
                self._changed.notify_all()

    def wait_for(self, count: int = 1, timeout: float = 30.0) -> None:
        """Waits until ``count`` such records have arrived; fails after ``timeout`` seconds."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._count >= count, timeout):
                raise AssertionError(
                    f"{self._count} of {count} log records starting {self.prefix!r} arrived within {timeout}s"
                )


@contextmanager
def watch_log(logger: logging.Logger, prefix: str, level: int | None = None) -> Iterator[LogWatch]:
    """A :class:`LogWatch` on ``logger`` for the block (``level``: the logger's level meanwhile)."""
    watch = LogWatch(prefix)
    previous = logger.level
    if level is not None:
        logger.setLevel(level)
    logger.addHandler(watch)
    try:
        yield watch
    finally:
        logger.removeHandler(watch)
        logger.setLevel(previous)


def peer_python() -> Path | None:
    """The interpreter of the isolated venv holding Microsoft's SDK, or None when it is not installed."""
    candidates = [os.environ.get("DTS_PEER_PYTHON"), ROOT / ".peer-venv" / "bin" / "python"]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def peer_py() -> Path:
    found = peer_python()
    if found is None:
        pytest.skip("the interop peer venv is missing (python3 dev.py test creates it)")
    return found


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """One Azurite for the whole run (each test uses containers of its own); in CI it must start."""
    server = azurite_or_skip()
    yield server
    server.stop()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--endpoint", default=None, help="run e2e tests against this host:port instead")
    parser.addoption("--taskhub", default=None, help="task hub to use with --endpoint (default: 'default')")
