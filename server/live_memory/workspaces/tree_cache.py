"""A checkout's directory tree kept on disk, taken back at a restart when nothing it was made from moved.

    saved = capture(root, scanned, key, listed_at)   # after a scan, in the background: stamps what it rests on
    write(path, saved)                                # JSON beside the snapshot, written atomically
    scanned = restore(path, root, key)                # at a load: the tree as a scan would give it now, or None

What the tree rests on: the listing (git's, or the walker's) and how it renders. The listing changes only when a
directory's entries change (a file added, removed or renamed moves its directory's modification time), when an
ignore rule changes (a .gitignore file, git's exclude file and the user's, git's index for the tracked files) or
when the workspace stops being a repository; the outline after a small repository's tree also rests on the bytes
of the files it names. So a capture stamps every directory git would enter (the walker's, with .gitignore rules
only: never fewer than git enters), those files and the outlined files; `restore` gives the saved tree back only
when every stamp still matches and `key` (the tree's policy, the window's size, the parsers' and this code's
versions) is the same. A directory that moved during the scan (or within a second of it) makes the capture give
up: the tree may not show what the listing missed.

Blocking (worker threads). Must never: give back a tree a scan would not give now, or raise for a file it wrote
that is damaged (that is a miss, and the next scan writes it again).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_memory.constants import TREE_CACHE_MAX_DIRECTORIES
from live_memory.fs.safe_files import atomic_write, ensure_private_dir
from live_memory.fs.walk import directories_breadth_first
from live_memory.outline.tree_outline import ScannedTree
from live_memory.outline.workspace_paths import WorkspacePaths
from live_memory.workspaces.workspace import linked_git_dir

__all__ = ["SavedTree", "capture", "restore", "write"]

_FORMAT = 1
_MOVED_MARGIN_NS = 1_000_000_000  # a stamp this close to the listing may belong to a change it missed
_IGNORE_FILE = ".gitignore"
_ABSENT = -1  # the stamp of a file that was not there


@dataclass(frozen=True)
class SavedTree:
    key: str
    text: str
    paths: tuple[str, ...]
    stamps: dict[str, int]  # path relative to the root (or absolute, outside it) -> modification time in ns


def capture(root: Path, scanned: ScannedTree, key: str, listed_at_ns: int) -> SavedTree | None:
    """What `scanned` (listed from `root` at `listed_at_ns`, wall clock) rests on, stamped now; None when it
    cannot be proven later (too many directories, or one changed around the listing)."""
    stamps: dict[str, int] = {}
    for rel in ["", *directories_breadth_first(str(root), ignore_files=(_IGNORE_FILE,))]:
        found = _mtime(root / rel if rel else root)
        if found is None or found >= listed_at_ns - _MOVED_MARGIN_NS:
            return None
        stamps[rel] = found
        if len(stamps) > TREE_CACHE_MAX_DIRECTORIES:
            return None
    for rel in _depends_on(root, scanned.paths.files, scanned.outlined):
        found = _mtime(Path(rel) if os.path.isabs(rel) else root / rel)
        if found is not None and found >= listed_at_ns - _MOVED_MARGIN_NS:
            return None
        stamps[rel] = _ABSENT if found is None else found  # a file created later moves the tree too
    return SavedTree(key, scanned.text, scanned.paths.files, stamps)


def write(path: Path, saved: SavedTree) -> None:
    """Save a capture (atomically, private)."""
    data = {"format": _FORMAT, "key": saved.key, "text": saved.text, "paths": saved.paths, "stamps": saved.stamps}
    ensure_private_dir(path.parent)
    atomic_write(path, json.dumps(data, separators=(",", ":")).encode(), sync_file=False, sync_dir=False)


def restore(path: Path, root: Path, key: str) -> ScannedTree | None:
    """The saved tree of `root` if it was saved under `key` and every stamp it rests on still matches."""
    try:
        data: Any = json.loads(path.read_bytes())
        if data.get("format") != _FORMAT or data.get("key") != key:
            return None
        stamps: dict[str, int] = data["stamps"]
        text: str = data["text"]
        paths: list[str] = data["paths"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(stamps, dict) or not isinstance(text, str) or not isinstance(paths, list) or "" not in stamps:
        return None
    for rel, mtime in stamps.items():
        found = _mtime(Path(rel) if os.path.isabs(rel) else root / rel if rel else root)
        if (_ABSENT if found is None else found) != mtime:
            return None
    return ScannedTree(text, WorkspacePaths(paths))


def _mtime(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return None


def _depends_on(root: Path, files: Iterable[str], outlined: Iterable[str]) -> list[str]:
    """The files whose change changes the tree without moving a directory: the ignore files it lists, git's
    own (the index, its exclude file, the user's excludes file) and the files the outline names."""
    found = [f for f in files if f == _IGNORE_FILE or f.endswith("/" + _IGNORE_FILE)]
    git = _git_dir(root)
    if git is not None:
        found += [str(git / "index"), str(git / "info" / "exclude"), str(git / "config")]
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    found += [str(config / "git" / "ignore"), str(Path.home() / ".gitconfig")]
    return [*found, *outlined]


def _git_dir(root: Path) -> Path | None:
    """The checkout's git directory: `.git`, or where a `.git` file (a linked worktree's) points."""
    dot_git = root / ".git"
    return dot_git if dot_git.is_dir() else linked_git_dir(root)
