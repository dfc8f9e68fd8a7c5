"""Run the real Live Memory app under uvicorn on a loopback port, in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from starlette.applications import Starlette

from live_memory.http.app import create_app
from live_memory.settings.config import Settings, load_settings
from live_memory.testing.off_loop import off_loop
from live_memory.testing.quick_server import QuickServer

T = TypeVar("T")

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
GRACEFUL_SHUTDOWN_S = 8.0
# A provider retry in a test server backs off from this, not the production half second: tests see the same
# retries (and the same doubling), without sitting idle.
TEST_RETRY_BASE_S = "0.01"


def settings_for(fake_base_url: str, data_dir: Path, *, protocol: str = "anthropic", **options: Any) -> Settings:
    """Settings pointing at the fake provider; `options` are LIVE_MEMORY_* values by option key."""
    env: dict[str, str] = {
        "HOME": str(data_dir.parent),
        "LIVE_MEMORY_PROVIDER": "anthropic" if protocol == "anthropic" else "openai",
        "LIVE_MEMORY_BASE_URL": fake_base_url if protocol == "anthropic" else fake_base_url + "/v1",
        "LIVE_MEMORY_API_KEY": "test-key",
        "LIVE_MEMORY_PROVIDER_RETRY_BASE_S": TEST_RETRY_BASE_S,
    }
    if protocol != "anthropic":  # the anthropic profile's default model is claude-haiku-4-5 already
        env["LIVE_MEMORY_MODEL"] = "gpt-5-mini"
    for key, value in options.items():
        env[f"LIVE_MEMORY_{key.upper()}"] = str(value)
    return off_loop(load_settings, env=env, data_dir=data_dir)


class LiveServer:
    """`with LiveServer(app) as server:` serves on 127.0.0.1:<free port> until the block ends."""

    def __init__(self, app: Starlette) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.mcp_url = f"{self.url}/mcp"
        self._ready = threading.Event()
        self._server = QuickServer(
            uvicorn.Config(app, log_level="warning", lifespan="on"), self._ready.set, grace_s=GRACEFUL_SHUTDOWN_S
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        try:
            self.loop.run_until_complete(self._server.serve(sockets=[self.sock]))
        finally:
            self.loop.close()
            self._ready.set()  # a server that failed to start wakes the waiting test at once

    def run_in_server(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run a coroutine on the server's own event loop (the app's state lives there)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def __enter__(self) -> LiveServer:
        self._thread.start()
        if self._ready.wait(START_TIMEOUT_S) and self._server.started and self._thread.is_alive():
            return self
        raise RuntimeError("the Live Memory test server did not start")

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed already: the server has stopped
            self.loop.call_soon_threadsafe(self._server.exit_event.set)
        self._thread.join(STOP_TIMEOUT_S)
        with contextlib.suppress(OSError):
            self.sock.close()


@contextlib.contextmanager
def live_server(settings: Settings, **kwargs: Any) -> Iterator[LiveServer]:
    with LiveServer(off_loop(create_app, settings, **kwargs)) as server:
        yield server


async def ask_via_mcp(
    mcp_url: str,
    arguments: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    progress_seen: list[float] | None = None,
    agent: str | None = None,
) -> tuple[str, bool]:
    """Call ask_live_memory with the official MCP client; returns (text, is_error)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if progress_seen is not None:
            progress_seen.append(progress)

    http = httpx2.AsyncClient(headers=dict(headers or {}), timeout=httpx2.Timeout(30.0, read=120.0))
    info = Implementation(name=agent, version="1.0") if agent else None
    async with http, Client(streamable_http_client(mcp_url, http_client=http), client_info=info) as client:
        result = await client.call_tool(
            "ask_live_memory",
            dict(arguments),
            progress_callback=on_progress if progress_seen is not None else None,
        )
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    return text, bool(result.is_error)
