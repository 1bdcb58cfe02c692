"""Token audience resolution and the sync/async token caches: reuse, early refresh, single refresh."""

from __future__ import annotations

import asyncio
import threading

import pytest

from durabletask.azuremanaged._tokens import (
    DEFAULT_REFRESH_MARGIN_SECONDS,
    AsyncTokenCache,
    TokenCache,
    resolve_resource_id,
    token_scope,
)

from ._fakes import FakeAsyncCredential, FakeCredential, ManualClock

SCOPE = "https://durabletask.io/.default"


# --- audience ---------------------------------------------------------------------------------------


def test_default_audience_is_public_cloud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REGION_NAME", raising=False)
    assert resolve_resource_id(None) == "https://durabletask.io"
    assert resolve_resource_id("") == "https://durabletask.io"
    assert token_scope() == "https://durabletask.io/.default"


@pytest.mark.parametrize("region", ["usgovvirginia", "USGovArizona", "usdodeast"])
def test_us_government_regions_use_their_audience(monkeypatch: pytest.MonkeyPatch, region: str) -> None:
    monkeypatch.setenv("REGION_NAME", region)
    assert token_scope(None) == "https://durabletask.azure.us/.default"


def test_other_regions_keep_public_audience(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGION_NAME", "westus3")
    assert resolve_resource_id(None) == "https://durabletask.io"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://custom.example", "https://custom.example"),
        ("  https://custom.example/  ", "https://custom.example"),
        ("https://custom.example/.default", "https://custom.example"),
        ("https://custom.example/.DEFAULT", "https://custom.example"),
        ("https://custom.example//.default/", "https://custom.example"),
    ],
)
def test_explicit_audience_is_normalised(given: str, expected: str) -> None:
    assert resolve_resource_id(given) == expected
    assert token_scope(given) == expected + "/.default"


@pytest.mark.parametrize("given", ["   ", "/", "/.default", " //.default/ "])
def test_audience_that_normalises_to_nothing_is_rejected(given: str) -> None:
    with pytest.raises(ValueError, match="resource_id"):
        resolve_resource_id(given)


# --- sync cache -------------------------------------------------------------------------------------


def test_first_token_is_requested_lazily_and_then_reused() -> None:
    clock = ManualClock()
    credential = FakeCredential(clock)
    cache = TokenCache(credential, SCOPE, clock=clock)
    assert credential.calls == 0
    assert cache.get_token() == "token-1"
    clock.advance(600)
    assert cache.get_token() == "token-1"
    assert credential.calls == 1
    assert credential.scopes == [(SCOPE,)]


def test_token_is_refreshed_once_inside_the_margin() -> None:
    clock = ManualClock()
    credential = FakeCredential(clock, lifetime=3600)
    cache = TokenCache(credential, SCOPE, clock=clock)
    cache.get_token()
    clock.advance(3600 - DEFAULT_REFRESH_MARGIN_SECONDS - 1)
    assert cache.get_token() == "token-1"
    clock.advance(1)
    assert cache.get_token() == "token-2"
    assert cache.get_token() == "token-2"
    assert credential.calls == 2


def test_margin_is_configurable() -> None:
    clock = ManualClock()
    credential = FakeCredential(clock, lifetime=3600)
    cache = TokenCache(credential, SCOPE, refresh_margin=900, clock=clock)
    cache.get_token()
    clock.advance(2699)
    assert cache.get_token() == "token-1"
    clock.advance(1)
    assert cache.get_token() == "token-2"


def test_short_lived_token_is_not_refreshed_on_every_call() -> None:
    clock = ManualClock()
    credential = FakeCredential(clock, lifetime=120)  # shorter than the 5-minute margin
    cache = TokenCache(credential, SCOPE, clock=clock)
    cache.get_token()
    clock.advance(59)
    assert cache.get_token() == "token-1"
    clock.advance(1)
    assert cache.get_token() == "token-2"


def test_failed_refresh_keeps_the_unexpired_token_then_raises_after_expiry() -> None:
    clock = ManualClock()
    credential = FakeCredential(clock, lifetime=3600)
    cache = TokenCache(credential, SCOPE, clock=clock)
    cache.get_token()
    credential.fail_with = RuntimeError("identity endpoint down")
    clock.advance(3500)
    assert cache.get_token() == "token-1"
    clock.advance(100)
    with pytest.raises(RuntimeError, match="identity endpoint down"):
        cache.get_token()
    credential.fail_with = None
    assert cache.get_token() == "token-4"


def test_first_request_failure_propagates() -> None:
    clock = ManualClock()
    credential = FakeCredential(clock)
    credential.fail_with = PermissionError("no identity")
    with pytest.raises(PermissionError, match="no identity"):
        TokenCache(credential, SCOPE, clock=clock).get_token()


def test_concurrent_callers_share_one_refresh() -> None:
    clock = ManualClock()
    gate = threading.Event()
    credential = FakeCredential(clock, gate=gate)
    cache = TokenCache(credential, SCOPE, clock=clock)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_token())) for _ in range(8)]
    for thread in threads:
        thread.start()
    assert credential.entered.wait(10)
    gate.set()
    for thread in threads:
        thread.join(10)
    assert results == ["token-1"] * 8
    assert credential.calls == 1


def test_sync_cache_rejects_async_credential() -> None:
    clock = ManualClock()
    with pytest.raises(TypeError, match=r"azure\.identity\.aio"):
        TokenCache(FakeAsyncCredential(clock), SCOPE, clock=clock)  # type: ignore[arg-type]


def test_negative_margin_is_rejected() -> None:
    clock = ManualClock()
    with pytest.raises(ValueError, match="margin"):
        TokenCache(FakeCredential(clock), SCOPE, refresh_margin=-1, clock=clock)


# --- async cache ------------------------------------------------------------------------------------


async def test_async_cache_reuses_and_refreshes() -> None:
    clock = ManualClock()
    credential = FakeAsyncCredential(clock, lifetime=3600)
    cache = AsyncTokenCache(credential, SCOPE, clock=clock)
    assert credential.calls == 0
    assert await cache.get_token() == "token-1"
    clock.advance(3600 - DEFAULT_REFRESH_MARGIN_SECONDS - 1)
    assert await cache.get_token() == "token-1"
    clock.advance(1)
    assert await cache.get_token() == "token-2"
    assert credential.calls == 2
    assert credential.scopes[0] == (SCOPE,)


async def test_async_concurrent_callers_share_one_refresh() -> None:
    clock = ManualClock()
    credential = FakeAsyncCredential(clock)
    credential.release = asyncio.Event()
    cache = AsyncTokenCache(credential, SCOPE, clock=clock)
    waiters = [asyncio.ensure_future(cache.get_token()) for _ in range(8)]
    await asyncio.wait_for(credential.entered.wait(), 10)
    credential.release.set()
    assert await asyncio.gather(*waiters) == ["token-1"] * 8
    assert credential.calls == 1


async def test_async_cache_runs_a_blocking_credential_off_the_loop() -> None:
    clock = ManualClock()
    gate = threading.Event()
    credential = FakeCredential(clock, gate=gate)
    cache = AsyncTokenCache(credential, SCOPE, clock=clock)
    pending = asyncio.ensure_future(cache.get_token())
    # The loop keeps running while the credential blocks in its thread.
    assert await asyncio.to_thread(credential.entered.wait, 10)
    assert not pending.done()
    gate.set()
    assert await pending == "token-1"
    assert credential.calls == 1


def test_async_cache_survives_a_new_event_loop() -> None:
    clock = ManualClock()
    credential = FakeAsyncCredential(clock, lifetime=60)
    cache = AsyncTokenCache(credential, SCOPE, clock=clock)
    assert asyncio.run(cache.get_token()) == "token-1"
    clock.advance(60)
    assert asyncio.run(cache.get_token()) == "token-2"


def test_async_cache_rejects_objects_without_get_token() -> None:
    with pytest.raises(TypeError, match="get_token"):
        AsyncTokenCache(object(), SCOPE)  # type: ignore[arg-type]


def test_cache_reports_expiry_and_forced_refresh() -> None:
    clock = ManualClock()
    credential = FakeCredential(clock, lifetime=3600)
    cache = TokenCache(credential, SCOPE, clock=clock)
    assert cache.expires_on is None
    assert cache.needs_refresh()
    access_token = cache.get_access_token()
    assert access_token.token == "token-1"
    assert cache.expires_on == clock.now + 3600
    assert not cache.needs_refresh()
    assert cache.refresh().token == "token-2"
    assert cache.get_token() == "token-2"
    assert cache.scope == SCOPE


async def test_async_cache_reports_expiry_and_forced_refresh() -> None:
    clock = ManualClock()
    cache = AsyncTokenCache(FakeAsyncCredential(clock, lifetime=100), SCOPE, clock=clock)
    assert cache.needs_refresh()
    assert (await cache.get_access_token()).token == "token-1"
    assert cache.expires_on == clock.now + 100
    assert (await cache.refresh()).token == "token-2"
    assert await cache.get_token() == "token-2"
