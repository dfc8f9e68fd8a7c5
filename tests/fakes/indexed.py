"""A checkout's tools with its symbol index built and ready: the build child's own work, run here in a thread,
then the keeper opens the index as it does after a restart (its directories unchanged: nothing listed again)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from live_memory.tools import Toolbox, ToolLimits
from live_memory.tools.index_build import build_or_refresh
from tests.fakes.engine import until


@contextlib.asynccontextmanager
async def indexed_toolbox(root: Path, index: Path, limits: ToolLimits | None = None) -> AsyncIterator[Toolbox]:
    limits = limits or ToolLimits()
    await build_or_refresh(root, index, limits.secret_globs, rebuild=False)
    box = await Toolbox.create(root, limits, index_path=index)
    keeper = asyncio.create_task(box.keep_index())
    try:
        await until(lambda: box.index is not None and box.index.ready, timeout_s=10)
        yield box
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
