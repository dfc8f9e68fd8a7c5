"""Loading a workspace's memory on first use: the snapshot (re-validated against the disk), the
directory tree, the preload documents, then one freeze of the window.

Everything blocking (snapshot read, hashing, the tree scan, preload reads) runs off the event loop.
This module reads the disk and fills a `WorkspaceState`; it never persists and never calls back into
the service.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from dataclasses import replace

from live_memory import constants as C
from live_memory.config import Settings
from live_memory.context_window import ContextWindow
from live_memory.directory_tree import build_directory_tree
from live_memory.preload import load_preload
from live_memory.prompts import DIRECTORY_TREE_HEADING, SYSTEM_PROMPT
from live_memory.providers.profiles import min_cacheable_tokens_for
from live_memory.records import estimate_tokens
from live_memory.safe_files import read_for_revalidation
from live_memory.snapshot import restore_stats, restore_window
from live_memory.store import SnapshotStore
from live_memory.tools import TOOL_SCHEMAS
from live_memory.workspace import WorkspaceState

logger = logging.getLogger(__name__)


async def load_workspace(state: WorkspaceState, store: SnapshotStore, settings: Settings) -> None:
    """Restore, build the tree, preload and freeze, once; concurrent callers wait for the first."""
    if state.loaded:
        return
    async with state.load_lock:
        if state.loaded:
            return
        await _restore(state, store, settings)
        state.window.set_directory_tree(await directory_tree(state, settings))
        await preload(state, settings)
        state.window.freeze()
        state.loaded = True


async def restore_workspace(state: WorkspaceState, store: SnapshotStore, settings: Settings) -> None:
    """Only the snapshot (cheap: no tree scan), so file events and /stats work before the first
    question; `load_workspace` finishes the job when one comes."""
    if state.restored:
        return
    async with state.load_lock:
        await _restore(state, store, settings)


async def _restore(state: WorkspaceState, store: SnapshotStore, settings: Settings) -> None:
    if state.restored:
        return
    state.restored = True
    snapshot = await asyncio.to_thread(store.load, state.id)
    if snapshot is None:
        return
    window = state.window
    held = restore_window(window, snapshot.window)
    state.stats = restore_stats(snapshot.stats)
    found = await asyncio.to_thread(
        read_for_revalidation, state.tree_root, window.paths_to_validate(), held, settings.passive_max_file_bytes
    )
    checked = window.revalidate({path: disk.sha256 for path, disk in found.items()})
    rehold = 0
    for path, disk in found.items():  # held before the restart and unchanged: held again, from the disk
        known = window.files.get(path)
        if disk.text is not None and known is not None and known.sha256 == disk.sha256:
            window.files[path] = replace(known, content=disk.text, state="current")
            rehold += 1
    logger.info("restored %s: %d Q&A pairs, %s, %d files held again", state.root, window.qa_count(), checked, rehold)


async def directory_tree(state: WorkspaceState, settings: Settings) -> str:
    window = state.window
    tokens = min(window.budget_tokens * C.DIRECTORY_TREE_SHARE, tree_tokens(window, settings))
    budget_chars = int(tokens * window.chars_per_token)
    return await build_directory_tree(state.tree_root, budget_chars=budget_chars, secret_globs=settings.secret_globs)


def tree_tokens(window: ContextWindow, settings: Settings) -> int:
    """The tree's budget: `directory_tree_tokens`, or more when the prompt's head (instructions, tool schemas,
    tree) would otherwise be shorter than the model's minimum cacheable prefix. The head's breakpoint is then
    never written: until the ledger and history behind it pass the minimum (a young memory, and after each
    compaction), every question pays for the head in full, where a few hundred tokens more of tree are read
    from the cache at a tenth of the price. Counted at the plain characters-per-token rate: the window's
    calibration also folds in the tool schemas its estimates leave out, which would count them twice here."""
    head = estimate_tokens(_HEAD_WITHOUT_TREE, window.chars_per_token)
    floor = math.ceil(min_cacheable_tokens_for(settings.model) * C.CACHE_MIN_MARGIN)
    return max(settings.directory_tree_tokens, floor - head)


# What precedes the tree in every request: the tool schemas (first in the provider's cache order), then the
# system prompt and the tree's heading.
_HEAD_WITHOUT_TREE = f"{json.dumps(TOOL_SCHEMAS)}{SYSTEM_PROMPT}\n\n{DIRECTORY_TREE_HEADING}\n"


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
