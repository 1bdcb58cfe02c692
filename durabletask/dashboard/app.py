"""The dashboard's web server (aiohttp): the page, its JSON API, live updates, and the optional access token.

Every call to the backend goes through the hub's async client on the server's event loop. Errors become JSON
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

from durabletask.dashboard import actions, diagnose, views
from durabletask.dashboard.hubs import Hub, Hubs, UnknownHubError, describe

STATIC = resources.files("durabletask.dashboard") / "static"
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
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
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
    # Actions take JSON only: a cross-site form cannot send it without a preflight the server never grants.
    if request.content_type != "application/json":
        raise ValueError("actions take a JSON body (Content-Type: application/json)")
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
    if name not in {"app.js", "ui.js", "instance.js", "entities.js", "style.css"}:
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


async def list_orchestrations(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request)
    if hub.refused:
        return _json({"refused": hub.refused, "items": [], "total": 0, "page": 1, "page_size": views.PAGE_SIZE})
    flt = views.ListFilter.parse(request.query)
    states, capped = await hub.query(flt)
    return _json({**views.page_of(states, flt), "capped": capped, "refused": None, "digest": views.digest(states)})


async def get_instance(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request)
    instance_id = request.query.get("id", "")
    state = await hub.client.get_orchestration_state(instance_id)
    if state is None:
        return _error(404, f"no instance {instance_id!r} in task hub {hub.name!r}")
    events = await hub.client.get_orchestration_history(instance_id)
    page = views.instance_json(state, events)
    workers = await request.app[HUBS_KEY].workers_of(hub.name)
    page["pending_reason"] = diagnose.pending_reason(state, workers)
    page["refused"] = hub.refused
    page["digest"] = views.digest([state])
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


async def list_entities(request: web.Request) -> web.StreamResponse:
    from durabletask._client.models import EntityQuery

    hub = await _hub(request)
    if hub.refused:
        return _json({"refused": hub.refused, "items": []})
    prefix = request.query.get("prefix", "").strip() or None
    found = await hub.client.get_all_entities(EntityQuery(instance_id_starts_with=prefix, include_state=False))
    return _json({"items": [views.entity_json(e) for e in found], "refused": None})


async def get_entity(request: web.Request) -> web.StreamResponse:
    from durabletask.entities import EntityInstanceId

    hub = await _hub(request)
    entity_id = request.query.get("id", "")
    try:
        found = await hub.client.get_entity(EntityInstanceId.parse(entity_id), include_state=True)
    except ValueError as error:
        return _error(400, f"entity ID: {error}")
    if found is None:
        return _error(404, f"no entity {entity_id!r} in task hub {hub.name!r}")
    return _json({**views.entity_json(found), "refused": hub.refused})


async def signal_entity(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request, acting=True)
    return _json(await actions.signal_entity(hub.client, request.query.get("id", ""), await _body(request)))


async def workers(request: web.Request) -> web.StreamResponse:
    hub = await _hub(request)
    info = await request.app[HUBS_KEY].workers_of(hub.name)
    return _json({"available": info is not None, **(info or {})})


async def _digest(request: web.Request, hub: Hub) -> str:
    """The fingerprint of what the watched page shows now (see :func:`views.digest`)."""
    instance_id = request.query.get("id")
    if instance_id is not None:
        state = await hub.client.get_orchestration_state(instance_id, fetch_payloads=False)
        return views.digest([] if state is None else [state])
    states, _ = await hub.query(views.ListFilter.parse(request.query))
    return views.digest(states)


async def live(request: web.Request) -> web.StreamResponse:
    """Server-sent events: a ``change`` event whenever the watched list or instance changes.

    The public protocol has no change feed, so the server looks once per interval for this page and the
    browser hears only about real changes (no page re-render while nothing happens). ``since`` is the digest of
    what the page rendered, so a change between the page's fetch and this stream's first look is not missed.
    """
    hub = await _hub(request)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    last = request.query.get("since") or None
    interval = request.app[LIVE_INTERVAL_KEY]
    while True:
        try:
            digest = await _digest(request, hub)
        except Exception as error:  # a passing failure: tell the page, keep watching
            await response.write(f"event: problem\ndata: {json.dumps(describe(error))}\n\n".encode())
        else:
            if digest != last:
                if last is not None:
                    await response.write(b"event: change\ndata: {}\n\n")
                last = digest
            else:
                await response.write(b": idle\n\n")
        await asyncio.sleep(interval)


def build_app(
    hubs: Hubs, *, token: str | None = None, live_interval: float = 1.0, loopback_only: bool = True
) -> web.Application:
    """The dashboard as an aiohttp application (serve it with :func:`durabletask.dashboard.start`).

    ``loopback_only``: served on a loopback address, so requests must name a loopback host.
    """
    app = web.Application(middlewares=[_loopback_names, _auth, _errors])
    app[HUBS_KEY] = hubs
    app[LIVE_INTERVAL_KEY] = live_interval
    app[LOOPBACK_ONLY_KEY] = loopback_only
    if token:
        app[TOKEN_KEY] = token
    api = "/api/hubs/{hub}"
    app.router.add_get("/api/hubs", list_hubs)
    app.router.add_get(f"{api}/orchestrations", list_orchestrations)
    app.router.add_post(f"{api}/orchestrations", new_orchestration)
    app.router.add_get(f"{api}/instance", get_instance)
    app.router.add_post(f"{api}/instance/{{action}}", instance_action)
    app.router.add_post(f"{api}/bulk/{{action}}", bulk_action)
    app.router.add_get(f"{api}/entities", list_entities)
    app.router.add_get(f"{api}/entity", get_entity)
    app.router.add_post(f"{api}/entity/signal", signal_entity)
    app.router.add_get(f"{api}/workers", workers)
    app.router.add_get(f"{api}/live", live)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/{tail:.*}", index)  # the page routes itself from the URL
    hubs_ref = hubs
    app.on_cleanup.append(lambda _app: hubs_ref.close())
    return app
