"""The dashboard's actions: each reads what it needs from the page's JSON body and makes one endpoint call.

Bad input (a payload that is not JSON, a missing name) raises ``ValueError`` naming the field; the service's
refusal propagates as the endpoint client raised it, and the server shows its message to the user. Payloads
typed in the page are sent as the JSON text the SDKs write (``json.dumps`` with its default separators).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from dtscale_emulator.dashboard import listing, views
from dtscale_emulator.dashboard.endpoint import EndpointClient
from dtscale_emulator.dashboard.hubs import Hub, parse_json
from dtscale_emulator.dashboard.models import entity_id, parse_entity_id

Body = Mapping[str, Any]
Action = Callable[[EndpointClient, str, Body], Awaitable[dict[str, Any]]]
TERMINAL = ("COMPLETED", "FAILED", "TERMINATED")


def _text(body: Body, key: str, *, required: bool = False) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} must be text")
    value = value.strip() if value else None
    if required and not value:
        raise ValueError(f"{key} is required")
    return value


def _required(body: Body, key: str) -> str:
    value = _text(body, key, required=True)
    assert value is not None
    return value


def _payload(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _instance(instance_id: str) -> str:
    if not instance_id.strip():
        raise ValueError("id is required (the instance ID)")
    return instance_id


async def _terminate(c: EndpointClient, iid: str, body: Body) -> dict[str, Any]:
    # The protocol records a termination's output; a reason typed in the page is recorded as that output.
    output = parse_json(_text(body, "output"), "output") if _text(body, "output") else _text(body, "reason")
    await c.terminate(_instance(iid), output=_payload(output), recursive=bool(body.get("recursive", True)))
    return {"message": f"terminating {iid}"}


async def _suspend(c: EndpointClient, iid: str, body: Body) -> dict[str, Any]:
    await c.suspend(_instance(iid), _text(body, "reason"))
    return {"message": f"suspended {iid}"}


async def _resume(c: EndpointClient, iid: str, body: Body) -> dict[str, Any]:
    await c.resume(_instance(iid), _text(body, "reason"))
    return {"message": f"resumed {iid}"}


async def _raise(c: EndpointClient, iid: str, body: Body) -> dict[str, Any]:
    name = _required(body, "event_name")
    await c.raise_event(_instance(iid), name, _payload(parse_json(_text(body, "data"), "event data")))
    return {"message": f"raised {name!r} on {iid}"}


async def _restart(c: EndpointClient, iid: str, body: Body) -> dict[str, Any]:
    new_id = await c.restart(_instance(iid), new_instance_id=bool(body.get("new_instance_id")))
    return {"message": f"restarted as {new_id}", "instance_id": new_id}


async def _rewind(c: EndpointClient, iid: str, body: Body) -> dict[str, Any]:
    await c.rewind(_instance(iid), _text(body, "reason"))
    return {"message": f"rewinding {iid}"}


async def _purge(c: EndpointClient, iid: str, body: Body) -> dict[str, Any]:
    purged = await c.purge(_instance(iid), recursive=bool(body.get("recursive", True)))
    if purged == 0:
        raise LookupError(f"nothing was purged: {iid} does not exist or has not finished")
    return {"message": f"purged {purged} instance(s)", "purged": purged}


INSTANCE_ACTIONS: dict[str, Action] = {
    "terminate": _terminate,
    "suspend": _suspend,
    "resume": _resume,
    "raise": _raise,
    "restart": _restart,
    "rewind": _rewind,
    "purge": _purge,
}


def _tags(body: Body) -> dict[str, str] | None:
    raw = body.get("tags") or {}
    if isinstance(raw, str):
        pairs = [p.strip() for p in raw.split(",") if p.strip()]
        if any("=" not in p for p in pairs):
            raise ValueError("tags must be key=value pairs separated by commas")
        raw = dict(p.split("=", 1) for p in pairs)
    if not isinstance(raw, dict):
        raise ValueError("tags must be key=value pairs")
    return {str(k).strip(): str(v).strip() for k, v in raw.items()} or None


async def new_orchestration(c: EndpointClient, body: Body) -> dict[str, Any]:
    start_at = _text(body, "start_at")
    instance_id = await c.start_instance(
        _required(body, "name"),
        input=_payload(parse_json(_text(body, "input"), "input")),
        instance_id=_text(body, "instance_id"),
        version=_text(body, "version"),
        start_at=views.parse_time(start_at, "start_at") if start_at else None,
        tags=_tags(body),
    )
    return {"message": f"started {instance_id}", "instance_id": instance_id}


async def signal_entity(c: EndpointClient, target: str, body: Body) -> dict[str, Any]:
    try:
        name, key = parse_entity_id(target)
    except ValueError as error:
        raise ValueError(f"entity ID: {error}") from None
    operation = _required(body, "operation")
    await c.signal_entity(
        entity_id(name, key), operation, _payload(parse_json(_text(body, "input"), "operation input"))
    )
    return {"message": f"signalled {operation!r} to {target}"}


async def bulk(hub: Hub, action: str, flt: views.ListFilter, body: Body) -> dict[str, Any]:
    """Terminate or purge every instance the list's filters select; without ``confirm`` only counts them.

    Terminate takes the non-terminal instances among them, purge the terminal ones; ``confirm`` must repeat the
    count the user saw, so a selection that changed in between is not acted on blindly.
    """
    if action not in ("terminate", "purge"):
        raise ValueError(f"bulk action must be terminate or purge, not {action!r}")
    rows, capped = await listing.fetch_all(hub.client, flt)
    wanted = [r for r in rows if (r.status in TERMINAL) == (action == "purge")]
    confirm = body.get("confirm")
    if confirm is None:
        return {"count": len(wanted), "capped": capped}
    if confirm != len(wanted):
        raise ValueError(f"the selection changed: {len(wanted)} instances match now, not {confirm}; look again")
    failed: list[str] = []
    for row in wanted:
        try:
            await INSTANCE_ACTIONS[action](hub.client, row.instance_id, {"reason": _text(body, "reason")})
        except Exception as error:
            failed.append(f"{row.instance_id}: {error}")
    done = len(wanted) - len(failed)
    message = f"{action}: {done} of {len(wanted)} instance(s)"
    return {"message": message + (f"; failed: {'; '.join(failed[:5])}" if failed else ""), "count": done}
