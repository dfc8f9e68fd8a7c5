"""ask_live_memory end to end: the official MCP client -> uvicorn on loopback -> the fake provider."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path

import anyio
import httpx2
import pytest

from live_memory.constants import MIN_TIMEOUT_S
from live_memory.http.app import Timings
from live_memory.settings.config import load_settings
from live_memory.testing.live_server import ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from tests.fakes.repo_builder import small_repo

TRAILER = re.compile(
    r"\n---\n\[live-memory\] model=\S+ latency=[\d.]+s tokens=\d+/\d+\(in/out\) cached=\d+% "
    r"tool_calls=(\d+) files_read=(\d+) cost=\S+ context=\d+%"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    files = {"src/settings.py": "TIMEOUT_SECONDS = 42\nRETRIES = 3\n", "README.md": "# Demo\nA small demo project.\n"}
    return small_repo(tmp_path, files)


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
async def test_answer_arrives_as_plain_text_with_trailer(
    fake: FakeLLM, workspace: Path, tmp_path: Path, protocol: str
) -> None:
    fake.script(Reply.text("Timeouts live in src/settings.py (TIMEOUT_SECONDS = 42)."))
    settings = settings_for(fake.base_url, tmp_path / "data", protocol=protocol, force_explore_when_cold=0)
    with live_server(settings) as server:
        text, is_error = await ask_via_mcp(
            server.mcp_url, {"question": "Where is the timeout set?", "cwd": str(workspace)}
        )
    assert not is_error, text
    assert text.startswith("Timeouts live in src/settings.py (TIMEOUT_SECONDS = 42).")
    assert not text.startswith("{")  # plain text, not a structured {"result": ...} copy
    match = TRAILER.search(text)
    assert match, text
    request = fake.requests[0]
    assert request.protocol == protocol
    assert "Where is the timeout set?" in FakeLLM.last_user_text(request.body)
    assert "  settings.py" in str(request.body)  # the directory tree is in the prompt


async def test_tool_calls_round_trip_through_the_loop(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.script(
        Reply.tool_call("Grep", {"pattern": "TIMEOUT", "output_mode": "files_with_matches"}),
        Reply.tool_call("Read", {"file_path": "src/settings.py"}),
        Reply.text("TIMEOUT_SECONDS is 42, in src/settings.py line 1."),
    )
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "What is the timeout?", "cwd": str(workspace)})
    assert not is_error, text
    match = TRAILER.search(text)
    assert match and match.groups() == ("2", "1"), text
    assert len(fake.requests) == 3
    grep_result = FakeLLM.last_user_text(fake.requests[1].body)
    assert "src/settings.py" in grep_result
    read_result = FakeLLM.last_user_text(fake.requests[2].body)
    assert "TIMEOUT_SECONDS = 42" in read_result


async def test_tool_error_goes_back_to_the_model_as_an_error_result(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    fake.script(
        Reply.tool_call("Read", {"file_path": "../../etc/passwd"}),
        Reply.text("I could not read that file."),
    )
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "Show passwd", "cwd": str(workspace)})
    assert not is_error, text
    blocks = fake.requests[1].body["messages"][-1]["content"]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    assert results and results[0].get("is_error") is True
    assert "root:" not in str(fake.requests[1].body)


async def test_soft_deadline_returns_a_best_effort_answer(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    release = threading.Event()
    fake.script(Reply.tool_call("Grep", {"pattern": "RETRIES"}), Reply.stall(release, seconds=60))
    # The shortest deadline allowed: however far the model got, no answer comes (the wrap-up stalls too).
    settings = settings_for(fake.base_url, tmp_path / "data", default_timeout_s=MIN_TIMEOUT_S)
    try:
        with live_server(settings) as server:
            text, is_error = await ask_via_mcp(server.mcp_url, {"question": "Retries?", "cwd": str(workspace)})
    finally:
        release.set()
    assert not is_error, text
    assert "No complete answer within the time budget" in text
    assert "timed_out=true" in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"question": "q", "cwd": "relative/path"}, "cwd must be an absolute path"),
        ({"question": "q", "cwd": "/definitely/not/here"}, "not an existing directory"),
        ({"question": "   ", "cwd": "WORKSPACE"}, "question is empty"),
        ({"question": "q"}, "cwd is required"),
    ],
)
async def test_bad_arguments_give_clear_error_results(
    fake: FakeLLM, workspace: Path, tmp_path: Path, arguments: dict[str, str], message: str
) -> None:
    arguments = {k: (str(workspace) if v == "WORKSPACE" else v) for k, v in arguments.items()}
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        text, is_error = await ask_via_mcp(server.mcp_url, arguments)
    assert is_error
    assert message in text
    assert fake.requests == []


async def test_project_header_is_the_default_cwd(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.script(Reply.text("ok"))
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    with live_server(settings) as server:
        text, is_error = await ask_via_mcp(
            server.mcp_url, {"question": "hi"}, headers={"X-Live-Memory-Project": str(workspace)}
        )
        assert not is_error, text
        async with httpx2.AsyncClient() as client:
            stats = (await client.get(f"{server.url}/stats", params={"cwd": str(workspace)})).json()
    assert stats["workspace"]["workspace"] == str(workspace)


@pytest.mark.parametrize(
    ("replies", "expected"),
    [
        ([Reply.error(429, "slow down")], "rate or spend limit reached"),
        ([Reply.error(529, "Overloaded")] * 3, "temporarily unavailable, HTTP 529"),
        ([Reply.error(401, "invalid x-api-key")], "API key was rejected"),
        ([Reply.prompt_too_long()] * 2, "prompt too long"),
    ],
)
async def test_provider_failures_surface_as_clear_messages(
    fake: FakeLLM, workspace: Path, tmp_path: Path, replies: list[Reply], expected: str
) -> None:
    fake.script(*replies)
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    with live_server(settings) as server:
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)})
    assert is_error
    assert expected in text
    assert "Traceback" not in text


async def test_rate_limit_with_retry_after_is_retried(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.script(Reply.error(429, "slow down", headers={"retry-after": "0"}), Reply.text("after the wait"))
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    with live_server(settings) as server:
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)})
    assert not is_error, text
    assert text.startswith("after the wait")
    assert len(fake.requests) == 2


async def test_without_credential_health_works_and_questions_say_what_to_set(workspace: Path, tmp_path: Path) -> None:
    settings = await asyncio.to_thread(load_settings, env={"HOME": str(tmp_path)}, data_dir=tmp_path / "data")
    with live_server(settings) as server:
        async with httpx2.AsyncClient() as client:
            health = (await client.get(f"{server.url}/health")).json()
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)})
    assert (health["status"], health["credential"]) == ("degraded", "missing")  # still HTTP 200
    assert is_error
    assert "LIVE_MEMORY_API_KEY" in text
    assert "ANTHROPIC_API_KEY" in text


async def call(mcp_url: str, tool: str, arguments: dict[str, object]) -> tuple[str, bool]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=60.0))
    async with http, Client(streamable_http_client(mcp_url, http_client=http)) as client:
        result = await client.call_tool(tool, arguments)
    return "\n".join(getattr(b, "text", "") for b in result.content), bool(result.is_error)


async def test_async_tools_submit_then_collect_once(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    release = threading.Event()
    fake.script(Reply.stall(release, seconds=30, then=Reply.text("the late answer")))
    settings = settings_for(fake.base_url, tmp_path / "data", async_tools=1, force_explore_when_cold=0)
    try:
        with live_server(settings) as server:
            job, is_error = await call(
                server.mcp_url, "ask_live_memory_submit", {"question": "q", "cwd": str(workspace)}
            )
            assert not is_error and job.startswith("job_")
            assert fake.stalled.wait(10)
            assert await call(server.mcp_url, "ask_live_memory_result", {"job_id": job}) == ("[running]", False)
            release.set()
            text = "[running]"
            while text == "[running]":  # polls a real background job; each poll is a round trip, not a sleep
                text, is_error = await call(server.mcp_url, "ask_live_memory_result", {"job_id": job})
            assert text.startswith("the late answer") and not is_error
            again, is_error = await call(server.mcp_url, "ask_live_memory_result", {"job_id": job})
            assert is_error and "unknown job id" in again
    finally:
        release.set()


async def test_async_tools_are_absent_unless_enabled(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        text, is_error = await call(server.mcp_url, "ask_live_memory_submit", {"question": "q", "cwd": str(workspace)})
    assert is_error and "Unknown tool" in text


async def test_progress_notifications_flow_while_an_answer_is_slow(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    release = threading.Event()
    fake.script(Reply.stall(release, seconds=30, then=Reply.text("slow answer")))
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    progress: list[float] = []
    try:
        with live_server(settings, timings=Timings(progress_interval_s=0.2)) as server:
            asking = asyncio.create_task(
                ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)}, progress_seen=progress)
            )
            with anyio.fail_after(10):
                while len(progress) < 2:  # released only once heartbeats have reached the client
                    await asyncio.wait([asking], timeout=0.05)
                    assert not asking.done(), asking.result()
            release.set()
            text, is_error = await asking
    finally:
        release.set()
    assert not is_error and text.startswith("slow answer")
    assert 0.2 <= progress[0] < progress[1]  # elapsed seconds (to 0.1 s), one report per interval


async def test_the_cold_guard_fires_once_on_a_cold_window_and_never_on_a_warm_one(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    fake.script(Reply.text("a guess"), Reply.text("still a guess"), Reply.text("warm answer"))
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        cold, _ = await ask_via_mcp(server.mcp_url, {"question": "timeout?", "cwd": str(workspace)})
        warm, _ = await ask_via_mcp(server.mcp_url, {"question": "again?", "cwd": str(workspace)})
    nudges = [r for r in fake.requests if "not grounded yet" in str(r.body["messages"][-1])]
    assert len(fake.requests) == 3 and len(nudges) == 1  # rejected once, then accepted; the warm one never
    assert cold.startswith("still a guess") and warm.startswith("warm answer")


async def test_a_five_megabyte_file_read_stays_within_the_context_limit(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "huge.log").write_text("".join(f"line {i:07d} " + "x" * 80 + "\n" for i in range(55_000)))
    fake.context_limit_tokens = 200_000  # the model's real limit: a request over it gets a 400
    reads = [
        Reply.tool_call("Read", {"file_path": "huge.log", "offset": 1 + k * 2000, "limit": 2000}) for k in range(6)
    ]
    fake.script(*reads, Reply.text("it is a log of numbered lines"))
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server:
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "what is huge.log?", "cwd": str(workspace)})
    assert not is_error, text
    assert text.startswith("it is a log of numbered lines")
    assert max(r.prompt_tokens for r in fake.requests) <= 200_000
    assert all(r.usage is not None for r in fake.requests)  # no request was refused as too long


async def test_stats_show_which_agent_asked_but_not_what(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    with live_server(settings) as server:
        for agent in ("codex-mcp-client", "opencode", "codex-mcp-client"):
            _, is_error = await ask_via_mcp(
                server.mcp_url, {"question": f"secret plans of {agent}", "cwd": str(workspace)}, agent=agent
            )
            assert not is_error
        async with httpx2.AsyncClient(base_url=server.url) as client:
            stats = (await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"]
    assert stats["agents"] == {"codex-mcp-client": 2, "opencode": 1}
    assert [q["agent"] for q in stats["recent_questions"]] == ["codex-mcp-client", "opencode", "codex-mcp-client"]
    assert "secret plans" not in str(stats)  # the questions themselves stay off /stats by default


async def raw_tool_call(mcp_url: str, cwd: Path, headers: dict[str, str]) -> None:
    """ask_live_memory as Codex, OpenCode and Gemini CLI call it: a JSON-RPC tools/call whose client said its
    name only in its `initialize` (a stateless server never sees the two together)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask_live_memory", "arguments": {"question": "where?", "cwd": str(cwd)}},
    }
    sent = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18", **headers}
    async with httpx2.AsyncClient(timeout=30) as client:
        response = await client.post(mcp_url, json=body, headers=sent)
    assert response.status_code == 200 and '"isError":false' in response.text, response.text


async def test_a_call_without_client_info_is_counted_under_the_agent_header_its_entry_sends(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    fake.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    with live_server(settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)) as server:
        await raw_tool_call(server.mcp_url, workspace, {"X-Live-Memory-Agent": "gemini-cli"})
        await raw_tool_call(server.mcp_url, workspace, {"X-Live-Memory-Agent": "codex" + "-x" * 40})
        await raw_tool_call(server.mcp_url, workspace, {})
        async with httpx2.AsyncClient(base_url=server.url) as client:
            stats = (await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"]
    assert stats["agents"] == {"gemini-cli": 1, ("codex" + "-x" * 40)[:64]: 1, "unknown": 1}
