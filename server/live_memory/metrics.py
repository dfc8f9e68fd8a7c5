"""GET /metrics: the /stats figures in Prometheus text format, read from the live state per scrape."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from live_memory.service import WorkspaceService
from live_memory.stats import server_stats, workspace_stats


class LiveMemoryCollector(Collector):
    def __init__(self, service: WorkspaceService, started_at: float) -> None:
        self.service = service
        self.started_at = started_at

    def collect(self) -> Iterator[Metric]:
        server = server_stats(self.service, self.started_at)
        yield _gauge("live_memory_uptime_seconds", "Seconds since the server started.", server["uptime_s"])
        yield _gauge("live_memory_workspaces_loaded", "Workspaces held in memory.", server["workspaces_loaded"])
        yield _gauge("live_memory_in_flight", "Questions being answered.", server["in_flight"])
        yield _gauge("live_memory_queue_depth", "Questions waiting for admission.", server["queue_depth"])
        spend = CounterMetricFamily("live_memory_cost_usd", "Cumulative model spend in USD.", labels=["kind"])
        spend.add_metric(["foreground"], server["cost_usd"]["foreground"])
        spend.add_metric(["background"], server["cost_usd"]["background"])
        yield spend
        rows = [workspace_stats(s) for s in self.service.states()]
        yield _per_workspace(
            "live_memory_context_fill_ratio", "Context window fill (used / budget).", rows, lambda r: r["fill"]["ratio"]
        )
        yield _per_workspace(
            "live_memory_context_used_tokens",
            "Estimated tokens in the window.",
            rows,
            lambda r: r["fill"]["used_tokens"],
        )
        yield _per_workspace(
            "live_memory_questions", "Questions answered.", rows, lambda r: r["questions_answered"], counter=True
        )
        yield _per_workspace(
            "live_memory_compactions", "Compactions run.", rows, lambda r: r["compactions"], counter=True
        )
        yield _per_workspace(
            "live_memory_file_contexts", "Files known to the window.", rows, lambda r: r["file_contexts"]
        )
        yield _per_workspace(
            "live_memory_cache_read_share",
            "Share of prompt tokens read from cache.",
            rows,
            lambda r: r["cache_read_share"],
        )
        yield _per_workspace(
            "live_memory_estimated_tokens_saved",
            "Tokens the callers did not have to read (lower bound).",
            rows,
            lambda r: r["estimated_tokens_saved"],
            counter=True,
        )


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _per_workspace(name: str, doc: str, rows: list[dict[str, Any]], pick: Any, *, counter: bool = False) -> Metric:
    family: Metric = (
        CounterMetricFamily(name, doc, labels=["workspace"])
        if counter
        else GaugeMetricFamily(name, doc, labels=["workspace"])
    )
    for row in rows:
        family.add_metric([row["workspace"]], pick(row))  # type: ignore[attr-defined]
    return family


def render_metrics(service: WorkspaceService, started_at: float) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LiveMemoryCollector(service, started_at))
    return generate_latest(registry)
