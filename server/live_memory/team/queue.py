"""The facts waiting to reach the team store, on local disk: they survive a restart, a kill and any outage.

One JSON object per line in `<data dir>/team-queue.jsonl` (0600). An append is written and fsync-ed before
it returns (a kill right after loses nothing); what the store took is removed by rewriting the file
atomically. A line torn by a kill is skipped when the file is read back. Blocking: call it off the event
loop.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from live_memory.fs.safe_files import atomic_write, ensure_private_dir

logger = logging.getLogger(__name__)

QUEUE_FILE = "team-queue.jsonl"


class DiskQueue:
    def __init__(self, data_dir: Path, max_items: int) -> None:
        self.path = data_dir / QUEUE_FILE
        self.max_items = max_items
        self._lock = threading.Lock()
        self._items: list[dict[str, Any]] = _read(self.path)
        self.dropped = 0  # pushed out by the cap since the start (the oldest first)

    def __len__(self) -> int:
        return len(self._items)

    def append(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Add `items` at the end, durably; past the cap the oldest go (the file is rewritten then)."""
        if not items:
            return
        with self._lock:
            self._items.extend(dict(item) for item in items)
            excess = len(self._items) - self.max_items
            if excess > 0:
                del self._items[:excess]
                self.dropped += excess
                self._rewrite()
                return
            ensure_private_dir(self.path.parent)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, b"".join(_line(item) for item in items))
                os.fsync(fd)
            finally:
                os.close(fd)

    def head(self, count: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(item) for item in self._items[:count]]

    def remove_head(self, count: int) -> None:
        """The first `count` items reached the store."""
        with self._lock:
            del self._items[:count]
            self._rewrite()

    def _rewrite(self) -> None:
        ensure_private_dir(self.path.parent)
        atomic_write(self.path, b"".join(_line(item) for item in self._items), mode=0o600)


def _line(item: Mapping[str, Any]) -> bytes:
    return json.dumps(item, separators=(",", ":"), sort_keys=True).encode("utf-8") + b"\n"


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        logger.warning("the team queue %s could not be read (%s); starting an empty one", path, exc)
        return []
    items: list[dict[str, Any]] = []
    for line in raw.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # torn by a kill mid-append: the lines before it are whole
        if isinstance(item, dict):
            items.append(item)
    return items
