"""Durable per-workspace snapshots: versioned JSON written atomically, validated on load.

Write: temp file in the same directory (0600) -> fsync -> os.replace -> fsync of the directory,
always in a worker thread. A crash or kill at any moment leaves either the old or the new
snapshot, never a torn one. Load: a snapshot that cannot be parsed or has an unknown schema is
moved aside as `<name>.corrupt-<timestamp>` and the workspace starts fresh. Raw file bytes are
never part of a snapshot (the window's own JSON excludes them).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from live_memory.safe_files import atomic_write, ensure_private_dir, sha256_file

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
SNAPSHOT_DIR = "workspaces"

# schema version -> function upgrading a payload to the next version
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


class SnapshotStore:
    def __init__(self, data_dir: Path, clock: Callable[[], float] = time.time) -> None:
        self.dir = data_dir / SNAPSHOT_DIR
        self.clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._written: dict[str, int] = {}  # workspace id -> generation last written

    def path_for(self, workspace_id: str) -> Path:
        return self.dir / f"{workspace_id}.json"

    # --- writing -------------------------------------------------------------------------------
    def _lock(self, workspace_id: str) -> asyncio.Lock:
        return self._locks.setdefault(workspace_id, asyncio.Lock())

    async def save(
        self,
        workspace_id: str,
        snapshot: Callable[[], tuple[int, Mapping[str, Any]]],
        still_wanted: Callable[[], bool] = lambda: True,
    ) -> bool:
        """Write the current state unless a newer generation is on disk or the workspace was wiped.

        `snapshot()` runs under the lock, on the event loop, so the payload is one consistent view;
        only serialisation and I/O run in the worker thread.
        """
        async with self._lock(workspace_id):
            if not still_wanted():
                return False
            generation, payload = snapshot()
            if self._written.get(workspace_id, -1) >= generation:
                return False
            await asyncio.to_thread(self.write_now, workspace_id, payload)
            self._written[workspace_id] = generation
            return True

    def write_now(self, workspace_id: str, payload: Mapping[str, Any]) -> None:
        """Blocking atomic write (worker threads only)."""
        ensure_private_dir(self.dir)
        data = json.dumps({"schema": SCHEMA_VERSION, "saved_at": self.clock(), **payload}, separators=(",", ":"))
        atomic_write(self.path_for(workspace_id), data.encode("utf-8"), mode=0o600)

    async def delete(self, workspace_id: str) -> bool:
        """Remove the snapshot; under the lock, so a save already running finishes first."""
        async with self._lock(workspace_id):
            self._written.pop(workspace_id, None)
            return await asyncio.to_thread(self._unlink, workspace_id)

    def _unlink(self, workspace_id: str) -> bool:
        try:
            self.path_for(workspace_id).unlink()
        except FileNotFoundError:
            return False
        _fsync_dir(self.dir)
        return True

    # --- loading -------------------------------------------------------------------------------
    def load(self, workspace_id: str) -> dict[str, Any] | None:
        """The stored payload (migrated to the current schema), None when absent or quarantined."""
        path = self.path_for(workspace_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._quarantine(path, f"unreadable: {exc}")
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("schema"), int):
                raise ValueError("not a Live Memory snapshot")
            data = _migrate(data)
        except ValueError as exc:
            self._quarantine(path, str(exc))
            return None
        return data

    def _quarantine(self, path: Path, why: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.clock()))
        target = path.with_name(f"{path.name}.corrupt-{stamp}")
        try:
            os.replace(path, target)
        except OSError as exc:
            logger.error("snapshot %s is corrupt (%s) and could not be moved aside: %s", path, why, exc)
            return
        logger.warning("snapshot %s is corrupt (%s); moved aside to %s, starting fresh", path, why, target.name)


def disk_hashes(root: Path, paths: Iterable[str]) -> dict[str, str | None]:
    """Current SHA-256 of each workspace-relative path (None: missing, unreadable, or not a regular
    file: a FIFO or device is never opened for reading). Streamed: memory stays flat. Blocking."""
    hashes: dict[str, str | None] = {}
    for rel in paths:
        try:
            digest = sha256_file(root / rel, follow_symlinks=True)
        except OSError:
            digest = None
        hashes[rel] = digest.sha256 if digest is not None else None
    return hashes


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = data["schema"]
    if version > SCHEMA_VERSION:
        raise ValueError(f"snapshot schema {version} is newer than this server understands ({SCHEMA_VERSION})")
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ValueError(f"no migration from snapshot schema {version}")
        data = step(data)
        version = data["schema"] = version + 1
    return data


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
