"""What a window knows of one file (`FileContext`), and how the prompt shows a file: its name (with a size
only where that warns the model to read a part), its held bytes, or what changed in them."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from live_memory.constants import FILE_SIZE_SHOWN_FROM_BYTES
from live_memory.memory.cited_lines import Key

FileState = Literal["current", "changed", "deleted"]


@dataclass(frozen=True)
class FileContext:
    """What the window knows of one file. `content` is held bytes (observed/preloaded) or None."""

    path: str
    sha256: str
    size: int
    content: str | None = None
    state: FileState = "current"
    preloaded: bool = False
    last_used: int = 0

    def manifest_line(self) -> str:
        note = {
            "current": "",
            "changed": " — CHANGED since you read it; re-read before relying on it",
            "deleted": " — DELETED or moved/renamed; it no longer exists at this path",
        }[self.state]
        return f"- {named(self.path, self.size)}{note}"


def named(path: str, size: int) -> str:
    """A file as the prompt names it: its size only where it warns the model to read a part."""
    return f"{path} ({size // 1024} KB)" if size >= FILE_SIZE_SHOWN_FROM_BYTES else path


def most_recently_used(
    files: Sequence[FileContext], room: int, size: Callable[[FileContext], int]
) -> list[FileContext]:
    """Those of `files` (in their order) that fit in `room` characters, `size` each: the ones the window used last
    first (its tick: a read, a tee, a hold)."""
    if sum(size(f) for f in files) <= room:
        return list(files)
    kept: set[str] = set()
    for f in sorted(files, key=lambda f: f.last_used, reverse=True):
        room -= size(f)
        if room < 0:
            break
        kept.add(f.path)
    return [f for f in files if f.path in kept]


def changed_lines(path: str, old: str, new: str) -> str | None:
    """A unified diff of `old` -> `new`, or None when a fresh copy would be as short."""
    diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}", n=2))
    return diff if diff and len(diff) < 0.6 * len(new) else None


def file_block(f: FileContext) -> str:
    return f"### {f.path}\n```\n{f.content}\n```"


@dataclass
class Delta:
    """What a window has queued for its next `sync_deltas()`: file changes the next question is told of."""

    content: dict[str, None] = field(default_factory=dict)  # ordered set of paths with new bytes
    diffs: dict[str, str] = field(default_factory=dict)  # held path -> what changed (instead of a new copy)
    notices: dict[str, str] = field(default_factory=dict)  # path -> notice line
    seen: dict[str, int] = field(default_factory=dict)  # path -> size: read by the agents, bytes not held
    cited: dict[Key, None] = field(default_factory=dict)  # lines newly held (cited_lines.py)

    def copy(self) -> Delta:
        return Delta(dict(self.content), dict(self.diffs), dict(self.notices), dict(self.seen), dict(self.cited))
