"""Durable per-workspace snapshots: versioned JSON written atomically, validated on load.

Two ways to write, both in a worker thread:
- `save(journal=True)` (the answer path): the document is appended to the workspace's journal,
  `<id>.<token>.journal` (0600; one `write`, no fsync, no rename: a page-cache copy). After a journal's
  first record, a record's history holds only the turns added since the record before (an answer
  appends its exchange, not the whole conversation; such a delta names a schema a server without deltas
  refuses, so an older version loads the last whole record). Once it returns, a kill of the process at any
  moment keeps that state: the next load replays the journal to its last whole record. The snapshot
  itself follows from a plain `save`, written behind by the service, coalesced.
- a plain `save` (write-behind, unloads, shutdown): temp file in the same directory (0600) -> fsync ->
  os.replace; the directory's fsync follows later, coalesced (`dir_sync`). The snapshot names the
  journal it supersedes, which is then removed (a kill in between leaves a journal the loader knows
  to ignore). A crash or kill at any moment leaves either the old or the new snapshot, never a torn
  one (a power loss before the directory's fsync brings back the previous one).
A power loss takes what the page cache held: journaled records that no snapshot has superseded yet
(the write-behind delay, as for the directory's fsync) may be lost, torn records are skipped, and the
snapshot before them loads. The `.meta` file beside it is a listing cache, written atomically and
fsync-ed with the directory, later: a power loss before that may leave it unreadable, and listings skip
it until the next write.

Load: a snapshot that cannot be parsed or has an unknown schema is moved aside as
`<name>.corrupt-<timestamp>` and the workspace starts fresh. Raw file bytes are never part of a
snapshot (the window's own JSON excludes them).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from live_memory.core.errors import SnapshotNotSaved
from live_memory.fs.dir_sync import DirectorySyncer
from live_memory.fs.safe_files import (
    atomic_write,
    ensure_private_dir,
    fsync_dir,
    read_text_bounded,
)
from live_memory.workspaces.snapshot import (
    DELTA_SCHEMA_VERSION,
    SCHEMA_VERSION,
    SnapshotIn,
    SnapshotMeta,
    apply_history_delta,
    encode_document,
    encoded_history,
    parse_meta,
    parse_snapshot,
)

logger = logging.getLogger(__name__)

SNAPSHOT_DIR = "workspaces"
SYMBOL_INDEX_SUFFIX = ".symbols.sqlite"  # a checkout's symbol index beside its snapshot (symbol_store.py)
TREE_SUFFIX = ".tree.json"  # a checkout's directory tree, for the next start (tree_cache.py)
META_MAX_BYTES = 64 * 1024
JOURNAL_SUFFIX = ".journal"
SUPERSEDES = "journal"  # the snapshot's field naming the journal token it supersedes


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
        self._staged: dict[str, int] = {}  # workspace id -> generation last journaled
        self._journals: dict[str, str] = {}  # workspace id -> the token of the journal stages append to
        self._open: dict[str, _OpenJournal] = {}  # workspace id -> the journal appended to last, held open
        self._has_meta: set[str] = set()  # workspaces whose listing metadata is on disk
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
        *,
        journal: bool = False,
    ) -> bool:
        """Write the current state unless a newer generation is on disk or the workspace was wiped.

        `snapshot()` runs under the lock, on the event loop, so the payload is one consistent view;
        only serialisation and I/O run in the worker thread. `also` (blocking, never raising) runs in
        the same worker-thread hop, after the snapshot (or alone when there is nothing to write).
        Raises SnapshotNotSaved when the write fails: the state stays in memory, and the next save
        (or the flush at shutdown) tries again.

        `journal`: only append the document to the workspace's journal: it survives a kill of the process
        from now on, and a later plain `save` writes the snapshot that supersedes it. The listing metadata
        is then written once, when the workspace has none.
        """
        async with self._lock(workspace_id):
            generation, payload = snapshot() if still_wanted() else (-1, {})
            newest = self._written.get(workspace_id, -1)
            if journal:
                newest = max(newest, self._staged.get(workspace_id, -1))
            if generation < 0 or newest >= generation:
                if also is not None:
                    await asyncio.to_thread(also)
                return False
            # A journal record brings the listing metadata only while the workspace may have none on disk.
            summary = meta() if meta is not None and (not journal or workspace_id not in self._has_meta) else None
            if journal:
                token = self._journals.setdefault(workspace_id, secrets.token_hex(6))
                write = functools.partial(self._append_then, also, workspace_id, payload, summary, token)
            else:
                superseded = self._journals.get(workspace_id)
                write = functools.partial(self._write_then, also, workspace_id, payload, summary, superseded)
            try:
                await asyncio.to_thread(write)
            except OSError as exc:
                self._failed(workspace_id, exc)
            self._saved(workspace_id)
            if journal:
                self._staged[workspace_id] = generation
            else:
                self._written[workspace_id] = generation
                self._journals.pop(workspace_id, None)  # superseded: the next journaled save starts a new journal
            return True

    def _failed(self, workspace_id: str, exc: OSError) -> NoReturn:
        reason = describe_write_error(exc, self.dir.parent)
        if self.failures.get(workspace_id) != reason:  # once per cause, not once per question
            logger.error(
                "snapshot of workspace %s not saved: %s; kept in memory and retried on the next change and at shutdown",
                workspace_id,
                reason,
            )
        self.failures[workspace_id] = reason
        raise SnapshotNotSaved(reason) from None

    def _saved(self, workspace_id: str) -> None:
        if self.failures.pop(workspace_id, None) is not None:
            logger.warning("snapshot of workspace %s saved again", workspace_id)

    def meta_path_for(self, workspace_id: str) -> Path:
        return self.dir / f"{workspace_id}.meta"

    def journal_paths(self, workspace_id: str) -> list[Path]:
        return sorted(self.dir.glob(f"{workspace_id}.*{JOURNAL_SUFFIX}")) if self.dir.is_dir() else []

    def exists(self, workspace_id: str) -> bool:
        return self.path_for(workspace_id).exists() or bool(self.journal_paths(workspace_id))

    def _write_then(
        self,
        also: Callable[[], None] | None,
        workspace_id: str,
        payload: Mapping[str, Any],
        meta: SnapshotMeta | None,
        supersedes: str | None = None,
    ) -> None:
        try:
            self.write_now(workspace_id, payload, meta, supersedes=supersedes)
        finally:
            if also is not None:
                also()

    def write_now(
        self,
        workspace_id: str,
        payload: Mapping[str, Any],
        meta: SnapshotMeta | None = None,
        *,
        supersedes: str | None = None,
    ) -> None:
        """Blocking atomic write (worker threads only); the small metadata file follows the snapshot. Every
        journal of the workspace is removed after it: `supersedes` names the one whose records it holds."""
        ensure_private_dir(self.dir)
        saved_at = self.clock()
        head = {"schema": SCHEMA_VERSION, "saved_at": saved_at, SUPERSEDES: supersedes}
        data = encode_document({**head, **payload})
        atomic_write(self.path_for(workspace_id), data.encode("utf-8"), mode=0o600, sync_dir=False)
        self._close_journal(workspace_id)
        for journal in self.journal_paths(workspace_id):
            with contextlib.suppress(FileNotFoundError):
                journal.unlink()
        if meta is None:
            self.syncer.request(self.dir)
            return
        self._write_meta(workspace_id, meta, saved_at)

    def _close_journal(self, workspace_id: str) -> None:
        journal = self._open.pop(workspace_id, None)
        if journal is not None:
            os.close(journal.fd)

    def _write_meta(self, workspace_id: str, meta: SnapshotMeta, saved_at: float) -> None:
        text = json.dumps({**meta.to_json(), "saved_at": saved_at})
        atomic_write(self.meta_path_for(workspace_id), text.encode("utf-8"), sync_file=False, sync_dir=False)
        self.syncer.request(self.dir, self.meta_path_for(workspace_id))
        self._has_meta.add(workspace_id)

    def journal_path(self, workspace_id: str, token: str) -> Path:
        return self.dir / f"{workspace_id}.{token}{JOURNAL_SUFFIX}"

    def _append_then(
        self,
        also: Callable[[], None] | None,
        workspace_id: str,
        payload: Mapping[str, Any],
        meta: SnapshotMeta | None,
        token: str,
    ) -> None:
        try:
            self.append_now(workspace_id, payload, meta, token)
        finally:
            if also is not None:
                also()

    def append_now(self, workspace_id: str, payload: Mapping[str, Any], meta: SnapshotMeta | None, token: str) -> None:
        """Blocking: append one record to the workspace's journal. Records are fenced by newlines (compact
        JSON has none), so a record torn by a kill never spoils the next. A record is a whole snapshot
        document, except that its history holds only the turns added since the journal's previous
        record when that one's turns are still the start of it (the history only grows between
        compactions): an answer appends its exchange, not the whole conversation again. A journal's
        first record, and the one after a failed append, are whole. The journal stays open between
        records (one `write` each), and is opened again if it was removed meanwhile."""
        saved_at = self.clock()
        journal = self._open.pop(workspace_id, None)  # put back only once this record is written
        if journal is not None and (journal.token != token or _removed(journal.fd)):
            os.close(journal.fd)
            journal = None
        if journal is None:
            ensure_private_dir(self.dir)
            journal = _OpenJournal(token, open_for_append(self.journal_path(workspace_id, token)))
        history = encoded_history(payload)
        since = 0
        if history is not None and journal.history is not None:
            seen = journal.history
            if len(history.items) >= len(seen) and history.items[: len(seen)] == seen:
                since = len(seen)
        try:
            data = encode_document({"schema": SCHEMA_VERSION, "saved_at": saved_at, **payload}, history_from=since)
            write_all(journal.fd, ("\n" + data + "\n").encode("utf-8"))
        except BaseException:
            os.close(journal.fd)  # the next record starts whole, in a journal opened afresh
            raise
        journal.history = history.items if history is not None else None
        self._open[workspace_id] = journal
        if meta is not None and workspace_id not in self._has_meta:
            if self.meta_path_for(workspace_id).exists():
                self._has_meta.add(workspace_id)
            else:
                self._write_meta(workspace_id, meta, saved_at)  # a new name: no old file's rename to wait on

    def close(self) -> None:
        """Close the journals held open (their records are on disk already)."""
        for journal in self._open.values():
            os.close(journal.fd)
        self._open.clear()

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
            self._staged.pop(workspace_id, None)
            self._journals.pop(workspace_id, None)
            self._has_meta.discard(workspace_id)
            self.failures.pop(workspace_id, None)
            return await asyncio.to_thread(self._unlink, workspace_id)

    def _unlink(self, workspace_id: str) -> bool:
        self._close_journal(workspace_id)
        self.meta_path_for(workspace_id).unlink(missing_ok=True)
        journals = self.journal_paths(workspace_id)
        for journal in journals:
            journal.unlink(missing_ok=True)
        try:
            self.path_for(workspace_id).unlink()
        except FileNotFoundError:
            if not journals:
                return False
        fsync_dir(self.dir)
        return True

    # --- loading -------------------------------------------------------------------------------
    def load(self, workspace_id: str) -> SnapshotIn | None:
        """The stored state, validated against the schema: the last whole record of a journal no snapshot
        supersedes, else the snapshot; None when absent or quarantined. Blocking. Stages append to the
        journal that was read from then on (its records stay newer than the snapshot)."""
        superseded, snapshot = self._load_snapshot(workspace_id)
        for journal in sorted(self.journal_paths(workspace_id), key=_mtime, reverse=True):
            token = journal.name.removeprefix(f"{workspace_id}.").removesuffix(JOURNAL_SUFFIX)
            if token == superseded:
                continue  # a kill came between the snapshot's write and this journal's removal
            record = _last_record(journal)
            if record is not None:
                self._journals[workspace_id] = token
                return record
        return snapshot

    def _load_snapshot(self, workspace_id: str) -> tuple[str | None, SnapshotIn | None]:
        """(the journal token the snapshot supersedes, the snapshot)."""
        path = self.path_for(workspace_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            self._quarantine(path, f"unreadable: {exc}")
            return None, None
        try:
            data = _document(raw)
            superseded = data.get(SUPERSEDES)
            return (superseded if isinstance(superseded, str) else None), parse_snapshot(data)
        except ValueError as exc:
            self._quarantine(path, str(exc).splitlines()[0])
            return None, None

    def _quarantine(self, path: Path, why: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.clock()))
        target = path.with_name(f"{path.name}.corrupt-{stamp}")
        try:
            os.replace(path, target)
        except OSError as exc:
            logger.error("snapshot %s is corrupt (%s) and could not be moved aside: %s", path, why, exc)
            return
        logger.warning("snapshot %s is corrupt (%s); moved aside to %s, starting fresh", path, why, target.name)


def _document(raw: bytes, newest: int = SCHEMA_VERSION) -> dict[str, Any]:
    """A snapshot document's JSON, checked to be one this server can read (ValueError otherwise); `newest`:
    the newest schema accepted (a journal's deltas have their own)."""
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("schema"), int):
        raise ValueError("not a Live Memory snapshot")
    if data["schema"] > newest:
        raise ValueError(f"snapshot schema {data['schema']} is newer than this server understands")
    return data


def _last_record(journal: Path) -> SnapshotIn | None:
    """The state of a journal's newest whole, valid record (a torn or unreadable tail is skipped). Records
    are read in order, each delta completed from the one before it; after a record that cannot be read,
    deltas are skipped until the next whole record (their base is lost)."""
    try:
        raw = journal.read_bytes()
    except OSError as exc:
        logger.warning("journal %s unreadable (%s); skipped", journal.name, exc)
        return None
    documents: list[dict[str, Any]] = []
    history: list[Any] | None = None
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            document = apply_history_delta(_document(line, DELTA_SCHEMA_VERSION), history)
        except ValueError:
            document = None
        window = document.get("window") if document is not None else None
        turns = window.get("history") if isinstance(window, dict) else None
        history = turns if isinstance(turns, list) else None
        if document is not None:
            documents.append(document)
    for document in reversed(documents):
        try:
            return parse_snapshot(document)
        except ValueError:
            continue
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


@dataclass
class _OpenJournal:
    token: str  # which of the workspace's journals it is
    fd: int
    history: tuple[str, ...] | None = None  # the encoded turns of its last record: the base of the next delta


def open_for_append(path: Path) -> int:
    """A descriptor appending to `path` (created 0600; a link is not followed). Blocking."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _removed(fd: int) -> bool:
    """The open file was unlinked (e.g. its directory was cleared): writing on would reach nothing."""
    return os.fstat(fd).st_nlink == 0


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
