"""The app's lifespan: the data dir it prepares before serving."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from starlette.testclient import TestClient

from live_memory.http.app import create_app
from tests.fakes.live_server import settings_for


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_dir_is_created_private_whatever_the_umask(tmp_path: Path) -> None:
    data = tmp_path / "deep" / "data"
    previous = os.umask(0o022)
    try:
        with TestClient(create_app(settings_for("http://127.0.0.1:9", data))):
            pass
    finally:
        os.umask(previous)
    assert mode_of(data) == 0o700 and mode_of(data.parent) == 0o700


def test_temp_files_left_by_interrupted_writes_are_removed_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "workspaces").mkdir(parents=True)
    stale = data / "workspaces" / ".abc123.x1y2.tmp"
    stale.write_text("{half a snapshot")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = data / "workspaces" / ".abc123.z9.tmp"  # a write that may still be going on
    fresh.write_text("{")
    keep = data / "workspaces" / "abc123.json"
    keep.write_text("{}")
    with TestClient(create_app(settings_for("http://127.0.0.1:9", data))):
        pass
    assert not stale.exists() and fresh.exists() and keep.exists()
