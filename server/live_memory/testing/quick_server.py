"""uvicorn for the test servers (Live Memory in a thread, the fake provider): uvicorn's own startup and
graceful-shutdown order (listener closed, connections asked to finish, lifespan shutdown last), without
its timers: no 100 ms tick before a stop is seen, no fixed pause, no 100 ms polls while connections
finish. Every test starts and stops servers, so those add up."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable

import uvicorn

POLL_S = 0.005


class QuickServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None], *, grace_s: float) -> None:
        super().__init__(config)
        self.on_ready = on_ready
        self.grace_s = grace_s
        self.exit_event = asyncio.Event()  # binds to the server's loop on first use

    async def main_loop(self) -> None:
        await self.on_tick(0)  # the default headers (date), as uvicorn's first tick sets them
        self.on_ready()
        await self.exit_event.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        # Connections and their tasks finish on their own: poll them (no event exists), bounded like
        # uvicorn's graceful-shutdown timeout, then cancel what is left.
        for _ in range(int(self.grace_s / POLL_S)):
            if not (self.server_state.connections or self.server_state.tasks):
                break
            await asyncio.sleep(POLL_S)
        for task in list(self.server_state.tasks):
            task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        for connection in list(self.server_state.connections):  # a stalled response must not hold its socket
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()
        for server in self.servers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), self.grace_s)
        await self.lifespan.shutdown()
