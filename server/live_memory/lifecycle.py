"""A workspace's life: lazy load (snapshot restore + disk re-validation + directory tree + preload),
persistence after every committed change, file events, wipe (reset/empty) and the shutdown flush.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from live_memory import constants as C
from live_memory.config import Settings
from live_memory.context_window import ContextWindow
from live_memory.directory_tree import build_directory_tree
from live_memory.ingest import FileEvent, Ingestor, IngestPolicy, IngestResult
from live_memory.preload import load_preload
from live_memory.store import SnapshotStore, disk_hashes
from live_memory.watcher import WorkspaceWatcher
from live_memory.workspace import WorkspacePolicy, WorkspaceRegistry, WorkspaceState, WorkspaceStats, workspace_id

logger = logging.getLogger(__name__)


def workspace_policy(settings: Settings) -> WorkspacePolicy:
    return WorkspacePolicy(
        budget_tokens=settings.context_tokens,
        distill_min_interval_s=float(settings.distill_min_interval_s),
        canonicalize=bool(settings.canonicalize_workspace),
        repo_root_mode=str(settings.repo_root_mode),
        share_worktrees=bool(settings.share_worktrees),
        concurrency=str(settings.concurrency),
        max_parallel=int(settings.max_parallel_queries),
        max_waiting=int(settings.max_waiting_queries),
        retry_after_s=C.BUSY_RETRY_AFTER_S,
        allowed_roots=allowed_roots(settings),
    )


def allowed_roots(settings: Settings) -> tuple[Path, ...]:
    configured = tuple(settings.allowed_roots)
    if configured:
        return tuple(Path(r).expanduser().resolve() for r in configured)
    home = settings.env.get("HOME") or str(Path.home())
    return (Path(home).resolve(),)


class WorkspaceLifecycle:
    def __init__(self, settings_source: Callable[[], Settings], wall_clock: Callable[[], float]) -> None:
        self._settings = settings_source
        settings = settings_source()
        self.registry = WorkspaceRegistry(workspace_policy(settings))
        self.store = SnapshotStore(settings.data_dir, clock=wall_clock)
        self.watcher = WorkspaceWatcher(debounce_ms=C.WATCH_DEBOUNCE_MS)

    @property
    def settings(self) -> Settings:
        return self._settings()

    def apply_settings(self, settings: Settings) -> None:
        """Hot reload: new limits for every workspace, loaded or not."""
        policy = workspace_policy(settings)
        self.registry.policy = policy
        for state in self.registry.all():
            state.window.budget_tokens = policy.budget_tokens
            state.gate.min_interval_s = policy.distill_min_interval_s
            state.admission.mode = policy.concurrency
            state.admission.max_parallel = policy.max_parallel
            state.admission.max_waiting = policy.max_waiting

    # --- loading -------------------------------------------------------------------------------
    async def ensure_loaded(self, state: WorkspaceState) -> None:
        """First use: restore the snapshot (re-validated against the disk), build the directory
        tree, read the preload documents, and freeze the window once."""
        if state.loaded:
            return
        async with state.load_lock:
            if state.loaded:
                return
            await self._restore(state)
            window = state.window
            window.set_directory_tree(await self.directory_tree(state))
            await self.preload(state)
            window.freeze()
            state.loaded = True
            if self.settings.watch:
                self._start_watching(state)

    def _start_watching(self, state: WorkspaceState) -> None:
        def known(rel: str) -> bool:
            return rel in state.window.files or any(rel in f.sources for f in state.window.ledger.facts)

        async def sink(root: Path, events: Sequence[FileEvent]) -> None:
            if not state.dropped:
                await self.ingestor().apply(state, root, events)

        self.watcher.watch(state.tree_root, known, sink)

    async def _restore(self, state: WorkspaceState) -> None:
        payload = await asyncio.to_thread(self.store.load, state.id)
        if payload is None:
            return
        window = state.window
        try:
            window.load_json(payload["window"])
            state.stats = WorkspaceStats.from_json(payload.get("stats", {}))
        except (KeyError, TypeError, ValueError) as exc:
            logger.warning("snapshot of %s does not fit this version (%s); starting fresh", state.root, exc)
            state.window = ContextWindow(budget_tokens=window.budget_tokens)
            return
        hashes = await asyncio.to_thread(disk_hashes, state.tree_root, window.paths_to_validate())
        checked = window.revalidate(hashes)
        logger.info("restored %s: %d Q&A pairs, %s", state.root, window.qa_count(), checked)

    async def directory_tree(self, state: WorkspaceState) -> str:
        window = state.window
        budget_chars = int(window.budget_tokens * C.DIRECTORY_TREE_SHARE * window.chars_per_token)
        return await build_directory_tree(
            state.tree_root, budget_chars=budget_chars, secret_globs=tuple(self.settings.secret_globs)
        )

    async def preload(self, state: WorkspaceState) -> None:
        settings = self.settings
        if not settings.preload_globs:
            return
        floor_chars = int(settings.compaction_floor * state.window.budget_tokens * state.window.chars_per_token)
        documents = await load_preload(
            state.tree_root,
            tuple(settings.preload_globs),
            max_file_bytes=int(settings.passive_max_file_bytes),
            max_total_bytes=min(int(settings.preload_max_total_bytes), floor_chars),
            secret_globs=tuple(settings.secret_globs),
        )
        for doc in documents:
            state.window.observe(doc.path, doc.content, doc.sha256, preloaded=True)

    async def enforce_capacity(self, keep: WorkspaceState) -> None:
        """Unload least-recently-used idle workspaces past the cap, flushing their snapshots first."""
        limit = int(self.settings.max_loaded_workspaces)
        for state in self.registry.unload_candidates(limit, keep):
            await self.persist(state)
            await self.watcher.unwatch(state.tree_root)
            self.registry.drop(state.root)
            logger.info("unloaded idle workspace %s (more than %d loaded)", state.root, limit)

    def shed_observed_bytes(self, touched: WorkspaceState) -> int:
        """Keep held file bytes under the process-wide cap by shedding the LRU ones of `touched`."""
        total = sum(f.size for s in self.registry.all() for f in s.window.files.values() if f.content is not None)
        if total <= C.MAX_OBSERVED_BYTES:
            return 0
        shed = 0
        held = sorted((f for f in touched.window.files.values() if f.content is not None), key=lambda f: f.last_used)
        for f in held:
            if total <= C.MAX_OBSERVED_BYTES:
                break
            touched.apply(functools.partial(ContextWindow.shed_content, path=f.path))
            total -= f.size
            shed += 1
        return shed

    # --- persistence ---------------------------------------------------------------------------
    async def persist(self, state: WorkspaceState) -> None:
        def snapshot() -> tuple[int, dict[str, Any]]:
            payload = {"workspace": str(state.root), "window": state.window.to_json(), "stats": state.stats.to_json()}
            return state.window.version, payload

        await self.store.save(state.id, snapshot, still_wanted=lambda: not state.dropped)

    async def flush_all(self) -> None:
        """Shutdown: write every loaded workspace (errors logged, never raised: others still flush)."""
        await self.watcher.aclose()
        for state in self.registry.all():
            if not state.loaded:
                continue
            try:
                await self.persist(state)
            except OSError:
                logger.exception("could not write the snapshot of %s", state.root)

    # --- events and wipes ----------------------------------------------------------------------
    def ingestor(self) -> Ingestor:
        settings = self.settings
        return Ingestor(
            IngestPolicy(
                passive_ingestion=bool(settings.passive_ingestion),
                max_file_bytes=int(settings.passive_max_file_bytes),
                file_globs=tuple(settings.file_globs),
                secret_globs=tuple(settings.secret_globs),
                echo_grace_s=C.ECHO_GRACE_S,
            )
        )

    async def notify(self, cwd: str, events: Sequence[FileEvent]) -> tuple[IngestResult, bool]:
        """Apply file events to a loaded workspace; events never create one."""
        found = self.registry.loaded(cwd)
        if found is None:
            result = IngestResult()
            for event in events:
                result.ignore(event.path, "workspace not loaded (ask it a question first)")
            return result, False
        state, root = found
        result = await self.ingestor().apply(state, root, events)
        self.shed_observed_bytes(state)
        return result, True

    async def wipe(self, cwd: str, *, reload_now: bool) -> dict[str, Any]:
        """Drop history, ledger, files and the snapshot. Reset reloads (and preloads) at once."""
        key = self.registry.root_for(cwd)
        state = self.registry.drop(key)
        if state is not None:
            await self.watcher.unwatch(state.tree_root)
        dropped = {"qa_pairs": 0, "ledger_facts": 0, "file_contexts": 0}
        if state is not None:
            state.dropped = True
            dropped = {
                "qa_pairs": state.window.qa_count(),
                "ledger_facts": len(state.window.ledger.facts),
                "file_contexts": len(state.window.files),
            }
        snapshot_deleted = await self.store.delete(workspace_id(key))
        if reload_now:
            fresh, _ = self.registry.get_or_create(cwd)
            await self.ensure_loaded(fresh)
        return {
            "workspace": str(key),
            "dropped": dropped,
            "snapshot_deleted": snapshot_deleted,
            "reloaded": reload_now,
        }
