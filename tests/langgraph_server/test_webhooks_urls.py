"""Webhook URLs a hostile client sends are refused with a 422 naming the rule; ``webhooks`` settings in
``langgraph.json`` are read as LangGraph reads them, and a wrong one stops the server at startup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from durabletask.extensions.langgraph._server.config import ConfigError, load_config
from durabletask.extensions.langgraph._server.config_webhooks import WebhookSettings
from durabletask.extensions.langgraph._server.errors import HttpError
from durabletask.extensions.langgraph._server.webhooks import check_webhook, checked_resolver, post
from tests.langgraph_server.support_runs import RunsHub, runs_emulator, runs_hub
from tests.langgraph_server.support_webhooks import project, serve

__all__ = ["runs_emulator", "runs_hub"]
pytestmark = [pytest.mark.timeout(120), pytest.mark.adversarial]

REFUSED_BY_DEFAULT = [
    ("ftp://example.com/hook", "http or https"),
    ("http://" + "a" * 4100 + ".com/", "the limit is 4096"),
    ("/threads/x/runs", "relative URL"),
    ("http://localhost:9/hook", "loopback"),
    ("http://127.0.0.1:9/hook", "loopback"),
    ("http://[::1]:9/hook", "loopback"),
    ("http://127.1/hook", "loopback"),
    ("http://2130706433/hook", "loopback"),
    ("http://0x7f.0.0.1/hook", "loopback"),
    ("http://[::ffff:127.0.0.1]/hook", "loopback"),
    ("http://169.254.169.254/latest/meta-data", "cloud metadata"),
    ("http://[::ffff:169.254.169.254]/", "cloud metadata"),
    ("http://metadata.google.internal/", "cloud metadata"),
    ("http://0.0.0.0:80/", "reserved"),
    ("http://224.0.0.1/", "multicast"),
    ("http://api.svc.cluster.local/", "Kubernetes"),
    ("http:///no-host", "no host"),
    ("http://exa mple.com/", "whitespace"),
    ("http://example.com:99999/", "invalid port"),
    ("http://no-such-host.invalid/", "cannot be resolved"),
    ("", "non-empty"),
]


@pytest.mark.parametrize(("url", "said"), REFUSED_BY_DEFAULT)
async def test_a_url_refused_under_langgraphs_defaults(url: str, said: str) -> None:
    with pytest.raises(HttpError) as refused:
        await check_webhook(url, WebhookSettings())
    assert refused.value.status == 422 and said in refused.value.detail and "'webhook'" in refused.value.detail


@pytest.mark.parametrize(
    ("url", "settings", "said"),
    [
        ("http://93.184.216.34/", WebhookSettings(require_https=True), "https"),
        ("https://evil.example.org/", WebhookSettings(allowed_domains=("*.hooks.test",)), "allowed_domains"),
        ("https://hooks.test/", WebhookSettings(allowed_domains=("*.hooks.test",)), "allowed_domains"),
        ("https://93.184.216.34:8443/", WebhookSettings(allowed_ports=(443,)), "port 8443"),
        ("http://10.1.2.3/", WebhookSettings(disable_private_ips=True), "private"),
        ("http://[fd00::1]/", WebhookSettings(disable_private_ips=True), "private"),
        ("https://93.184.216.34/" + "x" * 40, WebhookSettings(max_url_length=32), "the limit is 32"),
    ],
)
async def test_a_url_refused_by_the_projects_policy(url: str, settings: WebhookSettings, said: str) -> None:
    with pytest.raises(HttpError) as refused:
        await check_webhook(url, settings)
    assert said in refused.value.detail


async def test_urls_the_policies_accept() -> None:
    assert await check_webhook("http://93.184.216.34/x", WebhookSettings()) == "http://93.184.216.34/x"
    assert await check_webhook("http://10.1.2.3/", WebhookSettings())  # private addresses: allowed by default
    assert await check_webhook("http://127.0.0.1:9/", WebhookSettings(disable_loopback=False))
    wildcard = WebhookSettings(allowed_domains=("*.hooks.test", "exact.test"))
    assert await check_webhook("https://exact.test/", wildcard)  # a host named exactly is trusted unresolved


@pytest.mark.parametrize("webhook", [12, True, ["http://x"], {"url": "x"}, "ftp://x.org", "http://127.0.0.1:1/"])
async def test_a_run_with_a_bad_webhook_is_refused_and_never_made(runs_hub: RunsHub, webhook: Any) -> None:
    async with serve(runs_hub, project(WebhookSettings())) as s:
        tid = (await s.sdk.threads.create())["thread_id"]
        for path in (f"/threads/{tid}/runs", f"/threads/{tid}/runs/wait", "/runs/wait"):
            answer = await s.http.post(path, json={"assistant_id": "chain", "input": {}, "webhook": webhook})
            assert answer.status_code == 422, answer.text
            assert "webhook" in answer.json()["detail"]
        assert await s.sdk.runs.list(tid) == []


def _config(tmp_path: Path, **extra: Any) -> Path:
    (tmp_path / "graph.py").write_text("graph = None\n")
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"g": "./graph.py:graph"}, **extra}))
    return tmp_path / "langgraph.json"


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"webhooks": {"urls": {}}}, "webhooks.urls is unknown"),
        ({"webhooks": {"url": {"require_https": "yes"}}}, "webhooks.url.require_https must be true or false"),
        ({"webhooks": {"url": {"allowed_domains": ["a.*.com"]}}}, "wildcard"),
        ({"webhooks": {"url": {"allowed_ports": [0]}}}, "allowed_ports"),
        ({"webhooks": {"url": {"max_url_length": 0}}}, "max_url_length"),
        ({"webhooks": {"allowed_fields": ["password"]}}, "'password' is not a field"),
        ({"webhooks": {"headers": {"X": "${{ env.HOME }}"}}}, "must start with 'LG_WEBHOOK_'"),
        ({"webhooks": {"headers": {"X": "${{ env.LG_WEBHOOK_NOT_SET_HERE }}"}}}, "is not set"),
        ({"webhooks": {"headers": {"X": "${{ secrets.A }}"}}}, "only '${{ env.NAME }}'"),
        ({"webhooks": {"headers": {"X": 1}}}, "must be a string"),
        ({"http": {"disable_webhooks": "no"}}, "http.disable_webhooks must be true or false"),
    ],
)
def test_a_wrong_webhooks_setting_stops_the_server(tmp_path: Path, extra: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(_config(tmp_path, **extra))
    assert said in str(refused.value)


def test_webhooks_settings_take_langgraphs_defaults(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path)).webhooks == WebhookSettings()
    strict = load_config(_config(tmp_path, webhooks={"url": {"allowed_domains": ["*.hooks.test"]}})).webhooks
    assert strict.require_https and strict.max_url_length == 2048 and strict.disable_loopback
    env = {"LG_WEBHOOK_KEY": "k1"}
    headers = load_config(
        _config(tmp_path, env=env, webhooks={"headers": {"A": "x-${{ env.LG_WEBHOOK_KEY }}-y"}}, http={})
    ).webhooks.headers
    assert headers == {"A": "x-k1-y"}
    assert load_config(_config(tmp_path, http={"disable_webhooks": True})).webhooks.disabled


async def test_the_connection_resolves_only_to_allowed_addresses() -> None:
    with pytest.raises(OSError, match="refused by the webhook policy"):
        await checked_resolver(WebhookSettings()).resolve("localhost", 80)
    allowed = await checked_resolver(WebhookSettings(disable_loopback=False)).resolve("localhost", 80)
    assert allowed and all(r["host"] in ("127.0.0.1", "::1") for r in allowed)


async def test_a_named_loopback_receiver_is_reached_through_the_checked_resolver() -> None:
    from tests.langgraph_server.support_webhooks import receiver

    async with receiver() as hook:
        url = hook.url.replace("127.0.0.1", "localhost")
        value = {"webhook": url, "run": {"run_id": "r"}, "status": "success", "values": None}
        assert await post(value, WebhookSettings(disable_loopback=False)) == {"status": 200}
        assert (await post(value, WebhookSettings()))["refused"].endswith(
            "(webhooks.url.disable_loopback is true, LangGraph's default)"
        )
        assert len(hook.posts) == 1 and hook.posts[0]["json"]["run_id"] == "r"
