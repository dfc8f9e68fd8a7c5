"""The session bill's honesty rules (bench/session_bill.py and its parts): decoy-free control rows, question
kinds whose answers cite the code as it is, the subagent priced both ways, the scripted memory's search rule
and window reads, and the virtual clock every process keeps."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bench import session_bill
from bench.bill_agents import (
    Files,
    MainAgent,
    SelfExplorer,
    claude_code_prefix,
    grep_content,
    version,
    worth_exploring,
)
from bench.bill_cache import CacheSim, Ledger, VirtualClock
from bench.bill_memory import MemoryModel, segments
from bench.bill_outline import definition_range, symbols_in
from bench.bill_workload import Task, build_tasks, load_repo, workload
from bench.virtual_serve import FileClock

from live_memory.testing.llm_server import RecordedRequest

SEED = session_bill.SEED
BASE = workload("medium", "natural", (60,))


def test_a_decoy_free_row_replays_the_same_tasks_without_opening_decoys() -> None:
    repo = load_repo("live-memory")
    with_decoys = build_tasks(repo, BASE, SEED)
    control = session_bill.parse_workload("medium-natural-60-nodecoy")
    assert (control.name, control.decoys, control.sequence) == ("medium-natural-60-nodecoy", False, BASE.name)
    without = build_tasks(repo, control, SEED)
    assert sum(len(t.decoys) for t in with_decoys) > 0
    assert all(t.decoys == () for t in without)
    same = [(t.question, t.files, t.answer, t.edit) for t in with_decoys]
    assert same == [(t.question, t.files, t.answer, t.edit) for t in without]


def test_a_workload_mixes_locate_uses_explain_and_edit_questions_that_name_a_file_only_for_an_ambiguous_name() -> None:
    repo = load_repo("live-memory")
    tasks = build_tasks(repo, BASE, SEED)
    kinds = {t.kind for t in tasks if t.files}
    assert kinds == {"locate", "uses", "explain", "edit"}
    definers = Counter(name for path, text in repo.files.items() for name in symbols_in(path, text))
    for task in tasks:
        assert len(task.symbols) == len(task.files)
        if task.kind in ("locate", "uses"):
            assert len(task.files) == 1 and task.symbols[0] in task.question
            assert task.answer.startswith(f"`{task.symbols[0]}` is defined in {task.files[0]}:")
        for path, symbol in zip(task.files, task.symbols, strict=True):
            # An agent asking about a name defined in several files says which one it means, and only then.
            named = f"`{symbol}` (in {path})" in task.question
            assert named == (path in task.named) == (definers[symbol] > 1)
    assert any(task.named for task in tasks)


def test_a_uses_answer_names_the_other_files_a_search_for_the_name_finds() -> None:
    tasks = build_tasks(load_repo("live-memory"), workload("high", "small", (60,)), SEED)
    uses = [t for t in tasks if t.kind == "uses"]
    assert uses and all(t.pattern == rf"\b{t.symbols[0]}\b" for t in uses)
    for task in uses:
        others = [hit for hit in task.grep_hits if hit != task.files[0]]
        assert all(hit in task.answer for hit in others[:8])
        assert (not others) == task.answer.endswith("no other file uses it.")
    assert any(len(t.grep_hits) > 1 for t in uses)  # some are used elsewhere


def test_who_uses_a_name_in_a_file_the_agent_holds_is_still_asked() -> None:
    repo = load_repo("live-memory")
    task = next(t for t in build_tasks(repo, BASE, SEED) if t.kind == "explain" and len(t.files) == 1)
    clock = VirtualClock()
    files = Files(dict(repo.files))
    cache, ledger = CacheSim(clock, "sonnet"), Ledger("main")
    agent = MainAgent(
        "C", files, cache, ledger, clock, SelfExplorer(), prefix_for=lambda s: claude_code_prefix(session=s)
    )
    agent.held[task.files[0]] = version(files.text(task.files[0]))  # read in full earlier, unchanged since
    # How the name works is in the agent's context; who uses it is in other files.
    assert not worth_exploring(agent, task)
    assert worth_exploring(agent, replace(task, kind="uses", question=f"Who calls `{task.symbols[0]}`?"))


def test_a_question_that_names_its_files_sends_the_subagent_straight_to_them() -> None:
    repo = load_repo("live-memory")
    chosen = [t for t in build_tasks(repo, BASE, SEED)[:20] if t.kind == "explain" and t.decoys]
    tasks = [replace(task, index=i) for i, task in enumerate(chosen)]
    named = [replace(task, named=task.files) for task in tasks]
    searching, straight = (session_bill.run_subagent(repo, ts).figures()["subagent"] for ts in (tasks, named))
    assert (searching["requests_per_question"], straight["requests_per_question"]) == (3.0, 2.0)  # no Grep round
    assert straight["reads"] == sum(len(t.files) for t in tasks) < searching["reads"]  # and no decoy opened


def test_answers_cite_the_lines_as_the_earlier_edits_left_them() -> None:
    repo = load_repo("live-memory")
    tasks = build_tasks(repo, BASE, SEED)
    state = dict(repo.files)
    moved = 0
    for task in tasks:
        for path, symbol in zip(task.files, task.symbols, strict=True):
            first, last = definition_range(path, state[path], symbol)
            assert f"{path}:{first}-{last}" in task.answer
            moved += definition_range(path, repo.files[path], symbol) != (first, last)
        if task.edit is not None:
            state[task.edit.path] = state[task.edit.path].replace(task.edit.old, task.edit.new, 1)
    assert moved > 0  # the edits did move some definitions this sequence asks about again


def test_an_edited_definition_is_its_code_not_the_comment_the_edit_left_above_it() -> None:
    edits = "# reset_queries: reviewed in task 3\n# reset_queries: reviewed in task 9\n"
    code = f"x = 1\n\n\n{edits}def reset_queries():\n    pass\n"
    assert definition_range("django/db/__init__.py", code, "reset_queries") == (6, 7)
    doc = "# Guide\n\n## Reset queries\ntext\n\n## Other\nmore\n"
    assert definition_range("docs/guide.md", doc, "queries") == (3, 4)


def test_a_definition_in_a_docstring_is_not_one_to_ask_about() -> None:
    code = (
        'def receiver(signal):\n    """Use it so::\n\n        def signal_receiver(sender):\n            ...\n    """\n'
    )
    assert symbols_in("dispatch.py", code) == ["receiver"]
    assert definition_range("dispatch.py", code, "signal_receiver") == (1, 6)  # its mention, give or take
    assert symbols_in("guide.txt", code) == ["receiver", "signal_receiver"]  # only Python's strings are known


def test_the_subagent_is_priced_on_haiku_and_inheriting_the_main_model() -> None:
    repo = load_repo("live-memory")
    tasks = build_tasks(repo, workload("medium", "natural", (8,)), SEED)
    figures = session_bill.run_subagent(repo, tasks).figures()
    helper = figures["subagent"]
    # Sonnet 4.5 costs exactly 3x Haiku 4.5 in every token class.
    assert helper["usd_per_question_inherit"] == pytest.approx(3 * helper["usd_per_question"], rel=1e-3)
    extra = helper["usd"] * 2  # the same requests at three times the price
    assert figures["total_usd_sonnet_inherit"] == pytest.approx(figures["total_usd_sonnet"] + extra, abs=1e-5)
    assert helper["requests_per_question"] == pytest.approx(helper["tool_rounds_per_question"] + 1)
    kinds = helper["by_question_kind"]
    assert sum(k["questions"] for k in kinds.values()) == helper["questions"]
    for kind in ("locate", "uses"):  # the definition's line, or the files using it, are in the search result
        if kind in kinds:
            assert kinds[kind]["requests_per_question"] == 2.0


def test_grep_in_content_mode_shows_each_matching_line_with_its_number() -> None:
    files = Files({"a.py": "x = 1\ndef found():\n    pass\n", "b.py": "found()\n"})
    text = grep_content("/p/", files, r"\bfound\b", ["a.py", "b.py"])
    assert text.splitlines() == ["/p/a.py:2:def found():", "/p/b.py:1:found()"]
    assert grep_content("/p/", files, r"\bnothing\b", ["a.py"]) == "No matches found"


# -- the scripted memory's rules, on prompts built by hand -------------------------------------------------------
def _task(kind: str = "explain") -> Task:
    return Task(
        index=0,
        session=0,
        think_s=30.0,
        text="How does `answer_me` work?",
        question="How does `answer_me` work?",
        files=("pkg/mod.py",),
        pattern=r"\banswer_me\b",
        grep_hits=("pkg/mod.py",),
        decoys=("pkg/other.py",),
        answer="`answer_me` is in pkg/mod.py:3-4.",
        reply="ok",
        symbols=("answer_me",),
        kind=kind,
    )


SOURCE = "import os\n\ndef answer_me():\n    return 1\n\n\ndef other():\n    return 2\n"


def _model(tmp_path: Path, task: Task, mode: str = "strict") -> MemoryModel:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(SOURCE)
    (tmp_path / "pkg" / "other.py").write_text("def other():\n    pass\n")
    repo: Any = type("R", (), {"files": {"pkg/mod.py": SOURCE}})()
    return MemoryModel(tmp_path, repo, [task], mode, VirtualClock())


def _ask(model: MemoryModel, history: list[dict[str, Any]], question: str, tail: str = "") -> Any:
    body = {
        "tools": [{"name": "Read"}, {"name": "Grep"}, {"name": "find_symbol"}],
        "system": [{"type": "text", "text": "tree: pkg/mod.py pkg/other.py"}, {"type": "text", "text": "ledger"}],
        "messages": [*history, {"role": "user", "content": [{"type": "text", "text": f"{question}\n{tail}"}]}],
    }
    raw = json.dumps(body).encode()
    return model(RecordedRequest("anthropic", "/v1/messages", {}, raw, False, None, 0, 0.0))


def _calls(reply: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, dict(c.input)) for c in reply.calls]


def test_an_unrelated_mention_of_the_path_does_not_spare_the_search(tmp_path: Path) -> None:
    task = _task()
    model = _model(tmp_path, task)
    unrelated = [
        {"role": "user", "content": "What is in the package?"},
        {"role": "assistant", "content": "pkg/mod.py imports os; pkg/other.py defines other."},
    ]
    assert _calls(_ask(model, unrelated, task.question)) == [
        ("find_symbol", {"name": "answer_me", "kind": "definition", "code": True})
    ]
    told = [
        {"role": "user", "content": "Where does the answer come from?"},
        {"role": "assistant", "content": "`answer_me` lives in pkg/mod.py, beside other helpers."},
    ]
    assert _calls(_ask(model, told, task.question)) == [("Read", {"file_path": "pkg/mod.py"})]


def test_the_strict_model_reads_only_the_lines_a_fresh_lookup_gives(tmp_path: Path) -> None:
    task = _task()
    model = _model(tmp_path, task)
    hint = "## The question's names, looked up\npkg/mod.py:3-4  answer_me (function)  def answer_me()"
    assert _calls(_ask(model, [], task.question, hint)) == [
        ("Read", {"file_path": "pkg/mod.py", "offset": 3, "limit": 2})
    ]


def test_a_locate_question_answers_at_once_from_a_lookup_and_searches_without_one(tmp_path: Path) -> None:
    task = _task("locate")
    model = _model(tmp_path, task)
    hint = "pkg/mod.py:3-4  answer_me (function)  def answer_me()"
    assert _ask(model, [], task.question, hint).calls == ()
    assert _calls(_ask(model, [], task.question)) == [
        ("find_symbol", {"name": "answer_me", "kind": "definition", "code": True})
    ]


@pytest.mark.parametrize("mode", ["strict", "trusting"])
def test_a_uses_question_answers_only_from_a_lookup_of_its_uses_made_for_it(tmp_path: Path, mode: str) -> None:
    task = replace(_task("uses"), question="Who calls `answer_me`?")
    model = _model(tmp_path, task, mode)
    hint = "Definitions of 'answer_me' (symbol index):\npkg/mod.py:3-4  answer_me (function)\nUsed in 1 file:\npkg/x.py"
    assert _ask(model, [], task.question, hint).calls == ()
    assert _ask(model, [], task.question, "No file uses 'answer_me' (workspace scan).").calls == ()
    search = [("find_symbol", {"name": "answer_me", "kind": "uses"})]
    assert _calls(_ask(model, [], task.question, "pkg/mod.py:3-4  answer_me (function)")) == search
    earlier = [  # an earlier answer listing the users: any file may have changed since
        {"role": "user", "content": "Which files use `answer_me`?"},
        {"role": "assistant", "content": "`answer_me` is defined in pkg/mod.py:3-4; it is used in pkg/x.py."},
    ]
    assert _calls(_ask(model, earlier, task.question)) == search


def test_held_lines_of_the_definition_spare_the_strict_model_its_read(tmp_path: Path) -> None:
    task = _task()
    model = _model(tmp_path, task)
    held = "[observation] kept lines\n\n### pkg/mod.py:3-4 (sha 0123456789ab)\n```\n"
    held += "3\tdef answer_me():\n4\t    return 1\n```"
    history = [{"role": "user", "content": held}, {"role": "assistant", "content": "Noted."}]
    assert _ask(model, history, task.question).calls == ()
    stale = held.replace("return 1", "return 0")  # not the file as it is now
    history = [{"role": "user", "content": stale}, {"role": "assistant", "content": "Noted."}]
    assert _ask(model, history, task.question).calls != ()


def test_segments_name_the_file_each_read_result_shows() -> None:
    body = {
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/r/a.py"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1\tx"}]},
        ]
    }
    segs = segments(body, "/r/")
    assert (segs[-1].kind, segs[-1].name, segs[-1].path) == ("tool_result", "Read", "a.py")


# -- the clock ------------------------------------------------------------------------------------------------
def test_the_virtual_clock_is_published_and_read_back_never_backwards(tmp_path: Path) -> None:
    where = tmp_path / "clock"
    clock = VirtualClock(500.0, publish=where)
    reader = FileClock(where)
    assert reader() == 500.0
    clock.advance(3600.0)
    assert reader() == 4100.0
    VirtualClock(10.0, publish=where)  # a later run starting lower: the server's clock stays put
    assert reader() == 4100.0
    where.write_text("not a number")
    assert reader() == 4100.0
