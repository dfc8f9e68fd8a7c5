"""A TCP proxy on loopback that can make a server slow or swallow its traffic: for "the store is slow" and
"the network ate the packets" tests.

    async with TcpProxy("127.0.0.1", cluster.port) as proxy:
        url = cluster.url(database, port=proxy.port)
        proxy.delay_s = 1.0      # every chunk either way arrives a second late
        proxy.black_hole()       # connections open, bytes go nowhere (nor does a refusal come back)
        proxy.restore()          # held bytes flow again

It runs on the test's event loop; leaving the `async with` closes every connection it carried.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any

CHUNK_BYTES = 64 * 1024


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.delay_s = 0.0
        self.connections = 0  # accepted so far
        self._open = asyncio.Event()
        self._open.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def port(self) -> int:
        assert self._server is not None, "use the proxy inside `async with`"
        return int(self._server.sockets[0].getsockname()[1])

    def black_hole(self) -> None:
        """From now on, bytes either way are held, unanswered (new connections still open)."""
        self._open.clear()

    def restore(self) -> None:
        self._open.set()

    async def __aenter__(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(client_writer)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.close()
            return
        self._writers.add(server_writer)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._pump(client_reader, server_writer))
                group.create_task(self._pump(server_reader, client_writer))
        except* (OSError, asyncio.IncompleteReadError):
            pass  # one side hung up abruptly: the other is closed below
        finally:
            for writer in (client_writer, server_writer):
                writer.close()
            self._tasks.discard(task)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while chunk := await source.read(CHUNK_BYTES):
            await self._open.wait()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)  # the latency being simulated, not a wait for an event
            sink.write(chunk)
            await sink.drain()
        with contextlib.suppress(OSError):
            if sink.can_write_eof():
                sink.write_eof()
