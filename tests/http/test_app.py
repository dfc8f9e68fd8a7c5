"""The app's lifespan: the data dir it prepares before serving."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

from starlette.testclient import TestClient

from live_memory.core.messages import ChatRequest, ChatResponse, ProviderInfo
from live_memory.http.app import create_app
from live_memory.testing.live_server import settings_for


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


class Preparing:
    """A provider that only records whether its client was prepared (the lifespan's business, not a model call)."""

    def __init__(self) -> None:
        self.info = ProviderInfo("recording", "anthropic", "m", "http://127.0.0.1:9", True)
        self.prepared = threading.Event()

    async def prepare(self) -> None:
        self.prepared.set()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        raise AssertionError("no question is asked here")

    async def aclose(self) -> None:
        return None


def test_after_a_restart_the_provider_s_client_is_prepared_at_start_and_never_on_a_first_start(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    fresh = Preparing()
    with TestClient(create_app(settings_for("http://127.0.0.1:9", data), lambda _settings: fresh)):
        pass
    assert not fresh.prepared.is_set()  # nothing on disk: a server never asked anything pays nothing
    (data / "workspaces").mkdir(exist_ok=True)
    (data / "workspaces" / "abc123.meta").write_text(
        json.dumps({"workspace_id": "abc123", "workspace": str(tmp_path), "questions_answered": 1})
    )
    restarted = Preparing()
    with TestClient(create_app(settings_for("http://127.0.0.1:9", data), lambda _settings: restarted)):
        assert restarted.prepared.wait(10)
