"""Lines an answer cited, held for later questions: the hot set's unit.

An answer names what it relied on as `path:first-last`. Those lines, as the file had them when the answer
was given, are what a later question about the same code needs; holding them (a few hundred tokens each)
lets the model answer it without a tool round, and costs a cache read per request. Which citations are held
is the hot set's rule (hot_set.py); this module parses citations, cuts the lines out of a file and renders
them the way the Read tool shows lines (`number<TAB>text`), under a heading that names the file's hash, so
a model can tell they are current while the file is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from live_memory.constants import CITED_LINES_MAX_LINES

# `path:first-last` or `path:line`, the way answers cite code (the system prompt asks for it).
CITATION = re.compile(r"(?<![\w./-])([\w.-]+(?:/[\w.-]+)*\.[A-Za-z0-9]+):(\d+)(?:-(\d+))?\b")
SHA_SHOWN = 12  # hex digits of the file's SHA-256 shown beside held lines


@dataclass(frozen=True)
class Citation:
    path: str
    first: int
    last: int


@dataclass(frozen=True)
class CitedLines:
    """Lines `first`..`last` of `path` as the file had them (`sha256`), numbered as Read shows them."""

    path: str
    sha256: str
    first: int
    last: int
    text: str

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.path, self.first, self.last)

    def block(self) -> str:
        return f"### {self.path}:{self.first}-{self.last} (sha {self.sha256[:SHA_SHOWN]})\n```\n{self.text}\n```"


def citations(answer: str, known: Iterable[str]) -> list[Citation]:
    """The `path:first-last` citations of `answer` that name a known file, in order, each once; a range
    longer than CITED_LINES_MAX_LINES is not a citation of lines but of a file, and is left out."""
    paths = set(known)
    found: dict[tuple[str, int, int], Citation] = {}
    for match in CITATION.finditer(answer):
        path, first = match.group(1).removeprefix("./"), int(match.group(2))
        last = int(match.group(3) or first)
        if path in paths and 1 <= first <= last and last - first < CITED_LINES_MAX_LINES:
            found.setdefault((path, first, last), Citation(path, first, last))
    return list(found.values())


def cut(text: str, sha256: str, citation: Citation) -> CitedLines | None:
    """The cited lines of a file's current `text` (None when the range runs past its end)."""
    lines = text.split("\n")
    if citation.last > len(lines):
        return None
    numbered = "\n".join(f"{n}\t{lines[n - 1]}" for n in range(citation.first, citation.last + 1))
    return CitedLines(citation.path, sha256, citation.first, citation.last, numbered)


def relocated(held: CitedLines, text: str, sha256: str) -> CitedLines | None:
    """`held`'s lines in the file's new `text`, wherever they now start (None when they changed or went)."""
    old = "\n".join(line.split("\t", 1)[1] for line in held.text.split("\n"))
    at = text.find(old)
    while at >= 0 and not _whole_lines(text, at, at + len(old)):
        at = text.find(old, at + 1)
    if at < 0:
        return None
    first = text.count("\n", 0, at) + 1
    return cut(text, sha256, Citation(held.path, first, first + held.last - held.first))


def _whole_lines(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is whole lines: it starts a line and ends one (a line that only begins
    like the held one was changed)."""
    return (start == 0 or text[start - 1] == "\n") and (end == len(text) or text[end] == "\n")


Key = tuple[str, int, int]  # (path, first, last)


class HeldLines(dict[Key, CitedLines]):
    """The cited lines a window holds. Each change that adds lines also queues their key in `queue` (the
    window's next delta), and each that drops lines takes them off it."""

    def hold(self, lines: CitedLines, queue: dict[Key, None]) -> bool:
        """False when these very lines are held already."""
        held = self.get(lines.key)
        if held is not None and held.sha256 == lines.sha256:
            return False
        self[lines.key] = lines
        queue[lines.key] = None
        return True

    def drop(self, path: str, queue: dict[Key, None], keep_sha: str | None = None) -> None:
        """The file changed: its lines are no longer current (those of `keep_sha` stay)."""
        for key in [k for k, lines in self.items() if k[0] == path and lines.sha256 != keep_sha]:
            del self[key]
            queue.pop(key, None)

    def relocate(self, path: str, text: str, sha256: str, queue: dict[Key, None]) -> None:
        """The file is now `text`: lines it still has, unchanged, are held at their new place; the others go."""
        for key, held in [(k, v) for k, v in self.items() if k[0] == path and v.sha256 != sha256]:
            del self[key]
            queue.pop(key, None)
            moved = relocated(held, text, sha256)
            if moved is not None:
                self.hold(moved, queue)


def render(held: Mapping[tuple[str, int, int], CitedLines]) -> str:
    return "\n\n".join(held[key].block() for key in sorted(held))
