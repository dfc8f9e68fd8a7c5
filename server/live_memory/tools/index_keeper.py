"""Keeping one checkout's symbol index (symbol_store.py) current, and reading it for lookups.

    keeper = IndexKeeper(ctx, index_path)       # the Toolbox makes one per checkout
    await keeper.run()                          # in the service's task group: build or refresh, then follow changes
    keeper.changed(["src/app.py"])              # /notify and the watcher say what changed
    await keeper.read(work)                     # work(store, check) in the index's thread; None until it is ready

At the start (`run`): an index on disk that can be trusted and whose directories did not move is brought up to
date here, in the index's own thread (a stat of every recorded file, the changed ones read again); otherwise the
build child (tools/index_build.py) lists and records the workspace at a lower priority while the scan keeps
answering. Then, changes reported by `changed` are gathered for a moment and applied here, a few files at a time
(a file that was not recorded is looked up in ripgrep's listing of its directory first: an ignored file is not
indexed); many at once, or a change to an ignore file, go to the child again. Whoever reads the index (`read`)
checks the stamps of the files it is about to use (`check`): a file changed behind the index's back is read
again first, or, when too many did, the read gives up (None) and the index catches up in the background.

Every SQLite call runs in one worker thread of the keeper's own (one connection, no lock); the event loop only
schedules. Must never: block the event loop, make a reader wait for a build, or trust an index it has not opened
and checked (symbol_store.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

from live_memory import constants as C
from live_memory.fs.subproc import run_bounded
from live_memory.fs.walk import is_ignored
from live_memory.outline.symbol_store import SymbolStore
from live_memory.tools.context import ToolContext
from live_memory.tools.index_build import changed_since, directory_stamps, listed_files, record, refresh, stamps_of
from live_memory.tools.listing import list_files

__all__ = ["Check", "IndexKeeper", "Verdict"]

logger = logging.getLogger(__name__)
T = TypeVar("T")
# Checks that the files a reader is about to use are as the index recorded them: "current"; "updated" when it
# re-indexed the few that were not (read again); "stale" when too many changed (the reader scans instead).
Verdict = Literal["current", "updated", "stale"]
Check = Callable[[Iterable[str]], Verdict]
_IGNORE_FILES = frozenset({".gitignore", ".ignore", ".rgignore"})
_BYTES_PER_NAME = 256  # a generous mean length of a listed path

# Values of `status()["state"]`.
STARTING = "starting"
BUILDING = "building"
READY = "ready"
FAILED = "failed"


class IndexKeeper:
    def __init__(self, ctx: ToolContext, path: Path, *, python: str = sys.executable) -> None:
        self.ctx = ctx
        self.path = path
        self.python = python  # runs the build child
        self.update_max_files = C.SYMBOL_INDEX_UPDATE_MAX_FILES  # more changed (or listed) files: the child
        self.state = STARTING
        self.detail = ""  # why it failed, or what the last build did
        self.ready_after_s: float | None = None  # from `run` to the first time it was ready
        self._store: SymbolStore | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="live-memory symbol index")
        # Set when the keeper closes: a build or refresh in the thread stops between two files (the interpreter
        # waits for the thread at exit: a stopping server would wait for the whole build).
        self._stop = threading.Event()
        self._pending: set[str] = set()
        self._relist = False  # a change the listing must see (an ignore file)
        self._damaged = False  # SQLite refused the index: it is built anew, never read again
        self._wake: asyncio.Event | None = None

    # --- what the owner sees -------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.state == READY and self._store is not None

    def status(self) -> dict[str, Any]:
        """For /stats: the state, how long the first build or refresh took, and what it did."""
        return {"state": self.state, "ready_after_s": self.ready_after_s, "detail": self.detail}

    def changed(self, paths: Iterable[str]) -> None:
        """Files that changed (or appeared, or went): applied shortly, and before the next read."""
        for path in paths:
            if path.rsplit("/", 1)[-1] in _IGNORE_FILES:
                self._relist = True
            self._pending.add(path)
        if self._wake is not None:
            self._wake.set()

    # --- the background work -------------------------------------------------------------------
    async def run(self, start_after: asyncio.Event | None = None) -> None:
        """Build or refresh the index, then keep it current until cancelled. It starts once `start_after` is set
        (the owner's first answer: on two cores a build beside it would slow it), or after
        SYMBOL_INDEX_START_WAIT_S. Failures are logged and leave the scan answering (state "failed"); only
        cancellation propagates."""
        self._wake = asyncio.Event()
        try:
            if start_after is not None:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(C.SYMBOL_INDEX_START_WAIT_S):
                        await start_after.wait()
            started = time.monotonic()
            await self._start()
            self.ready_after_s = round(time.monotonic() - started, 3)
            while True:
                if not self._pending and not self._relist and not self._damaged:
                    await self._wake.wait()
                self._wake.clear()
                await asyncio.sleep(C.SYMBOL_INDEX_DEBOUNCE_S)
                try:
                    await self.catch_up()
                except sqlite3.DatabaseError as exc:
                    if self.state != READY:
                        raise  # a build that SQLite refuses fails the index (the scan answers)
                    logger.warning(
                        "the symbol index of %s cannot be updated (%s); it is built anew", self.ctx.root, exc
                    )
                    self._damaged = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one checkout's index must not take the service down
            logger.exception("the symbol index of %s failed; lookups scan the workspace", self.ctx.root)
            self.state, self.detail = FAILED, f"{type(exc).__name__}: {exc}"
        finally:
            await self._close()

    async def _start(self) -> None:
        store = await self._call(SymbolStore.open, self.path, str(self.ctx.root))
        if store is not None:
            changed = await self._call(changed_since, self.ctx.root, store)
            if changed is not None and len(changed) <= self.update_max_files:
                done = await self._call(refresh, store, self.ctx.jail, changed, listed=False, stop=self._stop)
                self._store, self.state, self.detail = store, READY, f"reused: {done.read} files read again"
                return
            await self._call(store.close)
        await self._build()

    async def _build(self, *, rebuild: bool = False) -> None:
        """List the workspace and record it: here when it is small, else by the build child, at a lower priority
        and away from the server's GIL (it refreshes a trusted index in place, or writes a new one: `rebuild`);
        then open it."""
        self.state = BUILDING
        if self._store is not None:
            store, self._store = self._store, None
            await self._call(store.close)
        self._pending.clear()  # every file is listed anew
        self._relist = False
        # A small workspace is listed whole within this many bytes of names; a large one is not listed here at all
        # (reading and sorting 50,000 names would take the loop's time from the question being answered).
        probe = self.update_max_files * _BYTES_PER_NAME
        listed = await listed_files(self.ctx.jail, self.ctx.limits, max_bytes=probe)
        if listed is not None and len(listed) <= self.update_max_files:
            self.detail = await self._record_here(rebuild=rebuild)
        else:
            self.detail = await self._record_in_child(rebuild=rebuild)
        opened = await self._call(SymbolStore.open, self.path, str(self.ctx.root))
        if opened is None:
            raise RuntimeError("the index the build wrote cannot be opened")
        self._store, self.state = opened, READY

    async def _record_here(self, *, rebuild: bool) -> str:
        root, jail = self.ctx.root, self.ctx.jail
        directories = await self._call(directory_stamps, root)  # before the listing that is recorded
        paths = await listed_files(jail, self.ctx.limits)
        if paths is None:
            raise RuntimeError("the workspace could not be listed (the listing was cut short)")
        done = await self._call(record, root, self.path, jail, paths, directories, rebuild=rebuild, stop=self._stop)
        return (
            f"{'built' if done.rebuilt else 'refreshed'} in {done.seconds} s: {done.files} files, {done.parsed} parsed"
        )

    async def _record_in_child(self, *, rebuild: bool) -> str:
        argv = [self.python, "-m", "live_memory.tools.index_child", str(self.ctx.root), str(self.path)]
        for glob in self.ctx.limits.secret_globs:
            argv += ["--secret-glob", glob]
        if rebuild:
            argv.append("--rebuild")
        result = await run_bounded(
            argv,
            cwd=self.ctx.root,
            timeout_s=C.SYMBOL_INDEX_BUILD_TIMEOUT_S,
            max_bytes=64 * 1024,
            slot=False,  # minutes long: it must not hold one of the tools' subprocess slots
        )
        if result.returncode != 0:
            reason = "timed out" if result.timed_out else result.stderr_text() or f"exit status {result.returncode}"
            raise RuntimeError(f"the index build failed: {reason}")
        return _summary(result.stdout)

    async def catch_up(self) -> None:
        """Apply the pending changes (the background loop): here when they are few, through the build child when
        many, or when replaced versions' postings outnumber the files (a rebuild drops them)."""
        store = self._store
        if store is None or self.state != READY:
            return
        if self._damaged:
            self._damaged = False
            await self._build(rebuild=True)
        elif self._relist or len(self._pending) > self.update_max_files:
            await self._build()
        elif await self._call(_worn, store):
            await self._build(rebuild=True)
        else:
            await self._apply(store)

    async def _apply(self, store: SymbolStore) -> None:
        """Re-index the pending files here (a file not recorded yet only if ripgrep lists it)."""
        paths, self._pending = sorted(self._pending), set()
        if not paths:
            return
        unknown = await self._call(lambda: [p for p in paths if store.record(p) is None])
        if unknown:
            listed = await self._listed(unknown)
            paths = [p for p in paths if p not in unknown or p in listed]
        await self._call(refresh, store, self.ctx.jail, paths, listed=False, stop=self._stop)

    async def _listed(self, paths: Sequence[str]) -> set[str]:
        """Those of `paths` ripgrep lists (its listing of each one's directory, which it searches even when the
        directory itself is ignored: that is checked first): an ignored file is not indexed."""
        found: set[str] = set()
        root = str(self.ctx.root)
        for directory in sorted({p.rpartition("/")[0] for p in paths}):
            ignored: bool = await asyncio.to_thread(is_ignored, root, directory, is_dir=True) if directory else False
            if ignored:
                continue
            with contextlib.suppress(OSError):
                listing = await list_files(self.ctx, directory, max_depth=1)
                found.update(p for p in listing.paths if not self.ctx.jail.is_secret(p))
        return found

    # --- reading -------------------------------------------------------------------------------
    async def read(self, work: Callable[[SymbolStore, Check], T]) -> T | None:
        """`work(store, check)` in the index's thread once pending changes are applied; None when the index is
        not ready (being built, failed, or too many changes pending)."""
        store = self._store
        if not self.ready or store is None or self._damaged:
            return None
        if self._relist or len(self._pending) > self.update_max_files:
            return None  # the background loop hands them to the build child
        try:
            if self._pending:
                await self._apply(store)
            return await self._call(work, store, lambda paths: self._check(store, paths))
        except sqlite3.Error as exc:  # closed by a build meanwhile, or damaged: the scan answers
            if isinstance(exc, sqlite3.DatabaseError) and self._store is store:
                logger.warning("the symbol index of %s cannot be read (%s); it is built anew", self.ctx.root, exc)
                self._damaged = True
                if self._wake is not None:
                    self._wake.set()
            return None

    def _check(self, store: SymbolStore, paths: Iterable[str]) -> Verdict:
        """In the index's thread: re-index the files among `paths` whose stamp moved (see `Check`)."""
        wanted = sorted(set(paths))
        recorded = store.stamps_of(wanted)
        now = stamps_of(self.ctx.root, wanted)
        moved = [p for p in wanted if now.get(p) != recorded.get(p)]
        if not moved:
            return "current"
        if len(moved) > C.SYMBOL_INDEX_CHECK_MAX_CHANGED:
            return "stale"
        refresh(store, self.ctx.jail, moved, listed=False, stop=self._stop)
        return "updated"

    # --- the thread ----------------------------------------------------------------------------
    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, lambda: fn(*args, **kwargs))

    async def _close(self) -> None:
        self._stop.set()
        store, self._store = self._store, None
        try:
            if store is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._call(store.close))
        finally:  # also when cancelled meanwhile (a stopping server): an idle thread left behind holds its exit
            self._thread.shutdown(wait=False)


def _worn(store: SymbolStore) -> bool:
    """Whether replaced versions' postings outnumber the files enough to rebuild."""
    return store.orphans() > C.SYMBOL_INDEX_ORPHAN_RATIO * max(len(store), C.SYMBOL_INDEX_BATCH_FILES)


def _summary(stdout: bytes) -> str:
    """The build child's one line: what it did."""
    try:
        done = json.loads(stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return ""
    verb = "built" if done.get("rebuilt") else "refreshed"
    return f"{verb} in {done.get('seconds')} s: {done.get('files')} files, {done.get('parsed')} parsed"
