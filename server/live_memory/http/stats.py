"""What /stats, /metrics and the status page report: one place that reads the live state.

Estimated tokens saved (per workspace, an estimate): what the tools returned to Live Memory's model
(the text of every successful tool result, chars / chars-per-token; a partial Read counts only the lines
it returned) is what the calling agent would otherwise have read itself; from it Live Memory's own token
spend is subtracted (uncached input, cache writes and output of questions and background calls, plus
cache reads at a tenth, their price). The net may be negative. Teed or preloaded content the model
answered from without a tool call is not counted.
"""

from __future__ import annotations

import os
import time
from typing import Any

from live_memory import __version__
from live_memory.constants import CACHE_READ_WEIGHT
from live_memory.core.records import Usage
from live_memory.settings.runtime import Runtime
from live_memory.workspaces.service import WorkspaceService
from live_memory.workspaces.spend import caps_of
from live_memory.workspaces.workspace import WorkspaceState, WorkspaceStats

TOKENS_SAVED_METHOD = (
    "an estimate: tokens the tools returned to Live Memory's model (chars / chars-per-token; partial reads count "
    "only what they returned), minus Live Memory's own spend (uncached input + cache writes + output of questions "
    "and background calls, cache reads at a tenth); may be negative"
)


def credential_kind(runtime: Runtime) -> str:
    if runtime.provider is None:
        return "missing"
    return "subscription" if runtime.provider.info.subscription else "api key"


def own_tokens(usage: Usage) -> int:
    return (
        usage.input_tokens
        + usage.cache_write_tokens
        + usage.output_tokens
        + int(usage.cache_read_tokens * CACHE_READ_WEIGHT)
    )


def tokens_saved(stats: WorkspaceStats) -> dict[str, Any]:
    own = own_tokens(stats.usage) + own_tokens(stats.background_usage)
    return {
        "estimate": True,
        "tool_output_tokens": stats.tokens_saved,
        "own_spend_tokens": own,
        "net": stats.tokens_saved - own,
    }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def workspace_stats(state: WorkspaceState, service: WorkspaceService | None = None) -> dict[str, Any]:
    """One workspace's figures; with the service, also its recent questions (text only when the
    status_show_questions option is on)."""
    window = state.window
    stats = state.stats
    usage = stats.usage
    files = list(window.files.values())
    saved = tokens_saved(stats)
    recent: list[dict[str, Any]] = []
    if service is not None:
        show = service.settings.status_show_questions
        recent = [q.to_json(with_text=show) for q in service.telemetry.recent(state.id)]
    return {
        "workspace": str(state.root),
        "id": state.id,
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
        # Earlier answers kept to give again, and how often one was given again (not persisted: a restart forgets)
        "answers_kept": len(state.answers),
        "answers_given_again": state.answers.given_again,
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
        "estimated_tokens_saved": saved["net"],
        "tokens_saved": saved,
        "recent_questions": recent,
        "in_flight": state.in_flight,
        "queue_depth": state.admission.waiting,
        "last_question_at": stats.last_question_at,
        "compactions": stats.compactions,
        "last_compaction_at": stats.last_compaction_at,
        "summaries_written": stats.summaries_written,
        "repository": state.repo,
        "agents": dict(stats.agents),  # kept in the snapshot: a restart forgets none
        "team_facts": sum(1 for f in window.ledger.facts if f.team),
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
        "watching": service.watcher.statuses(),
        "symbol_index": service.index_statuses(),
        "snapshots": "ok" if (failing := service.store.failing()) is None else f"failing: {failing}",
        "config_file": str(settings.config_file),
        "data_dir": str(settings.data_dir),
        "credential": credential_kind(runtime),
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
        "latency": service.telemetry.latency(),
        "provider_errors": dict(service.telemetry.provider_errors),
        "estimated_tokens_saved": sum(tokens_saved(s.stats)["net"] for s in states),
        "estimated_tokens_saved_method": TOKENS_SAVED_METHOD,
        "team": team_stats(service),
    }


def team_stats(service: WorkspaceService) -> dict[str, Any]:
    """The team store: its state and latency, who this server is to it and whose rows it takes, the facts
    pulled (taken into a ledger), pushed and queued, the answers held (pulled), pushed and given again, the
    rows refused at the edge and the pulls that failed; only its state when it is off."""
    team = service.team
    if team is None:
        return {"state": "off"}
    states = service.states()
    pulled = sum(state.team_merged for state in states)
    answers = sum(len(held) for state in states for held in state.team_answers.values())
    return team.figures.to_json(team.queued, pulled, team.policy.url, answers, team.policy.trusted)
