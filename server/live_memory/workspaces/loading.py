"""Loading a workspace's memory on first use, one step after the other: the snapshot, re-validated
against the disk, the directory tree (taken back from disk when nothing it rests on moved: tree_cache.py), the
preload documents, then one freeze of the window.

Everything blocking (snapshot read, hashing, the tree scan, preload reads) runs off the event loop.
This module reads the disk and fills a `WorkspaceState`; it never persists and never calls back into
the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import time
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

from live_memory import __version__
from live_memory import constants as C
from live_memory.core.prompts import DIRECTORY_TREE_HEADING, SYSTEM_PROMPT
from live_memory.fs.safe_files import read_for_revalidation
from live_memory.outline.card_syntax import parser_version
from live_memory.outline.directory_tree import TreePolicy
from live_memory.outline.tree_outline import ScannedTree, scan_tree
from live_memory.providers.profiles import min_cacheable_tokens_for
from live_memory.settings.config import Settings
from live_memory.tools import TOOL_SCHEMAS
from live_memory.workspaces import tree_cache
from live_memory.workspaces.preload import load_preload
from live_memory.workspaces.snapshot import restore_stats, restore_window
from live_memory.workspaces.store import TREE_SUFFIX, SnapshotStore
from live_memory.workspaces.workspace import WorkspaceState, workspace_id

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TreeToKeep:
    """A tree scanned at a load, to be kept on disk for the next start (`keep_tree`, in the background)."""

    root: Path
    path: Path
    key: str
    scanned: ScannedTree
    listed_at_ns: int


async def load_workspace(
    state: WorkspaceState, store: SnapshotStore, settings: Settings, *, team_wait_s: float = 0.0
) -> TreeToKeep | None:
    """The one loader, in order: restore the snapshot -> re-validate it against the disk -> the tree (taken back
    from disk when nothing it rests on moved, else scanned; and, at the same time, wait up to `team_wait_s` for
    the team's facts; they join the ledger) -> preload -> freeze; once per workspace (concurrent callers wait for
    the first). Returns a scanned tree the caller may keep for the next start."""
    if state.loaded:
        return None
    async with state.load_lock:
        if state.loaded:
            return None
        await _restore(state, store, settings)
        window = state.window
        path = store.dir / f"{workspace_id(state.tree_root)}{TREE_SUFFIX}"
        key = await asyncio.to_thread(_tree_key, settings, window.budget_tokens, window.chars_per_token)
        listed_at_ns = time.time_ns()
        (scanned, restored), _ = await asyncio.gather(
            _tree(state, settings, path, key), _team_facts_in_time(state, team_wait_s)
        )
        window.set_directory_tree(scanned.text, scanned.paths)
        state.team_merged += window.ledger.merge_team(state.team_inbox)
        state.team_inbox = []
        await preload(state, settings)
        window.freeze()
        state.loaded = True
        return None if restored else TreeToKeep(state.tree_root, path, key, scanned, listed_at_ns)


async def _tree(state: WorkspaceState, settings: Settings, path: Path, key: str) -> tuple[ScannedTree, bool]:
    """The tree as saved at the last start when nothing it rests on moved (True), else a scan (False)."""
    restored = await asyncio.to_thread(tree_cache.restore, path, state.tree_root, key)
    if restored is not None:
        return restored, True
    window = state.window
    policy = tree_policy(settings)
    scanned = await scan_tree(
        state.tree_root, policy, budget_tokens=window.budget_tokens, chars_per_token=window.chars_per_token
    )
    return scanned, False


async def keep_tree(tree: TreeToKeep, start_after: asyncio.Event | None = None) -> None:
    """Save a scanned tree with the stamps it rests on (a walk of the directories: the background's work), once
    `start_after` is set (the workspace's first answer: the walk beside it would slow it on two cores) or after
    SYMBOL_INDEX_START_WAIT_S, as the symbol index does. A failure costs the next start a scan, nothing else: it
    is logged, never raised."""
    if start_after is not None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(C.SYMBOL_INDEX_START_WAIT_S):
                await start_after.wait()
    try:
        saved = await asyncio.to_thread(tree_cache.capture, tree.root, tree.scanned, tree.key, tree.listed_at_ns)
        if saved is not None:
            await asyncio.to_thread(tree_cache.write, tree.path, saved)
    except OSError as exc:
        logger.warning("the tree of %s was not kept for the next start: %s", tree.root, exc)


def _tree_key(settings: Settings, budget_tokens: int, chars_per_token: float) -> str:
    """What the tree's text depends on besides the files: how it is sized and rendered, and by which code.
    Blocking the first time (the parsers' versions are read from their installed metadata)."""
    policy = dataclasses.asdict(tree_policy(settings))
    return json.dumps([__version__, parser_version(), policy, budget_tokens, chars_per_token], sort_keys=True)


async def _team_facts_in_time(state: WorkspaceState, wait_s: float) -> None:
    """Wait for the workspace's first pull from the team store, at most `wait_s` (a slow store is not waited
    for: what it sends later joins the ledger at the next compaction)."""
    if wait_s <= 0 or state.team_pulled.is_set():
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(wait_s):
            await state.team_pulled.wait()


async def restore_workspace(state: WorkspaceState, store: SnapshotStore, settings: Settings) -> None:
    """Only the first two steps (cheap: no tree scan), so file events and /stats work before the first
    question; `load_workspace` finishes the job when one comes."""
    if state.restored:
        return
    async with state.load_lock:
        await _restore(state, store, settings)


async def _restore(state: WorkspaceState, store: SnapshotStore, settings: Settings) -> None:
    """Restore the snapshot, then re-validate it against the disk (once)."""
    if state.restored:
        return
    state.restored = True
    snapshot = await asyncio.to_thread(store.load, state.id)
    if snapshot is None:
        return
    held = restore_window(state.window, snapshot.window)
    state.stats = restore_stats(snapshot.stats)
    await _revalidate(state, held, settings.passive_max_file_bytes)


async def _revalidate(state: WorkspaceState, held: Collection[str], max_file_bytes: int) -> None:
    """Mark what changed on disk since the snapshot; re-hold the files held before that are unchanged."""
    window = state.window
    found = await asyncio.to_thread(
        read_for_revalidation, state.tree_root, window.paths_to_validate(), held, max_file_bytes
    )
    checked = window.revalidate({path: disk.sha256 for path, disk in found.items()})
    rehold = 0
    for path, disk in found.items():  # held before the restart and unchanged: held again, from the disk
        known = window.files.get(path)
        if disk.text is not None and known is not None and known.sha256 == disk.sha256:
            window.files[path] = replace(known, content=disk.text, state="current")
            rehold += 1
    logger.info("restored %s: %d Q&A pairs, %s, %d files held again", state.root, window.qa_count(), checked, rehold)


def tree_policy(settings: Settings) -> TreePolicy:
    """How large the tree renders under `settings` (see `TreePolicy`); counted at the window's own
    characters-per-token rate when it is scanned."""
    return TreePolicy(
        configured_tokens=settings.directory_tree_tokens,
        cache_floor_tokens=math.ceil(min_cacheable_tokens_for(settings.model) * C.CACHE_MIN_MARGIN),
        head_chars=len(HEAD_WITHOUT_TREE),
        max_share=C.DIRECTORY_TREE_SHARE,
        secret_globs=settings.secret_globs,
    )


# What precedes the tree in every request: the tool schemas (first in the provider's cache order), then the
# system prompt and the tree's heading.
HEAD_WITHOUT_TREE = f"{json.dumps(TOOL_SCHEMAS)}{SYSTEM_PROMPT}\n\n{DIRECTORY_TREE_HEADING}\n"


async def preload(state: WorkspaceState, settings: Settings) -> None:
    if not settings.preload_globs:
        return
    window = state.window
    floor_chars = int(settings.compaction_floor * window.budget_tokens * window.chars_per_token)
    documents = await load_preload(
        state.tree_root,
        settings.preload_globs,
        max_file_bytes=settings.passive_max_file_bytes,
        max_total_bytes=min(settings.preload_max_total_bytes, floor_chars),
        secret_globs=settings.secret_globs,
    )
    for doc in documents:
        window.observe(doc.path, doc.content, doc.sha256, preloaded=True)
