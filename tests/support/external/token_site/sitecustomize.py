"""Loaded at start-up by child processes of an external-backend test run whose PYTHONPATH begins with this folder.

Samples and the command line read only a connection string, and no connection-string ``Authentication`` type
yields a fixed token. When the run targets an emulator started with ``--auth-token`` (``DTS_TEST_TOKEN``), this
makes every credential a connection string creates hand out that token instead, which stands in for the
azure-identity token a managed scheduler would get. Nothing here runs unless the variable is set.
"""

from __future__ import annotations

import os

if os.environ.get("DTS_TEST_TOKEN"):
    from typing import Any

    from durabletask.azuremanaged.connection_string import DurableTaskSchedulerConnectionString
    from tests.support.endpoint import StaticToken

    def _fixed_token(self: DurableTaskSchedulerConnectionString) -> Any:
        return StaticToken(os.environ["DTS_TEST_TOKEN"])

    DurableTaskSchedulerConnectionString.create_credential = _fixed_token  # type: ignore[method-assign]
