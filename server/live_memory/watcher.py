"""The OS-level file watcher: out-of-band edits (another editor, git checkout, a build) reach the
memory even when no hook saw them.

Per loaded workspace, one non-recursive watch on each real directory inside it (inotify watches
directories, not files), debounced and batched, feeding the same ingestion path as `POST /notify`.
A recursive watch would follow symbolic links out of the workspace (a link to `/usr/lib` cost
11,388 watches, a link to `/` killed the watcher), so the directories are found by the tools'
walker instead: no links followed, `.git/`, gitignored directories and the usual build/vendor
directories skipped. Finding them and adding the watches run in worker threads, never on the loop.
Past `max_directories` the workspace is not watched at all (hooks and the hash re-validation before
each answer still catch edits) and `status()` says so. A watcher that fails is restarted after a
bounded backoff. Only files the memory knows matter: everything else is dropped here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
from watchfiles import Change, DefaultFilter
from watchfiles._rust_notify import RustNotify

from live_memory import constants as C
from live_memory.errors import TooManyDirectories
from live_memory.records import EventKind, FileEvent
from live_memory.walk import walk_paths

logger = logging.getLogger(__name__)

KINDS: dict[Change, EventKind] = {Change.added: "add", Change.modified: "change", Change.deleted: "unlink"}
IGNORED_DIR_NAMES = frozenset(DefaultFilter.ignore_dirs)
_FILTER = DefaultFilter()

# Values of `status()`.
WATCHING_ON = "on"
WATCHING_STARTING = "starting"
WATCHING_TOO_MANY = "off (too many directories)"
WATCHING_FAILED = "failed"

# Receives a batch of events for one workspace root.
Sink = Callable[[Path, Sequence[FileEvent]], Awaitable[None]]
# Whether a workspace-relative path is known to the memory (only those can go stale).
Known = Callable[[str], bool]


def watched_directories(root: Path, max_directories: int) -> list[str]:
    """The absolute paths of the real directories to watch under `root` (the root first). Blocking.
    Raises TooManyDirectories past `max_directories`, OSError when the root is not a directory."""
    if not _is_directory(str(root)):
        raise NotADirectoryError(f"{root} is not a directory")
    found = [str(root)]

    def too_many() -> bool:
        return len(found) > max_directories

    for rel, is_dir in walk_paths(str(root), include_dirs=True, should_stop=too_many):
        if is_dir and not IGNORED_DIR_NAMES.intersection(rel.split("/")):
            found.append(f"{root}/{rel}")
    if too_many():
        raise TooManyDirectories(f"more than {max_directories} directories")
    return found


def _is_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


@dataclass
class _Watch:
    root: Path
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
    ) -> None:
        self.debounce_ms = debounce_ms
        self.max_directories = max_directories
        self.restart_delay_s = restart_delay_s
        self.restart_max_delay_s = restart_max_delay_s
        self.poll_ms = poll_ms
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
        """ "on", "starting", "off (too many directories)" or "failed" (being restarted); "" when not watched."""
        entry = self._watches.get(root)
        return entry.status if entry is not None else ""

    def statuses(self) -> dict[str, str]:
        """Each watched root's status, for /stats."""
        return {str(root): entry.status for root, entry in self._watches.items()}

    def directories(self, root: Path) -> int:
        entry = self._watches.get(root)
        return entry.directories if entry is not None else 0

    def watch(self, root: Path, known: Known, sink: Sink) -> None:
        if root in self._watches:
            return
        entry = self._watches[root] = _Watch(root)

        async def guarded() -> None:
            with entry.scope:
                await self._supervise(entry, known, sink)

        if self._group is not None:
            self._group.start_soon(guarded, name=f"live-memory watcher {root}")
        else:
            task = asyncio.get_running_loop().create_task(guarded(), name=f"live-memory watcher {root}")
            self._held.add(task)
            task.add_done_callback(self._held.discard)

    async def _supervise(self, entry: _Watch, known: Known, sink: Sink) -> None:
        """Run the watch; restart it after a failure, waiting longer each time (bounded)."""
        delay = self.restart_delay_s
        try:
            while not entry.stop.is_set():
                try:
                    await self._run(entry, known, sink)
                    delay = self.restart_delay_s  # a clean return is a rescan, not a failure
                except TooManyDirectories as exc:
                    entry.status = WATCHING_TOO_MANY
                    logger.warning(
                        "not watching %s for outside edits (%s; option watch_max_directories): "
                        "hooks and the check before each answer still catch them",
                        entry.root,
                        exc,
                    )
                    await anyio.sleep_forever()
                except Exception as exc:  # a watcher failure must not take the workspace down
                    entry.status = WATCHING_FAILED
                    entry.restarts += 1
                    logger.warning("file watcher for %s failed (%s); restarting in %.0f s", entry.root, exc, delay)
                    await anyio.sleep(delay)
                    delay = min(delay * 2, self.restart_max_delay_s)
        finally:
            entry.stop.set()  # also on cancellation: the notify thread returns within one step

    async def _run(self, entry: _Watch, known: Known, sink: Sink) -> None:
        """One watch: find the directories, add the watches, forward events until stopped. Returns
        (to be run again) when a new directory appears, so it gets a watch too."""
        root = entry.root
        dirs = await anyio.to_thread.run_sync(watched_directories, root, self.max_directories)
        notify = await anyio.to_thread.run_sync(_open_notify, dirs)
        watched = set(dirs)
        entry.directories = len(dirs)
        entry.status = WATCHING_ON
        prefix = str(root).rstrip("/") + "/"
        try:
            while not entry.stop.is_set():
                raw = await anyio.to_thread.run_sync(
                    notify.watch,
                    self.debounce_ms,
                    C.WATCH_STEP_MS,
                    self.poll_ms,
                    entry.stop,
                    abandon_on_cancel=True,  # `stop` is set on the way out: the call returns within a step
                    limiter=self._limiter,
                )
                if isinstance(raw, str):  # "timeout", "stop" or "signal"
                    continue
                events, new_dirs = await anyio.to_thread.run_sync(_sort_changes, raw, prefix, watched)
                events = [e for e in events if known(e.path)]
                if events:
                    await sink(root, events)
                if new_dirs:
                    return
        finally:
            del notify  # dropping it removes its watches (the thread, if abandoned, lets go within a step)

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


def _sort_changes(raw: set[tuple[int, str]], prefix: str, watched: set[str]) -> tuple[list[FileEvent], bool]:
    """File events under the root, and whether a directory appeared that has no watch yet. Blocking
    (it checks whether added paths are directories)."""
    events: list[FileEvent] = []
    new_dirs = False
    for code, path in sorted(raw, key=lambda c: c[1]):
        change = Change(code)
        if not path.startswith(prefix) or not _FILTER(change, path):
            continue
        if change == Change.added and path not in watched and _is_directory(path):
            new_dirs = True
            continue
        events.append(FileEvent(path[len(prefix) :], KINDS[change]))
    return events, new_dirs
