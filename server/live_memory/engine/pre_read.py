"""The files a question asks about as a whole, read before the model sees it.

"Walk me through `cli/main.py`", "Review `store.py` for error handling" need the file's body; "How is
quarantine handled in `tools/`?" needs the bodies of the files under `tools/` that mention quarantine. A model's
first step is always to read them (after a search, when the tree does not show where they are). The loop takes
that step before the first request: it resolves the names against the workspace's files, greps a named
directory for the question's words, and reads what it finds with the Read tool (jailed and fingerprinted like
any Read), presented as a tool round already made. The first request can then be the answer.

Only a question that names files or directories and no code name (a name's definition comes from its lookup
instead, question_names.py) and that asks more than where something is; never a file whose current bytes the
window holds already, never more than `max_files` files or `max_chars` characters of them. Past that the hint
says what there is instead, for the model to choose from: a named file's summary (file_summary.py), a
directory's files that mention the words; and a directory asked about as a whole ("what is `auth/` for?"), what
each of its files says it is.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from live_memory.constants import PRE_READ_MAX_LINES
from live_memory.core.messages import Message, ToolResultPart, ToolUsePart
from live_memory.engine.question_names import (
    REVIEW_WORDS,
    directories_in,
    location_kind,
    names_in,
    paths_in,
    question_words,
)
from live_memory.engine.tool_runner import ToolOutcomeLike, ToolRunner
from live_memory.memory.context_window import ContextWindow
from live_memory.outline.file_summary import module_doc, summary

_NUMBERED = re.compile(r"\d+\t")
READ_TOOL = "Read"
GREP_TOOL = "Grep"
LISTED_MAX = 20  # a directory's matching files named in the hint at most, when too many to read
CARD_HEAD_LINES = 40  # a file's first lines, where its docstring is
_ENDINGS = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s", "y", "e")  # the longest first


@dataclass(frozen=True)
class PreRead:
    """The round the loop made for the model: its calls and their results (in order), and for the hint the
    files a named directory holds on the question's words, when there were too many to read."""

    calls: tuple[ToolUsePart, ...] = ()
    outcomes: tuple[ToolOutcomeLike, ...] = ()
    listed: str = ""

    @property
    def messages(self) -> tuple[Message, ...]:
        """The round as the conversation shows it: the calls, then their results."""
        if not self.calls:
            return ()
        pairs = zip(self.calls, self.outcomes, strict=True)
        results = tuple(ToolResultPart(c.id, o.text, is_error=o.is_error) for c, o in pairs)
        return Message("assistant", self.calls), Message("user", results)


async def pre_read(
    tools: ToolRunner, window: ContextWindow, question: str, *, max_files: int, max_chars: int
) -> PreRead:
    """Read what `question` asks about as a whole (see the module docstring); an empty PreRead when nothing."""
    if max_files <= 0 or location_kind(question) is not None:
        return PreRead()
    named = paths_in(question)
    if any(n not in named for n in names_in(question, limit=1000)):
        return PreRead()  # a code name: its definition is looked up instead
    paths = window.paths
    files = [found for found in (paths.file(n) for n in named) if found is not None]
    words = [w for w in question_words(question, named) if w not in REVIEW_WORDS]
    mentioning: dict[str, list[str]] = {}  # directory -> its files that mention the question's words
    cards: list[str] = []  # a directory asked about as a whole: what each of its files says it is
    for directory in (d for d in (paths.directory(n) for n in directories_in(question)) if d is not None):
        if words:
            mentioning[directory] = await _mentioning(tools, directory, words)
        else:
            cards.append(await _directory_card(tools, directory, paths.under(directory)))
    found = [p for p in dict.fromkeys([*files, *(p for ps in mentioning.values() for p in ps)]) if not _held(window, p)]
    listed = [f"- Under {d}/, mentioning {' and '.join(words)}: {_shown(ps)}" for d, ps in mentioning.items() if ps]
    listed += cards
    if not found or len(found) > max_files:
        return PreRead(listed="\n".join(listed))
    whole = {"limit": PRE_READ_MAX_LINES}  # all of it: what the question asks about (max_chars bounds it below)
    outcomes = await asyncio.gather(*(tools.run(READ_TOOL, {"file_path": p, **whole}) for p in found))
    if sum(len(o.text) for o in outcomes) > max_chars:  # summed up, for the model to read what it needs of them
        read = dict(zip(found, outcomes, strict=True))
        named_files = [summary(p, _unnumbered(read[p].text)) for p in files if p in read and not read[p].is_error]
        return PreRead(listed="\n".join([*listed, *named_files]))
    asked = window.questions_asked()  # call ids stay unique in a history that keeps them
    calls = tuple(
        ToolUsePart(f"pre_read_{asked}_{i}", READ_TOOL, {"file_path": p, **whole}) for i, p in enumerate(found, 1)
    )
    return PreRead(calls, tuple(outcomes))


async def _directory_card(tools: ToolRunner, directory: str, under: Sequence[str]) -> str:
    """The files under `directory` (its own first, then deeper), each with the first paragraph of what it says it
    is (its docstring, read from its first lines), at most LISTED_MAX."""
    ranked = sorted(under, key=lambda p: (p.count("/"), p))[:LISTED_MAX]
    heads = await asyncio.gather(*(tools.run(READ_TOOL, {"file_path": p, "limit": CARD_HEAD_LINES}) for p in ranked))
    lines = [f"### {directory}/ ({len(under)} files): what its files say they are"]
    for path, head in zip(ranked, heads, strict=True):
        about = "" if head.is_error else module_doc(path, _unnumbered(head.text))
        lines.append(f"- {path}{f': {about}' if about else ''}")
    if len(under) > len(ranked):
        lines.append(f"(+{len(under) - len(ranked)} more: Glob or find_paths lists them)")
    return "\n".join(lines)


def _unnumbered(read_text: str) -> str:
    """A Read result's lines without their numbers (what the file holds, as far as the Read showed it)."""
    return "\n".join(line.split("\t", 1)[1] for line in read_text.splitlines() if _NUMBERED.match(line))


def _shown(paths: Sequence[str]) -> str:
    more = f" (+{len(paths) - LISTED_MAX} more)" if len(paths) > LISTED_MAX else ""
    return ", ".join(paths[:LISTED_MAX]) + more


async def _mentioning(tools: ToolRunner, directory: str, words: Sequence[str]) -> list[str]:
    """The files under `directory` that mention every one of `words` in some form ("expiry": "expires",
    "expired"; any case), by path."""
    found: set[str] | None = None
    for word in words:
        pattern = rf"\b{re.escape(word_stem(word))}"
        outcome = await tools.run(GREP_TOOL, {"pattern": pattern, "path": directory, "-i": True, "head_limit": 1000})
        if outcome.is_error:
            return []
        hits = {line for line in outcome.text.splitlines()[1:] if line and not line.startswith("[")}
        found = hits if found is None else found & hits
        if not found:
            return []
    return sorted(found or ())


def word_stem(word: str) -> str:
    """What the forms of a word begin with: "expiry", "expires" and "expired" all begin "expir"."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


def _held(window: ContextWindow, path: str) -> bool:
    known = window.files.get(path)
    return known is not None and known.content is not None and known.state == "current"
