"""File-change awareness: applying read/write/change/add/unlink events to a workspace's window.

The hooks (`POST /notify`) and the OS watcher feed the same `Ingestor.apply()`. Preparation
(jailing, hashing, reading the disk for echo checks) runs in a thread; the mutation then happens
synchronously on the event loop with no await in between, so parallel sessions' events never race.

Rules:
- read/write with content: held verbatim (`observe`) when passive ingestion is on and it fits the
  per-file cap (larger files are recorded manifest-only); binary content is refused.
- read/write without content: treated as a change; with passive ingestion off, an agent's write to
  a known file becomes a "recently modified" hint on the next question instead.
- change/add: a known file is marked stale (lazy re-read) and facts citing it are demoted, unless
  it is the echo of a tee we just received (same bytes on disk, within the grace window).
- unlink: a known file is marked deleted and facts citing it are demoted.
Events outside the jail, outside `file_globs`, or matching the secret guard are ignored with a reason.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from live_memory.constants import ECHO_GRACE_S, MAX_OBSERVED_BYTES
from live_memory.core.errors import JailRefusal
from live_memory.core.records import EventKind, FileEvent, IngestResult
from live_memory.fs.jail import Jail
from live_memory.fs.safe_files import sha256_file
from live_memory.memory.context_window import ContextWindow
from live_memory.settings.config import Settings
from live_memory.settings.options import HoldFiles
from live_memory.workspaces.workspace import WorkspaceState


@dataclass(frozen=True)
class IngestPolicy:
    passive_ingestion: bool
    hold_files: HoldFiles  # whose teed bytes are held (see options)
    max_file_bytes: int
    file_globs: tuple[str, ...]
    secret_globs: tuple[str, ...]
    echo_grace_s: float

    @classmethod
    def of(cls, settings: Settings) -> IngestPolicy:
        return cls(
            passive_ingestion=settings.passive_ingestion,
            hold_files=settings.hold_files,
            max_file_bytes=settings.passive_max_file_bytes,
            file_globs=settings.file_globs,
            secret_globs=settings.secret_globs,
            echo_grace_s=ECHO_GRACE_S,
        )


@dataclass(slots=True)  # not frozen: built per event, and a frozen dataclass is slower to build
class _Prepared:
    """An event after the off-loop checks: a clean relative path and what we learned of it."""

    rel: str
    kind: EventKind
    content: str | None = None
    sha256: str | None = None
    size: int = 0
    disk_sha256: str | None = None  # for change/add: what is on disk now (echo detection)


def in_scope(rel: str, globs: Sequence[str]) -> bool:
    """fnmatch semantics (`*` also crosses `/`); no globs means everything is in scope."""
    return not globs or any(fnmatch.fnmatchcase(rel, g) for g in globs)


def _sha_of_file(path: Path) -> str | None:
    """SHA-256 of a regular file, streamed (None: missing, unreadable, or a FIFO/device/directory)."""
    try:
        digest = sha256_file(path, follow_symlinks=True)
    except OSError:
        return None
    return digest.sha256 if digest is not None else None


class Ingestor:
    def __init__(self, policy: IngestPolicy, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self.clock = clock

    async def apply(self, state: WorkspaceState, root: Path, events: Sequence[FileEvent]) -> IngestResult:
        """`root` is the checkout the events came from (a linked worktree may share the memory)."""
        result = IngestResult()
        prepared = await asyncio.to_thread(self._prepare, root, events, result)
        for event in prepared:  # synchronous from here on: no await between reading and writing state
            self._apply_one(state, event, result)
        return result

    # --- off the event loop ------------------------------------------------------------------
    def _prepare(self, root: Path, events: Sequence[FileEvent], result: IngestResult) -> list[_Prepared]:
        jail = Jail(root, self.policy.secret_globs, remember_dirs=True)
        out: list[_Prepared] = []
        for event in events:
            try:
                rel = jail.normalize(event.path)
                if rel:  # the root itself is refused below, by its own name rather than as ''
                    jail.check_relative(rel, allow_dir=event.kind == "unlink")
            except JailRefusal as exc:
                result.ignore(event.path, str(exc))
                continue
            if not rel:
                result.ignore(event.path, "the workspace root itself is not a file")
                continue
            result.paths.append(rel)
            if not in_scope(rel, self.policy.file_globs):
                result.ignore(rel, "outside file_globs")
                continue
            prepared = self._prepare_one(root, rel, event, result)
            if prepared is not None:
                out.append(prepared)
        return out

    def _prepare_one(self, root: Path, rel: str, event: FileEvent, result: IngestResult) -> _Prepared | None:
        if event.kind in ("read", "write") and event.content is not None:
            if "\x00" in event.content:
                result.ignore(rel, "binary content is not kept")
                return None
            data = event.content.encode("utf-8", "surrogatepass")
            return _Prepared(rel, event.kind, event.content, hashlib.sha256(data).hexdigest(), len(data))
        if event.kind in ("change", "add"):
            return _Prepared(rel, event.kind, disk_sha256=_sha_of_file(root / rel))
        return _Prepared(rel, event.kind)

    # --- on the event loop -------------------------------------------------------------------
    def _apply_one(self, state: WorkspaceState, event: _Prepared, result: IngestResult) -> None:
        window = state.window
        rel = event.rel
        if event.content is not None and event.sha256 is not None:
            if not self.policy.passive_ingestion:
                if event.kind == "write" and rel in window.files:
                    state.apply(lambda w: w.note_modified(rel))
                    result.accepted += 1
                else:
                    result.ignore(rel, "passive ingestion is off")
                return
            if event.size > self.policy.max_file_bytes:
                sha, size = event.sha256, event.size
                state.apply(lambda w: w.record_read(rel, sha, size))
                result.accepted += 1
                return
            content, sha, size, edited = event.content, event.sha256, event.size, event.kind == "write"
            if self.policy.hold_files == "used" or window.cited:  # the hot set's counts and held lines
                state.apply(lambda w: w.note_tee(rel, content, sha))
            if self._hold(window, rel):
                state.apply(lambda w: w.observe(rel, content, sha))
            else:
                state.apply(lambda w: w.note_seen(rel, sha, size, edited=edited))
            state.remember_tee(rel, self.clock(), sha, self.policy.echo_grace_s)
            result.accepted += 1
            return
        if event.kind == "unlink":
            if state.apply(lambda w: w.mark_deleted(rel)):
                result.accepted += 1
            else:
                result.ignore(rel, "not in memory")
            return
        if event.kind in ("change", "add") and self._is_echo(state, rel, event.disk_sha256):
            result.ignore(rel, "echo of a tee just received")
            return
        if event.kind == "write" and not self.policy.passive_ingestion:
            if rel in window.files:
                state.apply(lambda w: w.note_modified(rel))
                result.accepted += 1
            else:
                result.ignore(rel, "not in memory")
            return
        if state.apply(lambda w: w.invalidate(rel)):
            result.accepted += 1
        else:
            result.ignore(rel, "not in memory")

    def _hold(self, window: ContextWindow, rel: str) -> bool:
        """Whether a teed file's bytes are held. With `used` (the hot set) they are not: the lines answers
        cite are (cited_lines.py), and the tee counts as a use of the file."""
        hold = self.policy.hold_files
        if hold == "all":
            return True
        known = window.files.get(rel)
        if known is not None and known.content is not None:
            return True  # one current copy: a held file (a preload, an earned one) stays current
        return hold == "earned" and window.earned(rel)

    def _is_echo(self, state: WorkspaceState, rel: str, disk_sha: str | None) -> bool:
        teed = state.tees.get(rel)
        if teed is None or disk_sha is None:
            return False
        at, sha = teed
        return sha == disk_sha and self.clock() - at <= self.policy.echo_grace_s


def shed_observed_bytes(states: Sequence[WorkspaceState], touched: WorkspaceState) -> int:
    """Keep held file bytes under the process-wide cap (MAX_OBSERVED_BYTES, over every loaded workspace) by
    shedding the least recently used ones of `touched`; returns how many files it shed."""
    total = sum(f.size for s in states for f in s.window.files.values() if f.content is not None)
    if total <= MAX_OBSERVED_BYTES:
        return 0
    shed = 0
    held = sorted((f for f in touched.window.files.values() if f.content is not None), key=lambda f: f.last_used)
    for f in held:
        if total <= MAX_OBSERVED_BYTES:
            break
        touched.apply(functools.partial(ContextWindow.shed_content, path=f.path))
        total -= f.size
        shed += 1
    return shed
