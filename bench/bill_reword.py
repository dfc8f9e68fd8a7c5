"""The same questions in a teammate's words (bench/team_bill.py, variant `reworded`): what a later developer asks
about the same code, with the same meaning, worded their own way.

Every phrasing the workload draws (bench/bill_workload.py, bench/bill_content.py) belongs to a family of three of
the same meaning; developer k asks the (k-1)-th next one of its family, with the same names, files and topic. The
families are written for meaning, not for what the server's matching looks at: a rewording may swap the words
around the names ("what calls it" and "its callers"), as people do.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from bench.bill_workload import Task, with_files

FAMILIES: tuple[tuple[str, ...], ...] = (
    # explain, one name
    (
        "How does `{sym}` work, and what calls it?",
        "Explain how `{sym}` works and what its callers are.",
        "What calls `{sym}`, and how does it work?",
    ),
    (
        "Where is `{sym}` handled, and what does it depend on?",
        "What does `{sym}` depend on, and where is it handled?",
        "Show me where `{sym}` is handled and its dependencies.",
    ),
    (
        "What happens when `{sym}` fails, and where is that handled?",
        "If `{sym}` fails, what happens and where is it handled?",
        "How are failures of `{sym}` handled, and where?",
    ),
    (
        "Walk me through `{sym}` step by step.",
        "Explain `{sym}` step by step.",
        "Step by step, what does `{sym}` do?",
    ),
    (
        "What does `{sym}` do, and is there anything surprising in it?",
        "Explain what `{sym}` does; is anything in it surprising?",
        "Is there anything surprising in `{sym}`, and what does it do?",
    ),
    # locate and uses: the workload's own phrasings are one meaning each
    ("Where is `{sym}` defined?", "Which file and lines define `{sym}`?", "Find the definition of `{sym}`."),
    ("Who calls `{sym}`?", "Which files use `{sym}`?", "Where is `{sym}` used?"),
    # several names
    ("How do {syms} fit together?", "How do {syms} work together?", "How are {syms} connected?"),
    ("Trace the flow through {syms}.", "Follow the flow through {syms}.", "Walk the flow through {syms}."),
    (
        "What is the relationship between {syms}?",
        "How are {syms} related?",
        "What ties {syms} to each other?",
    ),
    # an edit's question (the rest: "?" or " (related: ...)?")
    (
        "Where is `{sym}` defined, and what should I know before changing it{rest}",
        "Before I change `{sym}`: where is it defined, and what should I know{rest}",
        "What should I know before changing `{sym}`, and where is it defined{rest}",
    ),
    # content questions (bench/bill_content.py): each kind's phrasings are one meaning
    (
        "What does `{file}` do and how is it organised?",
        "Walk me through `{file}`.",
        "Give me an overview of `{file}`: its parts and how they fit together.",
    ),
    (
        "Review `{file}` for {concern}.",
        "Are there {concern} problems in `{file}`?",
        "Check `{file}` for {concern} issues.",
    ),
    (
        "What does `{area}` do about {topic}?",
        "Which modules under `{area}` deal with {topic}, and how?",
        "How is {topic} handled in `{area}`?",
    ),
    (
        "Remind me what `{file}` does and how it is laid out.",
        "Give me the overview of `{file}` again: what is in it?",
        "How is `{file}` organised, again?",
    ),
    (
        "Once more: does `{file}` have {concern} problems?",
        "Re-check `{file}` for {concern}.",
        "Look at `{file}` for {concern} again.",
    ),
    (
        "Remind me how `{area}` handles {topic}.",
        "Which files in `{area}` deal with {topic} again, and how?",
        "Again: how does `{area}` deal with {topic}?",
    ),
)
_SLOTS = {
    "sym": r"[^`]+",
    "syms": r".+?",
    "rest": r".*",
    "file": r"[^`]+",
    "area": r"[^`]+",
    "concern": r".+?",
    "topic": r".+?",
}
_SUFFIX = re.compile(r" \(follow-up \d+\)$")
_IN_FILE = re.compile(r" \(in [^)]+\)")  # bill_workload's note of the file meant after a name


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)
    out = []
    for i, part in enumerate(parts):
        out.append(f"(?P<{part}>{_SLOTS[part]})" if i % 2 else re.escape(part))
    return re.compile("".join(out))


_MATCHERS = [(family, position, _pattern(t)) for family in FAMILIES for position, t in enumerate(family)]


def reword(task: Task, turn: int) -> Task:
    """`task` as a teammate asks it: its question's phrasing moved `turn` places along its family (the names,
    files, topic, note of the file meant and follow-up number kept). A question of no family stays as it was."""
    if not task.question or turn % 3 == 0:
        return task
    suffix = _SUFFIX.search(task.question)
    bare = task.question[: suffix.start()] if suffix else task.question
    plain = _IN_FILE.sub("", bare)
    for family, position, pattern in _MATCHERS:
        found = pattern.fullmatch(plain)
        if found is None:
            continue
        text = family[(position + turn) % len(family)].format(**found.groupdict())
        if task.need is None:  # a content question names its file or area itself
            text = with_files(text, task.files, task.symbols, task.named)
        question = text + (suffix.group(0) if suffix else "")
        user_text = question if task.text == task.question else task.text
        return dataclasses.replace(task, question=question, text=user_text)
    return task


def reworded(tasks: Sequence[Task], turn: int) -> list[Task]:
    """Every task as the `turn`-th teammate asks it; each question still names one task alone."""
    out = [reword(task, turn) for task in tasks]
    questions = [t.question for t in out if t.question]
    if len(set(questions)) != len(questions):
        raise ValueError("two reworded questions are the same")
    return out
