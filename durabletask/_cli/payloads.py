"""Externalized payloads in the CLI: a token is shown with its size and how to fetch it, or fetched on request."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from durabletask.payload.file_store import FilePayloadStore, FilePayloadStoreOptions
from durabletask.payload.helpers import PayloadStoreError
from durabletask.payload.store import TOKEN_PREFIX, PayloadStore

_FIELDS = ("serialized_input", "serialized_output", "serialized_custom_status")
HINT = "show it with: durabletask get --payloads (--payload-dir DIR | --blob-connection-string CS)"


def add_store_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--payloads", action="store_true", help="fetch externalized payloads from the payload store")
    p.add_argument("--payload-dir", help="the folder of a FilePayloadStore holding externalized payloads")
    p.add_argument("--blob-connection-string", help="the Azure Storage connection string of a BlobPayloadStore")


def store_from(a: argparse.Namespace) -> PayloadStore | None:
    """The payload store the command line names, if any."""
    if a.payload_dir and a.blob_connection_string:
        raise ValueError("give --payload-dir or --blob-connection-string, not both")
    if a.payload_dir:
        return FilePayloadStore(FilePayloadStoreOptions(directory=a.payload_dir))
    if a.blob_connection_string:
        from durabletask.extensions.azure_blob_payloads import BlobPayloadStore, BlobPayloadStoreOptions

        return BlobPayloadStore(BlobPayloadStoreOptions(connection_string=a.blob_connection_string))
    return None


def _fetch(store: PayloadStore, token: str, instance_id: str, field: str) -> bytes:
    try:
        return store.download(token)
    except Exception as exc:
        raise PayloadStoreError(
            f"cannot fetch the {field} of instance {instance_id!r} (token {token!r}): {type(exc).__name__}: {exc}",
            instance_id=instance_id,
            field=field,
            token=token,
        ) from exc


def _describe(token: str, store: PayloadStore | None, instance_id: str, field: str) -> str:
    if store is None:
        return f"<externalized payload {token}; size unknown without the store; {HINT}>"
    size = len(_fetch(store, token, instance_id, field))
    return f"<externalized payload {token}, {size} bytes; {HINT}>"


def resolve(state: Any, store: PayloadStore | None, fetch: bool) -> Any:
    """``state`` with each payload token replaced by the payload (``fetch``) or by a description of it."""
    changes: dict[str, Any] = {}
    for name in _FIELDS:
        value = getattr(state, name)
        if not isinstance(value, str) or not value.startswith(TOKEN_PREFIX):
            continue
        field = name.removeprefix("serialized_").replace("_", " ")
        if not fetch:
            changes[name] = _describe(value, store, state.instance_id, field)
        elif store is None:
            raise ValueError(
                f"the {field} is externalized ({value}); --payloads needs --payload-dir DIR or "
                "--blob-connection-string CS"
            )
        else:
            changes[name] = _fetch(store, value, state.instance_id, field).decode("utf-8")
    return dataclasses.replace(state, **changes) if changes else state


def resolve_history(events: list[Any], store: PayloadStore | None, instance_id: str) -> list[Any]:
    """``events`` with each payload token replaced by the payload it stands for, when given the store."""
    if store is None:
        return events
    resolved = []
    for event in events:
        changes = {
            name: _fetch(store, value, instance_id, f"{type(event).__name__}.{name}").decode("utf-8")
            for name in ("input", "result")
            if isinstance(value := getattr(event, name, None), str) and value.startswith(TOKEN_PREFIX)
        }
        resolved.append(dataclasses.replace(event, **changes) if changes else event)
    return resolved
