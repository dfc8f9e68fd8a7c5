"""Two ask_live_memory calls in flight at once in one MCP session (an ordinary Claude Code turn with
parallel tool calls): both are answered, and both stay in memory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
from mcp import Client

from live_memory.core.messages import ChatRequest, ChatResponse
from live_memory.http.jobs import JobRegistry
from live_memory.http.mcp_tools import build_mcp_server
from live_memory.http.shutdown import StopSignal
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.fakes.engine import engine_for


class BothInFlight(ScriptedProvider):
    """Holds every answer until two questions are being answered at once."""

    def __init__(self) -> None:
        super().__init__()
        self.both = asyncio.Event()
        self.arrived = 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        self.arrived += 1
        if self.arrived >= 2:
            self.both.set()
        await self.both.wait()
        asked = [m.text for m in request.messages if m.text.startswith("## Question")][-1]
        return text_response("answer to " + asked.split("\n")[1])


async def test_two_parallel_calls_in_one_session_are_both_answered_and_kept(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    provider = BothInFlight()
    engine = await anyio.to_thread.run_sync(lambda: engine_for(tmp_path, provider))
    server = build_mcp_server(engine.answerer, JobRegistry(ttl_s=60, max_jobs=4), StopSignal(), async_tools=False)
    async with Client(server) as client:
        with anyio.fail_after(30):
            first, second = await asyncio.gather(
                client.call_tool("ask_live_memory", {"question": "where is A?", "cwd": str(repo)}),
                client.call_tool("ask_live_memory", {"question": "where is B?", "cwd": str(repo)}),
            )
    answers = ["\n".join(getattr(b, "text", "") for b in r.content) for r in (first, second)]
    assert answers[0].startswith("answer to where is A?") and answers[1].startswith("answer to where is B?")
    state = (await engine.service.open(str(repo))).state
    kept = sorted(t.question for t in state.window.history if t.kind == "question")
    assert kept == ["where is A?", "where is B?"]  # the later commit was rebased onto the first
    assert state.stats.rebased_commits == 1
