"""In-memory figures for the status page and /metrics: provider errors by kind, recent questions per
workspace, latency percentiles and Prometheus-style cumulative histograms."""

from __future__ import annotations

import pytest

from live_memory import constants as C
from live_memory.core import errors
from live_memory.workspaces.telemetry import LatencyHistogram, RecentQuestion, Telemetry, error_kind


def asked(at: float, latency_s: float, *, cost: float | None = 0.001, question: str = "q") -> RecentQuestion:
    return RecentQuestion(at, latency_s, 2, cost, "answered", question)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (errors.NoCredentialError("x"), "no_credential"),
        (errors.AuthError("x", status=401), "auth"),
        (errors.RateLimitedError("x", retry_after_s=3.0), "rate_limited"),
        (errors.OverloadedError("x", status=529), "overloaded"),
        (errors.PromptTooLongError("x", limit_tokens=10), "prompt_too_long"),
        (errors.ProviderTimeoutError("x"), "timeout"),
        (errors.BadRequestError("x", status=404), "bad_request"),
        (errors.ProviderError("x"), "other"),
    ],
)
def test_each_provider_error_has_its_own_metrics_label(error: errors.ProviderError, kind: str) -> None:
    assert error_kind(error) == kind


def test_no_two_provider_error_classes_share_a_label_and_none_falls_through_to_other() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.ProviderError) and value is not errors.ProviderError
    ]
    kinds = [error_kind(cls("x")) for cls in classes]
    assert "other" not in kinds and len(set(kinds)) == len(kinds) == len(classes) > 0


def test_a_recent_question_shows_its_text_only_when_asked_and_rounds_its_figures() -> None:
    entry = RecentQuestion(1700000000.5, 1.23456, 3, 0.0123456789, "partial", "where is main?", "opencode")
    assert entry.to_json(with_text=False) == {
        "at": 1700000000.5,
        "latency_s": 1.235,
        "tool_calls": 3,
        "cost_usd": 0.012346,
        "outcome": "partial",
        "agent": "opencode",
    }
    assert entry.to_json(with_text=True)["question"] == "where is main?"


def test_an_unmetered_question_has_no_cost() -> None:
    assert asked(0, 1, cost=None).to_json(with_text=False)["cost_usd"] is None


def test_histogram_buckets_are_cumulative_and_a_value_on_a_bound_counts_in_that_bucket() -> None:
    histogram = LatencyHistogram(bounds=(1.0, 5.0))
    for seconds in (0.2, 1.0, 3.0, 5.0, 9.0):
        histogram.observe(seconds)
    assert histogram.buckets() == [("1.0", 2), ("5.0", 4), ("+Inf", 5)]
    assert histogram.count == 5 and histogram.total_s == pytest.approx(18.2)


def test_an_empty_histogram_shows_every_bucket_at_zero() -> None:
    buckets = LatencyHistogram().buckets()
    assert [bound for bound, _ in buckets] == [*map(str, C.LATENCY_BUCKETS_S), "+Inf"]
    assert all(count == 0 for _, count in buckets)


def test_the_latency_buckets_ascend_so_the_histogram_is_cumulative() -> None:
    assert list(C.LATENCY_BUCKETS_S) == sorted(set(C.LATENCY_BUCKETS_S))
    assert C.LATENCY_BUCKETS_S[-1] >= C.DEFAULT_TIMEOUT_S  # a question at its deadline still lands in a bucket


def test_recent_questions_are_kept_per_workspace_newest_first() -> None:
    telemetry = Telemetry()
    for i in range(3):
        telemetry.question("ws-a", asked(float(i), 1.0, question=f"a{i}"))
    telemetry.question("ws-b", asked(9.0, 1.0, question="b0"))
    assert [q.question for q in telemetry.recent("ws-a")] == ["a2", "a1", "a0"]
    assert [q.question for q in telemetry.recent("ws-a", limit=1)] == ["a2"]
    assert [q.question for q in telemetry.recent("ws-b")] == ["b0"]
    assert telemetry.recent("unknown") == [] and telemetry.recent("ws-a", limit=0) == []


def test_the_status_page_shows_a_handful_of_the_questions_kept() -> None:
    telemetry = Telemetry()
    for i in range(C.RECENT_QUESTIONS_KEPT + 5):
        telemetry.question("ws", asked(float(i), 1.0))
    assert len(telemetry.recent("ws")) == C.RECENT_QUESTIONS_SHOWN
    assert len(telemetry.recent("ws", limit=1000)) == C.RECENT_QUESTIONS_KEPT


def test_latency_percentiles_cover_only_the_latest_samples_and_are_rounded() -> None:
    telemetry = Telemetry(latencies_kept=4)
    for seconds in (100.0, 100.0, 0.1111, 0.2222, 0.3333, 0.4444):
        telemetry.question("ws", asked(0.0, seconds))
    assert telemetry.latency() == {"p50_s": 0.222, "p95_s": 0.444, "samples": 4}
    assert Telemetry().latency() == {"p50_s": None, "p95_s": None, "samples": 0}


def test_each_workspace_has_its_own_histogram_and_errors_are_counted_by_kind() -> None:
    telemetry = Telemetry()
    telemetry.question("ws-a", asked(0.0, 0.3))
    telemetry.question("ws-b", asked(0.0, 70.0))
    assert telemetry.histograms["ws-a"].buckets()[0] == ("0.5", 1)
    assert telemetry.histograms["ws-b"].buckets()[0] == ("0.5", 0)
    telemetry.provider_error("timeout")
    telemetry.provider_error("timeout")
    telemetry.provider_error("auth")
    assert dict(telemetry.provider_errors) == {"timeout": 2, "auth": 1}
