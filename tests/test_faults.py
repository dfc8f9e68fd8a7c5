"""Faults end in answers: provider failures, client cancellation, kills during snapshot writes,
and bounded resources."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from live_memory.testing.live_server import LiveServer, ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from live_memory.workspaces.store import SnapshotStore
from tests.fakes.repo_builder import one_file_repo

TIMEOUT_S = 3.0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return one_file_repo(tmp_path, "a.py", "A = 1\n")


GREP = Reply.tool_call("Grep", {"pattern": "A"})


@pytest.mark.parametrize(
    ("replies", "answered", "expected", "requests"),
    [
        ([Reply.error(429, "slow", headers={"retry-after": "0"}), Reply.text("fine")], True, "fine", 2),
        ([Reply.error(503, "busy"), Reply.text("fine")], True, "fine", 2),
        ([Reply.drop(), Reply.text("fine")], True, "fine", 2),
        ([Reply.error(429, "spend cap reached")], False, "will not clear by itself", 1),
        ([Reply.error(402, "insufficient balance")], False, "billing problem", 1),
        ([Reply.drop()] * 3, False, "connection failed", 3),
        ([GREP, Reply.drop(), Reply.drop(), Reply.drop()], True, "Partial answer", 4),
        ([GREP, Reply.stall(seconds=30), Reply.text("what I found so far")], True, "what I found so far", 3),
    ],
    ids=["429-retry-after", "503", "drop-once", "spend-cap", "402", "drops", "drop-mid-loop", "stall"],
)
async def test_each_provider_fault_ends_in_an_answer_or_a_clear_error_within_the_deadline(
    fake: FakeLLM, workspace: Path, tmp_path: Path, replies: list[Reply], answered: bool, expected: str, requests: int
) -> None:
    fake.script(*replies)
    settings = settings_for(fake.base_url, tmp_path / "data", default_timeout_s=TIMEOUT_S, force_explore_when_cold=0)
    with live_server(settings) as server:
        started = time.monotonic()
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)})
        elapsed = time.monotonic() - started
    assert is_error is not answered, text
    assert expected in text
    assert len(fake.requests) == requests
    assert elapsed < TIMEOUT_S + 2.0
    if any(r.kind == "stall" for r in replies):
        assert "timed_out=true" in text


async def wait_until(
    server: LiveServer, workspace: Path, predicate: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    async with httpx2.AsyncClient(base_url=server.url) as client:
        for _ in range(300):  # bounded polling of the server's own state
            stats = (await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"]
            if predicate(stats):
                return dict(stats)
            await client.get("/health")
    raise AssertionError(f"never reached: {predicate}")


async def test_a_cancelled_question_frees_its_slot_and_commits_nothing(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    release = threading.Event()
    fake.script(Reply.text("first"), Reply.stall(release, seconds=30), Reply.text("after the cancel"))
    settings = settings_for(fake.base_url, tmp_path / "data", concurrency="serial", force_explore_when_cold=0)
    try:
        with live_server(settings) as server:
            await ask_via_mcp(server.mcp_url, {"question": "first", "cwd": str(workspace)})
            task = asyncio.create_task(ask_via_mcp(server.mcp_url, {"question": "doomed", "cwd": str(workspace)}))
            assert await asyncio.to_thread(fake.stalled.wait, 10)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            stats = await wait_until(server, workspace, lambda s: s["in_flight"] == 0)
            assert stats["qa_retained"] == 1
            text, is_error = await ask_via_mcp(server.mcp_url, {"question": "next", "cwd": str(workspace)})
    finally:
        release.set()
    assert not is_error and text.startswith("after the cancel")
    assert "doomed" not in str(fake.requests[-1].body["messages"])


WRITERS = """
import os, signal, sys
from pathlib import Path
from live_memory.workspaces.store import SnapshotStore
for data_dir in sys.argv[1:]:
    if os.fork() == 0:  # one writer process per store, forked: a new interpreter each would cost seconds
        store = SnapshotStore(Path(data_dir))
        os.write(1, f"ready {os.getpid()}\\n".encode())
        generation = 0
        while True:
            generation += 1
            store.write_now("ws", {"workspace": "x" * 800_000, "window": {"version": generation}})
# Killed writers stay unreaped (their pids cannot be reused) until the test closes stdin (or is gone);
# then the whole process group goes, writers left over included.
sys.stdin.read()
os.killpg(0, signal.SIGKILL)
"""


def test_sigkill_during_snapshot_writes_leaves_a_loadable_snapshot(tmp_path: Path) -> None:
    """Writers run side by side (each its own process on its own store) and are killed at random points of
    their loops."""
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    data_dirs = [tmp_path / f"store{i}" for i in range(16)]
    stores = [SnapshotStore(data_dir) for data_dir in data_dirs]
    for store in stores:
        store.write_now("ws", {"window": {"version": 0}})
    parent = subprocess.Popen(
        [sys.executable, "-c", WRITERS, *map(str, data_dirs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own process group: the writers can be ended together
    )
    assert parent.stdin is not None and parent.stdout is not None
    try:
        writers = []
        for _ in data_dirs:
            ready, pid_field = parent.stdout.readline().split()
            assert ready == b"ready"
            writers.append(int(pid_field))
        for pid in writers:
            deadline = time.monotonic() + rng.uniform(0.0, 0.05)
            while time.monotonic() < deadline:  # a random point inside the write loops
                pass
            os.kill(pid, signal.SIGKILL)
    finally:
        parent.stdin.close()
        try:
            parent.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait(10)
        parent.stdout.close()
    for store in stores:
        loaded = store.load("ws")
        assert loaded is not None and loaded.window.version >= 0, "snapshot unreadable after a kill"
        assert not list(store.dir.glob("*.corrupt-*"))
        assert json.loads(store.path_for("ws").read_text())["schema"] == 1
