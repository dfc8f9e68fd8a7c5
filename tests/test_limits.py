"""Connection bounds: idle connections cannot starve the server of file descriptors, and a flood of
identical errors cannot flood the log."""

from __future__ import annotations

import logging
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from live_memory.connections import bounded_protocol, connection_cap
from live_memory.logging_setup import RepeatFilter
from tests.test_cli import cli_env, free_port

FD_LIMIT = 256
IDLE_CONNECTIONS = 300


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


class Server:
    """`live-memory serve` under a 256 open-file limit, its stderr counted byte by byte."""

    def __init__(self, env: dict[str, str]) -> None:
        self.url = f"http://127.0.0.1:{env['LIVE_MEMORY_PORT']}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "live_memory", "serve"],
            env=env,
            stderr=subprocess.PIPE,
            preexec_fn=_limit_open_files,  # noqa: PLW1509 - a plain setrlimit, no threads involved
        )
        self.log_bytes = 0
        self.started = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self.started.wait(30), "server did not start"

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log_bytes += len(line)
            if b"serving http://" in line:
                self.started.set()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(cli_env(tmp_path, free_port(), LIVE_MEMORY_SHUTDOWN_GRACE_S="0.5"))
    yield running
    running.close()


def test_idle_connections_cannot_starve_the_server_of_file_descriptors(server: Server) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE_CONNECTIONS):  # connect and say nothing
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        before = server.log_bytes
        started = time.monotonic()
        for _ in range(5):
            response = httpx.get(server.url + "/health", timeout=5)
            assert response.status_code == 200 and response.json()["workers"] == "ok"  # it answers, promptly
        assert time.monotonic() - started < 5
        time.sleep(1.0)  # the flood, if any, is measured over a wall-clock interval
        assert server.log_bytes - before < 20_000, f"{server.log_bytes - before} bytes logged"
    finally:
        for sock in idle:
            sock.close()


def test_repeated_log_lines_are_let_through_a_few_times_a_minute_then_counted() -> None:
    now = [1000.0]
    repeat = RepeatFilter(burst=3, window_s=60.0, clock=lambda: now[0])

    def record(msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, args, None)

    passed = [repeat.filter(record("accept failed: %s", "Too many open files")) for _ in range(10)]
    assert passed == [True] * 3 + [False] * 7
    assert repeat.filter(record("another message"))  # a different message has its own budget
    now[0] += 61
    summary = record("accept failed: %s", "Too many open files")
    assert repeat.filter(summary)
    assert "(7 more like this in the last 60 s were not logged)" in summary.getMessage()


@pytest.fixture
def small_server() -> Iterator[int]:
    """A plain app behind the bounded protocol: 3 connections, 0.3 s to send a request."""

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/", hello)])
    config = uvicorn.Config(app, http=bounded_protocol(3, 0.3), limit_concurrency=4, log_level="warning")
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        thread.join(0.01)
    yield int(sock.getsockname()[1])
    server.should_exit = True
    thread.join(10)
    sock.close()


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


def test_a_connection_that_sends_no_request_is_closed(small_server: int) -> None:
    with socket.create_connection(("127.0.0.1", small_server)) as silent:
        assert _closed_by_server(silent)
    with socket.create_connection(("127.0.0.1", small_server)) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
        assert _closed_by_server(slow)


def test_past_the_cap_the_longest_open_idle_connection_makes_room(small_server: int) -> None:
    idle = [socket.create_connection(("127.0.0.1", small_server)) for _ in range(3)]
    try:
        response = httpx.get(f"http://127.0.0.1:{small_server}/", timeout=5)
        assert response.text == "ok"
        assert _closed_by_server(idle[0])
    finally:
        for sock in idle:
            sock.close()


def test_client_connections_get_at_most_half_the_open_file_limit() -> None:
    assert connection_cap(256) == 128
    assert connection_cap(1024) == 512
    assert connection_cap(65536) == 1000


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"


def limits_table() -> str:
    """The limits table of docs/operations.md, from the constants it documents."""
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

    from live_memory import constants as C
    from live_memory.http_bodies import SMALL_BODY_BYTES

    rows = [
        ("question length", f"{C.MAX_QUESTION_CHARS:,} characters", "refused with a clear error"),
        ("MCP request body (`/mcp`)", _size(DEFAULT_MAX_REQUEST_BODY_SIZE), "refused with HTTP 413 (MCP SDK)"),
        ("`/notify` body", _size(C.NOTIFY_MAX_BODY_BYTES), "refused with HTTP 413"),
        ("`/notify` events per request", f"{C.NOTIFY_MAX_EVENTS:,}", "refused with HTTP 422"),
        ("other JSON bodies (`/reset`, `/ledger/forget`, ...)", _size(SMALL_BODY_BYTES), "refused with HTTP 413"),
        (
            "questions running at once, per workspace",
            f"{C.MAX_PARALLEL_QUERIES} (option `max_parallel_queries`)",
            "the next ones wait",
        ),
        (
            "questions waiting, per workspace",
            f"{C.MAX_WAITING_QUERIES} (option `max_waiting_queries`)",
            f"told to retry after {C.BUSY_RETRY_AFTER_S:.0f} s",
        ),
        (
            "time a question may wait for its turn",
            f"{C.ADMISSION_WAIT_SHARE:.0%} of its deadline",
            f"told to retry after {C.BUSY_RETRY_AFTER_S:.0f} s",
        ),
        (
            "workspaces in memory",
            f"{C.MAX_LOADED_WORKSPACES} (option `max_loaded_workspaces`)",
            "the least recently used idle one is unloaded (its snapshot stays)",
        ),
        (
            "open client connections",
            f"{C.MAX_CONNECTIONS:,}, and at most half the open-file limit",
            "the longest-open idle connection is closed; with every connection busy, new requests get HTTP 503",
        ),
        (
            "time to send a complete request head",
            f"{C.REQUEST_HEADER_TIMEOUT_S:.0f} s",
            "the connection is closed",
        ),
        ("idle kept-alive connection", f"{C.KEEP_ALIVE_TIMEOUT_S} s", "the connection is closed"),
        ("request head (request line and headers)", _size(C.MAX_REQUEST_HEAD_BYTES), "refused with HTTP 400"),
        (
            "watched directories per workspace",
            f"{C.WATCH_MAX_DIRECTORIES:,}",
            'not watched; `/stats` shows `"off (too many directories)"` (hooks and re-validation still apply)',
        ),
        (
            "identical log lines",
            f"{C.LOG_REPEAT_BURST} per {C.LOG_REPEAT_WINDOW_S:.0f} s",
            "counted; the count is logged with the next one written",
        ),
        (
            "`/health` worker probe",
            f"{C.HEALTH_WORKER_PROBE_S:.0f} s",
            '`"workers": "stuck"`, status `degraded`, HTTP 503',
        ),
        (
            "worker threads after the server stopped",
            f"{C.SHUTDOWN_THREAD_WAIT_S:.0f} s (at most the grace period)",
            "the process exits without them",
        ),
    ]
    lines = ["| limit | value | beyond it |", "| --- | --- | --- |"]
    lines += [f"| {name} | {value} | {beyond} |" for name, value, beyond in rows]
    return "\n".join(lines)


def _between_markers(text: str) -> str:
    start, end = "<!-- limits table: generated from the constants, checked by tests/test_limits.py -->", "<!-- end -->"
    assert start in text, "docs/operations.md has no limits table"
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def test_the_documented_limits_are_the_ones_in_the_code() -> None:
    docs = Path(__file__).parent.parent / "docs" / "operations.md"
    assert _between_markers(docs.read_text(encoding="utf-8")) == limits_table(), (
        "docs/operations.md's limits table is out of date; regenerate it from tests.test_limits.limits_table()"
    )


def test_the_units_allow_the_documented_open_files() -> None:
    deploy = Path(__file__).parent.parent / "deploy"
    docs = (Path(__file__).parent.parent / "docs" / "operations.md").read_text(encoding="utf-8")
    for unit in ("live-memory.service", "live-memory.user.service"):
        assert "\nLimitNOFILE=65536\n" in (deploy / unit).read_text(encoding="utf-8")
    assert "`LimitNOFILE=65536`" in docs
