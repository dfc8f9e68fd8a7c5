"""The directory tree for the stable prefix, and after it, in a small repository, the files' definitions.

The prompt's head (tool schemas, instructions, tree) carries the first cache breakpoint. A provider caches
nothing shorter than the model's minimum cacheable prefix, so when even the whole tree leaves the head short
of it (a repository of a hundred files), no breakpoint before the history is written: until the history
behind it passes the minimum (a young memory, and again after each fold) every question pays for the whole
prompt in full. The room left under the minimum is filled instead with what a model locates names in: each
code file's top-level classes and functions (names only: they hold while edits move lines), in path order,
as the files are when the tree is listed. Read only then (load and each re-freeze), through the jail, in a
worker thread, bounded in files read and in characters; a file whose size and modification time are those of
its last outline in this process is not read again (a re-freeze inside a question costs a stat per file).

Must never: exceed the room, read a file withheld as secret or outside the workspace, or depend on anything but
the listing and the files' contents (the text is cached: the same workspace gives the same bytes).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from live_memory.constants import OUTLINE_CACHE_FILES, OUTLINE_MAX_FILES, OUTLINE_MIN_CHARS, OUTLINE_NAMES_PER_FILE
from live_memory.core.errors import JailRefusal
from live_memory.core.prompts import OUTLINE_HEADING
from live_memory.fs.jail import Jail
from live_memory.outline.cards import language_for, read_card
from live_memory.outline.directory_tree import TreePolicy, list_workspace, render_tree
from live_memory.outline.workspace_paths import WorkspacePaths

_NOT_OUTLINED = frozenset({"text", "markdown"})  # prose and data: nothing to locate a name in
_NOT_LISTED = frozenset({"variable", "heading"})  # module constants would crowd out the classes and functions
# (workspace root, path, size, mtime_ns) -> the names listed; shared by the workspaces of this process.
_names_by_stat: dict[tuple[str, str, int, int], tuple[str, ...]] = {}


@dataclass(frozen=True)
class ScannedTree:
    """The tree's text for the prompt, the files it was listed from (what a question's names resolve to), and the
    files whose names the outline after it shows (what the text rests on besides the listing)."""

    text: str
    paths: WorkspacePaths
    outlined: tuple[str, ...] = ()


async def scan_tree(root: Path, policy: TreePolicy, *, budget_tokens: int, chars_per_token: float) -> ScannedTree:
    """The tree of `root` for a window of `budget_tokens` (at its `chars_per_token`), as `policy` sizes it, and
    the files' definitions in the room it leaves under the cache minimum."""
    listing = await list_workspace(root, policy.secret_globs)
    paths = await asyncio.to_thread(WorkspacePaths, listing.paths)
    budget = policy.budget_chars(budget_tokens, chars_per_token)
    tree = await asyncio.to_thread(render_tree, listing.paths, budget, listing.jail.secrets, listing.complete)
    room = policy.room_below_floor(len(tree) + 2, budget_tokens, chars_per_token)  # 2: the blank line between
    if not listing.complete or room < OUTLINE_MIN_CHARS:
        return ScannedTree(tree, paths)
    outline, read = await asyncio.to_thread(render_outline, listing.jail, listing.paths, room)
    return ScannedTree(f"{tree}\n\n{outline}" if outline else tree, paths, tuple(read))


def render_outline(jail: Jail, paths: Sequence[str], room_chars: int) -> tuple[str, list[str]]:
    """`path: Name, Name, ...` per code file with top-level definitions, in path order, under a heading,
    within `room_chars` ("" when not one file fits); and the files it read. Blocking: reads files."""
    lines = [OUTLINE_HEADING]
    size = len(OUTLINE_HEADING)
    read: list[str] = []
    for path in sorted(paths):
        if len(read) >= OUTLINE_MAX_FILES:
            break
        if language_for(path) in _NOT_OUTLINED or jail.is_secret(path):
            continue
        read.append(path)
        names = _top_level_names(jail, path)
        if not names:
            continue
        line = _outline_line(path, names)
        if size + 1 + len(line) > room_chars:
            break
        lines.append(line)
        size += 1 + len(line)
    return ("\n".join(lines) if len(lines) > 1 else ""), read


def forget_outlines() -> None:
    """Drop what this process remembers of files' names (the next scan reads every file again)."""
    _names_by_stat.clear()


def _top_level_names(jail: Jail, path: str) -> tuple[str, ...]:
    """The file's top-level classes and functions, from its outline (read through the jail), or as outlined
    before when its size and modification time are unchanged."""
    try:
        found = os.stat(jail.resolve(path))
    except (JailRefusal, OSError):
        return ()
    key = (str(jail.root), path, found.st_size, found.st_mtime_ns)
    names = _names_by_stat.get(key)
    if names is None:
        card = read_card(jail, path)
        names = tuple(d.name for d in card[0].definitions if _listed(d.kind, d.depth, d.name)) if card else ()
        if len(_names_by_stat) >= OUTLINE_CACHE_FILES:
            _names_by_stat.clear()
        _names_by_stat[key] = names
    return names


def _listed(kind: str, depth: int, name: str) -> bool:
    return depth == 0 and kind not in _NOT_LISTED and not name.startswith("_")


def _outline_line(path: str, names: Sequence[str]) -> str:
    shown = ", ".join(names[:OUTLINE_NAMES_PER_FILE])
    more = f" (+{len(names) - OUTLINE_NAMES_PER_FILE} more)" if len(names) > OUTLINE_NAMES_PER_FILE else ""
    return f"{path}: {shown}{more}"
