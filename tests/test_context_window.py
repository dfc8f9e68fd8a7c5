"""The window's prompt layout, deltas and persistence (no server needed)."""

from __future__ import annotations

import itertools
from dataclasses import replace

from live_memory.context_window import ContextWindow
from live_memory.prompt_layout import build_prompt
from live_memory.prompts import MANIFEST_HEADING, OBSERVED_HEADING
from live_memory.providers.base import Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.snapshot import window_json
from tests.fakes.windows import HINT, ask, sha


def test_a_kept_tool_transcript_is_stored_as_sent_so_the_next_question_extends_it() -> None:
    window = ContextWindow(budget_tokens=10_000, transcript_keep_share=0.1)
    question = Message("user", (TextPart("## Question\nwhere?"),))
    tool_use = Message("assistant", (ToolUsePart("t1", "Read", {"file_path": "a.py"}),))
    tool_result = Message("user", (ToolResultPart("t1", "A = 1"),))
    _, last_request = build_prompt(window, [question, tool_use, tool_result], hint=HINT)
    window.add_exchange(question, "where?", "a.py", ["a.py"], transcript=[tool_use, tool_result])
    _, next_request = build_prompt(window, [Message("user", (TextPart("## Question\nnext?"),))], hint=HINT)

    def plain(messages: tuple[Message, ...]) -> list[list[str]]:
        return [
            [repr(replace(p, cache=False)) for p in m.parts if HINT not in getattr(p, "text", "")] for m in messages
        ]

    assert plain(next_request)[: len(last_request)] == plain(last_request)
    assert "A = 1" not in str(window_json(window))  # tool output (file contents) is never persisted


def test_frozen_block_stays_byte_identical_and_changes_arrive_as_deltas() -> None:
    window = ContextWindow(budget_tokens=10_000)
    ask(window, "q1", "a1")
    frozen = window.frozen_volatile
    window.observe("src/app.py", "print('v1')\n", sha("v1"))
    ask(window, "q2", "a2")
    assert window.frozen_volatile == frozen
    observation = [t for t in window.history if t.kind == "observation"]
    assert len(observation) == 1 and "print('v1')" in observation[0].message.text
    window.invalidate("src/app.py")
    ask(window, "q3", "a3")
    assert window.frozen_volatile == frozen
    notices = [t.message.text for t in window.history if t.kind == "observation"]
    assert "CHANGED since you read it" in notices[-1]


def test_history_only_grows_between_compactions() -> None:
    window = ContextWindow(budget_tokens=10_000)
    snapshots = []
    for index in range(5):
        if index % 2:
            window.observe(f"f{index}.py", f"x = {index}\n", sha(str(index)))
        ask(window, f"q{index}", f"a{index}")
        snapshots.append([t.message for t in window.history])
    for earlier, later in itertools.pairwise(snapshots):
        assert later[: len(earlier)] == earlier


def test_answers_citing_a_changed_file_get_a_staleness_notice() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.record_read("src/db.py", sha("db"), 10)
    ask(window, "where is the db?", "in src/db.py", cites=("src/db.py",))
    window.mark_deleted("src/db.py")
    window.sync_deltas()
    notice = window.history[-2].message.text
    assert "DELETED or moved/renamed" in notice
    assert "Earlier answers in this conversation relied on these files" in notice and "src/db.py" in notice


def test_freeze_subsumes_deltas_and_shows_file_states() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.observe("a.py", "A = 1\n", sha("a"))
    window.record_read("b.py", sha("b"), 5)
    window.invalidate("b.py")
    ask(window, "q", "a")
    window.freeze()
    assert all(t.kind in ("question", "answer") for t in window.history)
    block = window.frozen_volatile or ""
    assert OBSERVED_HEADING in block and "A = 1" in block
    assert MANIFEST_HEADING in block and "- b.py — CHANGED" in block


def test_observe_of_unchanged_bytes_queues_no_delta() -> None:
    window = ContextWindow(budget_tokens=10_000)
    assert window.observe("a.py", "A\n", sha("A"))
    window.sync_deltas()
    assert not window.observe("a.py", "A\n", sha("A"))
    assert window.sync_deltas() == 0


def test_cold_until_content_ledger_or_history_exists() -> None:
    window = ContextWindow(budget_tokens=10_000)
    assert window.cold
    window.observe("a.py", "A\n", sha("A"))
    assert not window.cold


def test_one_edit_reported_twice_yields_one_notice() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.record_read("a.py", sha("a"), 5)
    assert window.invalidate("a.py")  # the hook's change event
    window.sync_deltas()  # a question ran in between
    assert window.invalidate("a.py")  # the watcher's event for the same edit, arriving later
    assert window.sync_deltas() == 0
    notices = [t.message.text for t in window.history if t.kind == "observation"]
    assert len(notices) == 1 and notices[0].count("a.py: CHANGED") == 1


def test_by_default_a_transcript_is_not_kept_and_the_next_question_extends_its_question() -> None:
    window = ContextWindow(budget_tokens=10_000)
    question = Message("user", (TextPart("## Question\nwhere?"),))
    tool_use = Message("assistant", (ToolUsePart("t1", "Read", {"file_path": "a.py"}),))
    tool_result = Message("user", (ToolResultPart("t1", "A = 1"),))
    window.add_exchange(question, "where?", "in a.py", ["a.py"], transcript=[tool_use, tool_result])
    assert [t.kind for t in window.history] == ["question", "answer"]


def test_the_prompt_size_kept_as_a_running_total_matches_a_fresh_count() -> None:
    """Appends are counted as they come; a fork, a rewritten history (compaction) and recalibration are
    all reflected exactly as a count from scratch would give."""
    window = ContextWindow(budget_tokens=100_000)

    def from_scratch(w: ContextWindow) -> int:
        fresh = w.clone()
        fresh.history = list(w.history)  # a new list: counted again from the start
        return fresh.prompt_tokens()

    sizes = []
    for index in range(6):
        ask(window, f"question {index} " + "x" * 40 * index, "answer " * (index + 1))
        sizes.append(window.prompt_tokens())
        assert sizes[-1] == from_scratch(window)
        assert window.qa_count() == index + 1
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    fork = window.clone()
    ask(fork, "only on the fork", "a long answer " * 30)
    assert fork.prompt_tokens() == from_scratch(fork) > window.prompt_tokens() == sizes[-1]
    window.history = window.history[4:]  # compaction retired the two oldest exchanges
    assert window.prompt_tokens() == from_scratch(window) < sizes[-1]
    assert window.qa_count() == 4 and fork.qa_count() == 7
    assert window.exchange_tokens() < window.prompt_tokens()
    window.calibration = 2.0
    assert window.prompt_tokens() == from_scratch(window)


def test_a_file_earns_holding_once_an_answer_cites_it_in_this_copy_of_the_window() -> None:
    window = ContextWindow(budget_tokens=10_000)
    question = Message("user", (TextPart("## Question\nwhere?"),))
    assert not window.earned("a.py")  # asked once before any answer: nothing cites it yet
    window.add_exchange(question, "where?", "in a.py", ["a.py"])
    assert window.earned("a.py") and not window.earned("b.py")
    fork = window.clone()
    fork.add_exchange(question, "and b?", "in b.py", ["b.py"])
    assert fork.earned("a.py") and fork.earned("b.py")
    assert not window.earned("b.py")  # the fork's answer is not the window's
    window.history = [t for t in window.history if t.kind != "answer"]  # a rewritten history counts anew
    assert not window.earned("a.py")
    window.freeze()
    window.add_exchange(question, "again?", "in b.py", ["b.py"])
    assert window.earned("b.py") and not window.earned("a.py")


def test_the_manifest_skips_files_a_trusted_fact_spells_out_and_sizes_only_large_files() -> None:
    window = ContextWindow(budget_tokens=10_000)
    for path, size in [("src/big.py", 40_000), ("src/small.py", 500), ("src/known.py", 900), ("src/stale.py", 800)]:
        window.record_read(path, sha(path), size)
    window.record_read("lib/src/known.py", sha("lib"), 700)
    manifest = {path: f.sha256 for path, f in window.files.items()}
    window.ledger.set_from_summary("src/known.py defines Known\nsrc/stale.py defines Stale\nsmall.py is tiny", manifest)
    window.ledger.mark_stale("src/stale.py")
    window.freeze()
    listed = (window.frozen_volatile or "").partition(MANIFEST_HEADING)[2].strip().splitlines()
    # known.py: a trusted fact names its whole path; stale.py's fact is in doubt; small.py's names a basename only.
    assert listed == ["- lib/src/known.py", "- src/big.py (39 KB)", "- src/small.py", "- src/stale.py"]
