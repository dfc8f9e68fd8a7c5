"""Plain routes beside /mcp. Thin handlers: validate, call the workspace service, answer JSON (or text/HTML).

Errors are `{"error": ..., "detail": ...}` with a 4xx status; no traceback reaches a client.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from live_memory import __version__
from live_memory.constants import NOTIFY_MAX_BODY_BYTES, SERVER_NAME
from live_memory.core.errors import ConfigError, InputError, RequestError
from live_memory.core.records import FileEvent
from live_memory.http.app_state import AppState, ProviderFactory
from live_memory.http.bodies import (
    SMALL_BODY_BYTES,
    ConfigBody,
    EmptyBody,
    ForgetBody,
    NotifyBody,
    WorkspaceBody,
    error,
    read_json,
)
from live_memory.http.checks import check
from live_memory.http.config_update import outcome, restore, shown_values, validate_changes, write_changes
from live_memory.http.metrics import collect_families, render_metrics
from live_memory.http.stats import credential_kind, server_stats, workspace_stats
from live_memory.http.status_page import render_status_page
from live_memory.settings.config import Settings, load_settings
from live_memory.settings.options import OPTIONS_BY_KEY, changed_options
from live_memory.settings.runtime import Runtime
from live_memory.workspaces.service import WorkspaceService
from live_memory.workspaces.spend import caps_of
from live_memory.workspaces.workspace import WorkspaceState


def config_view(running: Settings, settings: Settings, runtime: Runtime) -> dict[str, Any]:
    """GET /config: the server's effective values and their sources (secrets masked). `running` holds the
    values read once at start: an option changed since then shows as pending until the next start."""
    started = shown_values(running)
    pending = {option.key for option in changed_options(running, settings) if option.restart}
    options = []
    for key, value, source in settings.describe():
        option = OPTIONS_BY_KEY.get(key)
        row: dict[str, Any] = {"key": key, "value": value, "source": source}
        if option is not None:
            row.update(secret=option.secret, restart=option.restart)
            if key in pending:
                row["pending"] = f"takes effect at the next start (running with {started[key]})"
        options.append(row)
    return {
        "process": {"role": "server", "pid": os.getpid(), "version": __version__},
        "provider": settings.profile.name,
        "model": settings.model,
        "endpoint": settings.base_url,
        "credential": {"kind": credential_kind(runtime), "source": settings.api_key_source},
        "data_dir": str(settings.data_dir),
        "config_file": str(settings.config_file),
        "options": options,
    }


async def health(request: Request[AppState]) -> JSONResponse:
    """ "ok", or "degraded" naming what is wrong: no model credential, or today's spend cap reached (200: the
    service runs, questions say what to set or when they resume); the worker threads that file I/O and
    hashing need do not answer (a no-op sent to them does not return within the probe time), or snapshots
    cannot be written (answers are kept in memory until they can) — both 503, so a supervisor restarts a
    wedged service."""
    service = request.state["service"]
    try:
        await asyncio.wait_for(asyncio.to_thread(int), request.state["health_probe_s"])
        workers = "ok"
    except TimeoutError:
        workers = "stuck"
    failing = service.store.failing()
    snapshots = "ok" if failing is None else f"failing: {failing}"
    healthy = workers == "ok" and failing is None
    credential = credential_kind(service.runtime)
    budget = "spent" if service.spend.spent(None, caps_of(service.runtime)) else "ok"
    return JSONResponse(
        {
            "status": "ok" if healthy and credential != "missing" and budget == "ok" else "degraded",
            "credential": credential,
            "budget": budget,
            "service": SERVER_NAME,
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - request.state["started_at"], 1),
            "workers": workers,
            "snapshots": snapshots,
            # Reported, never a reason to fail: answers go on without the team store.
            "team_store": service.team.figures.state if service.team is not None else "off",
        },
        status_code=200 if healthy else 503,
    )


async def _loaded_state(request: Request[AppState]) -> WorkspaceState:
    cwd = request.query_params.get("cwd")
    if cwd is None:
        raise RequestError(400, "cwd is required: the absolute path of the workspace")
    try:
        state = await request.state["service"].find(cwd)
    except InputError as exc:
        raise RequestError(400, str(exc)) from None
    if state is None:
        raise RequestError(404, "no memory of this workspace yet: ask it a question first", {"cwd": cwd})
    return state


async def stats(request: Request[AppState]) -> JSONResponse:
    service = request.state["service"]
    server = server_stats(service, request.state["started_at"])
    if "cwd" not in request.query_params:
        on_disk = [meta.to_json() for meta in await asyncio.to_thread(service.on_disk)]
        loaded = [workspace_stats(s, service) for s in service.states()]
        return JSONResponse({"server": server, "workspaces": loaded, "on_disk": on_disk})
    try:
        state = await _loaded_state(request)
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    return JSONResponse({"server": server, "workspace": workspace_stats(state, service)})


async def metrics(request: Request[AppState]) -> Response:
    families = collect_families(request.state["service"], request.state["started_at"])  # live state, on the loop
    text = await asyncio.to_thread(render_metrics, families)  # the process collector reads /proc
    return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")


async def status_page(request: Request[AppState]) -> HTMLResponse:
    service = request.state["service"]
    workspaces = [workspace_stats(s, service) for s in service.states()]
    on_disk = [meta.to_json() for meta in await asyncio.to_thread(service.on_disk)]
    show = service.settings.status_show_questions
    server = server_stats(service, request.state["started_at"])
    return HTMLResponse(render_status_page(server, workspaces, on_disk, show_questions=show))


async def config_show(request: Request[AppState]) -> JSONResponse:
    service = request.state["service"]
    return JSONResponse(config_view(request.state["running"], service.settings, service.runtime))


async def _reload_from_disk(service: WorkspaceService, provider_factory: ProviderFactory) -> tuple[Settings, list[str]]:
    """Re-read the configuration (env + config.json) and swap it in; a ConfigError leaves all as it was."""
    current = service.settings
    # reading the config file and building the provider (it may read a credential) touch the disk
    settings = await asyncio.to_thread(load_settings, env=current.env, data_dir=current.data_dir)
    changed = await service.reload(Runtime(settings, await asyncio.to_thread(provider_factory, settings)))
    return settings, changed


async def config_set(request: Request[AppState]) -> JSONResponse:
    try:
        body = await read_json(request, ConfigBody, SMALL_BODY_BYTES)
        values = validate_changes(body.root)
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    except ConfigError as exc:
        return error(400, str(exc))
    service = request.state["service"]
    data_dir = service.settings.data_dir
    async with request.state["config_lock"]:
        try:
            before = await asyncio.to_thread(write_changes, data_dir, values)
        except ConfigError as exc:
            return error(400, f"not changed: {exc}")
        except OSError as exc:
            return error(500, f"not changed: could not write {data_dir / 'config.json'}: {exc.strerror or exc}")
        try:
            settings, changed = await _reload_from_disk(service, request.state["provider_factory"])
        except ConfigError as exc:
            await asyncio.to_thread(restore, data_dir, before)
            return error(400, f"not changed: {exc}")
    return JSONResponse(
        {
            "saved": list(values),
            "config_file": str(settings.config_file),
            "changed": changed,
            **outcome(values, request.state["running"], settings),
        }
    )


async def ledger(request: Request[AppState]) -> JSONResponse:
    try:
        state = await _loaded_state(request)
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    facts = [f.to_json() for f in state.window.ledger.facts]
    return JSONResponse({"workspace": str(state.root), "facts": facts, "markdown": state.window.ledger.to_markdown()})


async def ledger_forget(request: Request[AppState]) -> JSONResponse:
    try:
        body = await read_json(request, ForgetBody, SMALL_BODY_BYTES)
        found = await request.state["service"].forget(body.cwd, body.substring)
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    except InputError as exc:
        return error(400, str(exc))
    if found is None:
        return error(404, "no memory of this workspace yet: ask it a question first", {"cwd": body.cwd})
    state, removed = found
    return JSONResponse({"workspace": str(state.root), "forgotten": removed})


async def notify(request: Request[AppState]) -> JSONResponse:
    try:
        body = await read_json(request, NotifyBody, NOTIFY_MAX_BODY_BYTES)
        events = [FileEvent(e.path, e.kind, e.content) for e in body.events]
        result, loaded = await request.state["service"].notify(body.cwd, events)
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    except InputError as exc:
        return error(400, str(exc))
    return JSONResponse(
        {
            "accepted": result.accepted,
            "ignored": result.ignored,
            "workspace_loaded": loaded,
            "reasons": result.reasons,
        }
    )


async def _wipe(request: Request[AppState], *, reload_now: bool) -> JSONResponse:
    try:
        body = await read_json(request, WorkspaceBody, SMALL_BODY_BYTES)
        return JSONResponse(await request.state["service"].wipe(body.cwd, reload_now=reload_now))
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    except InputError as exc:
        return error(400, str(exc))


async def reset(request: Request[AppState]) -> JSONResponse:
    """POST /reset: forget the workspace and load it again at once."""
    return await _wipe(request, reload_now=True)


async def empty(request: Request[AppState]) -> JSONResponse:
    """POST /empty (and /clear): forget the workspace; it loads again when next asked about."""
    return await _wipe(request, reload_now=False)


async def reload(request: Request[AppState]) -> JSONResponse:
    try:
        await read_json(request, EmptyBody, SMALL_BODY_BYTES, empty_ok=True)
        async with request.state["config_lock"]:
            settings, changed = await _reload_from_disk(request.state["service"], request.state["provider_factory"])
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    except ConfigError as exc:
        return error(400, f"configuration not reloaded: {exc}")
    return JSONResponse({"reloaded": True, "changed": changed, "model": settings.model})


def build_routes() -> list[Route]:
    """Every plain route, in matching order (/mcp is mounted after them); each handler reads `request.state`."""
    return [
        Route("/", status_page, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/ledger", ledger, methods=["GET"]),
        Route("/ledger/forget", ledger_forget, methods=["POST"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/notify", notify, methods=["POST"]),
        Route("/reset", reset, methods=["POST"]),
        Route("/empty", empty, methods=["POST"]),
        Route("/clear", empty, methods=["POST"]),
        Route("/reload", reload, methods=["POST"]),
        Route("/config", config_show, methods=["GET"]),
        Route("/config", config_set, methods=["POST"]),
        Route("/check", check, methods=["POST"]),
    ]
