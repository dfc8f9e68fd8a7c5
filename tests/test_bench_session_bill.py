"""The session-bill benchmark (bench/session_bill.py) on its quick configuration: the real server in its own
process for arm B, the simulated Claude Code arms A and C, and the figures the report is built from. In one
process (jobs=1): the pool's two interpreters and a second server start-up cost more CPU than they save."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from bench import report, session_bill
from bench.bill_cache import PRICES
from bench.bill_workload import ROTATIONS, build_tasks, load_repo, workload
from bench.common import ledger_changes, summary_request

from live_memory.core.prompts import summary_request_text
from live_memory.engine.summarizer import Conversation, Summarizer
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.ledger import Ledger, LedgerFact
from live_memory.providers import anthropic, openai_compat
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.fakes.windows import ask

LOAD = workload("medium", "natural", (6, 6), content=True)


@pytest.fixture(scope="module")
def quick() -> dict[str, Any]:
    return session_bill.run(quick=True, workloads=[LOAD], jobs=1)


def test_every_arm_reports_costs_per_task_and_per_decile(quick: dict[str, Any]) -> None:
    run = quick["runs"][f"live-memory/{LOAD.name}"]
    assert list(run["arms"]) == ["A", "C", "B-strict", "B-trusting"]
    for name, arm in run["arms"].items():
        assert len(arm["per_task_usd_sonnet"]) == run["tasks"] == 12, name
        assert len(arm["deciles_per_task_usd_sonnet"]) == 10, name
        assert arm["total_usd_opus"] > arm["total_usd_sonnet"] > 0, name
    for name in ("C", "B-strict", "B-trusting"):
        helper = run["arms"][name]["subagent" if name == "C" else "memory"]
        assert len(helper["deciles_per_question_usd"]) == 10
        assert helper["usd_per_question"] > 0
    assert set(quick["headline"][f"live-memory/{LOAD.name}"]) == {"strict", "trusting"}


def test_totals_add_up_from_main_agent_helper_and_block_kinds(quick: dict[str, Any]) -> None:
    for name, arm in quick["runs"][f"live-memory/{LOAD.name}"]["arms"].items():
        helper = arm.get("memory") or arm.get("subagent") or {"usd": 0.0}
        assert math.isclose(arm["total_usd_sonnet"], arm["main"]["usd_sonnet"] + helper["usd"], abs_tol=1e-5), name
        assert math.isclose(sum(arm["per_task_usd_sonnet"]), arm["total_usd_sonnet"], abs_tol=1e-4), name
        assert math.isclose(sum(arm["per_task_usd_opus"]), arm["total_usd_opus"], abs_tol=1e-4), name
        kinds = sum(k["usd"] for k in arm["main"]["by_kind_sonnet"].values())
        assert math.isclose(kinds, arm["main"]["usd_sonnet"], abs_tol=1e-4), name
        if "by_kind" in helper:
            assert math.isclose(sum(k["usd"] for k in helper["by_kind"].values()), helper["usd"], abs_tol=1e-4)
        usage = arm["main"]
        assert (
            usage["prompt_tokens"]
            == usage["uncached_tokens"] + usage["cache_write_tokens"] + usage["cache_read_tokens"]
        )
        assert 0 <= usage["never_read_cache_write_tokens"] <= usage["cache_write_tokens"]


def test_the_real_server_answered_every_question_and_its_cache_was_read(quick: dict[str, Any]) -> None:
    run = quick["runs"][f"live-memory/{LOAD.name}"]
    for mode in ("strict", "trusting"):
        arm = run["arms"][f"B-{mode}"]
        assert arm["ask_errors"] == 0 and arm["failed_provider_requests"] == 0 and arm["unscripted_requests"] == 0
        assert arm["wrong_answers"] == 0
        memory = arm["memory"]
        assert memory["requests"] >= run["questions"]
        assert memory["cache_read_tokens"] > 0
        # New Read results go uncached, so the hit share (reads of what went through the cache) is the higher.
        read, written = memory["cache_read_tokens"], memory["cache_write_tokens"]
        assert memory["cache_hit_share"] == round(read / (read + written), 4) > memory["cache_read_share"]
        assert memory["reads"] > 0
        kinds = memory["by_kind"]
        assert {"system+tree", "per-question tail", "own Read results"} <= set(kinds)
        if run["edits"]:
            assert arm["notify_events_accepted"] > 0
    assert run["arms"]["B-trusting"]["memory"]["reads"] <= run["arms"]["B-strict"]["memory"]["reads"]


def test_no_memory_main_agent_context_and_cost_grow_with_tasks() -> None:
    repo = load_repo("live-memory")
    tasks = build_tasks(repo, workload("medium", "natural", (8,)), session_bill.SEED)
    arm = session_bill.run_no_memory(repo, tasks)
    prompts = [call.prompt for call in arm.main.calls]
    assert arm.compactions == 0
    assert prompts == sorted(prompts)  # results stay in context: every request carries all earlier ones
    per_task = arm.main.per_task(len(tasks), PRICES["sonnet"])
    assert all(cost > 0 for cost in per_task)
    # Each request of a later task reads more from the cache: it carries every earlier result.
    early, late = ([c.read for c in arm.main.calls if (c.task >= 4) == half] for half in (False, True))
    assert min(late) > max(early)


def test_a_workload_is_deterministic_and_its_answers_name_every_file() -> None:
    repo = load_repo("live-memory")
    first = build_tasks(repo, LOAD, session_bill.SEED)
    assert first == build_tasks(repo, LOAD, session_bill.SEED)
    for task in first:
        assert all((path in task.question) == (path in task.named) for path in task.files)
        assert all(path in task.answer for path in task.files)
        assert 0 <= len(task.files) <= 4
    assert next(t.think_s for t in first if t.session == 1) == 3600.0


def test_the_report_section_shows_every_arm_and_splices_into_an_existing_document(quick: dict[str, Any]) -> None:
    lines = report.render_session_bill(quick, {})
    text = "\n".join(lines)
    for name in report.SESSION_ARM_NAMES.values():
        assert name in text
    assert "### live-memory" in text and LOAD.name in text
    document = report.render_document({"overhead": {"questions": 3}})  # no session bill yet
    spliced = report.splice_sections(document, {"session_bill": quick}, ["session_bill"])
    assert "Session bill: a Claude Code user's whole bill](#session-bill-a-claude-code-users-whole-bill)\n" in spliced
    assert LOAD.name in spliced
    assert "`python -m bench.session_bill`" not in spliced.split("## ")[0]  # no longer listed as without results
    untouched = document.split("## Per-question server overhead", 1)[1]
    assert spliced.endswith(untouched)  # the other sections are kept as they were
    with pytest.raises(ValueError, match="unknown benchmark section"):
        report.splice_sections(document, {}, ["no_such_benchmark"])


def _long_run(memory: Sequence[float | None], subagent: Sequence[float | None], **shape: Any) -> dict[str, Any]:
    return {
        "repo": "r",
        "workload": "medium-natural-120",
        "sequence": "medium-natural-120",
        "rotation": 0,
        "locality": "medium",
        "sizes": "natural",
        "sessions": [120],
        "arms": {
            "C": {"subagent": {"deciles_per_question_usd": subagent}},
            "B-strict": {"memory": {"deciles_per_question_usd": memory}},
        },
        **shape,
    }


def test_the_report_reads_rotations_through_the_trend_not_as_workload_rows(quick: dict[str, Any]) -> None:
    run = quick["runs"][f"live-memory/{LOAD.name}"]
    rotation = {**run, "workload": "medium-natural-10-r4", "rotation": 4}
    order = [0.02 - 0.001 * d for d in range(10)]
    rotated = session_bill.trend(
        [_long_run(order[r:] + order[:r], [0.03] * 10, workload=f"w-r{r}", rotation=r) for r in range(ROTATIONS)]
    )["r"]["rotations"]
    data = {
        **quick,
        "runs": {**quick["runs"], "live-memory/medium-natural-10-r4": rotation},
        "trend": {"live-memory": {**quick["trend"].get("live-memory", {}), "rotations": rotated}},
    }
    text = "\n".join(report.render_session_bill(data, {}))
    assert "medium-natural-10-r4" not in text  # no workload row for a rotation
    assert session_bill.headline([rotation]) == {}  # nor a headline row
    assert "mean of `medium-natural-120` started at each tenth of the way in (10 runs" in text
    assert "| last ÷ first; 2nd ÷ 1st half | 1.00x; 1.00x | 1.00x; 1.00x |" in text
    assert "| 1-10% | $0.0300 | $0.0155 | – | 0.52x | – |" in text  # every decile: the same tasks


def test_the_trend_is_the_mean_over_every_120_task_sequence_and_variants_are_other_sequences() -> None:
    rising, falling = [0.01 * (1 + i) for i in range(10)], [0.01 * (10 - i) for i in range(10)]
    other = _long_run([1.0] * 10, [1.0] * 10, sessions=[60])  # not a 120-task session: left out
    second = _long_run([None, *falling[1:]], [0.04] * 10, workload="medium-natural-120-v1", sequence="x-v1")
    rotation = _long_run([9.0] * 10, [9.0] * 10, workload="medium-natural-120-r1", rotation=1)
    figures = session_bill.trend([_long_run(rising, [0.02] * 10), second, other, rotation])["r"]
    assert figures["sequences"] == 2  # a rotation is not another sequence
    memory = figures["memory-strict"]
    assert memory["deciles_per_question_usd"][0] == 0.01  # a decile without a question is skipped, not zero
    assert memory["deciles_per_question_usd"][5] == pytest.approx(0.055)
    assert memory["last_over_first"] == pytest.approx(5.5)
    assert figures["subagent"]["second_half_over_first_half"] == 1.0
    assert memory["over_subagent_by_decile"][9] == pytest.approx(round(0.055 / 0.03, 3))
    assert "rotations" not in figures  # one rotation of ten balances nothing

    base, variant = (
        session_bill.parse_workload("medium-natural-120"),
        session_bill.parse_workload("medium-natural-120-v2"),
    )
    assert (variant.name, variant.tasks, variant.variant) == ("medium-natural-120-v2", 120, 2)
    repo = load_repo("live-memory")
    assert [t.question for t in build_tasks(repo, base, 1)] != [t.question for t in build_tasks(repo, variant, 1)]
    with pytest.raises(SystemExit, match="optionally -vN"):
        session_bill.parse_workload("medium-natural-120-x2")


def test_the_rotations_of_a_sequence_give_a_trend_without_the_task_order() -> None:
    # One sequence whose cost per question falls by its task order alone, and its ten rotations: every
    # decile then averages the same tasks, so the trend is flat; the distinct-sequence mean still falls.
    order = [0.02 - 0.001 * d for d in range(10)]
    runs = [
        _long_run(
            order[r:] + order[:r],
            order[r:] + order[:r],
            workload=f"medium-natural-120-r{r}" if r else "medium-natural-120",
            rotation=r,
        )
        for r in range(ROTATIONS)
    ]
    other = _long_run(order, order, workload="medium-natural-120-v1", sequence="medium-natural-120-v1")
    figures = session_bill.trend([other, *runs])["r"]  # the sequence with all its rotations, wherever listed
    assert figures["sequences"] == 2 and figures["memory-strict"]["last_over_first"] == pytest.approx(0.55)
    rotated = figures["rotations"]
    assert (rotated["sequence"], rotated["runs"]) == ("medium-natural-120", 10)
    assert rotated["memory-strict"]["last_over_first"] == 1.0
    assert rotated["memory-strict"]["over_subagent_by_decile"] == [1.0] * 10


def test_a_rotation_keeps_the_sequence_s_tasks_from_a_tenth_in_and_redoes_its_edits() -> None:
    repo = load_repo("live-memory")
    base = build_tasks(repo, session_bill.parse_workload("medium-natural-20"), 1)
    rotated_load = session_bill.parse_workload("medium-natural-20-r3")
    assert (rotated_load.name, rotated_load.sequence, rotated_load.rotation) == (
        "medium-natural-20-r3",
        "medium-natural-20",
        3,
    )
    rotated = build_tasks(repo, rotated_load, 1)
    assert [t.question for t in rotated] == [t.question for t in base[6:] + base[:6]]
    assert [t.index for t in rotated] == list(range(20))
    edited = [t for t in rotated if t.edit is not None]
    assert edited and [t.files[0] for t in edited] == [t.edit.path for t in edited if t.edit]
    for task in edited:  # each edit is made against the file as this order's earlier edits left it
        assert task.edit is not None and f"reviewed in task {task.index + 1}" in task.edit.new
    again = session_bill.parse_workload("medium-natural-120-v1-r9")
    assert (again.variant, again.rotation, again.sequence) == (1, 9, "medium-natural-120-v1")
    bad_names = ("medium-natural-120-r10", "medium-natural-3x20-r1", "medium-natural-120-r1-v1")
    for bad in (*bad_names, "medium-natural-120-r0", "medium-natural-120-r03", "medium-natural-120-v0"):
        with pytest.raises(SystemExit, match="then -rN"):
            session_bill.parse_workload(bad)


def test_the_fake_summarizer_answers_in_the_form_the_ledger_applies() -> None:
    ledger = Ledger(
        [
            LedgerFact("a/x.py defines X"),
            LedgerFact("b/y.py defines Y", {"b/y.py": "h"}, stale=True),  # named by the material: confirmed
            LedgerFact("c/z.py defines Z", {"c/z.py": "h"}, stale=True),  # not named: dropped
        ]
    )
    material = "### b/y.py\n```\nclass Y: ...\n```"
    request = summary_request_text(ledger.text_for_summary(), material)
    answer = ledger_changes(request, ["a/x.py defines X", "b/y.py defines Y", "d/w.py defines W"])
    assert answer.splitlines() == ["= 2", "- 3", "+ d/w.py defines W"]
    ledger.apply_summary(answer, {"b/y.py": "h2"}, 2048)
    assert [(f.text, f.stale) for f in ledger.facts] == [
        ("a/x.py defines X", False),
        ("b/y.py defines Y", False),
        ("d/w.py defines W", False),
    ]
    assert ledger_changes(request, ["a/x.py defines X"]).splitlines() == ["= 2", "- 3"]
    assert ledger_changes(summary_request_text("", "Q: q\nA: a"), []) == "(no change)"


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
async def test_the_fake_summarizer_reads_a_fold_as_it_reads_the_standalone_call(protocol: str) -> None:
    window = ContextWindow(budget_tokens=50_000)
    window.ledger.set_from_summary("a/x.py defines X\nb/y.py defines Y", {"b/y.py": "h"})
    answer = "It lives in b/y.py:1-9 and d/w.py:3-5. " * 40
    for index, question in enumerate(["where is Y?", "who calls it?", "what is new?"]):
        ask(window, question, answer, cites=("b/y.py",), sent_at=100.0 + index)
    window.ledger.mark_stale("b/y.py")  # after the freeze: the fold names it as newly stale
    provider = ScriptedProvider(text_response("(no change)"))
    conversation = Conversation(({"name": "Read", "input_schema": {}},), clock=lambda: 110.0)
    material = f"Q: where is Y?\nFiles read: b/y.py\nA: {answer}"
    await Summarizer(provider, conversation=conversation).fold_history(window, 2, material, ["b/y.py"])
    [fold] = provider.requests
    body = (anthropic if protocol == "anthropic" else openai_compat).request_body(fold, "model")
    read = summary_request(body)
    assert read is not None and "Q: where is Y?\nA: It lives in b/y.py" in read and "who calls it?" not in read
    standalone = summary_request_text(window.ledger.text_for_summary(), material)
    found = ["b/y.py defines Y", "d/w.py defines W"]
    assert ledger_changes(read, found) == ledger_changes(standalone, found) == "= 2\n+ d/w.py defines W"
    assert summary_request({"system": [{"text": "You are Live Memory"}], "messages": []}) is None  # a question
