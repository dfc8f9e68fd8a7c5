"""Connection bounds: idle HTTP connections cannot use up the process's file descriptors.

uvicorn closes a kept-alive connection after `timeout_keep_alive`, but a connection that never sends a
request is held forever, and it does not bound how many are open. Under the common 1024 open-file
limit, ~1,100 silent connections made `/health` and every question time out while the log filled
with "Too many open files". This protocol (uvicorn's h11 one, plus):

- closes a connection that has not sent a complete request within `request_timeout_s`;
- past `max_connections` open connections, closes the longest-open idle one (no request running), so
  a new client (a health check, a question) still gets in; connections with a request running (an
  answer being written, an event stream) are never closed for this;
- the cap follows the open-file limit: at most half of it goes to client connections, the rest stays
  for snapshots, tools' pipes and the watcher.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from live_memory import constants as C


def connection_cap(open_file_limit: int | None = None) -> int:
    """Client connections allowed: the configured cap, and at most half the soft open-file limit."""
    if open_file_limit is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        open_file_limit = soft if soft != resource.RLIM_INFINITY else C.MAX_CONNECTIONS * 2
    return max(C.MIN_CONNECTIONS, min(C.MAX_CONNECTIONS, open_file_limit // 2))


class BoundedH11Protocol(H11Protocol):
    max_connections: int = C.MAX_CONNECTIONS
    request_timeout_s: float = C.REQUEST_HEADER_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._opened_at = 0.0
        self._request_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._opened_at = self.loop.time()
        self._arm_request_timer()
        if len(self.connections) > self.max_connections:
            self._close_an_idle_one()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._idle():  # bytes of a request that is not complete yet (or a new one after keep-alive)
            self._arm_request_timer()
        else:
            self._cancel_request_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_request_timer()
        super().connection_lost(exc)

    def _idle(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm_request_timer(self) -> None:
        if self._request_timer is None:
            self._request_timer = self.loop.call_later(self.request_timeout_s, self._request_timed_out)

    def _cancel_request_timer(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def _request_timed_out(self) -> None:
        self._request_timer = None
        if self._idle() and not self.transport.is_closing():
            self.transport.close()

    def _close_an_idle_one(self) -> None:
        idle = [
            c
            for c in self.connections
            if isinstance(c, BoundedH11Protocol) and c is not self and c._idle() and not c.transport.is_closing()
        ]
        if idle:
            min(idle, key=lambda c: c._opened_at).transport.close()


def bounded_protocol(max_connections: int, request_timeout_s: float = C.REQUEST_HEADER_TIMEOUT_S) -> type[H11Protocol]:
    """The protocol class for `uvicorn.Config(http=...)`, with these bounds."""
    return type(
        "BoundedH11Protocol",
        (BoundedH11Protocol,),
        {"max_connections": max_connections, "request_timeout_s": request_timeout_s},
    )
