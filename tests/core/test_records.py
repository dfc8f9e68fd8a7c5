"""The shared value types: the answer trailer contract, token usage arithmetic, the token estimate, and
the bounded reasons /notify reports."""

from __future__ import annotations

import pytest

from live_memory.core.records import MAX_IGNORE_REASONS, IngestResult, QuestionResult, Usage, estimate_tokens


def result(**overrides: object) -> QuestionResult:
    values: dict[str, object] = {
        "answer": "VERSION is 3 (app.py:1)\n\n",
        "model": "claude-haiku-4-5",
        "latency_s": 2.345,
        "usage": Usage(input_tokens=100, output_tokens=50, cache_read_tokens=1000, cache_write_tokens=200),
        "tool_calls": 2,
        "files_read": 1,
        "cost_usd": 0.01234,
        "context_used_tokens": 2500,
        "context_total_tokens": 10_000,
    }
    values.update(overrides)
    return QuestionResult(**values)  # type: ignore[arg-type]


def test_the_trailer_renders_every_contract_field() -> None:
    assert result().trailer() == (
        "---\n[live-memory] model=claude-haiku-4-5 latency=2.3s tokens=1300/50(in/out) cached=77% "
        "tool_calls=2 files_read=1 cost=$0.0123 context=25%"
    )


def test_an_unmetered_answer_says_so_instead_of_a_price() -> None:
    assert "cost=n/a(subscription)" in result(cost_usd=None).trailer()
    assert "cost=$0.0000" in result(cost_usd=0.0).trailer()  # metered, and free (e.g. a local model)


def test_a_timed_out_or_partial_answer_is_flagged_in_the_trailer() -> None:
    assert result(timed_out=True).trailer().endswith("context=25% timed_out=true")
    assert result(error="endpoint failed").trailer().endswith("context=25% partial=true")
    assert result(timed_out=True, error="x").trailer().endswith(" timed_out=true partial=true")


def test_an_unknown_context_size_shows_zero_fill_rather_than_failing() -> None:
    assert result(context_total_tokens=0).trailer().endswith("context=0%")
    assert "cached=0%" in result(usage=Usage()).trailer()  # no prompt (nothing sent): no division by zero


def test_the_rendered_answer_is_the_text_a_blank_line_and_the_trailer() -> None:
    rendered = result().render()
    assert rendered.startswith("VERSION is 3 (app.py:1)\n\n---\n[live-memory] model=")
    assert rendered.count("---\n[live-memory]") == 1


def test_the_whole_prompt_is_uncached_input_plus_cache_reads_and_writes() -> None:
    usage = Usage(
        input_tokens=10, output_tokens=5, cache_read_tokens=300, cache_write_tokens=40, cache_write_1h_tokens=30
    )
    assert usage.prompt_tokens == 350  # hour-long writes are part of the writes, not added again
    total = usage + Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4)
    assert total == Usage(
        input_tokens=11, output_tokens=7, cache_read_tokens=303, cache_write_tokens=44, cache_write_1h_tokens=30
    )
    assert Usage() + Usage() == Usage() and Usage().prompt_tokens == 0


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100)])
def test_the_token_estimate_rounds_up_at_four_characters_per_token(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_the_token_estimate_follows_a_calibrated_ratio() -> None:
    assert estimate_tokens("x" * 30, chars_per_token=3.0) == 10


def test_ignored_events_are_all_counted_but_only_the_first_reasons_kept() -> None:
    result = IngestResult()
    for index in range(MAX_IGNORE_REASONS + 10):
        result.ignore(f"f{index}.py", "outside file_globs")
    assert result.ignored == MAX_IGNORE_REASONS + 10 and result.accepted == 0
    assert len(result.reasons) == MAX_IGNORE_REASONS == 50
    assert result.reasons[0] == "f0.py: outside file_globs"
