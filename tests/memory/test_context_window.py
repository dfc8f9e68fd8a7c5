"""The window's prompt layout, deltas and persistence (no server needed)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

from live_memory.core.messages import Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.core.prompts import CITED_HEADING, CITED_NOTE, MANIFEST_HEADING, OBSERVED_HEADING, SEEN_FILES_MORE
from live_memory.engine.prompt_layout import build_prompt
from live_memory.memory.cited_lines import Citation, CitedLines, cut
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.file_context import file_block
from live_memory.memory.holding import admit_cited, hold_costs, rechoose_hot_set
from live_memory.memory.hot_set import FileUse, HoldCosts, HotSetPolicy
from live_memory.workspaces.snapshot import window_json
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


def _fitting(window: ContextWindow, line: str) -> int:
    """How many lines like `line` the list of files seen has room for in this window."""
    return window.seen_room() // (len(line) + 1)


def test_the_files_seen_list_names_the_most_recently_used_and_counts_the_others() -> None:
    window = ContextWindow(budget_tokens=100_000)
    window.set_directory_tree("x\n" * 20_000)  # a big head: room for a longer list
    fitting = _fitting(window, "- src/f000.py")
    assert fitting > 100
    extra = 7
    for number in range(fitting + extra):
        window.note_seen(f"src/f{number:03d}.py", sha(str(number)), 100, edited=False)
    window.record_read("src/f000.py", sha("0"), 100)  # used again: among the most recent now
    window.freeze()
    listed = (window.frozen_volatile or "").partition(MANIFEST_HEADING)[2].strip().splitlines()
    kept = ["src/f000.py"] + [f"src/f{n:03d}.py" for n in range(extra + 1, fitting + extra)]
    assert listed == [f"- {path}" for path in kept] + [SEEN_FILES_MORE.format(extra)]
    assert len(window.files) == fitting + extra  # still known (and re-validated): only not listed


def test_a_files_seen_list_with_room_is_listed_whole_as_before() -> None:
    window = ContextWindow(budget_tokens=100_000)
    fitting = _fitting(window, "- src/f000.py")
    for number in range(fitting):
        window.note_seen(f"src/f{number:03d}.py", sha(str(number)), 100, edited=False)
    window.freeze()
    listed = (window.frozen_volatile or "").partition(MANIFEST_HEADING)[2].strip().splitlines()
    assert listed == [f"- src/f{n:03d}.py" for n in range(fitting)]


def test_the_files_the_agents_read_between_questions_are_named_within_the_room() -> None:
    window = ContextWindow(budget_tokens=100_000)
    window.freeze()
    teed = 600
    for number in range(teed):
        window.note_seen(f"src/f{number:04d}.py", sha(str(number)), 100, edited=False)
    window.sync_deltas()
    (line,) = observations(window)
    fitting = window.seen_room() // len("src/f0000.py, ")
    recent = ", ".join(f"src/f{n:04d}.py" for n in range(teed - fitting, teed))
    assert line == f"[observation] The agents read or edited (not shown here): {recent} and {teed - fitting} more files"


# --- cited lines and the hot set ----------------------------------------------------------------

APP = "import os\n\n\ndef main():\n    port = os.environ['PORT']\n    return serve(port)\n"
ANTHROPIC = HoldCosts(read_share=0.1, write_share=1.25, round_tokens=20_000)


def lines_of(text: str, first: int, last: int, path: str = "src/app.py") -> CitedLines:
    lines = cut(text, sha(text), Citation(path, first, last))
    assert lines is not None
    return lines


def answered(window: ContextWindow, count: int) -> None:
    """`count` more questions answered (nothing cited)."""
    for index in range(count):
        window.add_exchange(Message("user", (TextPart(f"## Question\nq{index}"),)), f"q{index}", "ok", ())


def used_every_question(window: ContextWindow, path: str, questions: int) -> None:
    for _ in range(questions):
        window.note_use(path)
        answered(window, 1)


def observations(window: ContextWindow) -> list[str]:
    return [t.message.text for t in window.history if t.kind == "observation"]


def test_held_cited_lines_reach_the_next_question_as_one_observation_with_their_numbers() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.freeze()
    frozen = window.frozen_volatile
    assert window.hold_cited(lines_of(APP, 4, 6))
    assert window.hold_cited(lines_of(APP, 1, 1))
    assert window.sync_deltas() == 1
    [observed] = observations(window)
    assert CITED_NOTE in observed
    assert f"### src/app.py:4-6 (sha {sha(APP)[:12]})" in observed and "### src/app.py:1-1" in observed
    assert "4\tdef main():\n5\t    port = os.environ['PORT']\n6\t    return serve(port)" in observed
    assert window.frozen_volatile == frozen  # a delta, never a prefix rewrite


def test_holding_the_same_lines_again_changes_nothing() -> None:
    window = ContextWindow(budget_tokens=10_000)
    assert window.hold_cited(lines_of(APP, 4, 6))
    window.sync_deltas()
    assert not window.hold_cited(lines_of(APP, 4, 6))
    assert window.sync_deltas() == 0
    assert list(window.cited) == [("src/app.py", 4, 6)]


def test_held_lines_count_toward_the_held_tokens() -> None:
    window = ContextWindow(budget_tokens=10_000)
    assert window.held_tokens() == 0
    lines = lines_of(APP, 4, 6)
    window.hold_cited(lines)
    assert window.held_tokens() == window.tokens(lines.block())
    window.observe("src/db.py", "URL = 1\n", sha("URL = 1\n"))
    assert window.held_tokens() == window.tokens(lines.block()) + window.tokens(file_block(window.files["src/db.py"]))


def test_lines_of_a_file_in_steady_use_are_admitted_and_those_of_an_unused_file_are_not() -> None:
    window = ContextWindow(budget_tokens=100_000)
    used_every_question(window, "src/app.py", 6)
    policy = HotSetPolicy(budget_tokens=24_000)
    costs = hold_costs(window, 0.1, 1.25)
    assert costs.round_tokens == window.prompt_tokens()
    assert admit_cited(window, lines_of(APP, 4, 6), policy, costs)
    assert not admit_cited(window, lines_of(APP, 4, 6), policy, costs)  # held already
    assert not admit_cited(window, lines_of("URL = 1\n", 1, 1, path="src/db.py"), policy, costs)
    assert list(window.cited) == [("src/app.py", 4, 6)]


def test_cited_lines_are_not_admitted_past_the_hot_set_budget() -> None:
    window = ContextWindow(budget_tokens=100_000)
    used_every_question(window, "src/app.py", 6)
    first, second = lines_of(APP, 4, 6), lines_of(APP, 1, 2)
    room = window.tokens(first.block()) + window.tokens(second.block()) - 1
    policy = HotSetPolicy(budget_tokens=room)
    assert admit_cited(window, first, policy, ANTHROPIC)
    assert not admit_cited(window, second, policy, ANTHROPIC)  # the first one left too little room
    assert list(window.cited) == [first.key]


def test_a_change_to_the_file_drops_its_held_lines() -> None:
    other = APP.replace("serve", "run")
    changes: dict[str, Callable[[ContextWindow], bool]] = {
        "invalidate": lambda w: w.invalidate("src/app.py"),
        "mark_deleted": lambda w: w.mark_deleted("src/app.py"),
        "note_seen": lambda w: w.note_seen("src/app.py", sha(other), len(other), edited=True),
        "observe": lambda w: w.observe("src/app.py", other, sha(other)),
    }
    for name, change in changes.items():
        window = ContextWindow(budget_tokens=10_000)
        window.record_read("src/app.py", sha(APP), len(APP))
        window.hold_cited(lines_of(APP, 4, 6))
        window.hold_cited(lines_of("URL = 1\n", 1, 1, path="src/db.py"))
        change(window)
        assert list(window.cited) == [("src/db.py", 1, 1)], name
        window.sync_deltas()
        assert not any("4\tdef main()" in text for text in observations(window)), name


def test_seeing_the_same_version_of_the_file_keeps_its_held_lines() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.record_read("src/app.py", sha(APP), len(APP))
    window.hold_cited(lines_of(APP, 4, 6))
    window.note_seen("src/app.py", sha(APP), len(APP), edited=False)
    window.observe("src/app.py", APP, sha(APP))
    assert list(window.cited) == [("src/app.py", 4, 6)]


def test_an_edit_that_only_moves_held_lines_renumbers_them_and_one_inside_them_drops_them() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.hold_cited(lines_of(APP, 4, 6))
    window.hold_cited(lines_of(APP, 1, 1))
    window.sync_deltas()
    edited = "import os\nimport sys\n\n\ndef main():\n    port = os.environ['PORT']\n    return serve(port)\n"
    window.relocate_cited("src/app.py", edited, sha(edited))
    assert sorted(window.cited) == [("src/app.py", 1, 1), ("src/app.py", 5, 7)]
    assert {lines.sha256 for lines in window.cited.values()} == {sha(edited)}
    assert window.cited[("src/app.py", 5, 7)].text.startswith("5\tdef main():")
    assert window.sync_deltas() == 1
    assert "### src/app.py:5-7" in observations(window)[-1]
    rewritten = edited.replace("return serve(port)", "return serve(int(port))")
    window.relocate_cited("src/app.py", rewritten, sha(rewritten))
    assert list(window.cited) == [("src/app.py", 1, 1)]


def test_the_frozen_block_shows_held_lines_under_their_heading() -> None:
    window = ContextWindow(budget_tokens=10_000)
    lines = lines_of(APP, 4, 6)
    window.hold_cited(lines)
    window.sync_deltas()
    window.freeze()
    block = window.frozen_volatile or ""
    assert f"{CITED_HEADING}\n{lines.block()}" in block
    assert observations(window) == []  # the delta was folded into the block


def test_a_compaction_sheds_held_lines_and_files_the_rule_no_longer_picks() -> None:
    window = ContextWindow(budget_tokens=100_000)
    window.observe("docs/old.md", "old notes\n" * 20, sha("old"))
    window.observe("docs/intro.md", "welcome\n", sha("intro"), preloaded=True)
    window.note_use("docs/old.md")
    window.hold_cited(lines_of("URL = 1\n", 1, 1, path="src/db.py"))
    window.note_use("src/db.py")
    answered(window, 30)
    used_every_question(window, "src/app.py", 10)
    window.hold_cited(lines_of(APP, 4, 6))
    shed = rechoose_hot_set(window, HotSetPolicy(budget_tokens=24_000), hold_costs(window, 0.1, 1.25))
    assert shed == ["docs/old.md", "src/db.py:1-1"]
    assert list(window.cited) == [("src/app.py", 4, 6)]
    assert window.files["docs/old.md"].content is None  # known by name, still re-readable
    assert window.files["docs/intro.md"].content == "welcome\n"  # a preload stays
    assert rechoose_hot_set(window, HotSetPolicy(budget_tokens=24_000), hold_costs(window, 0.1, 1.25)) == []


def test_a_forked_window_holds_its_cited_lines_independently() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.record_read("src/app.py", sha(APP), len(APP))
    window.hold_cited(lines_of(APP, 4, 6))
    fork = window.clone()
    fork.hold_cited(lines_of(APP, 1, 1))
    window.invalidate("src/app.py")
    assert window.cited == {} and window.sync_deltas() == 1  # only the CHANGED notice
    assert sorted(fork.cited) == [("src/app.py", 1, 1), ("src/app.py", 4, 6)]
    assert fork.sync_deltas() == 1  # the fork still has both queued


def test_questions_asked_count_those_folded_into_the_ledger() -> None:
    window = ContextWindow(budget_tokens=10_000)
    answered(window, 3)
    window.summarized_pairs = 5
    assert window.questions_asked() == 8


def test_a_use_is_counted_in_questions_asked() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.record_read("src/app.py", sha(APP), len(APP))  # the model read it during the first question
    answered(window, 2)
    window.note_use("src/app.py")  # an agent teed it in after two questions
    window.note_use("src/db.py")
    assert window.file_uses == {"src/app.py": FileUse(2, 0, 2), "src/db.py": FileUse(1, 2, 2)}


def test_a_fact_about_a_looked_up_file_rests_on_its_bytes_and_a_change_demotes_it() -> None:
    window = ContextWindow(budget_tokens=10_000)
    window.note_lookup("src/app.py", "a" * 64)  # find_symbol outlined it; the prompt does not list it
    window.ledger.apply_summary("+ serve() is defined in src/app.py", window.grounds(), 1000)
    [fact] = window.ledger.facts
    assert fact.sources == {"src/app.py": "a" * 64}
    window.invalidate("src/app.py")  # the file changed on disk
    assert window.ledger.facts[0].stale and window.grounds() == {}
