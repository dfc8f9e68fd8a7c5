"""The session bill's published figures are generated: README.md's block between its session-bill markers and
docs/benchmarks.md's session-bill section must be what bench.report writes from the committed
bench/results/session_bill.json, and a figure missing from a result file shows as "–", never as a number."""

from __future__ import annotations

import copy
import difflib
import json
from pathlib import Path
from typing import Any

import pytest
from bench import report

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "bench" / "results" / "session_bill.json"
REGENERATE = "run `python -m bench.report --only session_bill` (or `python -m bench.report`) and commit the result"


def _diff(committed: str, generated: str, name: str) -> str:
    lines = difflib.unified_diff(
        committed.splitlines(keepends=True), generated.splitlines(keepends=True), name, f"{name} (generated)", n=1
    )
    return "".join(list(lines)[:40])


def _flat(text: str) -> str:
    """The text with its line wrapping undone, so an assertion does not depend on where a bullet wraps."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    data = json.loads(RESULT.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_readme_figures_are_those_the_committed_results_give(committed: dict[str, Any]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert report.README_BEGIN in readme and report.README_END in readme, (
        f"README.md lost its {report.README_BEGIN} … {report.README_END} markers: put them back around the "
        f"session-bill figures, then {REGENERATE}"
    )
    generated = report.splice_readme(readme, committed)
    assert readme == generated, (
        f"README.md's session-bill figures disagree with bench/results/session_bill.json: {REGENERATE}.\n"
        + _diff(readme, generated, "README.md")
    )


def test_the_benchmarks_page_section_is_what_the_committed_results_give(committed: dict[str, Any]) -> None:
    doc = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    generated = report.splice_sections(doc, {"session_bill": committed}, ["session_bill"])
    assert doc == generated, (
        f"docs/benchmarks.md's session-bill section disagrees with bench/results/session_bill.json: {REGENERATE}.\n"
        + _diff(doc, generated, "docs/benchmarks.md")
    )


# -- synthetic result files --------------------------------------------------------------------------------
def _run(
    workload: str,
    *,
    locality: str = "medium",
    sessions: tuple[int, ...] = (60,),
    b_over_a: float = 0.6,
    b_over_c: float = 0.95,
    memory_over_subagent: float = 0.8,
    new_fields: bool = False,
    decoys: bool | int = 12,
) -> dict[str, Any]:
    compare: dict[str, Any] = {
        mode: {
            "memory_over_subagent_per_question": memory_over_subagent,
            "b_over_a_sonnet": b_over_a,
            "b_over_c_sonnet": b_over_c,
            "memory_cache_hit_share": 0.95,
            "memory_cache_read_share": 0.7,
            "break_even_vs_a_sonnet": 3,
            "break_even_vs_c_sonnet": 5,
        }
        for mode in report.MODES
    }
    subagent: dict[str, Any] = {"usd_per_question": 0.015, "reads": 10, "rereads": 2}
    memory: dict[str, Any] = {"usd_per_question": 0.012, "reads": 8, "rereads": 1, "cache_read_share": 0.7}
    arms: dict[str, Any] = {
        "A": {"total_usd_sonnet": 10.0, "main": {"reads": 20, "rereads": 4}},
        "C": {"total_usd_sonnet": 6.0, "subagent": subagent},
        "B-strict": {"total_usd_sonnet": 5.7, "memory": dict(memory)},
        "B-trusting": {"total_usd_sonnet": 5.6, "memory": dict(memory)},
    }
    if new_fields:
        arms["C"]["total_usd_sonnet_inherit"] = 9.25
        subagent["usd_per_question_inherit"] = 0.0432
        for mode in report.MODES:
            compare[mode]["b_over_c_inherit_sonnet"] = 0.613
            compare[mode]["memory_over_subagent_inherit_per_question"] = 0.271
        for helper, requests in (
            (subagent, 4.5),
            (arms["B-strict"]["memory"], 2.25),
            (arms["B-trusting"]["memory"], 1.5),
        ):
            helper["requests_per_question"] = requests
            helper["tool_rounds_per_question"] = requests - 1
            helper["by_question_kind"] = {
                "locate": {"questions": 7, "usd_per_question": 0.0061, "requests_per_question": requests - 0.5},
                "explain": {"questions": 11, "usd_per_question": 0.0175, "requests_per_question": requests},
            }
    return {
        "repo": "r",
        "workload": workload,
        "rotation": 0,
        "locality": locality,
        "tasks": sum(sessions),
        "sessions": list(sessions),
        "questions": 50,
        "edits": 20,
        "decoys": decoys,
        "arms": arms,
        "compare": compare,
    }


def bill(*, new_fields: bool = False) -> dict[str, Any]:
    runs = [
        _run("medium-natural-60", b_over_a=0.64, new_fields=new_fields),
        _run("low-natural-60", locality="low", b_over_a=0.53, b_over_c=0.9, new_fields=new_fields),
        _run("high-small-60", locality="high", b_over_a=0.94, memory_over_subagent=0.997, new_fields=new_fields),
        _run("medium-natural-3x20", sessions=(20, 20, 20), b_over_a=0.5, new_fields=new_fields),
    ]
    if new_fields:
        runs.append(_run("medium-natural-60-nodecoy", b_over_c=0.97, new_fields=True, decoys=False))
    rotations = {
        "sequence": "medium-natural-120",
        "runs": 10,
        "subagent": {"last_over_first": 1.05},
        "memory-strict": {"last_over_first": 0.82, "over_subagent_by_decile": [0.93, 0.8, 0.72]},
        "memory-trusting": {"last_over_first": 0.47, "over_subagent_by_decile": [0.82, 0.5, 0.37]},
    }
    return {
        "config": {"repos": {"r": {"files": 10, "eligible": 8, "digest": "d"}}},
        "runs": {f"r/{run['workload']}": run for run in runs},
        "trend": {
            "r": {
                "sequences": 4,
                "subagent": {"last_over_first": 1.22},
                "memory-strict": {"last_over_first": 1.1},
                "memory-trusting": {"last_over_first": 0.53},
                "rotations": rotations,
            }
        },
    }


def test_the_readme_block_is_ranges_over_the_rows_of_one_run() -> None:
    text = _flat(report.render_readme_session_bill(bill()))
    assert "is 0.80–0.997x the Explore subagent's on Haiku" in text  # 0.997 would round onto 1.00: 3 decimals
    assert "in 8 of 8 cases (4 workload rows × 2 memory models; the highest, 0.997x, on r's `high-small-60`" in text
    assert "medium or low locality is 0.53–0.64x of exploring with no memory" in text
    assert "it is 0.90–0.95x with the subagent on Haiku" in text
    assert "(high locality, 60 tasks) it is 0.94x of just reading them" in text
    assert "0.82x (strict) and 0.47x (trusting) on r; for the subagent, 1.05x" in text
    assert "0.93x → 0.72x (strict) and 0.82x → 0.37x (trusting) on r" in text
    assert "(4 per repository)" in text and "costs 1.22x of its first and the memory's 0.53–1.10x" in text
    assert "95% is read back at 60 tasks in one session" in text  # the 3 x 20 row is not one session
    assert all(len(line) <= report.README_WIDTH for line in report.render_readme_session_bill(bill()).splitlines())


def test_a_missing_figure_shows_a_dash_never_a_number() -> None:
    data = bill()
    del data["runs"]["r/low-natural-60"]["compare"]["trusting"]["b_over_a_sonnet"]
    del data["runs"]["r/high-small-60"]["compare"]["strict"]["memory_over_subagent_per_question"]
    del data["trend"]["r"]["rotations"]
    text = _flat(report.render_readme_session_bill(data))
    # A range over the figures that remain would be invented: the whole range is a dash.
    assert "medium or low locality is – of exploring with no memory" in text
    assert "per question is – the Explore subagent's on Haiku" in text and "– of the 4 workload rows" in text
    assert "for the memory, – (strict) and – (trusting) on r; for the subagent, –." in text
    assert "first → last decile: – (strict) and – (trusting) on r" in text
    # The fields a result file does not have yet: dashes in the README and in every table cell.
    assert "and – with it inheriting Sonnet" in text
    assert "sends its model – requests with the strict model and – with the trusting one" in text
    doc = "\n".join(report.render_session_bill(data, {}))
    assert "| medium-natural-60 (50 q, 20 edits) | $10.00 | $6.00 | – | $5.70 | $5.60 |" in doc
    assert "| locate | – (–) | – (–) | – (–) | –; – | –; – | –; – |" in doc  # listed before any result has them


def test_a_model_that_read_nothing_re_read_nothing() -> None:
    data = bill()
    assert "of the strict model's Reads, 12% re-read a file" in _flat(report.render_readme_session_bill(data))
    data["runs"]["r/high-small-60"]["arms"]["B-strict"]["memory"].update(reads=0, rereads=0)
    assert "of the strict model's Reads, 0–12% re-read a file" in _flat(report.render_readme_session_bill(data))


def test_the_readme_block_says_what_the_figures_are_and_what_they_were_measured_on() -> None:
    readme = f"# R\n\n{report.README_BEGIN}\n{report.README_END}\n"
    with_stamp = _flat(report.splice_readme(readme, {"commit": "abcdef0123456789", "date": "2026-12-07"}))
    without = _flat(report.splice_readme(readme, {}))
    assert "the Claude Code sessions are generated" in with_stamp and "scripted" in with_stamp
    assert "measured at commit `abcdef012345` on 2026-12-07" in with_stamp
    assert "measured at commit – on –" in without  # a file written before commits and dates were recorded


def test_a_result_file_without_runs_is_not_run_yet() -> None:
    text = report.render_readme_session_bill({})
    assert "Not run yet" in text and not any(c.isdigit() for c in text)


def test_the_new_fields_are_shown_when_a_result_file_has_them() -> None:
    data = bill(new_fields=True)
    text = _flat(report.render_readme_session_bill(data))
    assert "0.80–0.997x the Explore subagent's on Haiku and 0.27x the subagent's inheriting Sonnet" in text
    assert "and 0.61x with it inheriting Sonnet, over all 4 workload rows" in text  # the control row is apart
    assert "sends its model 2.25 requests with the strict model and 1.50 with the trusting one" in text
    assert "(1.25 and 0.50 tool rounds), the subagent 4.50 (3.50 tool rounds)" in text
    assert "On the 1 decoy-free control rows" in text and "whole bill 0.97x of the subagent's on Haiku" in text
    doc = "\n".join(report.render_session_bill(data, {}))
    assert 'agentType "Explore", model "inherit") runs on the session\'s main model unless the Agent call' in doc
    assert "| C Explore subagent on Haiku | C Explore subagent inheriting Sonnet |" in doc
    assert "| medium-natural-60 (50 q, 20 edits) | $10.00 | $6.00 | $9.25 | $5.70 | $5.60 |" in doc
    assert "| 0.95x / 0.95x | 0.61x / 0.61x | 3 / 3 | 5 / 5 |" in doc
    assert "| medium-natural-60-nodecoy (50 q, 20 edits, no decoys) |" in doc  # a workload row like the others
    assert "Rows marked *no decoys* are decoy-free controls" in doc
    assert "| $0.0150 | $0.0432 | $0.0120 | $0.0120 |" in doc  # subagent $/q on Haiku, then inheriting Sonnet
    assert "| medium-natural-60 | 4.50 | 2.25 | 1.50 | 3.50 | 1.25 | 0.50 |" in doc
    assert "| locate | $0.0061 (7) | $0.0061 (7) | $0.0061 (7) | 4.00; – | 1.75; – | 1.00; – |" in doc
    assert "| explain | $0.0175 (11) |" in doc and "| edit |" not in doc  # the kinds the result file has


def test_report_main_rewrites_the_readme_block_in_place(tmp_path: Path) -> None:
    results, doc, readme = tmp_path / "results", tmp_path / "docs" / "benchmarks.md", tmp_path / "README.md"
    results.mkdir()
    prose = "# Project\n\nProse before.\n\n{block}\n\nProse after, kept as it is.\n"
    readme.write_text(prose.format(block=f"{report.README_BEGIN}\n- 9.99x, typed by hand\n{report.README_END}"))
    paths = ["--results", str(results), "--doc", str(doc), "--img", str(tmp_path / "img"), "--readme", str(readme)]
    assert report.main(paths) == 0  # no session_bill results: the README is left as it is
    assert "9.99x, typed by hand" in readme.read_text()
    (results / "session_bill.json").write_text(json.dumps(bill()))
    assert report.main(["--only", "savings", *paths]) == 0  # another section: the README is left as it is
    assert "9.99x, typed by hand" in readme.read_text()
    assert report.main(["--only", "session_bill", *paths]) == 0
    figures = f"{report.readme_intro(bill())}\n\n{report.render_readme_session_bill(bill())}"
    block = f"{report.README_BEGIN}\n{report.README_NOTE}\n{figures}\n{report.README_END}"
    assert readme.read_text() == prose.format(block=block)
    changed = copy.deepcopy(bill())
    changed["runs"]["r/low-natural-60"]["compare"]["strict"]["b_over_a_sonnet"] = 0.41
    (results / "session_bill.json").write_text(json.dumps(changed))
    assert report.main(paths) == 0  # the whole document: the README's block too
    assert "0.41–0.64x of exploring with no memory" in _flat(readme.read_text())
    assert readme.read_text().startswith("# Project\n\nProse before.\n\n") and "Prose after" in readme.read_text()
    assert "## Session bill" in doc.read_text()


def test_a_readme_without_markers_is_left_as_it_is(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Project\n")
    assert "left as it was" in report.write_readme(readme, {"session_bill": bill()})
    assert readme.read_text() == "# Project\n"
    with pytest.raises(ValueError, match="session_bill:begin"):
        report.splice_readme("# Project\n", bill())
