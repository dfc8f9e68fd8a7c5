"""POST /check: the server's own 1-token round trip and its verdict on a checkout, for `live-memory doctor`."""

from __future__ import annotations

from pathlib import Path

import httpx2

from live_memory.settings.config import load_settings
from live_memory.testing.live_server import live_server, settings_for
from live_memory.testing.llm_server import FakeLLM
from live_memory.testing.off_loop import off_loop


def test_check_sends_one_token_to_the_servers_model_and_locates_the_checkout(fake: FakeLLM, tmp_path: Path) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data", allowed_roots=str(tmp_path))) as server:
        inside = httpx2.post(server.url + "/check", json={"cwd": str(tmp_path)}, timeout=30).json()
        outside = httpx2.post(server.url + "/check", json={"cwd": "/", "model": False}, timeout=30).json()
    assert inside["model"] == {"ok": True, "detail": f"claude-haiku-4-5 at {fake.base_url} answered"}
    assert fake.requests[-1].body["max_tokens"] == 1
    assert inside["workspace"]["ok"] is True
    assert "model" not in outside and outside["workspace"]["ok"] is False
    assert "outside the allowed roots" in outside["workspace"]["detail"]


def test_check_without_a_credential_says_what_to_set(tmp_path: Path) -> None:
    settings = off_loop(load_settings, env={"HOME": str(tmp_path), "LIVE_MEMORY_OAUTH": "0"}, data_dir=tmp_path / "d")
    with live_server(settings) as server:
        answer = httpx2.post(server.url + "/check", json={}, timeout=30)
        refused = httpx2.post(server.url + "/check", json={"cwd": 3}, timeout=30)
    assert answer.json()["model"]["ok"] is False and "LIVE_MEMORY_API_KEY" in answer.json()["model"]["detail"]
    assert refused.status_code == 422
