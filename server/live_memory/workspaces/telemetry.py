"""What the status page and /metrics show beyond the workspace counters: recent questions per workspace,
answer latencies (percentiles and a histogram) and provider errors by kind.

In memory only, bounded, never persisted: a restart starts the figures afresh. Mutated on the event loop.
"""

from __future__ import annotations

import bisect
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from live_memory import constants as C
from live_memory.core.errors import (
    AuthError,
    BadRequestError,
    NoCredentialError,
    OverloadedError,
    PromptTooLongError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
)

# Provider error kinds, most specific class first (a label value on /metrics).
_ERROR_KINDS: tuple[tuple[type[ProviderError], str], ...] = (
    (NoCredentialError, "no_credential"),
    (AuthError, "auth"),
    (RateLimitedError, "rate_limited"),
    (OverloadedError, "overloaded"),
    (PromptTooLongError, "prompt_too_long"),
    (ProviderTimeoutError, "timeout"),
    (BadRequestError, "bad_request"),
)
# A provider failure the loop turned into a partial answer (the loop keeps only its message).
INTERRUPTED = "interrupted"


def error_kind(exc: ProviderError) -> str:
    for cls, kind in _ERROR_KINDS:
        if isinstance(exc, cls):
            return kind
    return "other"


@dataclass(frozen=True)
class RecentQuestion:
    at: float  # wall-clock time the answer was returned
    latency_s: float
    tool_calls: int
    cost_usd: float | None  # None: not metered (subscription credential)
    outcome: str  # answered / partial / timed_out
    question: str  # shown only when the status_show_questions option is on
    agent: str = ""  # which coding agent asked (its MCP client name), never what it is

    def to_json(self, *, with_text: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "at": self.at,
            "latency_s": round(self.latency_s, 3),
            "tool_calls": self.tool_calls,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "outcome": self.outcome,
            "agent": self.agent or None,
        }
        if with_text:
            data["question"] = self.question
        return data


@dataclass
class LatencyHistogram:
    """Cumulative-bucket histogram in the Prometheus sense (counts per upper bound, plus +Inf)."""

    bounds: tuple[float, ...] = C.LATENCY_BUCKETS_S
    counts: list[int] = field(default_factory=list)
    total_s: float = 0.0
    count: int = 0

    def observe(self, seconds: float) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.total_s += seconds
        self.count += 1

    def buckets(self) -> list[tuple[str, int]]:
        """(upper bound, cumulative count) pairs ending with +Inf."""
        counts = self.counts or [0] * (len(self.bounds) + 1)
        out, running = [], 0
        for bound, n in zip([*map(str, self.bounds), "+Inf"], counts, strict=True):
            running += n
            out.append((bound, running))
        return out


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(share * 100) * len(ordered) // 100))  # ceil(share * n), at least 1
    return ordered[min(rank, len(ordered)) - 1]


class Telemetry:
    def __init__(
        self, *, recent_kept: int = C.RECENT_QUESTIONS_KEPT, latencies_kept: int = C.RECENT_LATENCIES_KEPT
    ) -> None:
        self.recent_kept = recent_kept
        self._recent: dict[str, deque[RecentQuestion]] = {}
        self._latencies: deque[float] = deque(maxlen=latencies_kept)
        self.histograms: dict[str, LatencyHistogram] = {}
        self.provider_errors: Counter[str] = Counter()

    def question(self, workspace_id: str, entry: RecentQuestion) -> None:
        self._recent.setdefault(workspace_id, deque(maxlen=self.recent_kept)).append(entry)
        self._latencies.append(entry.latency_s)
        self.histograms.setdefault(workspace_id, LatencyHistogram()).observe(entry.latency_s)

    def provider_error(self, kind: str) -> None:
        self.provider_errors[kind] += 1

    def recent(self, workspace_id: str, limit: int = C.RECENT_QUESTIONS_SHOWN) -> list[RecentQuestion]:
        """The last `limit` questions of a workspace, newest first."""
        entries = self._recent.get(workspace_id, ())
        return list(reversed(list(entries)[-limit:])) if limit > 0 else []

    def latency(self) -> dict[str, float | int | None]:
        values = list(self._latencies)
        p50, p95 = percentile(values, 0.50), percentile(values, 0.95)
        return {
            "p50_s": None if p50 is None else round(p50, 3),
            "p95_s": None if p95 is None else round(p95, 3),
            "samples": len(values),
        }
