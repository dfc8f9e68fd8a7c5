"""The OS-level file watcher: out-of-band edits (another editor, git checkout, a build) reach the
memory even when no hook saw them.

One recursive `watchfiles` watch per loaded workspace (inotify watches directories, not files),
debounced and batched, feeding the same ingestion path as `POST /notify`. Only files the memory
knows matter, so everything else is dropped before it reaches the window; `.git/` internals and
the usual build/vendor directories are filtered by watchfiles' default filter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
import anyio.abc
from watchfiles import Change, DefaultFilter, awatch

from live_memory.records import EventKind, FileEvent

logger = logging.getLogger(__name__)

KINDS: dict[Change, EventKind] = {Change.added: "add", Change.modified: "change", Change.deleted: "unlink"}

# Receives a batch of events for one workspace root.
Sink = Callable[[Path, Sequence[FileEvent]], Awaitable[None]]
# Whether a workspace-relative path is known to the memory (only those can go stale).
Known = Callable[[str], bool]


class WorkspaceWatcher:
    """One watch task per root. Tasks run in the task group given to `attach()` (the service's
    lifespan owns it); before that (unit tests) they are held here."""

    def __init__(self, *, debounce_ms: int) -> None:
        self.debounce_ms = debounce_ms
        self._scopes: dict[Path, tuple[anyio.CancelScope, asyncio.Event]] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._held: set[asyncio.Task[None]] = set()

    def attach(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group

    def watching(self, root: Path) -> bool:
        return root in self._scopes

    def watch(self, root: Path, known: Known, sink: Sink) -> None:
        if root in self._scopes:
            return
        scope, stop = anyio.CancelScope(), asyncio.Event()
        self._scopes[root] = (scope, stop)

        async def guarded() -> None:
            with scope:
                await self._run(root, known, sink, stop)

        if self._group is not None:
            self._group.start_soon(guarded, name=f"live-memory watcher {root}")
        else:
            task = asyncio.get_running_loop().create_task(guarded(), name=f"live-memory watcher {root}")
            self._held.add(task)
            task.add_done_callback(self._held.discard)

    async def _run(self, root: Path, known: Known, sink: Sink, stop: asyncio.Event) -> None:
        prefix = str(root).rstrip("/") + "/"
        try:
            watch = awatch(
                root,
                watch_filter=DefaultFilter(),
                debounce=self.debounce_ms,
                step=50,
                stop_event=stop,
                recursive=True,
                yield_on_timeout=False,
            )
            async for changes in watch:
                events = []
                for change, raw in changes:
                    if not raw.startswith(prefix):
                        continue
                    rel = raw[len(prefix) :]
                    if known(rel):
                        events.append(FileEvent(rel, KINDS[change]))
                if events:
                    await sink(root, events)
        except asyncio.CancelledError:
            raise
        except Exception:  # a watcher failure must not take the workspace down; hooks still feed it
            logger.exception("file watcher for %s stopped", root)

    async def unwatch(self, root: Path) -> None:
        entry = self._scopes.pop(root, None)
        if entry is None:
            return
        scope, stop = entry
        stop.set()
        scope.cancel()

    async def aclose(self) -> None:
        for root in list(self._scopes):
            await self.unwatch(root)
        if self._held:
            await asyncio.gather(*self._held, return_exceptions=True)
