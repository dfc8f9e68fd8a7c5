"""What /stats, /metrics and the status page report: one place that reads the live state.

Estimated tokens saved (per workspace): for every answered question, the size of the distinct
files its tools read (chars / 4, the same estimate the window uses) is what the calling agent would
otherwise have had to read itself to ground that answer; the answer's own output tokens are
subtracted, since the caller still reads those. Files the model answered from without reading
(teed or preloaded content) are not counted, so the figure is a lower bound.
"""

from __future__ import annotations

import os
import time
from typing import Any

from live_memory import __version__
from live_memory.service import WorkspaceService
from live_memory.spend import caps_of
from live_memory.workspace import WorkspaceState

TOKENS_SAVED_METHOD = (
    "per answered question: estimated tokens of the distinct files its tools read (chars/4), minus the answer's "
    "output tokens; teed/preloaded content the model used without reading is not counted (a lower bound)"
)


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def workspace_stats(state: WorkspaceState) -> dict[str, Any]:
    window = state.window
    stats = state.stats
    usage = stats.usage
    files = list(window.files.values())
    return {
        "workspace": str(state.root),
        "loaded": state.loaded,
        "fill": {
            "used_tokens": window.prompt_tokens(),
            "total_tokens": window.budget_tokens,
            "ratio": round(window.fill(), 4),
        },
        "qa_retained": window.qa_count(),
        "file_contexts": len(files),
        "files_with_content": sum(1 for f in files if f.content is not None),
        "stale_files": sum(1 for f in files if f.state != "current"),
        "ledger_facts": len(window.ledger.facts),
        "stale_ledger_facts": sum(1 for f in window.ledger.facts if f.stale),
        "questions_answered": stats.questions,
        "rebased_commits": stats.rebased_commits,
        "qa_summarized": window.summarized_pairs,
        "cost_usd": round(stats.cost_usd + stats.background_cost_usd, 6),
        "cost": {"foreground_usd": round(stats.cost_usd, 6), "background_usd": round(stats.background_cost_usd, 6)},
        "tokens": {
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cache_read": usage.cache_read_tokens,
            "cache_write": usage.cache_write_tokens,
            "background_prompt": stats.background_usage.prompt_tokens,
            "background_output": stats.background_usage.output_tokens,
        },
        "cache_read_share": _share(usage.cache_read_tokens, usage.prompt_tokens),
        "chars_per_token": round(window.chars_per_token / window.calibration, 3),
        "estimated_tokens_saved": stats.tokens_saved,
        "in_flight": state.in_flight,
        "queue_depth": state.admission.waiting,
        "last_question_at": stats.last_question_at,
        "compactions": stats.compactions,
        "last_compaction_at": stats.last_compaction_at,
        "summaries_written": stats.summaries_written,
    }


def server_stats(service: WorkspaceService, started_at: float) -> dict[str, Any]:
    runtime = service.runtime
    settings = runtime.settings
    states = service.states()
    prompt = sum(s.stats.usage.prompt_tokens for s in states)
    read = sum(s.stats.usage.cache_read_tokens for s in states)
    return {
        "version": __version__,
        "pid": os.getpid(),
        "uptime_s": round(time.monotonic() - started_at, 1),
        "provider": settings.profile.name,
        "model": settings.model,
        "endpoint": settings.base_url,
        "config_file": str(settings.config_file),
        "data_dir": str(settings.data_dir),
        "credential": "missing"
        if runtime.provider is None
        else "subscription"
        if runtime.provider.info.subscription
        else "api key",
        "workspaces_loaded": len(states),
        "questions_answered": sum(s.stats.questions for s in states),
        "in_flight": sum(s.in_flight for s in states),
        "queue_depth": sum(s.admission.waiting for s in states),
        "cost_usd": {
            "foreground": round(sum(s.stats.cost_usd for s in states), 6),
            "background": round(sum(s.stats.background_cost_usd for s in states), 6),
        },
        "today": service.spend.report(caps_of(runtime)),
        "background_calls": settings.background,
        "cache_read_share": _share(read, prompt),
        "estimated_tokens_saved": sum(s.stats.tokens_saved for s in states),
        "estimated_tokens_saved_method": TOKENS_SAVED_METHOD,
    }
