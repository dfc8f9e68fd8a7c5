"""Compaction tiers, watermarks, cooldown and the neutrality of summaries."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from live_memory.constants import SUMMARY_MAX_TOKENS
from live_memory.core.errors import OverloadedError
from live_memory.core.messages import ChatRequest, ChatResponse, Message, TextPart
from live_memory.core.prompts import CITED_HEADING
from live_memory.engine.admission import DistillGate
from live_memory.engine.agent_loop import CompactionHook, LoopLimits, QuestionLoop
from live_memory.engine.compaction import (
    CompactionPolicy,
    CompactionReport,
    CompactionScope,
    Compactor,
    history_tokens,
)
from live_memory.engine.summarizer import Summarizer
from live_memory.memory.cited_lines import Citation, CitedLines, cut
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.hot_set import HotSet, HotSetPolicy
from live_memory.memory.ledger import LedgerFact
from live_memory.testing.scripted_provider import ScriptedProvider, text_response


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class NoTools:
    async def run(self, name: str, arguments: Mapping[str, Any]) -> Any:
        raise AssertionError("no tool calls expected")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def summary_of(request: ChatRequest) -> ChatResponse:
    """A summarizer stand-in: one new fact per file or question it was given (the ledger's changes)."""
    material = request.messages[0].text
    lines = [f"+ fact about {line[4:].strip()}" for line in material.splitlines() if line.startswith("### ")]
    lines += [f"+ fact from {line[3:].strip()}" for line in material.splitlines() if line.startswith("Q: ")]
    return text_response("\n".join(lines) or "(no change)")


def add_exchange(window: ContextWindow, index: int, size: int = 400) -> None:
    window.sync_deltas()
    question = f"question number {index}"
    window.add_exchange(Message("user", (TextPart(f"## Question\n{question}"),)), question, "a" * size, ())


def filled_window(budget: int = 4000) -> ContextWindow:
    window = ContextWindow(budget_tokens=budget)
    window.freeze()
    for index in range(6):
        window.observe(f"docs/file{index}.md", f"content {index} " * 150, sha(str(index)))
    for index in range(8):
        window.record_read(f"src/mod{index}.py", sha(f"m{index}"), 100 + index)
    for index in range(8):
        add_exchange(window, index)
    return window


def bound(compactor: Compactor, gate: DistillGate) -> CompactionHook:
    """The compactor as a question's loop calls it, for one workspace."""
    return functools.partial(compactor, scope=CompactionScope(gate, tree_root=Path("/")))


def compactor(
    provider: ScriptedProvider, clock: Clock, *, floor: float = 0.6, interval: float = 60.0
) -> CompactionHook:
    return bound(
        Compactor(CompactionPolicy(threshold=0.85, floor=floor), Summarizer(provider)), DistillGate(interval, clock)
    )


async def test_no_compaction_below_the_threshold() -> None:
    window = ContextWindow(budget_tokens=100_000)
    add_exchange(window, 1)
    provider = ScriptedProvider(responder=summary_of)
    assert await compactor(provider, Clock())(window, None) is None
    assert provider.requests == []


async def test_tiers_run_in_order_down_to_the_floor() -> None:
    window = filled_window()
    assert window.fill() > 0.85
    provider = ScriptedProvider(responder=summary_of)
    report = await compactor(provider, Clock())(window, None)
    assert report is not None
    assert window.prompt_tokens() <= 0.6 * window.budget_tokens
    # tier 0 went first, LRU first: the oldest observed files were distilled by one batched call
    assert report.distilled[:2] == ["docs/file0.md", "docs/file1.md"]
    first_material = provider.requests[0].messages[0].text
    assert "content 0" in first_material and "question number" not in first_material
    assert any("fact about docs/file0.md" in f.text for f in window.ledger.facts)
    assert window.files["docs/file0.md"].content is None  # shed to a manifest entry, still re-readable
    assert all(t.kind in ("question", "answer") for t in window.history)  # re-frozen


async def test_qa_is_summarized_never_dropped_and_recent_questions_stay_out() -> None:
    window = ContextWindow(budget_tokens=3000)
    window.freeze()
    for index in range(12):
        add_exchange(window, index, size=900)
    window.ledger.facts = [LedgerFact("Uses Postgres", {"db.py": "h"}, stale=True)]
    provider = ScriptedProvider(responder=summary_of)
    report = await compactor(provider, Clock())(window, None)
    assert report is not None and report.summarized_pairs > 0
    assert "1. (possibly stale) Uses Postgres" in provider.requests[-1].messages[0].text
    # the summary's changes add to the ledger: the fact it did not name stays, as it was
    assert window.ledger.facts[0] == LedgerFact("Uses Postgres", {"db.py": "h"}, stale=True)
    summarized = provider.requests[-1].messages[0].text
    kept = [t.question for t in window.history if t.kind == "question"]
    assert kept[-2:] == ["question number 10", "question number 11"]
    for recent in ("question number 10", "question number 11"):
        assert recent not in summarized
    folded = {f.text for f in window.ledger.facts}
    for index in range(report.summarized_pairs):
        assert f"- fact from question number {index}"[2:] in folded
    assert provider.requests[-1].max_tokens == SUMMARY_MAX_TOKENS


async def test_summarizer_failure_keeps_the_history_and_waits_for_the_cooldown() -> None:
    window = ContextWindow(budget_tokens=3000)
    window.freeze()
    for index in range(12):
        add_exchange(window, index, size=900)
    before = [t.message for t in window.history]
    clock = Clock()
    provider = ScriptedProvider(OverloadedError("down"))
    compact = compactor(provider, clock)
    report = await compact(window, None)
    assert report is not None and report.summary_failures == 1
    assert [t.message for t in window.history] == before
    await compact(window, None)
    assert len(provider.requests) == 1  # within the cooldown: no new attempt
    clock.now += 61
    provider.responder = summary_of
    report = await compact(window, None)
    assert report is not None and report.summarized_pairs > 0


async def test_within_cooldown_observations_are_shed_without_summarizing() -> None:
    clock = Clock()
    provider = ScriptedProvider(responder=summary_of)
    compact = compactor(provider, clock)
    await compact(filled_window(), None)
    calls = len(provider.requests)
    report = await compact(filled_window(), None)
    assert report is not None and report.distilled == [] and report.shed
    assert all("content" not in r.messages[0].text for r in provider.requests[calls:])


async def test_a_racing_fork_sheds_while_another_distills() -> None:
    clock = Clock()
    release = asyncio.Event()
    entered = asyncio.Event()
    gate = DistillGate(60.0, clock)

    class Blocking(ScriptedProvider):
        async def chat(self, request: ChatRequest) -> ChatResponse:
            entered.set()
            await release.wait()
            return summary_of(request)

    policy = CompactionPolicy(threshold=0.85, floor=0.6)
    slow = bound(Compactor(policy, Summarizer(Blocking())), gate)
    fast = bound(Compactor(policy, Summarizer(ScriptedProvider(responder=summary_of))), gate)
    first = asyncio.ensure_future(slow(filled_window(), None))
    await entered.wait()
    report = await fast(filled_window(), None)
    release.set()
    slow_report = await first
    assert report is not None and report.distilled == [] and report.shed
    assert slow_report is not None and slow_report.distilled


async def test_overflow_adopts_the_providers_limit_and_compacts() -> None:
    window = ContextWindow(budget_tokens=100_000)
    window.freeze()
    for index in range(12):
        add_exchange(window, index, size=900)
    report = await compactor(ScriptedProvider(responder=summary_of), Clock())(window, 3000)
    assert report is not None and report.overflow
    assert window.budget_tokens == 3000
    assert window.prompt_tokens() <= 0.6 * 3000


async def run_session(floor: float, questions: int = 30) -> list[int]:
    """Each question tees a new file and asks; returns at which questions compaction ran."""
    clock = Clock()
    provider = ScriptedProvider(
        responder=lambda r: summary_of(r) if "ledger" in r.system[0].text else text_response("ok")
    )
    compactions: list[int] = []
    reports: list[CompactionReport] = []
    compactor = bound(
        Compactor(CompactionPolicy(threshold=0.85, floor=floor), Summarizer(provider)), DistillGate(0.0, clock)
    )

    async def compact(window: ContextWindow, overflow_limit: int | None) -> CompactionReport | None:
        report = await compactor(window, overflow_limit)
        if report is not None:
            reports.append(report)
        return report

    window = ContextWindow(budget_tokens=6000)
    limits = LoopLimits(
        timeout_s=30, max_iterations=3, answer_tokens=256, context_tokens=6000, force_explore_when_cold=False
    )
    loop = QuestionLoop(provider, NoTools(), (), limits, workspace_root=Path("/"), compactor=compact)
    for index in range(questions):
        window.observe(f"notes/n{index}.md", f"note {index} " * 120, sha(f"n{index}"))
        before = len(reports)
        await loop.answer(window, f"question {index}")
        if len(reports) > before:
            compactions.append(index)
    return compactions


async def test_hysteresis_gives_headroom_and_floor_at_threshold_thrashes() -> None:
    with_headroom = await run_session(floor=0.6)
    thrashing = await run_session(floor=0.85)
    assert with_headroom, "the session must compact at least once"
    gaps = [b - a for a, b in itertools.pairwise(with_headroom)]
    assert all(gap >= 3 for gap in gaps), with_headroom  # several questions run between compactions
    assert len(thrashing) >= 2 * len(with_headroom), (thrashing, with_headroom)


@pytest.mark.parametrize("history_floor", [0.15, 0.6])
async def test_a_history_past_its_maximum_folds_down_to_its_floor_and_keeps_the_latest_exchanges(
    history_floor: float,
) -> None:
    window = ContextWindow(budget_tokens=1_000_000)  # the window has room: only the history's bound acts
    window.freeze()
    for index in range(20):
        add_exchange(window, index, size=400)  # about 110 tokens each
    maximum = history_tokens(window) - 1
    policy = CompactionPolicy(threshold=0.85, floor=0.6, history_max_tokens=maximum, history_floor=history_floor)
    compactor = Compactor(policy, Summarizer(ScriptedProvider(responder=summary_of)))
    assert compactor.needed(window)
    report = await bound(compactor, DistillGate(60.0, Clock()))(window, None)
    assert report is not None
    assert history_tokens(window) <= history_floor * maximum
    assert history_tokens(window) > history_floor * maximum - 110  # no deeper than it had to (one exchange)
    kept = [t.question for t in window.history if t.kind == "question"]
    assert kept[-2:] == ["question number 18", "question number 19"]
    assert report.summarized_pairs == 20 - len(kept)


# --- the hot set --------------------------------------------------------------------------------

APP = "def main():\n    return serve()\n"
OLD = "LEGACY = True\n"


def cited(text: str, path: str, first: int, last: int) -> CitedLines:
    lines = cut(text, sha(text), Citation(path, first, last))
    assert lines is not None
    return lines


def hot_set(budget: int = 24_000) -> HotSet:
    return HotSet(HotSetPolicy(budget_tokens=budget), read_share=0.1, write_share=1.25, max_file_bytes=256 * 1024)


async def test_a_compaction_rechooses_the_hot_set_and_sheds_lines_no_longer_used() -> None:
    window = ContextWindow(budget_tokens=4000)
    window.freeze()
    window.record_read("src/old.py", sha(OLD), len(OLD))  # used once, in the first question
    window.hold_cited(cited(OLD, "src/old.py", 1, 1))
    for index in range(24):  # src/app.py is used in every question since
        window.record_read("src/app.py", sha(APP), len(APP))
        add_exchange(window, index, size=200)
    window.hold_cited(cited(APP, "src/app.py", 1, 2))
    for index in range(6):
        window.observe(f"docs/file{index}.md", f"content {index} " * 150, sha(str(index)))
    window.sync_deltas()
    assert window.fill() > 0.85
    policy = CompactionPolicy(threshold=0.85, floor=0.6, hot_set=hot_set())
    compact = bound(Compactor(policy, Summarizer(ScriptedProvider(responder=summary_of))), DistillGate(60.0, Clock()))
    report = await compact(window, None)
    assert report is not None
    assert "src/old.py:1-1" in report.shed and "src/app.py:1-2" not in report.shed
    assert list(window.cited) == [("src/app.py", 1, 2)]
    block = window.frozen_volatile or ""
    assert CITED_HEADING in block and "1\tdef main():\n2\t    return serve()" in block
    assert "LEGACY" not in block


async def test_without_a_hot_set_a_compaction_keeps_held_lines_as_they_are() -> None:
    window = filled_window()
    window.hold_cited(cited(OLD, "src/mod0.py", 1, 1))
    report = await compactor(ScriptedProvider(responder=summary_of), Clock())(window, None)
    assert report is not None and "src/mod0.py:1-1" not in report.shed
    assert list(window.cited) == [("src/mod0.py", 1, 1)]


async def test_past_the_seen_files_cap_no_entry_is_evicted_for_nothing() -> None:
    """The list then shows the most recently used; dropping one would show the next: the files stay known."""
    window = ContextWindow(budget_tokens=500)
    past_the_room = window.seen_room() // len("- src/mod000.py\n") + 10
    for index in range(past_the_room):
        window.record_read(f"src/mod{index:03}.py", sha(f"m{index}"), 100)
    window.freeze()
    for index in range(10):
        add_exchange(window, index, size=50)
    compact = Compactor(CompactionPolicy(threshold=0.85, floor=0.6, hot_set=hot_set()), None)
    report = await bound(compact, DistillGate(60.0, Clock()))(window, None)
    assert report is not None and report.evicted == []
    assert len(window.files) == past_the_room


async def test_a_file_whose_lines_are_held_stays_known_so_a_later_change_drops_them() -> None:
    """Manifest entries are evicted least recently used first; one whose lines the hot set keeps is not,
    or a later edit of the file would find no entry to mark and leave its lines shown as current."""
    window = ContextWindow(budget_tokens=500)
    window.record_read("src/app.py", sha(APP), len(APP))  # the least recently read file...
    for index in range(window.seen_room() // len("- src/mod000.py\n") - 1):  # the whole list shown (past its room,
        # dropping one shows the next)
        window.record_read(f"src/mod{index:03}.py", sha(f"m{index}"), 100)
    window.freeze()
    for index in range(10):  # ...but the one every question used
        window.note_use("src/app.py")
        add_exchange(window, index, size=50)
    window.hold_cited(cited(APP, "src/app.py", 1, 2))
    window.sync_deltas()
    assert window.fill() > 0.85
    compact = Compactor(CompactionPolicy(threshold=0.85, floor=0.6, hot_set=hot_set()), None)
    report = await bound(compact, DistillGate(60.0, Clock()))(window, None)
    assert report is not None and len(report.evicted) > 10  # manifest entries did go, the oldest first
    assert list(window.cited) == [("src/app.py", 1, 2)]
    assert "src/app.py" in window.files
    assert window.invalidate("src/app.py")
    assert window.cited == {}
    window.sync_deltas()
    assert "src/app.py: CHANGED since you read it" in window.history[-2].message.text
