"""Answers given again: an earlier answer to the same need, whose files are unchanged, answers it at once.

A question is reduced to what it asks about, in terms that survive rephrasing (`Asked`): the files and
directories it names, resolved against the workspace's files (`cli/main.py` and `server/cli/main.py` are one
file when only one file's path ends so), the code names it mentions, whether it asks for a review, and its
topic words (lowercased, crudely stemmed; the scaffolding of a question, "what does ... do", "walk me through",
"again", left out). An earlier answer answers a question when both name the same files, directories and code
names, both ask for a review or neither does, and every topic word of the question was one of the earlier
question's, a word sharing its first four letters or more with one of them counting as that word ("failures" and
"fails", "related" and "relationship"): the earlier question may have asked for more, never for less.
The code names count in the order given ("Where is `a` defined (related: `b`)?" is about `a`, not `b`).
"Walk me through `cli.py`" and "How is `src/cli.py` organised, again?" ask for the same thing; "Review `cli.py` for
thread safety" does not, nor does "What happens when `f` fails?" after "What calls `f`?", nor "What does `f` return,
and what happens when it fails?" after "What does `f` return?". Only a question that names a file, a directory or
a code name is matched (a bare "how does caching work?" is too vague to answer again), never one that asks only
where a name is or who uses it (a name's uses can change in any file).

An answer is kept with its grounds (`answer_grounds`): the files it rests on (those its model read, and those
it names that the memory knows as they are on disk), each with its SHA-256. It is given again only while every
ground has the same bytes on disk, and only if it rests on every file the question names and on a file under
every directory it names.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from live_memory.constants import ANSWERS_KEPT, TOPIC_PREFIX_CHARS
from live_memory.engine.question_names import (
    REVIEW_WORDS,
    directories_in,
    location_kind,
    names_in,
    paths_in,
    question_words,
)
from live_memory.fs.safe_files import disk_hashes
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.ledger import attribute
from live_memory.outline.cards import looks_like_file
from live_memory.outline.workspace_paths import WorkspacePaths


@dataclass(frozen=True)
class Asked:
    """What a question asks about (see the module docstring); hashable, the key of earlier answers."""

    paths: frozenset[str]
    directories: frozenset[str]
    names: tuple[str, ...]  # in the order the question gives them: the first is what it is about
    topic: frozenset[str]
    review: bool = False

    def answered_by(self, earlier: Asked) -> bool:
        """Whether an answer to `earlier` answers this question (see the module docstring)."""
        return (
            self.names == earlier.names
            and self.paths == earlier.paths
            and self.directories == earlier.directories
            and self.review == earlier.review
            and _covered(self.topic, earlier.topic)
        )


@dataclass(frozen=True)
class KeptAnswer:
    question: str
    answer: str
    grounds: Mapping[str, str]  # path -> SHA-256 of the bytes it rested on
    at: float  # wall-clock time it was given


@dataclass
class AnswerBook:
    """The newest answer to each need asked, at most ANSWERS_KEPT needs (the least recently asked go first)."""

    entries: OrderedDict[Asked, KeptAnswer] = field(default_factory=OrderedDict)
    given_again: int = 0  # answers given again from the book (for /stats)

    def keep(self, asked: Asked, kept: KeptAnswer) -> None:
        self.entries.pop(asked, None)
        self.entries[asked] = kept
        while len(self.entries) > ANSWERS_KEPT:
            self.entries.popitem(last=False)

    def answer_to(self, asked: Asked) -> KeptAnswer | None:
        """The newest answer that answers `asked` (one to the very same need first)."""
        found = self.entries.get(asked)
        if found is not None:
            return found
        return next((kept for need, kept in reversed(self.entries.items()) if asked.answered_by(need)), None)

    def __len__(self) -> int:
        return len(self.entries)


def asked_about(question: str, paths: WorkspacePaths) -> Asked | None:
    """What `question` asks about, or None when it cannot be matched safely: it names no file, directory or
    code name, a name it gives means no file or several, or it asks only where a name is or who uses it."""
    if location_kind(question) is not None:
        return None
    files: set[str] = set()
    code = names_in(question, limit=1000)
    named_files = [n for n in paths_in(question) if n not in code or looks_like_file(n) or paths.file(n)]
    for name in named_files:
        found = paths.file(name)
        if found is None:
            return None  # a file the workspace has none or several of: which one is meant is not known
        files.add(found)
    directories: set[str] = set()
    for name in directories_in(question):
        found = paths.directory(name)
        if found is None:
            return None
        directories.add(found)
    names = tuple(n for n in code if n not in named_files)
    if not (files or directories or names):
        return None
    words = question_words(question, named_files)
    review = any(w in REVIEW_WORDS for w in words)
    topic = frozenset(_stem(w) for w in words if w not in REVIEW_WORDS)
    if directories and not (files or names or topic):
        return None  # "what is in `src/`?": too vague to take an earlier answer for
    return Asked(frozenset(files), frozenset(directories), names, topic, review)


def _covered(topic: frozenset[str], earlier: frozenset[str]) -> bool:
    """Whether every word of `topic` is one of `earlier`'s, each matched to its own word there (a word sharing
    its first TOPIC_PREFIX_CHARS letters or more with one of them counts as that word). A question with no topic
    word asks for the whole (what a file does): only an earlier one that asked for the whole answers it."""
    if not topic:
        return not earlier
    left = sorted(earlier)
    for word in sorted(topic):
        match = next((i for i, candidate in enumerate(left) if _same_word(word, candidate)), None)
        if match is None:
            return False
        del left[match]
    return True


def _same_word(one: str, other: str) -> bool:
    if one == other:
        return True
    prefix = min(len(one), len(other))
    return prefix >= TOPIC_PREFIX_CHARS and one[:prefix] == other[:prefix]


def _stem(word: str) -> str:
    """A crude stem: "handling", "handled" and "handles" are one word; "errors" and "error" too; and "change",
    "changed" and "changing" (a final "e" goes as the suffixes do)."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


async def earlier_answer(book: AnswerBook, root: Path, asked: Asked) -> KeptAnswer | None:
    """The newest earlier answer in `book` that answers `asked`, if every file it rests on has the same bytes on
    disk under `root` now (checked off the event loop); None otherwise."""
    kept = book.answer_to(asked)
    if kept is None:
        return None
    current = await asyncio.to_thread(disk_hashes, root, set(kept.grounds))
    if not still_holds(kept, current):
        return None
    book.given_again += 1
    return kept


def answer_grounds(window: ContextWindow, answer: str, files_read: Sequence[str]) -> dict[str, str]:
    """What an answer rests on: the files its model read and the files it names, each as the window knows it."""
    grounds = window.grounds()
    read = {path: grounds[path] for path in files_read if path in grounds}
    return read | attribute(answer, grounds)


def rests_on(asked: Asked, grounds: Mapping[str, str]) -> bool:
    """Whether an answer with `grounds` is about what was asked: it rests on every file the question names and
    on a file under every directory it names."""
    if not grounds or not asked.paths <= grounds.keys():
        return False
    return all(any(p.startswith(d + "/") for p in grounds) for d in asked.directories)


def still_holds(kept: KeptAnswer, current: Mapping[str, str | None]) -> bool:
    """Every file the answer rested on has the same bytes now (`current`: path -> SHA-256, None when gone)."""
    return all(current.get(path) == digest for path, digest in kept.grounds.items())


def given_again(kept: KeptAnswer, when: str) -> str:
    """The earlier answer as it is given again, with where it comes from."""
    files = ", ".join(sorted(kept.grounds))
    return (
        f"{kept.answer.rstrip()}\n\n(Given again: this memory's answer of {when} to the same question, asked of "
        f"the same bytes of {files}.)"
    )
