"""The OS-level file watcher: out-of-band edits (another editor, git checkout, a build) reach the
memory even when no hook saw them.

One recursive `watchfiles` watch per loaded workspace (inotify watches directories, not files),
debounced and batched, feeding the same ingestion path as `POST /notify`. Only files the memory
knows matter, so everything else is dropped before it reaches the window; `.git/` internals and
the usual build/vendor directories are filtered by watchfiles' default filter.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from watchfiles import Change, DefaultFilter, awatch

from live_memory.ingest import EventKind, FileEvent

logger = logging.getLogger(__name__)

KINDS: dict[Change, EventKind] = {Change.added: "add", Change.modified: "change", Change.deleted: "unlink"}

# Receives a batch of events for one workspace root.
Sink = Callable[[Path, Sequence[FileEvent]], Awaitable[None]]
# Whether a workspace-relative path is known to the memory (only those can go stale).
Known = Callable[[str], bool]


class WorkspaceWatcher:
    def __init__(self, *, debounce_ms: int) -> None:
        self.debounce_ms = debounce_ms
        self._tasks: dict[Path, tuple[asyncio.Task[None], asyncio.Event]] = {}

    def watching(self, root: Path) -> bool:
        return root in self._tasks

    def watch(self, root: Path, known: Known, sink: Sink) -> None:
        if root in self._tasks:
            return
        stop = asyncio.Event()
        task = asyncio.create_task(self._run(root, known, sink, stop), name=f"live-memory watcher {root}")
        self._tasks[root] = (task, stop)

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
        entry = self._tasks.pop(root, None)
        if entry is None:
            return
        task, stop = entry
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def aclose(self) -> None:
        for root in list(self._tasks):
            await self.unwatch(root)
