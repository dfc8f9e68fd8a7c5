"""Per-question server overhead: 200 questions through the real MCP client, fake provider answering
instantly, against a baseline of the same provider calls made directly with the SDK.

Run: `python -m bench.overhead` (also part of `make bench`). Writes bench/results/overhead.json.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import anthropic
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.fakes.live_server import live_server, settings_for
from tests.fakes.llm_server import FakeLLM, Reply

from bench._common import percentile, write_results

QUESTIONS = 200


async def through_server(mcp_url: str, workspace: Path) -> list[float]:
    timings: list[float] = []
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=120.0))
    async with http, Client(streamable_http_client(mcp_url, http_client=http)) as client:
        for index in range(QUESTIONS):
            started = time.perf_counter()
            result = await client.call_tool(
                "ask_live_memory", {"question": f"question {index}?", "cwd": str(workspace)}
            )
            timings.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result.content
    return timings


async def direct(base_url: str) -> list[float]:
    timings: list[float] = []
    async with anthropic.AsyncAnthropic(base_url=base_url, api_key="bench", max_retries=0) as client:
        for index in range(QUESTIONS):
            started = time.perf_counter()
            await client.messages.create(
                model="claude-haiku-4-5",
                max_tokens=256,
                messages=[{"role": "user", "content": f"question {index}?"}],
            )
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
        fake.responder = lambda request: Reply.text("instant answer")
        workspace = Path(tmp) / "repo"
        (workspace / ".git").mkdir(parents=True)
        (workspace / "app.py").write_text("print('hello')\n")
        settings = settings_for(fake.base_url, Path(tmp) / "data", force_explore_when_cold=0)
        with live_server(settings) as server:
            served = asyncio.run(through_server(server.mcp_url, workspace))
        baseline = asyncio.run(direct(fake.base_url))
    figures = {
        "questions": QUESTIONS,
        "server_p50_ms": round(statistics.median(served), 2),
        "server_p95_ms": round(percentile(served, 0.95), 2),
        "direct_provider_p50_ms": round(statistics.median(baseline), 2),
        "direct_provider_p95_ms": round(percentile(baseline, 0.95), 2),
    }
    figures["overhead_p50_ms"] = round(figures["server_p50_ms"] - figures["direct_provider_p50_ms"], 2)
    figures["ratio_p50"] = round(figures["server_p50_ms"] / figures["direct_provider_p50_ms"], 2)
    write_results("overhead", figures)
    print("per-question overhead (ms)")
    for key, value in figures.items():
        print(f"  {key:<24} {value}")
    return figures


if __name__ == "__main__":
    main()
