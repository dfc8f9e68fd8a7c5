"""The OS watcher, preload documents, and the reset/empty routes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from live_memory.core.prompts import PRELOADED_HEADING
from live_memory.settings.config import Settings
from live_memory.testing.live_server import LiveServer, ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from tests.fakes.repo_builder import preload_repo


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(min_cacheable_tokens=64) as server:
        server.responder = lambda request: Reply.text("ok")
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return preload_repo(tmp_path)


def preloading(fake: FakeLLM, tmp_path: Path, globs: str) -> Settings:
    """A server that preloads the documents matching `globs` and accepts a tool-less first answer."""
    return settings_for(fake.base_url, tmp_path / "data", preload_globs=globs, force_explore_when_cold=0)


async def stats(server: LiveServer, workspace: Path) -> dict[str, Any]:
    async with httpx2.AsyncClient(base_url=server.url) as client:
        response = await client.get("/stats", params={"cwd": str(workspace)})
    return dict(response.json().get("workspace", {}))


async def test_an_edit_by_another_process_is_noticed_before_the_next_question(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    fake.script(Reply.tool_call("Read", {"file_path": "app.py"}), Reply.text("VALUE is 1"))
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        await ask_via_mcp(server.mcp_url, {"question": "What is VALUE?", "cwd": str(workspace)})
        for attempt in range(200):  # bounded: each round writes again and re-checks the server's state
            (workspace / "app.py").write_text(f"VALUE = {attempt + 2}\n")
            if (await stats(server, workspace))["stale_files"] == 1:
                break
            async with httpx2.AsyncClient(base_url=server.url) as client:
                await client.get("/health")  # a round trip gives the watcher's debounce time to fire
        else:
            pytest.fail("the watcher never reported the out-of-band edit")
        await ask_via_mcp(server.mcp_url, {"question": "And now?", "cwd": str(workspace)})
    assert "app.py: CHANGED since you read it" in str(fake.requests[-1].body["messages"])


async def test_preloaded_documents_are_in_the_first_prompt_under_their_heading(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    with live_server(preloading(fake, tmp_path, "docs/*.md")) as server:
        await ask_via_mcp(server.mcp_url, {"question": "hi", "cwd": str(workspace)})
    frozen = fake.requests[0].body["system"][1]["text"]
    assert PRELOADED_HEADING in frozen and "Welcome." in frozen
    assert "x" * 100 in frozen  # big.md fits the default per-file cap


async def test_reset_reloads_now_and_empty_waits_for_the_next_question(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    with live_server(preloading(fake, tmp_path, "docs/intro.md")) as server:
        await ask_via_mcp(server.mcp_url, {"question": "remember me", "cwd": str(workspace)})
        async with httpx2.AsyncClient(base_url=server.url) as client:
            reset = (await client.post("/reset", json={"cwd": str(workspace)})).json()
            after_reset = await stats(server, workspace)
            emptied = (await client.post("/clear", json={"cwd": str(workspace)})).json()
            after_empty = await client.get("/stats", params={"cwd": str(workspace)})
            refused = await client.post("/reset", json={"cwd": "relative"})
        await ask_via_mcp(server.mcp_url, {"question": "fresh?", "cwd": str(workspace)})
    assert reset["dropped"]["qa_pairs"] == 1 and reset["reloaded"] is True
    assert after_reset["qa_retained"] == 0 and after_reset["file_contexts"] == 1  # preloaded again at once
    assert emptied["reloaded"] is False and after_empty.status_code == 404  # nothing loaded until asked
    assert refused.status_code == 400 and "absolute" in refused.json()["error"]
    messages = str(fake.requests[-1].body["messages"])
    assert "remember me" not in messages
    assert "Welcome." in fake.requests[-1].body["system"][1]["text"]
    assert not list((tmp_path / "data" / "workspaces").glob("*.corrupt-*"))
