"""Faults an operator meets: a wedged worker pool, a stuck thread at shutdown, a data dir that refuses writes."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from live_memory.http.app import Timings
from live_memory.testing.live_server import ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from live_memory.testing.ports import free_port
from live_memory.testing.scripted_provider import ScriptedProvider
from live_memory.workspaces.store import describe_write_error
from live_memory.workspaces.workspace import workspace_id
from tests.cli.test_main import ServeProcess, cli_env
from tests.fakes.engine import engine_for
from tests.fakes.repo_builder import one_file_repo


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return one_file_repo(tmp_path, "app.py", "VALUE = 1\n")


async def _health(url: str) -> tuple[int, dict[str, Any]]:
    async with httpx2.AsyncClient(base_url=url, timeout=10) as client:
        response = await client.get("/health")
    return response.status_code, dict(response.json())


async def test_health_reports_a_wedged_worker_pool_as_degraded(fake: FakeLLM, tmp_path: Path) -> None:
    pool = ThreadPoolExecutor(max_workers=2)
    released = [False]  # the pool's threads poll a plain flag

    def stuck() -> None:
        while not released[0]:
            time.sleep(0.01)

    async def wedge() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(pool)
        for _ in range(2):
            loop.run_in_executor(None, stuck)

    try:
        with live_server(settings_for(fake.base_url, tmp_path / "data"), timings=Timings(health_probe_s=0.2)) as server:
            assert (await _health(server.url))[1]["workers"] == "ok"
            server.run_in_server(wedge())
            status, body = await _health(server.url)
            assert (status, body["status"], body["workers"]) == (503, "degraded", "stuck")
            released[0] = True
            status, body = await _health(server.url)
            assert (status, body["status"], body["workers"]) == (200, "ok", "ok")
    finally:
        released[0] = True
        pool.shutdown(wait=True)


def hold_fifo_open_for_writing(fifo: Path, within_s: float) -> int:
    """Open `fifo` for writing: that returns once a reader has opened it (bounded: past `within_s` a reader of
    our own releases the open, and the test fails). Kept open and never written, the reader's read never ends."""
    opened: list[int] = []
    opener = threading.Thread(target=lambda: opened.append(os.open(fifo, os.O_WRONLY)), daemon=True)
    opener.start()
    opener.join(within_s)
    if not opened:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the open return; a reader never came
        opener.join(within_s)
        for fd in opened:
            os.close(fd)
        raise AssertionError(f"nothing opened {fifo} for reading within {within_s} s")
    return opened[0]


def test_a_stopped_server_exits_even_when_a_worker_thread_is_stuck(tmp_path: Path) -> None:
    # No grace: the stuck request holds the stop for uvicorn's shortest drain (1 s), and the stuck thread
    # gets no wait of its own.
    env = cli_env(tmp_path, free_port(), LIVE_MEMORY_SHUTDOWN_GRACE_S="0")
    server = ServeProcess(env)
    writer = -1
    try:
        # A config file that is a FIFO: the reload's worker thread opens it and blocks reading it for good.
        fifo = tmp_path / "data" / "config.json"
        os.mkfifo(fifo)
        with socket.create_connection(("127.0.0.1", int(env["LIVE_MEMORY_PORT"])), timeout=10) as reload:
            reload.sendall(
                b"POST /reload HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                b"content-length: 2\r\n\r\n{}"
            )
            writer = hold_fifo_open_for_writing(fifo, within_s=10)
            started = time.monotonic()
            code = server.stop()
            elapsed = time.monotonic() - started
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.close()
        if writer >= 0:
            os.close(writer)
    assert code == 0, "".join(server.stderr)
    assert elapsed < 5, f"took {elapsed:.1f} s"  # the 1 s drain, and no wait for the stuck thread
    assert "worker threads still busy" in "".join(server.stderr)


def test_a_failed_write_is_described_precisely() -> None:
    data = Path("/srv/memory")
    assert describe_write_error(OSError(errno.ENOSPC, "No space left on device"), data) == (
        "the data dir /srv/memory is full (no space left on the device)"
    )
    assert "read-only file system" in describe_write_error(OSError(errno.EROFS, "Read-only file system"), data)
    assert "not writable" in describe_write_error(PermissionError(errno.EACCES, "Permission denied"), data)


def _block_snapshots(data_dir: Path) -> Path:
    """Put a file where the snapshot directory goes: every snapshot write fails until it is removed."""
    blocker = data_dir / "workspaces"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("in the way")
    return blocker


async def test_an_answer_that_cannot_be_saved_says_so_and_is_saved_once_the_disk_accepts_it(
    tmp_path: Path, workspace: Path
) -> None:
    engine = engine_for(tmp_path, ScriptedProvider())
    blocker = await asyncio.to_thread(_block_snapshots, tmp_path / "data")
    first = await engine.answerer.ask(str(workspace), "What is VALUE?")
    assert first.answer.startswith("scripted answer")
    assert "answer given, not yet saved: writing into the data dir" in first.answer
    assert (engine.service.store.failing() or "").startswith("writing into the data dir")
    await asyncio.to_thread(blocker.unlink)
    second = await engine.answerer.ask(str(workspace), "And now?")
    assert "not yet saved" not in second.answer
    assert engine.service.store.failing() is None
    [state] = engine.service.states()
    snapshot = await asyncio.to_thread(engine.service.store.load, workspace_id(state.root))
    assert snapshot is not None
    assert len(snapshot.window.history) == 4  # both exchanges (question + answer each) are on disk


async def test_health_and_the_answer_report_snapshots_that_cannot_be_written(
    fake: FakeLLM, tmp_path: Path, workspace: Path
) -> None:
    fake.responder = lambda request: Reply.text("VALUE is 1")
    with live_server(settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)) as server:
        blocker = await asyncio.to_thread(_block_snapshots, tmp_path / "data")
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "What is VALUE?", "cwd": str(workspace)})
        assert not is_error and text.startswith("VALUE is 1")
        assert "answer given, not yet saved" in text
        status, body = await _health(server.url)
        assert (status, body["status"]) == (503, "degraded")
        assert body["snapshots"].startswith("failing: writing into the data dir")
        await asyncio.to_thread(blocker.unlink)
        text, _ = await ask_via_mcp(server.mcp_url, {"question": "Again?", "cwd": str(workspace)})
        assert "not yet saved" not in text
        status, body = await _health(server.url)
        assert (status, body["snapshots"]) == (200, "ok")
