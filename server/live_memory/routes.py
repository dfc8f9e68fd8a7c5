"""Plain JSON routes beside /mcp. Thin handlers: validate, call the manager, answer JSON.

Errors are `{"error": ..., "detail": ...}` with a 4xx status; no traceback reaches a client.
"""

from __future__ import annotations

import os
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from live_memory import __version__
from live_memory.constants import SERVER_NAME
from live_memory.errors import InputError
from live_memory.manager import QuestionManager
from live_memory.workspace import WorkspaceState


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


def build_routes(manager: QuestionManager, started_at: float) -> list[Route]:
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
                state = manager.registry.loaded(cwd)
            except InputError as exc:
                return error(400, str(exc))
            if state is None:
                return error(404, "workspace not loaded: ask it a question first", {"cwd": cwd})
            return JSONResponse({"server": server, "workspace": workspace_stats(state, manager)})
        workspaces = [workspace_stats(s, manager) for s in manager.registry.all()]
        return JSONResponse({"server": server, "workspaces": workspaces})

    return [Route("/health", health, methods=["GET"]), Route("/stats", stats, methods=["GET"])]
