"""Making renames durable off the answer path: a deferred, coalesced fsync of directories.

An atomic replace (temp file written and fsync-ed, then renamed over the old name) leaves the old
file or the new one whatever happens. The directory's fsync only decides which of the two a power
loss brings back, so nobody has to wait for it: writers call `request(directory)` and return, and a
background thread fsyncs each directory asked for at most `delay_s` later, once for every request
made meanwhile. `flush()` (shutdown, tests) waits until everything asked for so far is durable.

A writer may also name files renamed into place without their own fsync (`request(directory, file)`):
they are fsync-ed first, then the directory. Only for files whose loss to a power cut within that
delay is acceptable (a cache, an advisory tally); a snapshot fsyncs its file before the rename.

The thread lives only while there is work: it starts on a request and ends when nothing is pending,
so an idle server (or a store used once) keeps no thread around.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from live_memory.constants import DIR_FSYNC_DELAY_S
from live_memory.fs.safe_files import fsync_dir, fsync_file

logger = logging.getLogger(__name__)


class DirectorySyncer:
    def __init__(
        self,
        delay_s: float = DIR_FSYNC_DELAY_S,
        fsync: Callable[[str | os.PathLike[str]], None] = fsync_dir,
        fsync_files: Callable[[str | os.PathLike[str]], None] = fsync_file,
    ) -> None:
        self.delay_s = delay_s
        self._fsync = fsync
        self._fsync_file = fsync_files
        self._cond = threading.Condition()
        self._dirty: dict[Path, None] = {}  # ordered set of directories to fsync
        self._files: dict[Path, None] = {}  # files to fsync before their directories
        self._requested = 0  # requests made so far
        self._done = 0  # requests whose directory is fsync-ed (or whose fsync failed and was logged)
        self._urgent = False  # a flush is waiting: skip the rest of the delay
        self._running = False
        self.syncs = 0  # directory fsyncs done: fewer than requests when they were coalesced

    def request(self, directory: str | os.PathLike[str], *files: str | os.PathLike[str]) -> None:
        """Fsync `files`, then `directory`, soon (any thread; never blocks on I/O)."""
        with self._cond:
            self._dirty[Path(directory)] = None
            self._files.update(dict.fromkeys(Path(f) for f in files))
            self._requested += 1
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="live-memory-dir-sync", daemon=True).start()

    def flush(self, timeout_s: float | None = None) -> bool:
        """Block until every directory requested before this call is fsync-ed; False on timeout.
        Blocking: call it from a worker thread."""
        with self._cond:
            target = self._requested
            if self._done >= target:
                return True
            self._urgent = True
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._done >= target, timeout_s)

    @property
    def pending(self) -> bool:
        with self._cond:
            return self._done < self._requested

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._urgent, self.delay_s)  # let more requests join this round
                if not self._dirty:
                    self._running = False
                    return
                directories, files = list(self._dirty), list(self._files)
                self._dirty.clear()
                self._files.clear()
                target = self._requested
                self._urgent = False
            for file in files:
                try:
                    self._fsync_file(file)
                except FileNotFoundError:
                    continue  # replaced or removed since: whatever stands there now was synced by its writer
                except OSError as exc:
                    logger.warning("could not fsync %s (it may not survive a power loss): %s", file, exc)
            for directory in directories:
                try:
                    self._fsync(directory)
                except OSError as exc:  # the files themselves are intact; only their rename may not last
                    logger.warning(
                        "could not fsync %s (recent renames may not survive a power loss): %s", directory, exc
                    )
            with self._cond:
                self.syncs += len(directories)
                self._done = max(self._done, target)
                self._cond.notify_all()
