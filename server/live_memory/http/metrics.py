"""GET /metrics: the /stats figures in Prometheus text format, read from the live state per scrape.

Workspaces are labelled by their short stable id (`workspace="<id>"`); `live_memory_workspace_info`
maps each id to its path. The live figures are read on the event loop (`collect_families`); the
process collector reads /proc, so the text is rendered in a thread (`render_metrics`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from live_memory.http.stats import server_stats, workspace_stats
from live_memory.workspaces.service import WorkspaceService
from live_memory.workspaces.workspace import WorkspaceState

TOKEN_TYPES = ("input", "cache_read", "cache_write", "output")


def collect_families(service: WorkspaceService, started_at: float) -> list[Metric]:
    """Every Live Memory metric family, read from the live state (call on the event loop)."""
    server = server_stats(service, started_at)
    states = service.states()
    rows = [workspace_stats(s) for s in states]
    families = _server_families(server)
    families += _usage_families(service, states, rows)
    if server["team"]["state"] != "off":  # no team series at all when the store is off
        families += _team_families(server["team"])
    return families + _per_workspace_families(rows)


def _server_families(server: dict[str, Any]) -> list[Metric]:
    """The server as a whole: uptime, load, the credential, the spend."""
    families: list[Metric] = [
        _gauge("live_memory_uptime_seconds", "Seconds since the server started.", server["uptime_s"]),
        _gauge("live_memory_workspaces_loaded", "Workspaces held in memory.", server["workspaces_loaded"]),
        _gauge("live_memory_in_flight", "Questions being answered.", server["in_flight"]),
        _gauge("live_memory_queue_depth", "Questions waiting for admission.", server["queue_depth"]),
        _gauge(
            "live_memory_credential_missing",
            "1 when the server has no model credential (questions fail until one is set).",
            1 if server["credential"] == "missing" else 0,
        ),
    ]
    spend = CounterMetricFamily("live_memory_cost_usd", "Cumulative model spend in USD.", labels=["kind"])
    spend.add_metric(["foreground"], server["cost_usd"]["foreground"])
    spend.add_metric(["background"], server["cost_usd"]["background"])
    families.append(spend)
    return families


def _usage_families(
    service: WorkspaceService, states: Sequence[WorkspaceState], rows: list[dict[str, Any]]
) -> list[Metric]:
    """Which path each workspace id stands for, the tokens each spent, the answers' latency, the provider errors."""
    info = InfoMetricFamily("live_memory_workspace", "The path of each workspace id.", labels=["workspace"])
    for row in rows:
        info.add_metric([row["id"]], {"path": row["workspace"]})
    tokens = CounterMetricFamily(
        "live_memory_tokens", "Model tokens by workspace, type and kind of call.", labels=["workspace", "type", "kind"]
    )
    for state in states:
        for kind, usage in (("foreground", state.stats.usage), ("background", state.stats.background_usage)):
            for name in TOKEN_TYPES:
                tokens.add_metric([state.id, name, kind], getattr(usage, f"{name}_tokens"))
    latency = HistogramMetricFamily(
        "live_memory_answer_latency_seconds", "Time to answer a question.", labels=["workspace"]
    )
    for workspace_id, histogram in sorted(service.telemetry.histograms.items()):
        latency.add_metric([workspace_id], histogram.buckets(), histogram.total_s)
    errors = CounterMetricFamily("live_memory_provider_errors", "Provider errors by kind.", labels=["kind"])
    for kind, count in sorted(service.telemetry.provider_errors.items()):
        errors.add_metric([kind], count)
    return [info, tokens, latency, errors]


def _team_families(team: dict[str, Any]) -> list[Metric]:
    """The team store's figures (only when it is configured)."""
    up = 1 if team["state"] == "up" else 0
    facts = CounterMetricFamily("live_memory_team_facts", "Facts exchanged with the team store.", labels=["way"])
    facts.add_metric(["pulled"], team["facts_pulled"])
    facts.add_metric(["pushed"], team["facts_pushed"])
    answers = CounterMetricFamily(
        "live_memory_team_answers", "Answers exchanged with the team store (team_share_answers).", labels=["way"]
    )
    for way in ("pulled", "pushed", "reused"):
        answers.add_metric([way], team[f"answers_{way}"])
    rejected = CounterMetricFamily(
        "live_memory_team_rows_rejected", "Rows of the team store refused at the edge (malformed, oversized)."
    )
    rejected.add_metric([], team["rows_rejected"])
    pull_errors = CounterMetricFamily("live_memory_team_pull_errors", "Pulls from the team store that failed.")
    pull_errors.add_metric([], team["pull_errors"])
    families: list[Metric] = [
        _gauge("live_memory_team_store_up", "1 when the team store answers (absent: off).", up),
        facts,
        answers,
        rejected,
        pull_errors,
        _gauge("live_memory_team_facts_queued", "Facts waiting on disk for the team store.", team["facts_queued"]),
        _gauge("live_memory_team_listening", "1 when the store's announcements arrive.", int(team["listening"])),
    ]
    if team["latency_ms"] is not None:
        families.append(
            _gauge(
                "live_memory_team_store_latency_seconds", "The team store's last round trip.", team["latency_ms"] / 1000
            )
        )
    return families


def _per_workspace_families(rows: list[dict[str, Any]]) -> list[Metric]:
    """One series per workspace: the window's fill, the questions, compactions, files, the cache, the savings."""
    return [
        _per_workspace(
            "live_memory_context_fill_ratio", "Context window fill (used / budget).", rows, lambda r: r["fill"]["ratio"]
        ),
        _per_workspace(
            "live_memory_context_used_tokens",
            "Estimated tokens in the window.",
            rows,
            lambda r: r["fill"]["used_tokens"],
        ),
        _per_workspace(
            "live_memory_questions", "Questions answered.", rows, lambda r: r["questions_answered"], counter=True
        ),
        _per_workspace("live_memory_compactions", "Compactions run.", rows, lambda r: r["compactions"], counter=True),
        _per_workspace("live_memory_file_contexts", "Files known to the window.", rows, lambda r: r["file_contexts"]),
        _per_workspace(
            "live_memory_cache_read_share",
            "Share of prompt tokens read from cache.",
            rows,
            lambda r: r["cache_read_share"],
        ),
        _per_workspace(
            "live_memory_estimated_tokens_saved",
            "Estimated tokens the callers did not have to read, net of Live Memory's own spend (may be negative).",
            rows,
            lambda r: r["estimated_tokens_saved"],
        ),
    ]


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _per_workspace(
    name: str, doc: str, rows: list[dict[str, Any]], pick: Callable[[dict[str, Any]], float], *, counter: bool = False
) -> Metric:
    family: CounterMetricFamily | GaugeMetricFamily = (
        CounterMetricFamily(name, doc, labels=["workspace"])
        if counter
        else GaugeMetricFamily(name, doc, labels=["workspace"])
    )
    for row in rows:
        family.add_metric([row["id"]], pick(row))
    return family


class _Fixed(Collector):
    def __init__(self, families: Sequence[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def render_metrics(families: Sequence[Metric]) -> bytes:
    """The exposition text: the given families plus the standard process metrics (reads /proc: blocking)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(families))
    ProcessCollector(registry=registry)
    return generate_latest(registry)
