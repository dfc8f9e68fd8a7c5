"""The gitignore-aware directory walker: the pure-Python stand-in for `rg --files` and `git ls-files`.

Owns the ignore-file dialect (gitignore: comments, "!" negation, trailing "/" for directories, "/"
anchoring, "**") and the walk order. It reads `.git/info/exclude` at the root and `.gitignore`,
`.ignore`, `.rgignore` in every directory (later files and deeper directories win, as in ripgrep),
skips `.git`, and never follows symbolic links (ripgrep's default), so a link can never lead it
outside the workspace. Hidden files are included.

Must never: be called on the event loop (it is blocking; callers use asyncio.to_thread), follow a
symlink, or yield anything but regular files (and, on request, directories) under the root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from live_memory.tools.globs import glob_to_regex

__all__ = ["IgnoreRule", "parse_ignore_text", "walk_paths"]

IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
_MAX_IGNORE_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool  # matched against the path below the ignore file's directory, else the base name


def parse_ignore_text(text: str) -> list[IgnoreRule]:
    """Parse the lines of a .gitignore-style file into rules, in file order."""
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        # Trailing spaces are dropped unless escaped with a backslash.
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        try:
            regex = re.compile(glob_to_regex(line, braces=False), re.DOTALL)
        except re.error:
            continue  # git ignores patterns it cannot parse; so do we
        rules.append(IgnoreRule(regex, negate, dir_only, anchored))
    return rules


# A level is (directory relative to the root, its rules); deeper levels come later.
_Level = tuple[str, tuple[IgnoreRule, ...]]


def _is_ignored(levels: tuple[_Level, ...], rel: str, name: str, is_dir: bool) -> bool:
    for base, rules in reversed(levels):
        sub = rel[len(base) + 1 :] if base else rel
        for rule in reversed(rules):  # the last matching rule of the deepest file decides
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(sub if rule.anchored else name):
                return not rule.negate
    return False


def _read_rules(path: str) -> list[IgnoreRule]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_IGNORE_FILE_BYTES)
    except OSError:
        return []
    return parse_ignore_text(data.decode("utf-8", "replace"))


def _dir_level(root: str, rel: str, *, with_exclude: bool = False) -> _Level | None:
    directory = os.path.join(root, rel) if rel else root
    rules: list[IgnoreRule] = []
    if with_exclude:
        rules.extend(_read_rules(os.path.join(root, ".git", "info", "exclude")))
    for name in IGNORE_FILES:
        rules.extend(_read_rules(os.path.join(directory, name)))
    return (rel, tuple(rules)) if rules else None


def walk_paths(
    root: str,
    start_rel: str = "",
    *,
    include_dirs: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[tuple[str, bool]]:
    """Yield (workspace-relative path, is_dir) for every non-ignored entry under `start_rel`.

    Order is depth-first with entries sorted by name. `start_rel` itself is never tested against
    the ignore rules (an explicitly named directory is searched, as ripgrep does), but the rules of
    every directory above it apply. `should_stop` is polled once per directory.
    """
    levels: tuple[_Level, ...] = ()
    parts = [p for p in start_rel.split("/") if p] if start_rel else []
    for depth in range(len(parts) + 1):
        level = _dir_level(root, "/".join(parts[:depth]), with_exclude=depth == 0)
        if level is not None:
            levels += (level,)
    start = "/".join(parts)
    # Each stack item: (relative directory, the levels of the directories above it). The start
    # directory's own ignore files were loaded above; every other directory loads its own on visit.
    stack: list[tuple[str, tuple[_Level, ...]]] = [(start, levels)]
    first = True
    while stack:
        if should_stop is not None and should_stop():
            return
        dir_rel, dir_levels = stack.pop()
        if not first:
            level = _dir_level(root, dir_rel)
            if level is not None:
                dir_levels += (level,)
        first = False
        try:
            with os.scandir(os.path.join(root, dir_rel) if dir_rel else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue  # unreadable or vanished directory: skip it, as ripgrep does
        subdirs: list[str] = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            rel = f"{dir_rel}/{name}" if dir_rel else name
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if not (is_dir or is_file) or _is_ignored(dir_levels, rel, name, is_dir):
                continue
            if is_dir:
                subdirs.append(rel)
                if include_dirs:
                    yield rel, True
            else:
                yield rel, False
        stack.extend((d, dir_levels) for d in reversed(subdirs))
