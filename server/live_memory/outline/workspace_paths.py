"""The workspace's files, as a question names them: `cli/main.py`, `main.py`, `tools/`.

A person names a file by the end of its path that says which file it is, and a directory likewise; this
resolves such a name against the files the tree was listed from (at load and at each re-freeze): the one file
whose path is the name or ends with "/" + the name, else nothing (none, or several: which one is meant is not
known). Immutable, shared by a window's forks; resolving scans the list (a few milliseconds at 50,000 files),
so callers with many names or a large workspace resolve in a worker thread.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence


class WorkspacePaths:
    def __init__(self, paths: Iterable[str] = ()) -> None:
        self.files: tuple[str, ...] = tuple(sorted(paths))

    def __len__(self) -> int:
        return len(self.files)

    def file(self, name: str) -> str | None:
        """The one file `name` means (its whole path or an end of it), or None."""
        name = _clean(name)
        if not name:
            return None
        return _only(p for p in self.files if p == name or p.endswith("/" + name))

    def directory(self, name: str) -> str | None:
        """The one directory `name` means (its whole path or an end of it, with or without a final "/")."""
        name = _clean(name).rstrip("/")
        if not name:
            return None
        return _only(d for d in self.directories if d == name or d.endswith("/" + name))

    def under(self, directory: str) -> list[str]:
        """The files under `directory` (at any depth)."""
        prefix = directory.rstrip("/") + "/"
        return [p for p in self.files if p.startswith(prefix)]

    @functools.cached_property
    def directories(self) -> tuple[str, ...]:
        """Every directory above a file (string work: a path object per file cost seconds at 50,000 files)."""
        found: set[str] = set()
        for path in self.files:
            directory = path.rstrip("/").rpartition("/")[0]
            while directory and directory not in found:
                found.add(directory)
                directory = directory.rpartition("/")[0]
        return tuple(sorted(found))


def _clean(name: str) -> str:
    return name.strip().strip("`").removeprefix("./").lstrip("/")


def _only(found: Iterable[str]) -> str | None:
    first: str | None = None
    for path in found:
        if first is not None:
            return None
        first = path
    return first


def resolve_all(paths: WorkspacePaths, names: Sequence[str]) -> dict[str, str]:
    """name -> the one file it means, for the names that mean one."""
    out: dict[str, str] = {}
    for name in names:
        found = paths.file(name)
        if found is not None:
            out[name] = found
    return out
