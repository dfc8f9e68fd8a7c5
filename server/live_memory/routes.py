"""Plain routes beside /mcp. Thin handlers: validate, call the workspace service, answer JSON (or text/HTML).

Errors are `{"error": ..., "detail": ...}` with a 4xx status; no traceback reaches a client.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from live_memory import __version__
from live_memory.config import load_settings
from live_memory.constants import NOTIFY_MAX_BODY_BYTES, SERVER_NAME
from live_memory.errors import ConfigError, InputError
from live_memory.http_bodies import (
    SMALL_BODY_BYTES,
    EmptyBody,
    ForgetBody,
    NotifyBody,
    RequestError,
    WorkspaceBody,
    error,
    read_json,
)
from live_memory.metrics import render_metrics
from live_memory.providers.base import ChatProvider
from live_memory.records import FileEvent
from live_memory.runtime import Runtime
from live_memory.service import WorkspaceService
from live_memory.stats import server_stats, workspace_stats
from live_memory.status_page import render_status_page
from live_memory.workspace import WorkspaceState

ProviderFactory = Callable[..., ChatProvider | None]


def build_routes(service: WorkspaceService, started_at: float, provider_factory: ProviderFactory) -> list[Route]:
    async def health(request: Request) -> JSONResponse:
        """ "ok" (200), or "degraded" (503) naming what is wrong: the worker threads that file I/O and
        hashing need do not answer (a no-op sent to them does not return within the probe time), or
        snapshots cannot be written (answers are kept in memory until they can)."""
        probe_s: float = request.app.state.timings.health_probe_s
        try:
            await asyncio.wait_for(asyncio.to_thread(int), probe_s)
            workers = "ok"
        except TimeoutError:
            workers = "stuck"
        failing = service.store.failing()
        snapshots = "ok" if failing is None else f"failing: {failing}"
        healthy = workers == "ok" and failing is None
        return JSONResponse(
            {
                "status": "ok" if healthy else "degraded",
                "service": SERVER_NAME,
                "version": __version__,
                "pid": os.getpid(),
                "uptime_s": round(time.monotonic() - started_at, 1),
                "workers": workers,
                "snapshots": snapshots,
            },
            status_code=200 if healthy else 503,
        )

    async def loaded_state(request: Request) -> WorkspaceState:
        cwd = request.query_params.get("cwd")
        if cwd is None:
            raise RequestError(400, "cwd is required: the absolute path of the workspace")
        try:
            state = await service.find(cwd)
        except InputError as exc:
            raise RequestError(400, str(exc)) from None
        if state is None:
            raise RequestError(404, "no memory of this workspace yet: ask it a question first", {"cwd": cwd})
        return state

    async def stats(request: Request) -> JSONResponse:
        server = server_stats(service, started_at)
        if "cwd" not in request.query_params:
            on_disk = [meta.to_json() for meta in await asyncio.to_thread(service.on_disk)]
            loaded = [workspace_stats(s) for s in service.states()]
            return JSONResponse({"server": server, "workspaces": loaded, "on_disk": on_disk})
        try:
            state = await loaded_state(request)
        except RequestError as exc:
            return error(exc.status, str(exc), exc.detail)
        return JSONResponse({"server": server, "workspace": workspace_stats(state)})

    async def metrics(request: Request) -> Response:
        return Response(render_metrics(service, started_at), media_type="text/plain; version=0.0.4; charset=utf-8")

    async def status_page(request: Request) -> HTMLResponse:
        workspaces = [workspace_stats(s) for s in service.states()]
        on_disk = [meta.to_json() for meta in await asyncio.to_thread(service.on_disk)]
        return HTMLResponse(render_status_page(server_stats(service, started_at), workspaces, on_disk))

    async def ledger(request: Request) -> JSONResponse:
        try:
            state = await loaded_state(request)
        except RequestError as exc:
            return error(exc.status, str(exc), exc.detail)
        facts = [f.to_json() for f in state.window.ledger.facts]
        return JSONResponse(
            {"workspace": str(state.root), "facts": facts, "markdown": state.window.ledger.to_markdown()}
        )

    async def ledger_forget(request: Request) -> JSONResponse:
        try:
            body = await read_json(request, ForgetBody, SMALL_BODY_BYTES)
            found = await service.forget(body.cwd, body.substring)
        except RequestError as exc:
            return error(exc.status, str(exc), exc.detail)
        except InputError as exc:
            return error(400, str(exc))
        if found is None:
            return error(404, "no memory of this workspace yet: ask it a question first", {"cwd": body.cwd})
        state, removed = found
        return JSONResponse({"workspace": str(state.root), "forgotten": removed})

    async def notify(request: Request) -> JSONResponse:
        try:
            body = await read_json(request, NotifyBody, NOTIFY_MAX_BODY_BYTES)
            events = [FileEvent(e.path, e.kind, e.content) for e in body.events]
            result, loaded = await service.notify(body.cwd, events)
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

    def wipe_route(reload_now: bool) -> Callable[[Request], Any]:
        async def handler(request: Request) -> JSONResponse:
            try:
                body = await read_json(request, WorkspaceBody, SMALL_BODY_BYTES)
                return JSONResponse(await service.wipe(body.cwd, reload_now=reload_now))
            except RequestError as exc:
                return error(exc.status, str(exc), exc.detail)
            except InputError as exc:
                return error(400, str(exc))

        return handler

    async def reload(request: Request) -> JSONResponse:
        try:
            await read_json(request, EmptyBody, SMALL_BODY_BYTES)
            current = service.settings
            # reading the config file and building the provider (it may read a credential) touch the disk
            settings = await asyncio.to_thread(load_settings, env=current.env, data_dir=current.data_dir)
        except RequestError as exc:
            return error(exc.status, str(exc), exc.detail)
        except ConfigError as exc:
            return error(400, f"configuration not reloaded: {exc}")
        changed = await service.reload(Runtime(settings, await asyncio.to_thread(provider_factory, settings)))
        return JSONResponse({"reloaded": True, "changed": changed, "model": settings.model})

    empty = wipe_route(reload_now=False)
    return [
        Route("/", status_page, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/ledger", ledger, methods=["GET"]),
        Route("/ledger/forget", ledger_forget, methods=["POST"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/notify", notify, methods=["POST"]),
        Route("/reset", wipe_route(reload_now=True), methods=["POST"]),
        Route("/empty", empty, methods=["POST"]),
        Route("/clear", empty, methods=["POST"]),
        Route("/reload", reload, methods=["POST"]),
    ]
