"""A real local Azure Storage for tests: Azurite's blob service, installed on demand and run on a free port.

Azurite comes from npm into the git-ignored ``.cache/azurite`` of the repository (a pinned version) unless an
``azurite-blob`` is already on PATH. Its data lives in a temporary folder removed when it stops.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AZURITE_VERSION = "3.35.0"
PREFIX = ROOT / ".cache" / "azurite"
# Azurite's well-known development account (public, documented; not a secret).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class AzuriteUnavailableError(RuntimeError):
    """Azurite could not be installed or started; the message says why."""


def _executable() -> Path:
    on_path = shutil.which("azurite-blob")
    if on_path:
        return Path(on_path)
    local = PREFIX / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return local
    npm = shutil.which("npm")
    if npm is None:
        raise AzuriteUnavailableError("npm is not installed, so Azurite cannot be installed")
    PREFIX.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", f"azurite@{AZURITE_VERSION}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or not local.exists():
        raise AzuriteUnavailableError(f"npm install azurite@{AZURITE_VERSION} failed:\n{done.stderr[-2000:]}")
    return local


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _self_signed_certificate(folder: str) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, as PEM files in ``folder`` (for Azurite over HTTPS)."""
    from tests.support.self_signed import localhost_certificate

    certificate, key = localhost_certificate()
    cert_path, key_path = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    with open(cert_path, "wb") as out:
        out.write(certificate)
    with open(key_path, "wb") as out:
        out.write(key)
    return cert_path, key_path


class Azurite:
    """One running Azurite blob service.

    With ``oauth=True`` it serves HTTPS with a self-signed certificate (``certificate`` names its PEM file,
    for the clients to trust) and checks OAuth bearer tokens (``--oauth basic``: issuer, audience and
    lifetime, not the signature), so an ``account_url`` with an azure-identity credential can be used.
    """

    def __init__(self, *, oauth: bool = False) -> None:
        executable = _executable()
        self.port = _free_port()
        self._data = tempfile.mkdtemp(prefix="azurite-")
        self._log = open(os.path.join(self._data, "azurite.log"), "w+")  # noqa: SIM115 - closed in stop()
        self.scheme = "https" if oauth else "http"
        self.certificate: str | None = None
        secure: list[str] = []
        if oauth:
            self.certificate, key = _self_signed_certificate(self._data)
            secure = ["--cert", self.certificate, "--key", key, "--oauth", "basic"]
        self._proc = subprocess.Popen(
            [
                str(executable),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(self.port),
                "--location",
                self._data,
                "--silent",
                "--skipApiVersionCheck",
                "--loose",
                *secure,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait_listening(60.0)
        except AzuriteUnavailableError:
            self.stop()
            raise

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol={self.scheme};AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.account_url};"
        )

    @property
    def account_url(self) -> str:
        """The blob endpoint of the development account, for ``account_url`` with a credential."""
        return f"{self.scheme}://127.0.0.1:{self.port}/{ACCOUNT}"

    def _wait_listening(self, seconds: float) -> None:
        # Azurite prints no machine-readable readiness signal; a bounded connect loop is the only way to know.
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._log.seek(0)
                raise AzuriteUnavailableError(
                    f"Azurite exited with {self._proc.returncode}: {self._log.read()[-2000:]}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise AzuriteUnavailableError(f"Azurite did not listen on port {self.port} within {seconds:.0f}s")

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        shutil.rmtree(self._data, ignore_errors=True)


def azurite_or_skip(*, oauth: bool = False) -> Azurite:
    """Starts Azurite for a test session: a failure when ``CI=true`` (CI must run the blob tests), else a skip."""
    import pytest

    try:
        return Azurite(oauth=oauth)
    except AzuriteUnavailableError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Azurite is required in CI and could not start: {exc}")
        print(f"skipping: Azurite could not start: {exc}")
        pytest.skip(f"Azurite could not start: {exc}")
