"""Answers given again (answer_reuse.py): what a question asks about survives its rewording, an earlier answer
to the same need is given again with no model call while its files are unchanged, and never for another need."""

from __future__ import annotations

from pathlib import Path

import pytest

from live_memory.constants import ANSWERS_KEPT
from live_memory.engine.answer_reuse import AnswerBook, Asked, KeptAnswer, asked_about, rests_on, still_holds
from live_memory.outline.workspace_paths import WorkspacePaths
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.workspaces.answerer import GIVEN_AGAIN_MODEL
from tests.fakes.engine import engine_for

PATHS = WorkspacePaths(
    ["src/cli/main.py", "src/store.py", "src/auth/session.py", "src/auth/tokens.py", "bench/main.py"]
)


def asked(question: str) -> Asked | None:
    return asked_about(question, PATHS)


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ("Walk me through `cli/main.py`.", "How is `src/cli/main.py` organised, again?"),
        ("What does `store.py` do and how is it organised?", "Give me the overview of `src/store.py` again."),
        ("Review `store.py` for error handling.", "Are there error-handling problems in `src/store.py`?"),
        ("How is session expiry handled in `auth/`?", "Which modules under `src/auth/` deal with session expiry?"),
        ("How does `Store.load` work?", "How does `Store.load` work again?"),
        ("What happens when `Store.load` fails?", "How are failures of `Store.load` handled?"),
        ("How do `load` and `save` fit together?", "How do `load` and `save` work together?"),
        ("What is the relationship between `load` and `save`?", "How are `load` and `save` related?"),
        ("What should I know before changing `load`?", "Before I change `load`, what should I know?"),
        ("What does `load` return, and what happens when it fails?", "What does `load` return?"),  # asked more
    ],
)
def test_the_same_need_in_other_words_is_answered_by_the_earlier_answer(first: str, again: str) -> None:
    earlier, later = asked(first), asked(again)
    assert earlier is not None and later is not None and later.answered_by(earlier)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Walk me through `store.py`.", "Review `store.py` for error handling."),  # a walkthrough is no review
        ("Review `store.py` for thread safety.", "Review `store.py` for error handling."),
        ("How is expiry handled in `auth/`?", "How is login handled in `auth/`?"),
        ("What does line 10 of `store.py` do?", "What does line 20 of `store.py` do?"),  # numbers count
        ("Why does `store.py` retry?", "What does `store.py` do?"),
        ("Walk me through `store.py`.", "Walk me through `cli/main.py`."),
        ("How does `load` work, and what calls it?", "What happens when `load` fails?"),
        ("What does `load` return?", "What does `load` return, and what happens when it fails?"),  # asks more
        ("Why does `load` retry?", "What does `load` do?"),  # the whole is not a part of it
        (
            "Where is `load` defined, and what should I know (related: `save`)?",
            "Where is `save` defined, and what should I know (related: `load`)?",
        ),  # about another name first
    ],
)
def test_another_need_is_not_answered_by_the_earlier_answer(one: str, other: str) -> None:
    earlier, later = asked(one), asked(other)
    assert earlier is not None and later is not None and not later.answered_by(earlier)


@pytest.mark.parametrize(
    "question",
    [
        "How does caching work?",  # names no file, directory or code name: too vague to answer again
        "Walk me through `main.py`.",  # two files end so: which one is not known
        "Walk me through `missing.py`.",
        "Where is `Store.load` defined?",  # where a name is: cheap to look up afresh
        "Who calls `Store.load`?",  # its uses can change in any file
        "What is in `auth/`?",  # a directory and nothing else
    ],
)
def test_a_question_that_cannot_be_matched_safely_is_never_matched(question: str) -> None:
    assert asked(question) is None


def test_an_answer_rests_on_the_files_it_names_and_holds_while_they_keep_their_bytes() -> None:
    need = asked("How is session expiry handled in `auth/`?")
    assert need is not None
    assert rests_on(need, {"src/auth/session.py": "a1"})
    assert not rests_on(need, {"src/store.py": "b2"})  # no file under the directory asked about
    assert not rests_on(need, {})
    kept = KeptAnswer("q", "answer", {"src/auth/session.py": "a1"}, 0.0)
    assert still_holds(kept, {"src/auth/session.py": "a1"})
    assert not still_holds(kept, {"src/auth/session.py": "c3"})
    assert not still_holds(kept, {"src/auth/session.py": None})  # gone


def test_the_book_keeps_the_newest_answer_to_the_most_recently_asked_needs() -> None:
    book = AnswerBook()
    needs = [Asked(frozenset({f"f{i}.py"}), frozenset(), (), frozenset()) for i in range(ANSWERS_KEPT + 1)]
    for need in needs:
        book.keep(need, KeptAnswer("q", "old", {}, 0.0))
    assert len(book) == ANSWERS_KEPT and book.answer_to(needs[0]) is None  # the least recently asked went
    book.keep(needs[-1], KeptAnswer("q2", "new", {}, 1.0))
    kept = book.answer_to(needs[-1])
    assert kept is not None and kept.answer == "new"


def test_the_book_answers_a_need_asked_in_other_words_with_the_newest_answer_to_it() -> None:
    book = AnswerBook()
    first, later, again = (asked(q) for q in ("What happens when `load` fails?", "What does `load` return?",
                                              "How are failures of `load` handled?"))  # fmt: skip
    assert first is not None and later is not None and again is not None
    book.keep(first, KeptAnswer("q1", "it raises", {}, 0.0))
    book.keep(later, KeptAnswer("q2", "an int", {}, 1.0))
    kept = book.answer_to(again)
    assert kept is not None and kept.answer == "it raises"


# -- through the service: one model call, then the same need answered again without one -----------------------
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "src" / "store.py").write_text('"""Keeps the store."""\n\n\ndef load():\n    return 1\n')
    return root


async def test_the_same_need_reworded_is_answered_again_with_no_model_call_until_its_file_changes(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    model = ScriptedProvider(text_response("src/store.py:1-5 keeps the store; `load` returns 1."))
    engine = engine_for(tmp_path, model)
    first = await engine.answerer.ask(str(root), "Walk me through `store.py`.")
    again = await engine.answerer.ask(str(root), "How is `src/store.py` organised, again?")
    assert len(model.requests) == 1  # the second answer took no model call
    assert again.model == GIVEN_AGAIN_MODEL and again.cost_usd == 0.0 and again.tool_calls == 0
    assert again.answer.startswith(first.answer) and "same bytes of src/store.py" in again.answer
    review = await engine.answerer.ask(str(root), "Review `store.py` for error handling.")  # another need
    assert len(model.requests) == 2 and review.model != GIVEN_AGAIN_MODEL
    off_loop((root / "src" / "store.py").write_text, '"""Keeps the store."""\n\n\ndef load():\n    return 2\n')
    changed = await engine.answerer.ask(str(root), "Walk me through `src/store.py` again.")
    assert len(model.requests) == 3 and changed.model != GIVEN_AGAIN_MODEL  # its file moved on: asked afresh


async def test_reuse_off_asks_the_model_every_time(tmp_path: Path) -> None:
    root = repo(tmp_path)
    model = ScriptedProvider()
    engine = engine_for(tmp_path, model, reuse_answers="false")
    await engine.answerer.ask(str(root), "Walk me through `store.py`.")
    await engine.answerer.ask(str(root), "How is `src/store.py` organised, again?")
    assert len(model.requests) == 2
