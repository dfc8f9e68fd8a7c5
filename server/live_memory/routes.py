"""Plain JSON routes beside /mcp. Thin handlers: validate, call the manager, answer JSON.

Errors are `{"error": ..., "detail": ...}` with a 4xx status; no traceback reaches a client.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from live_memory import __version__
from live_memory.config import load_settings
from live_memory.constants import NOTIFY_MAX_BODY_BYTES, NOTIFY_MAX_EVENTS, SERVER_NAME
from live_memory.errors import ConfigError, InputError
from live_memory.ingest import FileEvent
from live_memory.manager import QuestionManager, Runtime
from live_memory.providers.base import ChatProvider
from live_memory.workspace import WorkspaceState

ProviderFactory = Callable[..., ChatProvider | None]
SMALL_BODY_BYTES = 64 * 1024


class RequestError(Exception):
    def __init__(self, status: int, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class NotifyEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=4096)
    kind: Literal["read", "write", "change", "add", "unlink"]
    content: str | None = None


class NotifyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cwd: str = Field(min_length=1, max_length=4096)
    session_id: str | None = Field(default=None, max_length=256)
    events: list[NotifyEvent] = Field(max_length=NOTIFY_MAX_EVENTS)


class WorkspaceBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cwd: str = Field(min_length=1, max_length=4096)


class EmptyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


async def read_json(request: Request, model: type[BaseModel], max_bytes: int) -> Any:
    """Bounded body -> JSON -> schema, each failure a precise 4xx."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise RequestError(415, "send the body as JSON with Content-Type: application/json")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise RequestError(413, f"request body too large ({declared} bytes; at most {max_bytes})")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise RequestError(413, f"request body too large (over {max_bytes} bytes)")
            chunks.append(chunk)
    except ClientDisconnect:
        raise RequestError(400, "the client disconnected while sending the body") from None
    raw = b"".join(chunks) or b"{}"
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise RequestError(400, f"malformed JSON: {exc}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:20]]
        raise RequestError(422, "invalid request body", problems) from None


def error(status: int, message: str, detail: Any = None) -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


def workspace_stats(state: WorkspaceState, manager: QuestionManager) -> dict[str, Any]:
    window = state.window
    files = window.files.values()
    used = window.prompt_tokens()
    usage = state.stats.usage
    return {
        "workspace": str(state.root),
        "loaded": state.loaded,
        "fill": {"used_tokens": used, "total_tokens": window.budget_tokens, "ratio": round(window.fill(), 4)},
        "qa_retained": window.qa_count(),
        "file_contexts": len(window.files),
        "stale_files": sum(1 for f in files if f.state != "current"),
        "ledger_facts": len(window.ledger.facts),
        "stale_ledger_facts": sum(1 for f in window.ledger.facts if f.stale),
        "questions_answered": state.stats.questions,
        "cost_usd": round(state.stats.cost_usd, 6),
        "tokens": {
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cache_read": usage.cache_read_tokens,
            "cache_write": usage.cache_write_tokens,
        },
        "cache_read_share": round(usage.cache_read_tokens / usage.prompt_tokens, 4) if usage.prompt_tokens else 0.0,
        "chars_per_token": round(window.chars_per_token / window.calibration, 3),
        "in_flight": state.in_flight,
        "last_question_at": state.stats.last_question_at,
        "compactions": state.stats.compactions,
        "last_compaction_at": state.stats.last_compaction_at,
        "summaries_written": state.stats.summaries_written,
    }


def build_routes(manager: QuestionManager, started_at: float, provider_factory: ProviderFactory) -> list[Route]:
    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "service": SERVER_NAME,
                "version": __version__,
                "pid": os.getpid(),
                "uptime_s": round(time.monotonic() - started_at, 1),
            }
        )

    async def stats(request: Request) -> JSONResponse:
        runtime = manager.runtime
        server = {
            "version": __version__,
            "uptime_s": round(time.monotonic() - started_at, 1),
            "provider": runtime.settings.profile.name,
            "model": runtime.settings.model,
            "endpoint": runtime.settings.base_url,
            "credential": "configured" if runtime.provider is not None else "missing",
        }
        cwd = request.query_params.get("cwd")
        if cwd is not None:
            try:
                found = manager.registry.loaded(cwd)
            except InputError as exc:
                return error(400, str(exc))
            if found is None:
                return error(404, "workspace not loaded: ask it a question first", {"cwd": cwd})
            return JSONResponse({"server": server, "workspace": workspace_stats(found[0], manager)})
        workspaces = [workspace_stats(s, manager) for s in manager.registry.all()]
        return JSONResponse({"server": server, "workspaces": workspaces})

    async def notify(request: Request) -> JSONResponse:
        try:
            body = await read_json(request, NotifyBody, NOTIFY_MAX_BODY_BYTES)
            events = [FileEvent(e.path, e.kind, e.content) for e in body.events]
            result, loaded = await manager.notify(body.cwd, events)
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
                return JSONResponse(await manager.wipe(body.cwd, reload_now=reload_now))
            except RequestError as exc:
                return error(exc.status, str(exc), exc.detail)
            except InputError as exc:
                return error(400, str(exc))

        return handler

    async def reload(request: Request) -> JSONResponse:
        try:
            await read_json(request, EmptyBody, SMALL_BODY_BYTES)
            current = manager.settings
            settings = load_settings(env=current.env, data_dir=current.data_dir)
        except RequestError as exc:
            return error(exc.status, str(exc), exc.detail)
        except ConfigError as exc:
            return error(400, f"configuration not reloaded: {exc}")
        changed = manager.reload(Runtime(settings, provider_factory(settings)))
        return JSONResponse({"reloaded": True, "changed": changed, "model": settings.model})

    empty = wipe_route(reload_now=False)
    return [
        Route("/health", health, methods=["GET"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/notify", notify, methods=["POST"]),
        Route("/reset", wipe_route(reload_now=True), methods=["POST"]),
        Route("/empty", empty, methods=["POST"]),
        Route("/clear", empty, methods=["POST"]),
        Route("/reload", reload, methods=["POST"]),
    ]
