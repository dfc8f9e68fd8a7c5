"""The MCP surface in-process (the SDK's own client, no HTTP): answers with their trailer, progress
heartbeats on an injected interval, clear tool errors, and the submit/result pair."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from live_memory.core.messages import ChatRequest, ChatResponse
from live_memory.http.jobs import JobRegistry
from live_memory.http.mcp_tools import build_mcp_server
from live_memory.http.shutdown import StopSignal
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.fakes.engine import Engine, engine_for
from tests.fakes.repo_builder import one_file_repo


class GatedProvider(ScriptedProvider):
    """Answers only once `gate` is set: a slow model the test controls."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = anyio.Event()
        self.waiting = anyio.Event()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.waiting.set()
        await self.gate.wait()
        return await super().chat(request)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return one_file_repo(tmp_path)


def mcp_for(engine: Engine, *, async_tools: bool = False, progress_interval_s: float = 60.0) -> Client:
    jobs = JobRegistry(ttl_s=60, max_jobs=8)
    server = build_mcp_server(
        engine.answerer, jobs, StopSignal(), async_tools=async_tools, progress_interval_s=progress_interval_s
    )
    return Client(server)


def text_of(result: object) -> str:
    return "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))


async def test_an_answer_comes_back_as_text_with_its_trailer(tmp_path: Path, workspace: Path) -> None:
    provider = ScriptedProvider(text_response("VERSION is 1."))
    async with mcp_for(engine_for(tmp_path, provider)) as client:
        result = await client.call_tool("ask_live_memory", {"question": "What is VERSION?", "cwd": str(workspace)})
    assert not result.is_error
    text = text_of(result)
    assert text.startswith("VERSION is 1.")
    assert "[live-memory] model=scripted-model" in text


async def test_progress_is_reported_while_the_model_is_slow(tmp_path: Path, workspace: Path) -> None:
    provider = GatedProvider()
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        if len(seen) == 2:
            provider.gate.set()

    with anyio.fail_after(10):
        async with mcp_for(engine_for(tmp_path, provider), progress_interval_s=0.01) as client:
            result = await client.call_tool(
                "ask_live_memory", {"question": "q", "cwd": str(workspace)}, progress_callback=on_progress
            )
    assert not result.is_error and text_of(result).startswith("scripted answer")
    assert len(seen) >= 2 and seen == sorted(seen)


async def test_a_missing_cwd_is_a_tool_error_that_says_what_to_pass(tmp_path: Path) -> None:
    async with mcp_for(engine_for(tmp_path, ScriptedProvider())) as client:
        result = await client.call_tool("ask_live_memory", {"question": "q"})
    assert result.is_error
    assert "cwd is required" in text_of(result)


async def test_an_unexpected_failure_reaches_the_client_without_internals(tmp_path: Path, workspace: Path) -> None:
    def explode(request: ChatRequest) -> ChatResponse:
        raise RuntimeError("internal detail /secret/path")

    async with mcp_for(engine_for(tmp_path, ScriptedProvider(responder=explode))) as client:
        result = await client.call_tool("ask_live_memory", {"question": "q", "cwd": str(workspace)})
    text = text_of(result)
    assert result.is_error or "Partial answer" in text
    assert "/secret/path" not in text and "Traceback" not in text


async def test_submit_then_result_hands_the_answer_over_once(tmp_path: Path, workspace: Path) -> None:
    provider = ScriptedProvider(text_response("later"))
    async with mcp_for(engine_for(tmp_path, provider), async_tools=True) as client:
        submitted = await client.call_tool("ask_live_memory_submit", {"question": "q", "cwd": str(workspace)})
        job_id = next(word for word in text_of(submitted).split() if word.startswith("job_")).strip(".,'\"`")
        with anyio.fail_after(10):
            while True:  # the pair's protocol is polling: a client asks until the answer is there
                text = text_of(await client.call_tool("ask_live_memory_result", {"job_id": job_id}))
                if "running" not in text:
                    break
                await anyio.sleep(0.02)  # a client's poll interval: lets the question's worker threads report
        again = await client.call_tool("ask_live_memory_result", {"job_id": job_id})
    assert text.startswith("later")
    assert again.is_error and "unknown job id" in text_of(again)
