"""The session bill's content questions (bench/bill_content.py): rows that keep the base row's draws and ask about
the bodies of files, areas whose topic comes from the files' prose, follow-ups in other words, and the scripted
memory's rules for whole files (a held copy and the diffs after it, windows for their lines only, an earlier
answer to the same need for the trusting model)."""

from __future__ import annotations

import asyncio
import difflib
import functools
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bench import session_bill
from bench.bill_agents import (
    Files,
    MainAgent,
    SelfExplorer,
    SubagentExplorer,
    claude_code_prefix,
    rest_windows,
    worth_exploring,
)
from bench.bill_cache import CacheSim, Ledger, VirtualClock
from bench.bill_content import CONTENT_KINDS, FOLLOW_UP_MIN_GAP, Need, area_topics, need_answer, short_names
from bench.bill_memory import MemoryExplorer, MemoryModel, tree_paths
from bench.bill_workload import Task, build_tasks, load_repo, workload

from live_memory.testing.llm_server import RecordedRequest

SEED = session_bill.SEED


@pytest.fixture(scope="module")
def rows() -> dict[str, list[Task]]:
    repo = load_repo("live-memory")
    shapes = {"base": (30,), "content": (30,), "sessions": (10, 10, 10)}
    return {
        name: build_tasks(repo, workload("medium", "natural", shape, content=name != "base"), SEED)
        for name, shape in shapes.items()
    }


def test_a_content_row_keeps_the_base_row_s_edits_and_asks_about_content_in_two_of_five_questions(
    rows: dict[str, list[Task]],
) -> None:
    base, content = rows["base"], rows["content"]
    assert session_bill.parse_workload("medium-natural-60-content") == workload(
        "medium", "natural", (60,), content=True
    )
    assert [t.edit for t in base] == [t.edit for t in content]  # the same draws: edits are where they were
    touching = [t for t in content if t.files]
    asking = [t for t in touching if t.kind in CONTENT_KINDS]
    assert 0.3 <= len(asking) / len(touching) <= 0.5
    assert all(t.decoys == () for t in content)  # content rows are decoy-free
    assert {t.kind for t in asking} >= {"walkthrough", "review", "area"}
    for task in asking:
        assert task.need is not None and task.files == task.need.files and task.symbols == ()
        # Each file is cited whole as it is when asked (the edits before it decide its length).
        for path in task.files:
            assert re.search(rf"{re.escape(path)}:1-\d+", task.answer)


def test_an_area_s_topic_is_a_prose_word_that_two_to_four_files_under_it_mention() -> None:
    files = {
        "pkg/a.py": '"""Keeps the cache warm: a ping per workspace."""\n# the cache expires after a while\nx = 1\n',
        "pkg/b.py": "# evict the cache entry\ny = 2\n",
        "pkg/c.py": "z = 3  # nothing about it here\n",
        "pkg/d.py": "def cache_key():\n    return 1\n",  # an identifier is not a mention of the word
    }
    topics = dict(area_topics(files, "pkg", frozenset({"cache_key"})))
    assert topics["cache"] == ("pkg/a.py", "pkg/b.py")
    assert "nothing" not in topics  # a common word is no topic


def test_files_and_directories_are_named_by_the_shortest_end_no_other_path_has() -> None:
    names = short_names(["a/cli/main.py", "b/main.py", "a/store.py"])
    assert names == {"a/cli/main.py": "cli/main.py", "b/main.py": "b/main.py", "a/store.py": "store.py"}


def test_a_follow_up_asks_an_earlier_need_again_in_other_words_later_on(rows: dict[str, list[Task]]) -> None:
    for tasks in (rows["content"], rows["sessions"]):
        firsts: dict[str, Task] = {}
        for task in tasks:
            if task.need is not None:
                assert (task.kind == "follow-up") == (task.need.key in firsts)  # a need is new once
                firsts.setdefault(task.need.key, task)
        follow_ups = [t for t in tasks if t.kind == "follow-up"]
        for task in follow_ups:
            assert task.need is not None
            first = firsts[task.need.key]
            assert task.question != first.question
            assert first.session < task.session or task.index - first.index >= FOLLOW_UP_MIN_GAP
    assert any(t.kind == "follow-up" for t in rows["sessions"])


def test_a_need_s_answer_is_the_same_text_while_its_files_are_unchanged() -> None:
    state = {"pkg/a.py": "def first():\n    return 1\n\n\ndef second():\n    return 2\n"}
    need = Need("walkthrough", ("pkg/a.py",))
    answer = need_answer(need, state)
    assert answer == need_answer(need, dict(state))
    assert answer.startswith("Short answer: `pkg/a.py` (pkg/a.py:1-6)")
    assert "pkg/a.py:1-2" in answer and "pkg/a.py:5-6" in answer
    edited = {"pkg/a.py": "# first: reviewed\n" + state["pkg/a.py"]}
    assert "pkg/a.py:1-7" in need_answer(need, edited)


@functools.lru_cache(maxsize=1)
def first_content_task() -> Task:
    repo = load_repo("live-memory")
    return next(t for t in build_tasks(repo, workload("medium", "natural", (60,), content=True), SEED) if t.need)


def agent_with(explorer: Any) -> MainAgent:
    clock = VirtualClock()
    return MainAgent(
        "B",
        Files(dict(load_repo("live-memory").files)),
        CacheSim(clock, "sonnet"),
        Ledger("main"),
        clock,
        explorer,
        prefix_for=lambda s: claude_code_prefix(session=s),
    )


def test_the_agent_asks_again_for_a_need_only_once_its_context_no_longer_holds_the_answer() -> None:
    task = first_content_task()
    agent = agent_with(SelfExplorer())
    assert worth_exploring(agent, task)
    agent.heard(task)
    assert not worth_exploring(agent, task)  # the answer is in its context
    agent.answered.clear()  # a new session or a compaction starts the context over
    assert worth_exploring(agent, task)


# -- the scripted memory on whole files ------------------------------------------------------------------------
SOURCE = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 6))
WALK = Task(
    index=0,
    session=0,
    think_s=30.0,
    text="Walk me through `mod.py`.",
    question="Walk me through `mod.py`.",
    files=("pkg/mod.py",),
    pattern="mod.py",
    grep_hits=("pkg/mod.py",),
    decoys=(),
    answer="Short answer: `pkg/mod.py` (pkg/mod.py:1-20) is organised as follows.",
    reply="ok",
    kind="walkthrough",
    need=Need("walkthrough", ("pkg/mod.py",)),
)


def _model(tmp_path: Path, mode: str = "strict", text: str = SOURCE) -> MemoryModel:
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "mod.py").write_text(text)
    repo: Any = type("R", (), {"files": {"pkg/mod.py": SOURCE}})()
    return MemoryModel(tmp_path, repo, [WALK], mode, VirtualClock())


def _ask(model: MemoryModel, history: list[dict[str, Any]], tail: list[dict[str, Any]] = (), tree: str = "") -> Any:  # type: ignore[assignment]
    body = {
        "tools": [{"name": "Read"}, {"name": "Grep"}, {"name": "Glob"}],
        "system": [
            {"type": "text", "text": f"prompt\n\n## Workspace directory tree\n{tree}"},
            {"type": "text", "text": ""},
        ],
        "messages": [*history, {"role": "user", "content": [{"type": "text", "text": WALK.question}]}, *tail],
    }
    return model(RecordedRequest("anthropic", "/v1/messages", {}, json.dumps(body).encode(), False, None, 0, 0.0))


def _calls(reply: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, dict(c.input)) for c in reply.calls]


def _observed(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


def _read(lines: range, text: str = SOURCE) -> list[dict[str, Any]]:
    rows = text.splitlines()
    shown = "\n".join(f"{n}\t{rows[n - 1]}" for n in lines)
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "pkg/mod.py"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r", "content": shown}]},
    ]


def test_a_file_the_tree_shows_is_read_at_once_and_one_it_does_not_is_found_first(tmp_path: Path) -> None:
    model = _model(tmp_path)
    assert _calls(_ask(model, [], tree="pkg/\n  mod.py")) == [("Read", {"file_path": "pkg/mod.py"})]
    assert _calls(_ask(model, [], tree="pkg/ (1 files)")) == [("Glob", {"pattern": "**/mod.py"})]
    assert tree_paths("x\n## Workspace directory tree\na/\n  b/\n    c.py\n  d.py\ne/ (3 files)\n") == {
        "a/b/c.py",
        "a/d.py",
    }


def test_a_held_copy_with_the_diff_after_it_shows_the_file_as_it_is_now(tmp_path: Path) -> None:
    edited = "# f1: reviewed\n" + SOURCE
    model = _model(tmp_path, text=edited)
    held = _observed(f"[observation] Current content of pkg/mod.py:\n\n### pkg/mod.py\n```\n{SOURCE}\n```")
    diff = "".join(
        difflib.unified_diff(SOURCE.splitlines(True), edited.splitlines(True), "a/pkg/mod.py", "b/pkg/mod.py", n=2)
    )
    patched = _observed(f"[observation] pkg/mod.py was edited; what changed (unified diff):\n\n{diff}")
    assert _ask(model, held + patched, tree="pkg/\n  mod.py").calls == ()
    assert _calls(_ask(model, held, tree="pkg/\n  mod.py")) == [("Read", {"file_path": "pkg/mod.py"})]  # an old copy


def test_a_window_counts_only_for_the_lines_it_holds(tmp_path: Path) -> None:
    model = _model(tmp_path)
    assert _ask(model, [], _read(range(1, 21))).calls == ()  # read whole in this question
    part = _calls(_ask(model, [], _read(range(1, 11)), tree="pkg/\n  mod.py"))
    assert part == [("Read", {"file_path": "pkg/mod.py", "offset": 11})]  # the rest, not the file again


@pytest.mark.parametrize("mode", ["strict", "trusting"])
def test_only_the_trusting_model_answers_from_an_earlier_answer_to_the_same_need(tmp_path: Path, mode: str) -> None:
    model = _model(tmp_path, mode)
    earlier = [{"role": "user", "content": "What does mod.py do?"}, {"role": "assistant", "content": WALK.answer}]
    trusted = _ask(model, earlier, tree="pkg/\n  mod.py").calls == ()
    assert trusted == (mode == "trusting")
    notice = _observed("[observation] File changes since you last looked:\n- pkg/mod.py: CHANGED since you read it")
    assert _ask(model, earlier + notice, tree="pkg/\n  mod.py").calls != ()


class _Asker:
    """Answers every question with one text (an earlier answer given again, right or not)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def ask(self, question: str, cwd: str) -> tuple[str, bool]:
        return self.text, False


@pytest.mark.parametrize("right", [True, False])
def test_an_answer_that_is_not_the_question_s_is_counted_wrong(right: bool) -> None:
    task = first_content_task()
    given = task.answer if right else "Short answer: `other.py` (other.py:1-9) is organised as follows."
    explorer = MemoryExplorer(_Asker(given + "\n\n---\n[live-memory] model=m"), None, "/repo")  # type: ignore[arg-type]
    agent = agent_with(explorer)
    asyncio.run(explorer.explore(agent, task))
    assert explorer.wrong == ([] if right else [task.index])


def test_a_content_question_about_a_long_file_reads_it_whole_in_every_arm(tmp_path: Path) -> None:
    long = "".join(f"line_{n} = {n}\n" for n in range(1, 4501))
    assert rest_windows(long) == [(2001, 4000), (4001, 4501)]  # a Read shows 2,000 lines; the rest in windows
    task = replace(WALK, files=("pkg/long.py",), named=("pkg/long.py",), need=Need("walkthrough", ("pkg/long.py",)))
    clock = VirtualClock()
    explorer = SubagentExplorer(Files({"pkg/long.py": long}), CacheSim(clock, "haiku"), Ledger("sub"), clock)
    explorer.run_subagent(task, task.question)
    assert len(explorer.ledger.calls) == 3  # Read, the rest, the report
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text(long)
    repo: Any = type("R", (), {"files": {"pkg/long.py": long}})()
    model = MemoryModel(tmp_path, repo, [task], "strict", VirtualClock())
    told = "### pkg/long.py (4500 lines): what it holds"  # a summary says how long it is: one Read, all of it
    body = {
        "tools": [{"name": "Read"}],
        "system": [{"type": "text", "text": "prompt"}, {"type": "text", "text": told}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": task.question}]}],
    }
    request = RecordedRequest("anthropic", "/v1/messages", {}, json.dumps(body).encode(), False, None, 0, 0.0)
    assert _calls(model(request)) == [("Read", {"file_path": "pkg/long.py", "limit": 4500})]
