"""The dashboard's web server (aiohttp): the page, its JSON API, live updates, and the optional access token.

Every call to the backend goes through the hub's endpoint client on the server's event loop. Errors become JSON
``{"error": ...}`` answers: 400 for bad input, 403 on a refused hub, 404 for what does not exist, 409 when the
service refuses an action (with the service's own message).
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web

from dtscale_emulator.dashboard import actions, diagnose, listing, schedules, streams, views
from dtscale_emulator.dashboard.activities import activities_json
from dtscale_emulator.dashboard.hubs import Hub, Hubs, UnknownHubError, describe
from dtscale_emulator.dashboard.models import entity_id, entity_row, history_entry, instance_row, parse_entity_id
from dtscale_emulator.dashboard.protection import add_security_headers, bounded_body, same_origin_json

STATIC = resources.files("dtscale_emulator.dashboard") / "static"
TOKEN_COOKIE = "dtdash_token"
HUBS_KEY = web.AppKey("hubs", Hubs)
TOKEN_KEY = web.AppKey("token", str)
LIVE_INTERVAL_KEY = web.AppKey("live_interval", float)
LOOPBACK_ONLY_KEY = web.AppKey("loopback_only", bool)
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "[::1]", "::1"}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda v: json.dumps(v, default=str))


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


@web.middleware
async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    """With a token configured, every request needs it: as a bearer header, a cookie, or ``?token=`` once."""
    token = request.app.get(TOKEN_KEY)
    if not token:
        return await handler(request)
    given = request.query.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        given = header[len("Bearer ") :]
    if not hmac.compare_digest(given.encode(), token.encode()):
        if request.path.startswith("/api/"):
            return _error(401, "this dashboard requires its access token")
        return web.Response(status=401, text=_LOGIN, content_type="text/html")
    response = await handler(request)
    if "token" in request.query:  # remember it for the page's API calls, never readable by scripts
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict", secure=request.secure)
    return response


_LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Durable Task dashboard</title></head>
<body><main><h1>Access token required</h1><form method="get"><label>Token <input name="token" type="password"
autofocus></label> <button>Open</button></form></main></body></html>"""


@web.middleware
async def _loopback_names(request: web.Request, handler: Handler) -> web.StreamResponse:
    """On a loopback address, only loopback host names: a page of another site whose name was re-pointed at
    127.0.0.1 (DNS rebinding) would otherwise reach the dashboard as its own origin, actions included."""
    if request.app[LOOPBACK_ONLY_KEY]:
        host = (request.host or "").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in LOOPBACK_NAMES:
            return _error(403, f"this dashboard answers only to localhost names, not {request.host!r}")
    return await handler(request)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except UnknownHubError as error:
        return _error(404, str(error))
    except ValueError as error:
        return _error(400, str(error))
    except LookupError as error:
        return _error(409, str(error))
    except Exception as error:
        return _error(409, describe(error))


async def _hub(request: web.Request, *, acting: bool = False) -> Hub:
    hub = await request.app[HUBS_KEY].get(request.match_info["hub"])
    if acting and hub.refused:
        raise web.HTTPForbidden(
            text=json.dumps({"error": f"the backend refused this hub: {hub.refused}"}), content_type="application/json"
        )
    return hub


async def _body(request: web.Request) -> dict[str, Any]:
    # Its content type and origin were checked by the same_origin_json middleware, as every action's are.
    try:
        body = await request.json()
    except json.JSONDecodeError:
        raise ValueError("the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    return body


async def index(request: web.Request) -> web.StreamResponse:
    return web.Response(text=(STATIC / "index.html").read_text(), content_type="text/html")


async def static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if name not in {"app.js", "ui.js", "instance.js", "stream.js", "entities.js", "style.css"}:
        raise web.HTTPNotFound()
    kind = "text/javascript" if name.endswith(".js") else "text/css"
    return web.Response(text=(STATIC / name).read_text(), content_type=kind)


async def list_hubs(request: web.Request) -> web.StreamResponse:
    hubs = request.app[HUBS_KEY]
    found = []
    for name in hubs.names:
        hub = await hubs.get(name)
        found.append({"name": name, "refused": hub.refused})
    return _json({"hubs": found})


def _list_filter(request: web.Request) -> views.ListFilter:
    # The page's URL keeps the trail of pages it went through (repeated ``after``); the last one is where it is.
    trail = request.query.getall("after", [])
    return views.ListFilter.parse(request.query, cursor=trail[-1] if trail else None)


async def _orchestrations(request: web.Request, hub: Hub) -> dict[str, Any]:
    flt = _list_filter(request)
    page = await listing.fetch_page(hub.client, flt)
    return {
        "items": [views.summary_json(s) for s in page.items],
        "next": page.next_token,
        "page_size": flt.page_size,
        "scanned": page.scanned,
        "stopped": page.stopped,
        "digest": views.digest(page.items),
    }


def _instance_id(request: web.Request) -> str:
    instance_id = request.query.get("id", "")
    if not instance_id.strip():
        raise ValueError("id is required (the instance ID)")
    return instance_id


async def _instance_digest(request: web.Request, hub: Hub) -> dict[str, Any]:
    state = await hub.client.get_instance(_instance_id(request), payloads=False)
    return {"digest": views.digest([] if state is None else [instance_row(state)])}


async def _entities(request: web.Request, hub: Hub) -> dict[str, Any]:
    prefix = request.query.get("prefix", "").strip() or None
    size = views.ListFilter.parse({"size": request.query.get("size", "")}).page_size
    trail = request.query.getall("after", [])
    found, token = await listing.entity_page(hub.client, prefix, trail[-1] if trail else None, size)
    items = [views.entity_json(e) for e in found]
    return {"items": items, "next": token, "digest": views.fingerprint(items)}


async def _entity(request: web.Request, hub: Hub) -> dict[str, Any]:
    asked = request.query.get("id", "")
    try:
        name, key = parse_entity_id(asked)
    except ValueError as error:
        raise ValueError(f"entity ID: {error}") from None
    found = await hub.client.get_entity(entity_id(name, key), include_state=True)
    if found is None:
        raise web.HTTPNotFound(
            text=json.dumps({"error": f"no entity {asked!r} in task hub {hub.name!r}"}),
            content_type="application/json",
        )
    shown = views.entity_json(entity_row(found, include_state=True))
    return {**shown, "digest": views.fingerprint(shown)}


def _state_reader(hub: Hub) -> streams.ReadState:
    async def read(entity: str) -> str | None:
        found = await hub.client.get_entity(entity, include_state=True)
        return found.serializedState.value if found is not None and found.HasField("serializedState") else None

    return read


async def _existing(hub: Hub, instance_id: str) -> str:
    """The instance's status; 404 when it does not exist."""
    state = await hub.client.get_instance(instance_id, payloads=False)
    if state is None:
        raise web.HTTPNotFound(
            text=json.dumps({"error": f"no instance {instance_id!r} in task hub {hub.name!r}"}),
            content_type="application/json",
        )
    return instance_row(state).status


async def _stream(request: web.Request, hub: Hub) -> dict[str, Any]:
    """A page of the instance's stream items: ``after`` a cursor, or the newest ``tail``; ``limit`` at most."""
    instance_id = _instance_id(request)
    asked = streams.PageRequest.parse(instance_id, request.query)
    status = await _existing(hub, instance_id)
    page = await streams.read_page(asked, _state_reader(hub))
    # The digest the live feed (view=stream) compares with, so an item stored after this read is not missed.
    return {**page, "status": status, "digest": f"{status}:{page['position']}"}


async def _stream_digest(request: web.Request, hub: Hub) -> dict[str, Any]:
    instance_id = _instance_id(request)
    status = await _existing(hub, instance_id)
    return {"digest": f"{status}:{await streams.position(instance_id, _state_reader(hub))}"}


async def _workers(request: web.Request, hub: Hub) -> dict[str, Any]:
    info = await request.app[HUBS_KEY].workers_of(hub.name)
    return {"available": info is not None, **(info or {}), "digest": views.fingerprint(info)}


async def _schedules(request: web.Request, hub: Hub) -> dict[str, Any]:
    return await schedules.listing(hub.client, request.query.get("prefix", "").strip())


Reader = Callable[[web.Request, Hub], Awaitable[dict[str, Any]]]
#: What each page shows, by the name the page's live stream gives (``view=``).
WATCHED: dict[str, Reader] = {
    "orchestrations": _orchestrations,
    "instance": _instance_digest,
    "stream": _stream_digest,
    "entities": _entities,
    "entity": _entity,
    "workers": _workers,
    "schedules": _schedules,
}


def _reading(reader: Reader) -> Handler:
    """A GET handler answering with what ``reader`` reads (a refused hub reads as empty, with the refusal)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        hub = await _hub(request)
        if hub.refused:
            return _json({"refused": hub.refused, "items": [], "available": False})
        return _json({**await reader(request, hub), "refused": None})

    return handle


async def get_instance(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request)
    instance_id = _instance_id(request)
    state = await hub.client.get_instance(instance_id)
    if state is None:
        return _error(404, f"no instance {instance_id!r} in task hub {hub.name!r}")
    row = instance_row(state)
    entries = [history_entry(e) for e in await hub.client.history(instance_id)]
    page = views.instance_json(row, entries)
    workers = await request.app[HUBS_KEY].workers_of(hub.name)
    page["pending_reason"] = diagnose.pending_reason(row, workers)
    page["activities"] = activities_json(row.status, entries)
    page["refused"] = hub.refused
    page["digest"] = views.digest([row])
    return _json(page)


async def instance_action(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request, acting=True)
    action = actions.INSTANCE_ACTIONS.get(request.match_info["action"])
    if action is None:
        raise web.HTTPNotFound()
    return _json(await action(hub.client, request.query.get("id", ""), await _body(request)))


async def new_orchestration(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request, acting=True)
    return _json(await actions.new_orchestration(hub.client, await _body(request)))


async def bulk_action(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request, acting=True)
    flt = views.ListFilter.parse(request.query)
    return _json(await actions.bulk(hub, request.match_info["action"], flt, await _body(request)))


async def signal_entity(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request, acting=True)
    return _json(await actions.signal_entity(hub.client, request.query.get("id", ""), await _body(request)))


async def schedule_action(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request, acting=True)
    return _json(await schedules.act(hub.client, request.query.get("id", ""), request.match_info["action"]))


async def live(request: web.Request) -> web.StreamResponse:
    """Server-sent events: a ``change`` event whenever what the watched page shows changes.

    ``view`` names the page (a key of :data:`WATCHED`), the rest of the query is the page's own. The public
    protocol has no change feed, so the server reads the page's data once per interval and the browser hears only
    about real changes (no re-render while nothing happens). ``since`` is the digest of what the page rendered,
    so a change between the page's fetch and this stream's first look is not missed.
    """
    hub = await _hub(request)
    reader = WATCHED.get(request.query.get("view", ""))
    if reader is None:
        raise ValueError(f"view must be one of {', '.join(WATCHED)}")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    last = request.query.get("since") or None
    interval = request.app[LIVE_INTERVAL_KEY]
    while True:
        try:
            digest = (await reader(request, hub))["digest"]
        except Exception as error:  # a passing failure (or the watched thing is gone): tell the page, keep watching
            await response.write(f"event: problem\ndata: {json.dumps(_problem(error))}\n\n".encode())
        else:
            if digest != last:
                if last is not None:
                    await response.write(b"event: change\ndata: {}\n\n")
                last = digest
            else:
                await response.write(b": idle\n\n")
        await asyncio.sleep(interval)


def _problem(error: BaseException) -> str:
    if isinstance(error, web.HTTPException):
        return error.text or error.reason
    return describe(error)


def build_app(
    hubs: Hubs,
    *,
    token: str | None = None,
    live_interval: float = 1.0,
    loopback_only: bool = True,
    body_timeout: float = 30.0,
) -> web.Application:
    """The dashboard as an aiohttp application (serve it with :func:`dtscale_emulator.dashboard.start`).

    ``loopback_only``: served on a loopback address, so requests must name a loopback host. ``body_timeout``:
    seconds a request's body may take to arrive whole (else 408).
    """
    middlewares = [_loopback_names, same_origin_json, _auth, bounded_body(body_timeout), _errors]
    app = web.Application(middlewares=middlewares)
    app.on_response_prepare.append(add_security_headers)
    app[HUBS_KEY] = hubs
    app[LIVE_INTERVAL_KEY] = live_interval
    app[LOOPBACK_ONLY_KEY] = loopback_only
    if token:
        app[TOKEN_KEY] = token
    api = "/api/hubs/{hub}"
    app.router.add_get("/api/hubs", list_hubs)
    app.router.add_get(f"{api}/orchestrations", _reading(_orchestrations))
    app.router.add_post(f"{api}/orchestrations", new_orchestration)
    app.router.add_get(f"{api}/instance", get_instance)
    app.router.add_get(f"{api}/stream", _reading(_stream))
    app.router.add_post(f"{api}/instance/{{action}}", instance_action)
    app.router.add_post(f"{api}/bulk/{{action}}", bulk_action)
    app.router.add_get(f"{api}/entities", _reading(_entities))
    app.router.add_get(f"{api}/entity", _reading(_entity))
    app.router.add_post(f"{api}/entity/signal", signal_entity)
    app.router.add_get(f"{api}/workers", _reading(_workers))
    app.router.add_get(f"{api}/schedules", _reading(_schedules))
    app.router.add_post(f"{api}/schedule/{{action}}", schedule_action)
    app.router.add_get(f"{api}/live", live)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/{tail:.*}", index)  # the page routes itself from the URL
    hubs_ref = hubs
    app.on_cleanup.append(lambda _app: hubs_ref.close())
    return app
