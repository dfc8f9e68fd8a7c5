"""The OS-level file watcher: out-of-band edits (another editor, git checkout, a build) reach the
memory and the symbol index even when no hook saw them.

Per loaded workspace, one non-recursive watch on each real directory chosen inside it (inotify watches
directories, not files), debounced and batched, feeding the service's sink (which tells the symbol index of
every file and the memory of the files it knows). A recursive watch would follow symbolic links out of the
workspace (a link to `/usr/lib` cost 11,388 watches, a link to `/` killed the watcher), so the directories are
found by the tools' walker instead: no links followed, `.git/`, gitignored directories and the usual
build/vendor directories skipped.

At most `max_directories` watches per workspace, chosen where they pay: the directories of the files the memory
used most recently first (`prefer`), then the others the shallow ones first, up to nine tenths of the cap; the
rest is room for directories created later. Watches live in groups (one native watcher each, at most
WATCH_GROUP_DIRECTORIES directories, so adding one never holds the GIL long), all polled by one thread per
workspace. A directory created later gets watches of its own, for it and what it already holds (a new group,
and the files found there are reported as added), never a walk of the whole tree again; small groups are merged
now and then (their own directories only). Past the cap, new directories are not watched (hooks and the
hash re-validation before each answer still catch edits there) and `status()` says so. Finding directories and
adding watches run in worker threads, never on the loop. A watcher that fails is restarted after a bounded
backoff.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
import anyio.to_thread
from watchfiles import Change, DefaultFilter
from watchfiles._rust_notify import RustNotify

from live_memory import constants as C
from live_memory.core.records import EventKind, FileEvent
from live_memory.fs.walk import directories_breadth_first, is_ignored, walk_paths

logger = logging.getLogger(__name__)

KINDS: dict[Change, EventKind] = {Change.added: "add", Change.modified: "change", Change.deleted: "unlink"}
IGNORED_DIR_NAMES = frozenset(DefaultFilter.ignore_dirs)
_FILTER = DefaultFilter()

# Values of `status()`.
WATCHING_ON = "on"
WATCHING_CAPPED = "on (capped: the most recently used directories first)"
WATCHING_STARTING = "starting"
WATCHING_FAILED = "failed"

# Receives a batch of events for one workspace root.
Sink = Callable[[Path, Sequence[FileEvent]], Awaitable[None]]
# The workspace-relative directories worth watching first (those of the files used most recently).
Prefer = Callable[[], Sequence[str]]
_Polled = set[tuple[int, str]] | Literal["signal", "stop", "timeout"]


def watched_directories(root: Path, max_directories: int, prefer: Iterable[str] = ()) -> tuple[list[str], bool]:
    """The absolute paths of the real directories to watch under `root` (the root first, then `prefer`'s that
    exist, then the others, the shallow ones first), at most `max_directories`; and whether some were left out.
    Blocking. Raises NotADirectoryError when the root is not a directory."""
    if not _is_directory(str(root)):
        raise NotADirectoryError(f"{root} is not a directory")
    chosen = {str(root): None}
    for rel in prefer:
        if len(chosen) >= max_directories:
            return list(chosen), True
        if rel and _wanted(rel) and _is_directory(f"{root}/{rel}") and not is_ignored(str(root), rel, is_dir=True):
            chosen.setdefault(f"{root}/{rel}", None)
    left_out = False
    for rel in directories_breadth_first(str(root), should_stop=lambda: len(chosen) >= max_directories):
        if _wanted(rel):
            chosen.setdefault(f"{root}/{rel}", None)
    if len(chosen) >= max_directories:
        left_out = True
    return list(chosen)[:max_directories], left_out


def _wanted(rel: str) -> bool:
    return not IGNORED_DIR_NAMES.intersection(rel.split("/"))


def _is_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


@dataclass
class _Group:
    """One native watcher over some of a workspace's directories."""

    directories: list[str]
    notify: RustNotify


@dataclass
class _Watch:
    root: Path
    prefer: Prefer
    stop: threading.Event = field(default_factory=threading.Event)  # read by the notify thread
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    status: str = WATCHING_STARTING
    directories: int = 0
    restarts: int = 0


class WorkspaceWatcher:
    """One watch task per root. Tasks run in the task group given to `attach()` (the service's
    lifespan owns it); before that (unit tests) they are held here."""

    def __init__(
        self,
        *,
        debounce_ms: int,
        max_directories: int = C.WATCH_MAX_DIRECTORIES,
        restart_delay_s: float = C.WATCH_RESTART_DELAY_S,
        restart_max_delay_s: float = C.WATCH_RESTART_MAX_DELAY_S,
        poll_ms: int = C.WATCH_POLL_MS,
        group_directories: int = C.WATCH_GROUP_DIRECTORIES,
    ) -> None:
        self.debounce_ms = debounce_ms
        self.max_directories = max_directories
        self.restart_delay_s = restart_delay_s
        self.restart_max_delay_s = restart_max_delay_s
        self.poll_ms = poll_ms
        self.group_directories = group_directories
        self._watches: dict[Path, _Watch] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._held: set[asyncio.Task[None]] = set()
        # The notify calls wait in threads of their own pool, so they never hold the shared one.
        self._limiter = anyio.CapacityLimiter(C.MAX_LOADED_WORKSPACES + 4)

    def attach(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group

    def watching(self, root: Path) -> bool:
        return root in self._watches

    def status(self, root: Path) -> str:
        """ "on", "on (capped: ...)", "starting" or "failed" (being restarted); "" when not watched."""
        entry = self._watches.get(root)
        return entry.status if entry is not None else ""

    def statuses(self) -> dict[str, str]:
        """Each watched root's status, for /stats."""
        return {str(root): entry.status for root, entry in self._watches.items()}

    def directories(self, root: Path) -> int:
        entry = self._watches.get(root)
        return entry.directories if entry is not None else 0

    def watch(self, root: Path, sink: Sink, prefer: Prefer = lambda: ()) -> None:
        if root in self._watches:
            return
        entry = self._watches[root] = _Watch(root, prefer)

        async def guarded() -> None:
            with entry.scope:
                await self._supervise(entry, sink)

        if self._group is not None:
            self._group.start_soon(guarded, name=f"live-memory watcher {root}")
        else:
            task = asyncio.get_running_loop().create_task(guarded(), name=f"live-memory watcher {root}")
            self._held.add(task)
            task.add_done_callback(self._held.discard)

    async def _supervise(self, entry: _Watch, sink: Sink) -> None:
        """Run the watch; restart it after a failure, waiting longer each time (bounded)."""
        delay = self.restart_delay_s
        try:
            while not entry.stop.is_set():
                try:
                    await self._run(entry, sink)
                    delay = self.restart_delay_s  # a clean return is a rescan, not a failure
                except Exception as exc:  # a watcher failure must not take the workspace down
                    entry.status = WATCHING_FAILED
                    entry.restarts += 1
                    logger.warning("file watcher for %s failed (%s); restarting in %.0f s", entry.root, exc, delay)
                    await anyio.sleep(delay)
                    delay = min(delay * 2, self.restart_max_delay_s)
        finally:
            entry.stop.set()  # also on cancellation: the notify threads return within one step

    async def _run(self, entry: _Watch, sink: Sink) -> None:
        """One watch: choose the directories, add the watches, forward events until stopped; a directory
        created meanwhile gets watches of its own."""
        root = entry.root
        room = max(1, self.max_directories * 9 // 10)  # a tenth left for the directories created later
        dirs, capped = await anyio.to_thread.run_sync(watched_directories, root, room, entry.prefer())
        groups: list[_Group] = []
        try:
            for start in range(0, len(dirs), self.group_directories):
                groups.append(await self._open(dirs[start : start + self.group_directories]))
            watched = set(dirs)
            entry.directories = len(watched)
            entry.status = WATCHING_CAPPED if capped else WATCHING_ON
            prefix = str(root).rstrip("/") + "/"
            while not entry.stop.is_set():
                raw = await anyio.to_thread.run_sync(
                    _poll,
                    groups,
                    self.debounce_ms,
                    self.poll_ms,
                    entry.stop,
                    abandon_on_cancel=True,  # `stop` is set on the way out: the call returns within a step
                    limiter=self._limiter,
                )
                if isinstance(raw, str):  # "timeout", "stop" or "signal"
                    continue
                events, added, gone = await anyio.to_thread.run_sync(_sort_changes, raw, prefix, watched)
                watched.difference_update(gone)  # the kernel dropped their watches itself
                if added:
                    events += await self._add_directories(entry, groups, watched, added)
                entry.directories = len(watched)
                if events:
                    await sink(root, events)
        finally:
            for group in groups:  # the threads, if abandoned, let go within a step
                group.notify.close()

    async def _add_directories(
        self, entry: _Watch, groups: list[_Group], watched: set[str], added: list[str]
    ) -> list[FileEvent]:
        """Watch new directories and those inside them (within the cap); the files already in them are reported
        as added (they were written before the watch existed)."""
        room = self.max_directories - len(watched)
        found, files = await anyio.to_thread.run_sync(_inside, entry.root, added, room)
        if len(found) < len(added):
            entry.status = WATCHING_CAPPED
        if found:
            groups.append(await self._open(found))
            watched.update(found)
            if len(groups) > C.WATCH_MAX_GROUPS:
                groups[:] = await self._merged(groups)
        return [FileEvent(path, "add") for path in files]

    async def _open(self, directories: list[str]) -> _Group:
        return _Group(directories, await anyio.to_thread.run_sync(_open_notify, directories))

    async def _merged(self, groups: list[_Group]) -> list[_Group]:
        """The small groups (those of the directories created later) as one: only their directories are added
        again, those still there."""
        small = [g for g in groups if len(g.directories) < self.group_directories // 4]
        if len(small) < 2:
            return groups
        kept = [g for g in groups if g not in small]
        directories = await anyio.to_thread.run_sync(
            lambda: [d for g in small for d in g.directories if _is_directory(d)]
        )
        merged = await self._open(directories)
        for group in small:
            group.notify.close()
        return [*kept, merged]

    async def unwatch(self, root: Path) -> None:
        entry = self._watches.pop(root, None)
        if entry is None:
            return
        entry.stop.set()
        entry.scope.cancel()

    async def aclose(self) -> None:
        for root in list(self._watches):
            await self.unwatch(root)
        if self._held:
            await asyncio.gather(*self._held, return_exceptions=True)


def _open_notify(dirs: list[str]) -> RustNotify:
    """Non-recursive watches on each directory (blocking: one inotify watch per directory)."""
    return RustNotify(dirs, False, False, 300, False, True)


def _poll(groups: Sequence[_Group], debounce_ms: int, timeout_ms: int, stop: threading.Event) -> _Polled:
    """Wait for events on any group: one group waits up to `timeout_ms`; several are asked in turn, a step each,
    so an event waits at most a step per other group (each native watcher keeps what it saw until asked)."""
    if len(groups) == 1:
        return groups[0].notify.watch(debounce_ms, C.WATCH_STEP_MS, timeout_ms, stop)
    found: set[tuple[int, str]] = set()
    for group in groups:
        raw = group.notify.watch(debounce_ms, C.WATCH_STEP_MS, C.WATCH_STEP_MS, stop)
        if raw == "stop":
            return "stop"
        if isinstance(raw, set):
            found |= raw
    return found or "timeout"


def _sort_changes(
    raw: set[tuple[int, str]], prefix: str, watched: set[str]
) -> tuple[list[FileEvent], list[str], list[str]]:
    """File events under the root; the directories that appeared without a watch yet; the watched ones that
    went. Blocking (it checks whether added paths are directories)."""
    events: list[FileEvent] = []
    added: list[str] = []
    gone: list[str] = []
    for code, path in sorted(raw, key=lambda c: c[1]):
        change = Change(code)
        if not path.startswith(prefix):
            continue
        if change == Change.deleted and path in watched:
            gone.append(path)
            continue
        if not _FILTER(change, path):
            continue
        if change == Change.added and path not in watched and _is_directory(path):
            added.append(path)
            continue
        events.append(FileEvent(path[len(prefix) :], KINDS[change]))
    return events, added, gone


def _inside(root: Path, added: list[str], room: int) -> tuple[list[str], list[str]]:
    """The new directories worth watching (not ignored) with those inside them, at most `room`; and the files in
    them, workspace-relative. Blocking: walks the new directories only."""
    prefix = f"{root}/"
    found: list[str] = []
    files: list[str] = []
    for path in added:
        rel = path[len(prefix) :]
        if not _wanted(rel) or is_ignored(str(root), rel, is_dir=True):
            continue
        if len(found) >= room:
            break
        found.append(path)
        for inner, is_dir in walk_paths(str(root), rel, include_dirs=True):
            if not is_dir:
                files.append(inner)
            elif _wanted(inner) and len(found) < room:
                found.append(f"{prefix}{inner}")
    return found, files
