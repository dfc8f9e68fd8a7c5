"""bench.report renders docs/benchmarks.md from result dicts: tables, goals, the commit and date each section was
measured on, no section for a benchmark without results, and charts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench import report


def savings_result() -> dict[str, Any]:
    arm = {
        "requests": 3,
        "summarizer_requests": 1,
        "read_calls": 2,
        "prompt_tokens": 12_000,
        "uncached_input_tokens": 2_000,
        "cache_read_tokens": 9_000,
        "cache_write_tokens": 1_000,
        "cache_read_share": 0.75,
        "output_tokens": 600,
        "cost_usd": 0.0123,
        "cost_per_question_usd": 0.00615,
        "cost_usd_by_component": {
            "uncached_input": 0.002,
            "cache_read": 0.0009,
            "cache_write": 0.00125,
            "output": 0.003,
        },
        "questions_by_reads": {"0": 1, "2": 1},
        "cost_per_question_by_reads_usd": {"0": 0.002, "2": 0.0103},
        "compactions": 1,
    }
    baseline = {**arm, "requests": 4, "summarizer_requests": 0, "cost_usd": 0.02, "cost_per_question_usd": 0.01}
    baseline["cost_per_question_by_reads_usd"] = {"2": 0.01}
    baseline["questions_by_reads"] = {"2": 2}
    return {
        "method": "scripted",
        "limits": ["the model is scripted"],
        "config": {"questions": 2, "sessions": 1, "restarts": 0, "tees": 3, "edits": 1, "max_context_tokens": 64_000},
        "setups": {
            "anthropic": {
                "label": "Anthropic Haiku 4.5",
                "model": "claude-haiku-4-5",
                "cache_rules": "anthropic",
                "live_memory": arm,
                "baseline": baseline,
                "comparison": {"break_even_after_question": 1},
                "series": {
                    "question": [1, 2],
                    "session": [1, 1],
                    "live_memory_cumulative_usd": [0.01, 0.0123],
                    "baseline_cumulative_usd": [0.01, 0.02],
                    "compaction": [False, True],
                },
            },
            "deepseek": {"label": "DeepSeek flash", "live_memory": {}, "baseline": {}, "comparison": {}},
        },
    }


def prefix_cache_result() -> dict[str, Any]:
    series = [
        {"question": 0, "cache_read_share": 0.65, "fill": 0.11, "compaction": False, "naive_cache_read_share": 0.65},
        {"question": 1, "cache_read_share": 0.97, "fill": 0.86, "compaction": True, "naive_cache_read_share": 0.3},
    ]
    return {
        "config": {"questions": 2, "max_context_tokens": 100_000, "compaction_threshold": 0.85},
        "simulations": {
            "anthropic": {
                "model": "claude-haiku-4-5",
                "live_memory": {
                    "cache_read_share_questions": 0.9598,
                    "ideal_share_questions": 0.9643,
                    "cost_per_question_usd": 0.0185,
                    "compactions": 8,
                },
                "naive": {"cache_read_share_questions": 0.7011, "cost_per_question_usd": 0.0512},
                "ratios": {"cost_naive_over_live_memory": 2.77},
                "analysis": ["goal (>= 90% from cache, within 3 points of ideal): MET"],
                "series": series,
            }
        },
    }


def notify_result() -> dict[str, Any]:
    """A /notify benchmark's results, as bench/results/notify_bench.json holds them (one variant, two ways)."""
    data: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "notify_result.json").read_text())
    return data


def test_savings_section_tabulates_both_arms_and_the_break_even_point() -> None:
    lines = "\n".join(report.render_savings(savings_result(), {})).splitlines()
    expected = {
        "| Anthropic Haiku 4.5 | $0.006150 | $0.0100 | $0.0123 | $0.0200 | -38.5% | after question 1 |",
        "| input (prompt) tokens | 12,000 | 12,000 |",
        "| cache-read share | 75.00% | 75.00% |",
        "| Live Memory | $0.002000 (1) | $0.0103 (1) |",  # mean cost per question by the files it read
        "| no memory | – | $0.0100 (2) |",
        "- the model is scripted",  # the limits, listed
    }
    assert expected - set(lines) == set()  # whole lines of the section


def test_savings_setup_with_no_figures_renders_dashes_instead_of_failing() -> None:
    text = "\n".join(report.render_savings(savings_result(), {}))
    assert "| DeepSeek flash | – | – | – | – | – | – |" in text


def test_break_even_never_is_spelled_out() -> None:
    result = savings_result()
    result["setups"]["anthropic"]["comparison"]["break_even_after_question"] = "never"
    assert "| never |" in "\n".join(report.render_savings(result, {}))


def test_prefix_cache_section_states_the_goal_and_the_verdict() -> None:
    text = "\n".join(report.render_prefix_cache(prefix_cache_result(), {"cache_share": "img/cache_share.png"}))
    assert "Goal (Anthropic): at least 90% of question prompt tokens from cache" in text
    assert "| anthropic (`claude-haiku-4-5`) | 95.98% | 96.43% | 70.11% | $0.0185 | $0.0512 | 2.77x | 8 |" in text
    assert "Verdict: goal (>= 90% from cache, within 3 points of ideal): MET" in text
    assert "![Cache-read share per question with compaction points](img/cache_share.png)" in text
    assert "context_fill" not in text  # no chart drawn, no link


def test_notify_section_reads_per_variant_results_in_file_order() -> None:
    text = "\n".join(report.render_notify(notify_result(), {}))
    assert text.index("POST /notify (as shipped)") < text.index("POST /notify (TCP_NODELAY)")
    assert "| POST /notify (as shipped) | 80.0 | 1,280.1 | 5.00 | 84.7 | 135.2 | 188.7 |" in text
    assert "| TCP_NODELAY | 20 | 20 | 144.0 | 192.0 | 200 |" in text


def test_notify_section_accepts_the_single_run_shape() -> None:
    text = "\n".join(report.render_notify(notify_result()["TCP_NODELAY"], {}))
    assert "| POST /notify (as measured) | 80.0 |" in text


def test_notify_section_shows_a_same_run_baseline_and_the_server_cpu_per_request() -> None:
    run = notify_result()["TCP_NODELAY"]
    notify = {**run["notify"], "server_cpu_ms_per_notify": 1.41}
    baseline = {**run["notify"], "notify_events_per_s": 1000.0, "server_cpu_ms_per_notify": 1.78}
    text = "\n".join(report.render_notify({**run, "notify": notify, "baseline": baseline}, {}))
    assert "| POST /notify (previous code, same run) | 80.0 | 1,000.0 |" in text
    cpu = "Server CPU per /notify request (all its threads): 1.41 ms (as measured), 1.78 ms (previous code, same run)."
    assert cpu in text


def test_tools_section_marks_each_ratio_against_its_goal() -> None:
    data = {"results": [{"repo": "django", "files": 6810, "tree_ratio": 2.5, "grep_ratio_median_vs_plain_rg": 1.1}]}
    text = "\n".join(report.render_tools(data, {}))
    assert "| django | 6,810 | – | – | 2.50x (missed) | – | 1.10x (met) |" in text


def test_a_benchmark_without_results_gets_no_section_and_unknown_results_are_listed() -> None:
    text = report.render_document({"savings": savings_result(), "mystery": {"answer": 42}})
    assert "## Prompt-cache effectiveness" not in text and "Load under chaos" not in text
    assert "not run yet" not in text.lower()
    assert "No committed results, so no section: `python -m bench.session_bill`" in text
    assert "`python -m bench.load`" in text.split("No committed results")[1]
    assert "## Other results: mystery" in text
    assert "| answer | 42 |" in text
    assert "![" not in text  # no charts were drawn


def test_figures_of_the_wrong_type_render_as_dashes() -> None:
    text = report.render_document({"workspaces_bench": {"results": "oops", "ratios": 5, "callers": 3}})
    assert "Method: 3 concurrent MCP callers ask – questions each" in text


def test_result_of_an_unexpected_shape_falls_back_to_its_top_level_figures() -> None:
    text = report.render_document({"savings": {"setups": {"anthropic": 5}, "method": "scripted"}})
    assert "_The result file has an unexpected shape (AttributeError); its top-level figures:_" in text
    assert "| method | scripted |" in text


def test_document_is_deterministic_for_the_same_results() -> None:
    results = {"savings": savings_result(), "prefix_cache": prefix_cache_result(), "notify_bench": notify_result()}
    assert report.render_document(results) == report.render_document(json.loads(json.dumps(results)))


def test_unreadable_result_files_become_notes(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "overhead.json").write_text(json.dumps({"questions": 3, "overhead_p50_ms": 1.5}))
    results, notes = report.load_results(tmp_path)
    assert list(results) == ["overhead"]
    assert len(notes) == 2 and "`broken.json` could not be read" in notes[0]


def test_charts_are_written_linked_and_byte_identical_when_redrawn(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    results_dir, doc, img = tmp_path / "results", tmp_path / "docs" / "benchmarks.md", tmp_path / "docs" / "img"
    results_dir.mkdir()
    for name, data in (("savings", savings_result()), ("prefix_cache", prefix_cache_result())):
        (results_dir / f"{name}.json").write_text(json.dumps(data))
    (results_dir / "notify_bench.json").write_text(json.dumps(notify_result()))
    paths = ["--results", str(results_dir), "--doc", str(doc), "--img", str(img), "--readme", str(tmp_path / "R.md")]
    assert report.main([*paths, "--dpi", "30"]) == 0
    assert sorted(p.name for p in img.glob("*.png")) == sorted(report.CHART_FILES.values())
    assert "![Context fill per question: the watermark sawtooth](img/context_fill.png)" in doc.read_text()
    again = report.write_charts({"notify_bench": notify_result()}, tmp_path / "again", tmp_path, dpi=30)
    assert again == {"notify_throughput": "again/notify_throughput.png"}
    name = "notify_throughput.png"
    assert (tmp_path / "again" / name).read_bytes() == (img / name).read_bytes()
    # Regenerating one section keeps its charts linked (and the others' text as it was).
    assert report.main(["--only", "prefix_cache", *paths, "--dpi", "30"]) == 0
    assert "![Context fill per question: the watermark sawtooth](img/context_fill.png)" in doc.read_text()


def test_every_section_says_the_commit_and_date_it_was_measured_on_and_a_dash_when_unknown() -> None:
    stamped = {**prefix_cache_result(), "commit": "0123456789abcdef0123-dirty", "date": "2026-12-07"}
    text = report.render_document({"prefix_cache": stamped, "savings": savings_result()})
    where = "(`bench/results/prefix_cache.json`)"
    assert f"_Figures measured at commit `0123456789ab-dirty` on 2026-12-07 {where}._" in text
    assert "_Figures measured at commit – on – (`bench/results/savings.json`)._" in text  # written before the stamp


def test_the_page_says_in_plain_words_that_the_sessions_are_generated_and_the_models_scripted() -> None:
    text = " ".join(report.render_document({}).split())
    assert "the Claude Code sessions are generated" in text and "the models" in text and "are scripted" in text
    assert "not measurements of real use" in text
