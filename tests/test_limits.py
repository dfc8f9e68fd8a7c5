"""Limits of the running server: idle connections cannot starve it of file descriptors, and the
documented limits are the ones in the code."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from live_memory.testing.ports import free_port
from tests.cli.test_main import cli_env

FD_LIMIT = 256
IDLE_CONNECTIONS = 300


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


class Server:
    """`live-memory serve` under a 256 open-file limit, its output (log and access log) counted byte by byte."""

    def __init__(self, env: dict[str, str]) -> None:
        self.url = f"http://127.0.0.1:{env['LIVE_MEMORY_PORT']}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "live_memory", "serve"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=_limit_open_files,  # noqa: PLW1509 - a plain setrlimit, no threads involved
        )
        self.log_bytes = 0
        self.health_lines = 0  # access-log lines of /health requests, counted as they are written
        self.logged = threading.Condition()
        self.started = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self.started.wait(30), "server did not start"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.logged:
                self.log_bytes += len(line)
                self.health_lines += b'"GET /health ' in line
                self.logged.notify_all()
            if b"serving http://" in line:
                self.started.set()

    def wait_for_health_lines(self, count: int, within_s: float) -> int:
        """The bytes logged once `count` /health requests are in the log (everything logged before them too)."""
        with self.logged:
            assert self.logged.wait_for(lambda: self.health_lines >= count, within_s), self.health_lines
            return self.log_bytes

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(cli_env(tmp_path, free_port(), LIVE_MEMORY_SHUTDOWN_GRACE_S="0.5"))
    yield running
    running.close()


def test_idle_connections_cannot_starve_the_server_of_file_descriptors(server: Server) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    idle: list[socket.socket] = []
    before = server.log_bytes
    try:
        for _ in range(IDLE_CONNECTIONS):  # connect and say nothing
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        started = time.monotonic()
        for _ in range(5):
            response = httpx2.get(server.url + "/health", timeout=5)
            assert response.status_code == 200 and response.json()["workers"] == "ok"  # it answers, promptly
        assert time.monotonic() - started < 5
        # What the flood of connections and the requests made it log: no error for each connection it refused
        # or closed (the access log of the five requests is all there is).
        logged = server.wait_for_health_lines(5, within_s=10) - before
        assert logged < 20_000, f"{logged} bytes logged"
    finally:
        for sock in idle:
            sock.close()


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"


def limits_table() -> str:
    """The limits table of docs/operations.md, from the constants it documents."""
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

    from live_memory import constants as C
    from live_memory.http.bodies import SMALL_BODY_BYTES

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
            f"{C.WATCH_MAX_DIRECTORIES:,} (option `watch_max_directories`)",
            "the directories of the recently used files first, then the shallow ones, up to nine tenths; a "
            'directory created past the cap is not watched; `/stats` shows `"on (capped: ...)"` (hooks and '
            "re-validation still apply)",
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
