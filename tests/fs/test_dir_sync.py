"""Directory fsyncs run after the writer returns, coalesced, and a flush waits for all of them."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from live_memory.fs.dir_sync import DirectorySyncer
from live_memory.workspaces.spend import SpendTracker
from live_memory.workspaces.store import SnapshotStore

WAIT_S = 10.0


class HeldFsync:
    """An fsync that records what it syncs and, while `hold` is clear, waits for it (a slow disk)."""

    def __init__(self) -> None:
        self.calls: list[Path] = []
        self.started = threading.Event()
        self.hold = threading.Event()

    def __call__(self, path: str | os.PathLike[str]) -> None:
        self.calls.append(Path(path))
        self.started.set()
        assert self.hold.wait(WAIT_S), "the test never released the fsync"


def test_requests_return_at_once_and_those_made_during_an_fsync_share_the_next_one(tmp_path: Path) -> None:
    disk = HeldFsync()
    syncer = DirectorySyncer(delay_s=0.0, fsync=disk)
    syncer.request(tmp_path)
    assert disk.started.wait(WAIT_S)  # the first fsync is running (and stuck on the slow disk)
    for _ in range(5):
        syncer.request(tmp_path)  # none of these waits for the disk
    assert syncer.pending and disk.calls == [tmp_path]
    disk.hold.set()
    assert syncer.flush(WAIT_S)
    assert not syncer.pending
    assert disk.calls == [tmp_path, tmp_path] and syncer.syncs == 2  # six requests, two fsyncs


def test_a_flush_skips_the_delay_and_syncs_named_files_before_their_directory(tmp_path: Path) -> None:
    order: list[Path] = []

    def record(path: str | os.PathLike[str]) -> None:
        order.append(Path(path))

    syncer = DirectorySyncer(delay_s=3600.0, fsync=record, fsync_files=record)  # no timer wait
    syncer.request(tmp_path, tmp_path / "spend.json")
    assert syncer.flush(WAIT_S)
    assert order == [tmp_path / "spend.json", tmp_path]
    assert syncer.flush(WAIT_S)  # nothing pending: returns at once


def test_a_failing_fsync_is_logged_and_does_not_stall_a_flush(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken(path: str | os.PathLike[str]) -> None:
        raise OSError(5, "Input/output error")

    syncer = DirectorySyncer(delay_s=0.0, fsync=broken)
    syncer.request(tmp_path)
    assert syncer.flush(WAIT_S)
    assert "could not fsync" in caplog.text and "Input/output error" in caplog.text


async def test_a_saved_snapshot_is_on_disk_before_its_directory_fsync_runs(tmp_path: Path) -> None:
    """The answer path waits for the snapshot's own write, not for the directory's fsync."""
    disk = HeldFsync()
    store = SnapshotStore(tmp_path / "data", syncer=DirectorySyncer(delay_s=0.0, fsync=disk))
    try:
        assert await store.save("ws", lambda: (1, {"window": {"version": 41}}))
        loaded = await asyncio.to_thread(store.load, "ws")  # what a restart after a kill would read
        assert loaded is not None and loaded.window.version == 41
        assert await asyncio.to_thread(disk.started.wait, WAIT_S)
        assert store.syncer.pending  # the directory fsync is still running, after save returned
    finally:
        disk.hold.set()
    assert await asyncio.to_thread(store.syncer.flush, WAIT_S)
    assert disk.calls == [store.dir]


def test_spend_writes_finishing_out_of_order_keep_the_newest_tally(tmp_path: Path) -> None:
    tracker = SpendTracker(tmp_path, syncer=DirectorySyncer(delay_s=0.0))
    tracker.record("ws", 0.25, background=False)
    older = tracker.pending_save(0.25)
    tracker.record("ws", 0.5, background=False)
    newer = tracker.pending_save(0.5)
    assert older is not None and newer is not None and tracker.pending_save(0.0) is None
    newer()
    older()  # a slower worker thread finishing last
    assert SpendTracker(tmp_path).today().foreground_usd == pytest.approx(0.75)
    assert tracker.syncer.flush(WAIT_S)
