"""Connection bounds: a connection that never completes a request is closed, past the cap the
longest-open idle connection makes room, and the cap follows the open-file limit."""

from __future__ import annotations

import asyncio
import resource
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from live_memory import constants as C
from live_memory.http.connections import BoundedH11Protocol, bounded_protocol, connection_cap
from live_memory.testing.quick_server import QuickServer

REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
SLOW_REQUEST = b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"


class Gate:
    def __init__(self) -> None:
        self.entered = threading.Event()  # the slow request is running
        self.release = threading.Event()  # let it answer


@contextmanager
def serving(max_connections: int, request_timeout_s: float, gate: Gate | None = None) -> Iterator[int]:
    """A plain app behind the bounded protocol on a loopback port. `GET /slow` is a request that keeps
    running until the gate opens."""

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def slow(request: Request) -> PlainTextResponse:
        assert gate is not None
        gate.entered.set()
        await asyncio.to_thread(gate.release.wait, 5)
        return PlainTextResponse("slow ok")

    app = Starlette(routes=[Route("/", hello), Route("/slow", slow)])
    config = uvicorn.Config(
        app, http=bounded_protocol(max_connections, request_timeout_s), limit_concurrency=8, log_level="warning"
    )
    ready = threading.Event()
    server = QuickServer(config, ready.set, grace_s=5.0)  # uvicorn without its 0.1 s ticks at start and stop
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    loop = asyncio.new_event_loop()

    def run() -> None:
        try:
            loop.run_until_complete(server.serve(sockets=[sock]))
        finally:
            ready.set()  # a server that failed to start wakes the test at once

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10) and server.started, "the test server did not start"
    try:
        yield int(sock.getsockname()[1])
    finally:
        if gate is not None:
            gate.release.set()
        loop.call_soon_threadsafe(server.exit_event.set)
        thread.join(10)
        loop.close()
        sock.close()


@pytest.fixture
def small_server() -> Iterator[int]:
    """3 connections, 0.1 s to send a request."""
    with serving(3, 0.1) as port:
        yield port


def _closed_by_server(sock: socket.socket, within_s: float = 5.0) -> bool:
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


def _read_response(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"ok"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_a_connection_that_sends_no_request_is_closed(small_server: int) -> None:
    with socket.create_connection(("127.0.0.1", small_server)) as silent:
        assert _closed_by_server(silent)
    with socket.create_connection(("127.0.0.1", small_server)) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
        assert _closed_by_server(slow)


def test_past_the_cap_the_longest_open_idle_connection_makes_room() -> None:
    # A long request timeout: only the cap can explain a closed connection here.
    with serving(3, 60.0) as port:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            response = httpx2.get(f"http://127.0.0.1:{port}/", timeout=5)
            assert response.text == "ok"
            assert _closed_by_server(idle[0])
            assert not _closed_by_server(idle[1], within_s=0.05)  # the newer ones stay
        finally:
            for sock in idle:
                sock.close()


def test_a_connection_with_a_request_running_is_never_closed_for_being_slow() -> None:
    gate = Gate()
    with serving(3, 0.05, gate) as port, socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(SLOW_REQUEST)
        assert gate.entered.wait(5)
        assert not _closed_by_server(client, within_s=0.15)  # three request timeouts pass
        gate.release.set()
        assert _read_response(client).endswith(b"slow ok")


def test_a_busy_connection_is_not_closed_to_make_room() -> None:
    gate = Gate()
    with serving(1, 60.0, gate) as port, socket.create_connection(("127.0.0.1", port)) as busy:
        busy.sendall(SLOW_REQUEST)
        assert gate.entered.wait(5)
        with socket.create_connection(("127.0.0.1", port)) as newcomer:
            newcomer.sendall(REQUEST)
            assert _read_response(newcomer).endswith(b"ok")
        gate.release.set()
        assert _read_response(busy).endswith(b"slow ok")


def test_client_connections_get_at_most_half_the_open_file_limit() -> None:
    assert connection_cap(256) == 128
    assert connection_cap(1024) == 512
    assert connection_cap(65536) == 1000


def test_a_tiny_open_file_limit_still_leaves_the_minimum_number_of_connections() -> None:
    assert connection_cap(10) == C.MIN_CONNECTIONS
    assert C.MIN_CONNECTIONS <= C.MAX_CONNECTIONS


def test_without_an_argument_the_cap_follows_the_process_open_file_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    expected = C.MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else connection_cap(soft)
    assert connection_cap() == expected


def test_the_protocol_class_carries_its_own_bounds_without_changing_the_default() -> None:
    protocol = bounded_protocol(7, 1.5)
    assert issubclass(protocol, BoundedH11Protocol)
    assert (protocol.max_connections, protocol.request_timeout_s) == (7, 1.5)
    assert (BoundedH11Protocol.max_connections, BoundedH11Protocol.request_timeout_s) == (
        C.MAX_CONNECTIONS,
        C.REQUEST_HEADER_TIMEOUT_S,
    )
