"""The gitignore-aware directory walker: the pure-Python stand-in for `rg --files` and `git ls-files`.

Owns the ignore-file dialect (gitignore: comments, "!" negation, trailing "/" for directories, "/"
anchoring, "**") and the walk order. It reads `.git/info/exclude` at the root and `.gitignore`,
`.ignore`, `.rgignore` in every directory (later files and deeper directories win, as in ripgrep),
skips `.git`, and never follows symbolic links (ripgrep's default): directories are opened one by one
from their parent's descriptor with O_NOFOLLOW, so not even a link swapped in mid-walk can lead it
outside the workspace. Ignore files are read only if they are regular files. Hidden files are included.

Must never: be called on the event loop (it is blocking; callers use asyncio.to_thread), follow a
symlink, or yield anything but regular files (and, on request, directories) under the root.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from live_memory.fs.globs import glob_to_regex
from live_memory.fs.safe_files import DIR_FLAGS, ROOT_FLAGS, open_beneath, read_text_bounded

__all__ = ["IgnoreRule", "directories_breadth_first", "is_ignored", "parse_ignore_text", "walk_paths"]

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


def _read_rules(name: str, dir_fd: int) -> list[IgnoreRule]:
    """The rules of one ignore file in the directory `dir_fd`: a regular file only (a FIFO named
    .gitignore must not hang the walk; a link named .gitignore is not followed), its first MiB."""
    try:
        text = read_text_bounded(name, _MAX_IGNORE_FILE_BYTES, dir_fd=dir_fd)
    except OSError:
        return []
    return parse_ignore_text(text)


def _git_exclude_rules(root_fd: int) -> list[IgnoreRule]:
    """`.git/info/exclude` of the root, reached without following links."""
    try:
        fd = open_beneath(root_fd, ".git/info", directory=True)
    except (OSError, ValueError):
        return []
    try:
        return _read_rules("exclude", fd)
    finally:
        os.close(fd)


def _dir_level(
    dir_fd: int, rel: str, extra: list[IgnoreRule] | None = None, ignore_files: tuple[str, ...] = IGNORE_FILES
) -> _Level | None:
    rules: list[IgnoreRule] = list(extra or ())
    for name in ignore_files:
        rules.extend(_read_rules(name, dir_fd))
    return (rel, tuple(rules)) if rules else None


class _Frame:
    """A directory being walked: its descriptor, the subdirectories still to visit, their rules."""

    __slots__ = ("fd", "levels", "next", "rel", "subdirs")

    def __init__(self, fd: int, rel: str, levels: tuple[_Level, ...], subdirs: list[str]) -> None:
        self.fd = fd
        self.rel = rel
        self.levels = levels
        self.subdirs = subdirs
        self.next = 0


def walk_paths(
    root: str,
    start_rel: str = "",
    *,
    include_dirs: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[tuple[str, bool]]:
    """Yield (workspace-relative path, is_dir) for every non-ignored entry under `start_rel`.

    Order is depth-first with entries sorted by name (a directory's own entries before its
    subdirectories' contents). `start_rel` itself is never tested against the ignore rules (an
    explicitly named directory is searched, as ripgrep does), but the rules of every directory above
    it apply. `should_stop` is polled once per directory.

    Every directory is opened relative to its parent's descriptor without following links (and
    listed from that descriptor), so a directory swapped for a link mid-walk is skipped, never
    entered; only the directories on the current path are held open.
    """
    parts = [p for p in start_rel.split("/") if p] if start_rel else []
    try:
        fd = os.open(root, ROOT_FLAGS)
    except OSError:
        return
    levels: tuple[_Level, ...] = ()
    frames: list[_Frame] = []
    try:
        level = _dir_level(fd, "", _git_exclude_rules(fd))
        levels += (level,) if level is not None else ()
        for depth, part in enumerate(parts, start=1):  # the start directory and the rules above it
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError:
                return  # missing, or a link: nothing to walk
            os.close(fd)
            fd = child
            level = _dir_level(fd, "/".join(parts[:depth]))
            levels += (level,) if level is not None else ()
        start = "/".join(parts)
        subdirs: list[str] = []
        yield from _scan(fd, start, levels, include_dirs, subdirs)
        frames.append(_Frame(fd, start, levels, subdirs))
        fd = -1  # owned by the frame now
        while frames:
            frame = frames[-1]
            if frame.next >= len(frame.subdirs):
                os.close(frames.pop().fd)
                continue
            if should_stop is not None and should_stop():
                return
            name = frame.subdirs[frame.next]
            frame.next += 1
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=frame.fd)
            except OSError:
                continue  # unreadable, vanished or swapped for a link: skip it, as ripgrep does
            rel = f"{frame.rel}/{name}" if frame.rel else name
            level = _dir_level(child, rel)
            child_levels = frame.levels + ((level,) if level is not None else ())
            subdirs = []
            frames.append(_Frame(child, rel, child_levels, subdirs))
            yield from _scan(child, rel, child_levels, include_dirs, subdirs)
    finally:
        if fd >= 0:
            os.close(fd)
        for frame in frames:
            os.close(frame.fd)


def _scan(
    dir_fd: int, dir_rel: str, levels: tuple[_Level, ...], include_dirs: bool, subdirs: list[str]
) -> Iterator[tuple[str, bool]]:
    """Yield the entries of one directory (sorted by name) and collect its subdirectories' names."""
    try:
        with os.scandir(dir_fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return  # unreadable or vanished directory: skip it, as ripgrep does
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
        if not (is_dir or is_file) or _is_ignored(levels, rel, name, is_dir):
            continue
        if is_dir:
            subdirs.append(name)
            if include_dirs:
                yield rel, True
        else:
            yield rel, False


def directories_breadth_first(
    root: str, *, should_stop: Callable[[], bool] | None = None, ignore_files: tuple[str, ...] = IGNORE_FILES
) -> Iterator[str]:
    """Yield every non-ignored directory below the root (not the root itself), the shallow ones first (each
    level sorted by path), by the same rules as `walk_paths` (`ignore_files`: (".gitignore",) for git's, which
    descends where an .ignore or .rgignore file would stop ripgrep). A caller that wants only the first N stops
    early and has read only the levels above them. Each directory is opened from the root one component at a
    time without following links; `should_stop` is polled once per directory."""
    try:
        root_fd = os.open(root, ROOT_FLAGS)
    except OSError:
        return
    try:
        queue: deque[tuple[str, tuple[_Level, ...]]] = deque([("", ())])
        while queue:
            if should_stop is not None and should_stop():
                return
            rel, above = queue.popleft()
            try:
                fd = open_beneath(root_fd, rel, directory=True)
            except (OSError, ValueError):
                continue  # vanished or swapped for a link: skip it, as the walk does
            try:
                level = _dir_level(fd, rel, _git_exclude_rules(fd) if not rel else None, ignore_files)
                levels = above + ((level,) if level is not None else ())
                subdirs: list[str] = []
                for _entry in _scan(fd, rel, levels, False, subdirs):
                    pass  # files: only the subdirectories are wanted
            finally:
                os.close(fd)
            for name in subdirs:
                child = f"{rel}/{name}" if rel else name
                yield child
                queue.append((child, levels))
    finally:
        os.close(root_fd)


def is_ignored(root: str, rel: str, *, is_dir: bool) -> bool:
    """Whether the walk skips `rel` (a file, or a directory: `is_dir`): it, or a directory above it, is ignored
    (or is .git). Reads the ignore files of the directories on the way; blocking. A path that cannot be reached
    without following a link counts as ignored."""
    parts = [p for p in rel.split("/") if p]
    try:
        fd = os.open(root, ROOT_FLAGS)
    except OSError:
        return True
    try:
        level = _dir_level(fd, "", _git_exclude_rules(fd))
        levels: tuple[_Level, ...] = (level,) if level is not None else ()
        for depth, part in enumerate(parts, start=1):
            sub = "/".join(parts[:depth])
            last = depth == len(parts)
            if part == ".git" or _is_ignored(levels, sub, part, is_dir or not last):
                return True
            if last:
                return False
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            level = _dir_level(fd, sub)
            levels += (level,) if level is not None else ()
        return False
    except OSError:
        return True
    finally:
        os.close(fd)
