"""/stats figures: honest estimated savings, recent questions per workspace, answer latency percentiles."""

from __future__ import annotations

from pathlib import Path

from live_memory.core.records import ToolCall, Usage
from live_memory.http.stats import server_stats, workspace_stats
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.workspaces.telemetry import RecentQuestion, Telemetry, percentile
from tests.fakes.engine import engine_for


def big_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "big.py").write_text("".join(f"value_{i} = {i}  # a line of padding text\n" for i in range(5000)))
    return root


async def test_tokens_saved_counts_what_a_partial_read_returned_net_of_own_spend(tmp_path: Path) -> None:
    root = big_repo(tmp_path)
    usage = Usage(input_tokens=100, output_tokens=20, cache_read_tokens=1000, cache_write_tokens=50)
    provider = ScriptedProvider(
        text_response("", tool_calls=(ToolCall("r1", "Read", {"file_path": "big.py", "limit": 10}),), usage=usage),
        text_response("value_0 is 0.", usage=usage),
    )
    engine = engine_for(tmp_path, provider)
    await engine.answerer.ask(str(root), "what is value_0?")
    [state] = engine.service.states()
    stats = workspace_stats(state)
    saved = stats["tokens_saved"]
    whole_file_tokens = (root / "big.py").stat().st_size / 4
    assert saved["estimate"] is True
    assert 0 < saved["tool_output_tokens"] < whole_file_tokens / 100  # ten lines, not the 5000-line file
    own = 2 * (100 + 50 + 20 + 1000 // 10)  # two calls: uncached input, cache writes, output, cache reads at 1/10
    assert saved["own_spend_tokens"] == own
    assert stats["estimated_tokens_saved"] == saved["tool_output_tokens"] - own
    server = server_stats(engine.service, started_at=0.0)
    assert "estimate" in server["estimated_tokens_saved_method"]
    assert server["estimated_tokens_saved"] == stats["estimated_tokens_saved"]


async def test_recent_questions_show_their_text_only_when_the_option_is_on(tmp_path: Path) -> None:
    for show in ("0", "1"):
        root = big_repo(tmp_path / show)
        engine = engine_for(tmp_path / show, ScriptedProvider(), status_show_questions=show)
        await engine.answerer.ask(str(root), "first question")
        await engine.answerer.ask(str(root), "second question")
        [state] = engine.service.states()
        recent = workspace_stats(state, engine.service)["recent_questions"]
        assert [q["tool_calls"] for q in recent] == [0, 0] and all(q["latency_s"] >= 0 for q in recent)
        assert all(q["outcome"] == "answered" for q in recent)
        if show == "1":
            assert [q["question"] for q in recent] == ["second question", "first question"]  # newest first
        else:
            assert all("question" not in q for q in recent)
        assert server_stats(engine.service, 0.0)["latency"]["samples"] == 2


def test_the_recent_questions_buffer_is_bounded_and_latency_percentiles_are_nearest_rank() -> None:
    telemetry = Telemetry(recent_kept=3)
    for i in range(1, 21):
        telemetry.question("ws", RecentQuestion(float(i), float(i), 0, None, "answered", f"q{i}"))
    assert [q.question for q in telemetry.recent("ws", limit=10)] == ["q20", "q19", "q18"]
    assert telemetry.latency() == {"p50_s": 10.0, "p95_s": 19.0, "samples": 20}
    assert percentile([], 0.5) is None and percentile([3.0], 0.95) == 3.0
    assert telemetry.histograms["ws"].buckets()[-1] == ("+Inf", 20)
