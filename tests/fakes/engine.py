"""The service's core without HTTP: a `WorkspaceService` and an `Answerer` wired like `create_app`
does, around a scripted (or any) provider, for fast unit tests of questions and workspaces."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from live_memory.http.app import default_tool_factory
from live_memory.providers.base import ChatProvider
from live_memory.settings.config import load_settings
from live_memory.settings.runtime import Runtime
from live_memory.team.sync import team_sync_for
from live_memory.testing.off_loop import off_loop
from live_memory.tools import TOOL_SCHEMAS
from live_memory.workspaces.answerer import Answerer
from live_memory.workspaces.service import WorkspaceService


@dataclass
class Engine:
    service: WorkspaceService
    answerer: Answerer


def engine_for(tmp_path: Path, provider: ChatProvider | None, **options: str) -> Engine:
    """`options` are option keys -> values, applied as LIVE_MEMORY_* variables."""
    return off_loop(_build_engine, tmp_path, provider, options)


def _build_engine(tmp_path: Path, provider: ChatProvider | None, options: dict[str, str]) -> Engine:
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_API_KEY": "x", "LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD": "0"}
    env.update({f"LIVE_MEMORY_{k.upper()}": str(v) for k, v in options.items()})
    settings = load_settings(env=env, data_dir=tmp_path / "data")
    team = team_sync_for(settings) if settings.team_store else None
    service = WorkspaceService(Runtime(settings, provider), tool_factory=default_tool_factory, team=team)
    return Engine(service, Answerer(service, TOOL_SCHEMAS))


async def until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Yield to the event loop until `condition` holds: no time passes, other tasks just run; bounded,
    so a condition that never comes true fails the test instead of hanging it."""
    with anyio.fail_after(timeout_s):
        while not condition():  # noqa: ASYNC110 - observable state with no event to wait on
            await asyncio.sleep(0)
