"""A graceful stop, in one place.

On SIGTERM/SIGINT (or the lifespan ending): stop admitting questions, cut running questions'
deadlines so they return their best answer within the grace period, and once no answer is still
on its way (at once when none runs) end idle MCP streams and let the server stop listening; the
lifespan then cancels the background tasks and flushes every snapshot under a deadline.

Idle streams: a connected MCP client holds an event stream that carries nothing but keep-alive pings
and would hold shutdown open until uvicorn's timeout (then cancelled, with a traceback in the log).
A handshake-era client (the SDK's) opens it with `GET /mcp`: `IdleStreams` serves that stream itself
so it can end it when a stop begins. A client of the 2026-07-28 protocol (Claude Code) opens it as a
`subscriptions/listen` request: `EndListens`, an MCP middleware (the SDK's public hook around every
request), ends it with the listen result the protocol defines for a deliberate close, as the SDK's own
`ListenHandler.close` would. Streams that carry an answer are left to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import SubscriptionsListenResult
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from live_memory.constants import MCP_PATH, SHUTDOWN_DRAIN_MARGIN_S

logger = logging.getLogger(__name__)
LISTEN_METHOD = "subscriptions/listen"  # the 2026-07-28 protocol's standing event stream


def drain_limit_s(grace_s: float) -> float:
    """How long a stop may take to deliver the answers it cut at `grace_s`: the grace plus a margin that is
    never longer than the grace itself (a service told to stop fast stops fast), nor under a second."""
    return grace_s + min(SHUTDOWN_DRAIN_MARGIN_S, max(1.0, grace_s))


SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignal:
    """Set once a stop begins; `begin` callbacks run first, exactly once, on the event loop. Also counts
    the MCP calls being answered, so idle streams end only once no answer is still on its way (a client
    whose event stream ends reconnects at once, and would fail against a server that stopped listening)."""

    def __init__(self, settle_s: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.event = asyncio.Event()
        self.settle_s = settle_s  # after the last answer, time for its frames to reach the socket
        self.clock = clock
        self._callbacks: list[Callable[[], None]] = []
        self._calls = 0
        self._quiet = asyncio.Event()
        self._quiet.set()
        self._last_answered_at: float | None = None  # when the last call ended (None: no call yet)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Around each MCP tool call."""
        self._calls += 1
        self._quiet.clear()
        try:
            yield
        finally:
            self._calls -= 1
            if self._calls == 0:
                self._last_answered_at = self.clock()
                self._quiet.set()

    async def answers_delivered(self) -> None:
        """Returns once a stop has begun, no call is still being answered, and the last answer has had
        `settle_s` to reach its socket (a stop long after it, or with no answer at all, waits for nothing)."""
        await self.event.wait()
        while self._calls:
            await self._quiet.wait()
        if self._last_answered_at is not None:
            settling = self._last_answered_at + self.settle_s - self.clock()
            if settling > 0:
                await anyio.sleep(settling)

    @property
    def begun(self) -> bool:
        return self.event.is_set()

    def on_begin(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def begin(self) -> None:
        if self.event.is_set():
            return
        self.event.set()
        for callback in self._callbacks:
            try:
                callback()
            except Exception:  # one failing step must not stop the others
                logger.exception("a shutdown step failed")

    @contextlib.contextmanager
    def from_signals(self, drain_limit_s: float) -> Iterator[None]:
        """On a termination signal, begin the stop at once but pass the signal on to the previous
        handler (the server's own, which closes the listener) only once the answers being written
        are delivered, at most `drain_limit_s` later: a client may still need a follow-up request to
        collect its answer. A second signal passes on at once. Only the main thread can install
        handlers; elsewhere (a server run inside tests) the lifespan's end begins the stop instead."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()
        previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
        pending: set[asyncio.Task[None]] = set()

        def pass_on(sig: int, frame: FrameType | None) -> None:
            chained = previous[signal.Signals(sig)]
            if callable(chained):
                chained(sig, frame)

        async def pass_on_when_delivered(sig: int, frame: FrameType | None) -> None:
            with anyio.move_on_after(drain_limit_s):
                await self.answers_delivered()
            pass_on(sig, frame)

        def on_loop(sig: int, frame: FrameType | None) -> None:
            if self.begun:
                pass_on(sig, frame)
                return
            self.begin()
            task = loop.create_task(pass_on_when_delivered(sig, frame))
            pending.add(task)
            task.add_done_callback(pending.discard)

        def handler(sig: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(on_loop, sig, frame)

        for sig in SIGNALS:
            signal.signal(sig, handler)
        try:
            yield
        finally:
            for sig, old in previous.items():
                if signal.getsignal(sig) is handler:
                    signal.signal(sig, old)


class EndListens:
    """MCP middleware: a `subscriptions/listen` stream ends, with its result (the graceful close the
    protocol defines), once a stop has begun and every answer is delivered; other requests pass through."""

    def __init__(self, stop: StopSignal) -> None:
        self.stop = stop

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != LISTEN_METHOD or ctx.request_id is None:
            return await call_next(ctx)
        result: list[HandlerResult] = []
        async with anyio.create_task_group() as tasks:

            async def listen() -> None:
                result.append(await call_next(ctx))
                tasks.cancel_scope.cancel()

            async def end_at_stop() -> None:
                await self.stop.answers_delivered()
                tasks.cancel_scope.cancel()

            tasks.start_soon(listen)
            tasks.start_soon(end_at_stop)
        if result:
            return result[0]
        return SubscriptionsListenResult(_meta={SUBSCRIPTION_ID_META_KEY: ctx.request_id})


class IdleStreams:
    """ASGI wrapper: serve the MCP event stream a client opens with `GET /mcp` (handshake-era
    protocol, stateless mode) as keep-alive pings that end when the stop begins or the client leaves."""

    def __init__(self, app: ASGIApp, stop: StopSignal, ping_interval_s: float) -> None:
        self.app = app
        self.stop = stop
        self.ping_interval_s = ping_interval_s
        self.open_streams = 0

    def _is_idle_stream(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"].rstrip("/") != MCP_PATH:
            return False
        headers = dict(scope["headers"])
        version = headers.get(b"mcp-protocol-version")
        if version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        accept = headers.get(b"accept", b"").decode("latin-1")
        return "text/event-stream" in accept and b"last-event-id" not in headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._is_idle_stream(scope):
            await self.app(scope, receive, send)
            return
        if self.stop.begun:  # as a server without an event stream answers: clients then go on without one
            await send({"type": "http.response.start", "status": 405, "headers": [(b"allow", b"POST")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache, no-transform"),
                    (b"connection", b"keep-alive"),
                ],
            }
        )
        self.open_streams += 1
        try:
            async with anyio.create_task_group() as tasks:

                async def then_end(job: Callable[[], Awaitable[object]]) -> None:
                    await job()
                    tasks.cancel_scope.cancel()

                tasks.start_soon(then_end, functools.partial(self._ping, send))
                tasks.start_soon(then_end, functools.partial(_until_disconnect, receive))
                tasks.start_soon(then_end, self.stop.answers_delivered)
            with contextlib.suppress(OSError, RuntimeError):  # the client may be gone already
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.open_streams -= 1

    async def _ping(self, send: Send) -> None:
        while True:
            await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})
            await anyio.sleep(self.ping_interval_s)


async def _until_disconnect(receive: Receive) -> None:
    message: Message = {"type": ""}
    while message["type"] != "http.disconnect":
        message = await receive()
