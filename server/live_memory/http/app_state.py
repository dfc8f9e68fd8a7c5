"""What the routes read from a request: the lifespan yields an `AppState`, and Starlette copies it (shallowly)
into every request's `request.state`, so a handler is a plain function of its request.

`create_app` builds the value once; the lifespan hands it over when the server starts serving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypedDict

from live_memory.providers.base import ChatProvider
from live_memory.settings.config import Settings
from live_memory.workspaces.service import WorkspaceService

ProviderFactory = Callable[[Settings], ChatProvider | None]


class AppState(TypedDict):
    service: WorkspaceService
    started_at: float  # the service's clock when the app was built: the uptime counts from here
    running: Settings  # the options read once at start: one that needs a restart keeps this value until then
    provider_factory: ProviderFactory  # a reload builds its provider the way the app built the first one
    config_lock: asyncio.Lock  # one read-modify-write of config.json at a time
    health_probe_s: float  # how long /health waits for a worker thread before calling it stuck
