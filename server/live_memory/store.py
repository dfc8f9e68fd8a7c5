"""Durable per-workspace snapshots: versioned JSON written atomically, validated on load.

Write: temp file in the same directory (0600) -> fsync -> os.replace, always in a worker thread,
before the answer returns; the directory's fsync follows later, coalesced (`dir_sync`). A crash or
kill at any moment leaves either the old or the new snapshot, never a torn one (a power loss before
the directory's fsync brings back the previous one). The `.meta` file beside it is a listing cache,
written atomically and fsync-ed with the directory, later: a power loss before that may leave it
unreadable, and listings skip it until the next write.

Load: a snapshot that cannot be parsed or has an unknown schema is moved aside as
`<name>.corrupt-<timestamp>` and the workspace starts fresh. Raw file bytes are never part of a
snapshot (the window's own JSON excludes them).
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_memory.dir_sync import DirectorySyncer
from live_memory.safe_files import (
    atomic_write,
    ensure_private_dir,
    fsync_dir,
    read_prefix,
    read_text_bounded,
    regular_file,
    sha256_fd,
)
from live_memory.snapshot import SCHEMA_VERSION, SnapshotIn, SnapshotMeta, encode_document, parse_meta, parse_snapshot

logger = logging.getLogger(__name__)

SNAPSHOT_DIR = "workspaces"
META_MAX_BYTES = 64 * 1024


class SnapshotNotSaved(OSError):
    """A snapshot could not be written; `reason` says why in words an operator can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def describe_write_error(exc: OSError, data_dir: Path) -> str:
    """Why a write into the data dir failed, precisely (the errno, not a traceback)."""
    if exc.errno == errno.ENOSPC:
        return f"the data dir {data_dir} is full (no space left on the device)"
    if exc.errno == errno.EDQUOT:
        return f"the data dir {data_dir} is over its disk quota"
    if exc.errno == errno.EROFS:
        return f"the data dir {data_dir} is on a read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"the data dir {data_dir} is not writable (permission denied)"
    return f"writing into the data dir {data_dir} failed ({exc.strerror or exc})"


class SnapshotStore:
    def __init__(
        self, data_dir: Path, clock: Callable[[], float] = time.time, syncer: DirectorySyncer | None = None
    ) -> None:
        self.dir = data_dir / SNAPSHOT_DIR
        self.clock = clock
        self.syncer = syncer or DirectorySyncer()
        self._locks: dict[str, asyncio.Lock] = {}
        self._written: dict[str, int] = {}  # workspace id -> generation last written
        # workspace id -> why its latest state is not on disk (cleared by the next successful write)
        self.failures: dict[str, str] = {}

    def failing(self) -> str | None:
        """Why some workspace's latest state is not on disk yet; None when every write succeeded."""
        return next(iter(self.failures.values()), None)

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
        meta: Callable[[], SnapshotMeta] | None = None,
        also: Callable[[], None] | None = None,
    ) -> bool:
        """Write the current state unless a newer generation is on disk or the workspace was wiped.

        `snapshot()` runs under the lock, on the event loop, so the payload is one consistent view;
        only serialisation and I/O run in the worker thread. `also` (blocking, never raising) runs in
        the same worker-thread hop, after the snapshot (or alone when there is nothing to write).
        Raises SnapshotNotSaved when the write fails: the state stays in memory, and the next save
        (or the flush at shutdown) tries again.
        """
        async with self._lock(workspace_id):
            generation, payload = snapshot() if still_wanted() else (-1, {})
            if generation < 0 or self._written.get(workspace_id, -1) >= generation:
                if also is not None:
                    await asyncio.to_thread(also)
                return False
            summary = meta() if meta is not None else None
            try:
                await asyncio.to_thread(self._write_then, also, workspace_id, payload, summary)
            except OSError as exc:
                reason = describe_write_error(exc, self.dir.parent)
                if self.failures.get(workspace_id) != reason:  # once per cause, not once per question
                    logger.error(
                        "snapshot of workspace %s not saved: %s; kept in memory and retried on the next "
                        "change and at shutdown",
                        workspace_id,
                        reason,
                    )
                self.failures[workspace_id] = reason
                raise SnapshotNotSaved(reason) from None
            if self.failures.pop(workspace_id, None) is not None:
                logger.warning("snapshot of workspace %s saved again", workspace_id)
            self._written[workspace_id] = generation
            return True

    def meta_path_for(self, workspace_id: str) -> Path:
        return self.dir / f"{workspace_id}.meta"

    def exists(self, workspace_id: str) -> bool:
        return self.path_for(workspace_id).exists()

    def _write_then(
        self, also: Callable[[], None] | None, workspace_id: str, payload: Mapping[str, Any], meta: SnapshotMeta | None
    ) -> None:
        try:
            self.write_now(workspace_id, payload, meta)
        finally:
            if also is not None:
                also()

    def write_now(self, workspace_id: str, payload: Mapping[str, Any], meta: SnapshotMeta | None = None) -> None:
        """Blocking atomic write (worker threads only); the small metadata file follows the snapshot."""
        ensure_private_dir(self.dir)
        saved_at = self.clock()
        data = encode_document({"schema": SCHEMA_VERSION, "saved_at": saved_at, **payload})
        atomic_write(self.path_for(workspace_id), data.encode("utf-8"), mode=0o600, sync_dir=False)
        if meta is None:
            self.syncer.request(self.dir)
            return
        text = json.dumps({**meta.to_json(), "saved_at": saved_at})
        atomic_write(self.meta_path_for(workspace_id), text.encode("utf-8"), sync_file=False, sync_dir=False)
        self.syncer.request(self.dir, self.meta_path_for(workspace_id))

    def list_meta(self) -> list[SnapshotMeta]:
        """The metadata of every stored snapshot (blocking, but small files; unreadable ones skipped)."""
        found = []
        for path in sorted(self.dir.glob("*.meta")) if self.dir.is_dir() else []:
            try:
                found.append(parse_meta(json.loads(read_text_bounded(path, META_MAX_BYTES))))
            except (OSError, ValueError):
                continue
        return found

    async def delete(self, workspace_id: str) -> bool:
        """Remove the snapshot; under the lock, so a save already running finishes first."""
        async with self._lock(workspace_id):
            self._written.pop(workspace_id, None)
            self.failures.pop(workspace_id, None)
            return await asyncio.to_thread(self._unlink, workspace_id)

    def _unlink(self, workspace_id: str) -> bool:
        self.meta_path_for(workspace_id).unlink(missing_ok=True)
        try:
            self.path_for(workspace_id).unlink()
        except FileNotFoundError:
            return False
        fsync_dir(self.dir)
        return True

    # --- loading -------------------------------------------------------------------------------
    def load(self, workspace_id: str) -> SnapshotIn | None:
        """The stored snapshot, validated against the schema; None when absent or quarantined."""
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
            if data["schema"] > SCHEMA_VERSION:
                raise ValueError(f"snapshot schema {data['schema']} is newer than this server understands")
            return parse_snapshot(data)
        except ValueError as exc:
            self._quarantine(path, str(exc).splitlines()[0])
            return None

    def _quarantine(self, path: Path, why: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.clock()))
        target = path.with_name(f"{path.name}.corrupt-{stamp}")
        try:
            os.replace(path, target)
        except OSError as exc:
            logger.error("snapshot %s is corrupt (%s) and could not be moved aside: %s", path, why, exc)
            return
        logger.warning("snapshot %s is corrupt (%s); moved aside to %s, starting fresh", path, why, target.name)


@dataclass(frozen=True)
class DiskFile:
    sha256: str | None  # None: missing, unreadable, or not a regular file
    text: str | None = None  # the content, for files asked to be read that are small UTF-8 text


def read_for_revalidation(
    root: Path, paths: Iterable[str], read_text: Iterable[str] = (), max_text_bytes: int = 0
) -> dict[str, DiskFile]:
    """Current SHA-256 of each workspace-relative path (streamed, regular files only: a FIFO or device
    is never opened for reading), and the text of those in `read_text` that fit `max_text_bytes`.
    Blocking (worker threads only)."""
    wanted = set(read_text)
    found: dict[str, DiskFile] = {}
    for rel in paths:
        try:
            with regular_file(os.path.realpath(root / rel)) as fd:
                size = os.fstat(fd).st_size
                if rel in wanted and size <= max_text_bytes:
                    data = read_prefix(fd, size + 1)
                    found[rel] = DiskFile(hashlib.sha256(data).hexdigest(), _text(data))
                    continue
                digest = sha256_fd(fd)
        except OSError:
            digest = None
        found[rel] = DiskFile(digest.sha256 if digest is not None else None)
    return found


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def disk_hashes(root: Path, paths: Iterable[str]) -> dict[str, str | None]:
    """Current SHA-256 of each workspace-relative path (None: missing, unreadable, not regular). Blocking."""
    return {rel: disk.sha256 for rel, disk in read_for_revalidation(root, paths).items()}
