"""A teammate's words (bench/bill_reword.py): the team bill's later developers ask every question of a
workload in other words, with the same names, files and topic, and still one task per question."""

from __future__ import annotations

import dataclasses
import re

from bench.bill_reword import FAMILIES, reword, reworded
from bench.bill_workload import Task, build_tasks, load_repo
from bench.session_bill import SEED, parse_workload

QUOTED = re.compile(r"`[^`]+`")


def _names(question: str) -> list[str]:
    return sorted(QUOTED.findall(question))


def test_every_question_is_asked_in_other_words_with_the_same_names_files_and_follow_up() -> None:
    tasks = build_tasks(load_repo("live-memory"), parse_workload("medium-natural-60-content"), SEED)
    asked = [t for t in tasks if t.question]
    kinds = {t.kind for t in asked}
    assert {"explain", "edit", "locate", "walkthrough", "review", "area", "follow-up"} <= kinds
    for turn in (1, 2):
        again = reworded(tasks, turn)
        for before, after in zip(tasks, again, strict=True):
            if not before.question:
                assert after == before
                continue
            assert after.question != before.question, before.question
            assert _names(after.question) == _names(before.question), (before.question, after.question)
            assert re.findall(r"\(in [^)]+\)", after.question) == re.findall(r"\(in [^)]+\)", before.question)
            assert (after.files, after.need, after.kind) == (before.files, before.need, before.kind)
            assert re.findall(r"\(follow-up \d+\)$", after.question) == re.findall(
                r"\(follow-up \d+\)$", before.question
            )
        assert len({t.question for t in again if t.question}) == len(asked)
    # Three developers: the first asks as the workload does, the other two each in words of their own.
    firsts = {t.question for t in asked}
    assert firsts.isdisjoint(t.question for t in reworded(tasks, 1) if t.question)
    assert [t.question for t in reworded(tasks, 3)] == [t.question for t in tasks]


def test_an_edits_request_stays_the_users_and_only_its_question_is_reworded() -> None:
    question = "Where is `f` defined, and what should I know before changing it?"
    task = Task(0, 0, 0.0, "Add a comment above `f`.", question, ("a.py",), "f", (), (), "", "", kind="edit")
    task = dataclasses.replace(task, symbols=("f",))
    changed = reword(task, 1)
    assert changed.text == "Add a comment above `f`."
    assert changed.question == "Before I change `f`: where is it defined, and what should I know?"


def test_a_question_of_no_family_is_left_as_it_was() -> None:
    task = Task(0, 0, 0.0, "What is `f`?", "What is `f`?", ("a.py",), "f", (), (), "", "", symbols=("f",))
    assert reword(task, 1) is task
    assert all(len(family) == 3 for family in FAMILIES)  # three developers, three wordings
