"""The browser harness's own rules: in CI a missing browser fails; elsewhere it skips and says why."""

from __future__ import annotations

import pytest

from tests.integration.dashboard import conftest


def test_a_missing_browser_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="browser tests cannot run in CI: no Chromium"):
        conftest._unavailable("no Chromium")


def test_a_missing_browser_skips_elsewhere_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        conftest._unavailable("no Chromium")
    assert "skipping browser tests: no Chromium" in capsys.readouterr().out
