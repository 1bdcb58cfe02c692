"""``BlobPayloadStoreOptions(account_url=..., credential=...)`` against a real Azurite that checks OAuth bearer
tokens (HTTPS, ``--oauth basic``), with azure-identity's ``AzureCliCredential``: the tokens come from an ``az``
command the test puts on PATH, which answers ``az account get-access-token`` as the Azure CLI does. Our store and
Microsoft's (the peer environment) are run side by side on the same account."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from durabletask import client, task
from durabletask.payload import PayloadStoreError
from tests.support.azurite import Azurite, azurite_or_skip

from .conftest import Side

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BIG = 300 * 1024

FAKE_AZ = """#!{python}
import json, pathlib, sys
here = pathlib.Path(__file__).resolve().parent
with open(here / "calls.log", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
print(json.dumps(json.loads((here / "token.json").read_text())))
"""


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def jwt(audience: str = "https://storage.azure.com") -> str:
    """A bearer token of the shape Entra ID issues; Azurite's basic mode checks its claims, not its signature."""
    now = int(time.time())
    claims = {
        "aud": audience,
        "iss": f"https://sts.windows.net/{uuid.uuid4()}/",
        "iat": now - 60,
        "nbf": now - 60,
        "exp": now + 3600,
        "oid": str(uuid.uuid4()),
    }
    return f"{_b64({'alg': 'RS256', 'typ': 'JWT'})}.{_b64(claims)}.c2lnbmF0dXJl"


class AzCli:
    """The ``az`` on PATH and the environment that trusts Azurite's certificate."""

    def __init__(self, folder: Path, azurite: Azurite) -> None:
        self.folder = folder
        az = folder / "az"
        az.write_text(FAKE_AZ.format(python=sys.executable))
        az.chmod(0o755)
        self.issue(jwt())
        assert azurite.certificate is not None
        self.env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}",
            "REQUESTS_CA_BUNDLE": azurite.certificate,  # the sync storage client (requests)
            "SSL_CERT_FILE": azurite.certificate,  # the asyncio one (aiohttp)
        }

    def issue(self, token: str) -> None:
        expires = int(time.time()) + 3600
        (self.folder / "token.json").write_text(
            json.dumps({"accessToken": token, "expires_on": expires, "tokenType": "Bearer"})
        )

    @property
    def calls(self) -> list[str]:
        log = self.folder / "calls.log"
        return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(scope="module")
def oauth_azurite() -> Iterator[Azurite]:
    server = azurite_or_skip(oauth=True)  # a second one: HTTPS and token checks
    yield server
    server.stop()


@pytest.fixture
def az(tmp_path: Path, oauth_azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> AzCli:
    cli = AzCli(tmp_path, oauth_azurite)
    for name in ("PATH", "REQUESTS_CA_BUNDLE"):
        monkeypatch.setenv(name, cli.env[name])
    return cli


def credential_store(azurite: Azurite, container: str) -> Any:
    from azure.identity import AzureCliCredential

    from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

    return BlobPayloadStore(
        BlobPayloadStoreOptions(
            account_url=azurite.account_url, credential=AzureCliCredential(), container_name=container
        )
    )


def measure(ctx: task.OrchestrationContext, value: str) -> int:
    return len(value)


def test_an_account_url_with_an_azure_identity_credential_carries_payloads(
    az: AzCli, oauth_azurite: Azurite, emulator_port: int
) -> None:
    store = credential_store(oauth_azurite, f"c{uuid.uuid4().hex}")
    with ExitStack() as stack:
        stack.callback(store.close)
        side = Side(emulator_port, store, stack)
        side.worker(measure)
        c = side.client()
        iid = c.schedule_new_orchestration(measure, input="o" * BIG)
        state = c.wait_for_orchestration_completion(iid, timeout=60)
        assert state is not None and state.runtime_status == client.OrchestrationStatus.COMPLETED, state
        assert state.serialized_output == str(BIG)
        raw = side.client(store=None).get_orchestration_state(iid)
        assert raw is not None and (raw.serialized_input or "").startswith("blob:v1:")
    # The credential asked the Azure CLI for a storage token.
    assert any("get-access-token" in call and "https://storage.azure.com" in call for call in az.calls), az.calls


def test_a_token_the_account_refuses_is_a_clear_error(az: AzCli, oauth_azurite: Azurite, emulator_port: int) -> None:
    az.issue(jwt(audience="https://vault.azure.net"))
    store = credential_store(oauth_azurite, f"c{uuid.uuid4().hex}")
    store.options.retry_total = 0
    c = client.TaskHubGrpcClient(host_address=f"localhost:{emulator_port}", payload_store=store)
    try:
        with pytest.raises(PayloadStoreError, match=r"cannot store the input of instance 'refused'") as caught:
            c.schedule_new_orchestration(measure, input="o" * BIG, instance_id="refused")
        assert "ClientAuthenticationError" in str(caught.value) and caught.value.field == "input"
    finally:
        c.close()
        store.close()


def _run(python: str, az: AzCli, azurite: Azurite, container: str, *extra: str, ours: bool) -> dict[str, Any]:
    env = dict(az.env)
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [python, str(HERE / "oauth_store.py"), azurite.account_url, container, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd="/tmp",  # never the worktree: its durabletask/ would shadow the peer's
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.interop
def test_both_sdks_use_the_credential_alike_and_read_each_others_payloads(
    az: AzCli, oauth_azurite: Azurite, peer_py: Path
) -> None:
    container = f"c{uuid.uuid4().hex}"
    theirs = _run(str(peer_py), az, oauth_azurite, container, ours=False)
    assert theirs.get("error") is None, theirs
    assert theirs["sync"] == '"sync payload"' and theirs["async"] == '"async payload"'
    ours = _run(sys.executable, az, oauth_azurite, container, theirs["token"], ours=True)
    assert ours == {**ours, "sync": '"sync payload"', "async": '"async payload"', "foreign": '"sync payload"'}
    back = _run(str(peer_py), az, oauth_azurite, container, ours["token"], ours=False)
    assert back["foreign"] == '"sync payload"'

    # A token the account refuses: both fail on the first call, with the storage SDK's authentication error.
    az.issue(jwt(audience="https://vault.azure.net"))
    refused = {
        "theirs": _run(str(peer_py), az, oauth_azurite, container, ours=False),
        "ours": _run(sys.executable, az, oauth_azurite, container, ours=True),
    }
    for name, outcome in refused.items():
        assert "ClientAuthenticationError" in outcome["error"] and "token" not in outcome, (name, outcome)
