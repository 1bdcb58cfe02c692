"""How a test process reaches an external backend: a credential from the environment the test run hands down.

Imported by the pytest process (our SDK) and by the interop peer (Microsoft's SDK), so it uses only azure-core
and azure-identity, which both environments have. ``tests/external/backend.py`` sets the variables.
"""

from __future__ import annotations

import os
import time
from typing import Any

#: A fixed bearer token, for an emulator started with ``--auth-token`` (never a real service's secret).
TOKEN_ENV = "DTS_TEST_TOKEN"
#: The connection string's ``Authentication`` value; anything but ``None`` uses azure-identity.
AUTHENTICATION_ENV = "DTS_TEST_AUTHENTICATION"


class StaticToken:
    """A credential that always hands out the same bearer token, valid for the next hour."""

    def __init__(self, token: str) -> None:
        self._token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self._token, int(time.time()) + 3600)


def credential() -> Any:
    """The credential the environment asks for: a fixed token, azure-identity's default chain, or none."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return StaticToken(token)
    if os.environ.get(AUTHENTICATION_ENV, "None") == "None":
        return None
    # Microsoft's SDK reads no connection strings, so both sides use the chain that covers CI logins
    # (azure/login leaves an Azure CLI session) and workload identity alike.
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()
