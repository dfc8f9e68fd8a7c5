"""GET /: provider, model, endpoint and credential; spend today vs the cap, split into questions and background
work; answer latency; the last few questions per workspace (their text only when enabled); uptime."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import httpx2
import pytest

from live_memory.http.status_page import uptime
from live_memory.testing.live_server import ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM


class Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    @classmethod
    def of(cls, page: str) -> str:
        parser = cls()
        parser.feed(page)
        return " ".join(" ".join(parser.parts).split())


@pytest.mark.parametrize("show", [False, True], ids=["question-text-hidden", "question-text-shown"])
async def test_the_status_page_shows_provider_spend_latency_and_recent_questions(
    fake: FakeLLM, tmp_path: Path, show: bool
) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    settings = settings_for(
        fake.base_url,
        tmp_path / "data",
        force_explore_when_cold=0,
        daily_budget_usd="5",
        status_show_questions=int(show),
    )
    with live_server(settings) as server:
        await ask_via_mcp(server.mcp_url, {"question": "where is <main>?", "cwd": str(workspace)})
        async with httpx2.AsyncClient(base_url=server.url) as client:
            page = (await client.get("/")).text
            stats = (await client.get("/stats")).json()["server"]
    text = Text.of(page)
    assert f"anthropic · claude-haiku-4-5 · {fake.base_url} · credential: api key" in text
    spent = stats["today"]["foreground_usd"]
    assert spent > 0
    assert f"Spend today: ${spent:.4f} of the $5.00 daily cap (questions ${spent:.4f}, background $0.0000)" in text
    p50 = stats["latency"]["p50_s"]
    assert f"answer latency p50 {p50:.1f} s / p95 {p50:.1f} s" in text
    assert f"Recent questions · {workspace}" in text and "Tool calls" in text and "answered" in text
    assert "up 0 min" in text
    assert ("where is <main>?" in text) is show  # the text only when the user enabled it ...
    assert "<main>" not in page  # ... and escaped


def test_uptime_reads_in_minutes_under_an_hour() -> None:
    assert [uptime(s) for s in (59, 3599, 3600, 5400, 3 * 86400)] == ["0 min", "59 min", "1.0 h", "1.5 h", "3.0 d"]


async def test_who_asked_survives_a_restart_and_shows_on_the_status_page(fake: FakeLLM, tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    with live_server(settings) as server:
        for agent in ("codex", "opencode", "codex"):
            await ask_via_mcp(server.mcp_url, {"question": f"q from {agent}", "cwd": str(workspace)}, agent=agent)
    with live_server(settings) as server:  # a restart: the counts come back with the snapshot
        async with httpx2.AsyncClient(base_url=server.url) as client:
            before = Text.of((await client.get("/")).text)
            await ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)}, agent="gemini-cli")
            stats = (await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"]
            page = (await client.get("/")).text
    text = Text.of(page)
    assert "on disk, not loaded yet 3 codex 2 · opencode 1" in before
    assert stats["agents"] == {"codex": 2, "opencode": 1, "gemini-cli": 1}
    assert sum(stats["agents"].values()) == stats["questions_answered"] == 4
    assert "Asked by" in text and "codex 2 · gemini-cli 1 · opencode 1" in text
    assert "Agent Latency" in text and " gemini-cli 0." in text  # the recent question's row names its agent
    # No tool read anything for the agents yet: a net loss is said in words, never as "~-6,269 tokens saved".
    assert "no tokens saved yet: this server's own spend exceeds what its tools read for the agents by ~" in text
    assert "~-" not in text
