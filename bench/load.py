"""Load under chaos: concurrent MCP sessions over several workspaces while clients flood /notify
and the fake provider injects 429s, 529s, stalls and dropped connections.

The server runs as a real `live-memory serve` subprocess (so its RSS can be sampled from
/proc; `run_load(serve=...)` can start it otherwise); the fake provider and all clients run in this
process. Reports p50/p99 question latency, errors by kind, the server's answered count vs what its
memory holds (retained + summarized into the ledger must equal answered in both modes: a raced commit
is rebased, never dropped), HTTP 5xx counts, and RSS over time.

Run: `python -m bench.load` (full: 16 sessions x 50 questions over 4 workspaces, 8 notify
clients x 20k events). `tests/test_load.py` runs a reduced form in CI.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.provenance import write_json
from live_memory.constants import RETRY_BASE_DELAY_S
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply

RESULTS = Path(__file__).parent / "results" / "load.json"


@dataclass
class LoadReport:
    questions_sent: int = 0
    answers_returned: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    http_5xx: int = 0
    notify_events: int = 0
    answered: int = 0  # as the server counts them (an answer may reach a client that gave up)
    committed: int = 0
    summarized: int = 0
    rebased: int = 0
    rss_mb: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms) or [0.0]
        return {
            "questions_sent": self.questions_sent,
            "answers_returned": self.answers_returned,
            "answered_by_server": self.answered,
            "committed": self.committed,
            "summarized_into_ledger": self.summarized,
            "rebased_commits": self.rebased,
            "lost_answers": self.answered - self.committed - self.summarized,
            "p50_ms": round(statistics.median(lat), 1),
            "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * (len(lat) - 1)))], 1),
            "errors_by_kind": dict(self.errors),
            "http_5xx": self.http_5xx,
            "notify_events": self.notify_events,
            "rss_mb_start": self.rss_mb[0] if self.rss_mb else None,
            "rss_mb_peak": max(self.rss_mb) if self.rss_mb else None,
            "rss_mb_end": self.rss_mb[-1] if self.rss_mb else None,
        }


def chaos(seed: int) -> Any:
    rng = random.Random(seed)

    def respond(request: RecordedRequest) -> Reply:
        roll = rng.random()
        if roll < 0.05:
            return Reply.error(429, "rate limited", headers={"retry-after": "0"})
        if roll < 0.08:
            return Reply.error(529, "Overloaded")
        if roll < 0.10:
            return Reply.drop()
        if roll < 0.12:
            return Reply.stall(seconds=0.3, then=Reply.text("slow but fine"))
        return Reply.text("answer " + FakeLLM.last_user_text(request.body)[-60:])

    return respond


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _classify(text: str) -> str:
    for needle, kind in (
        ("rate", "rate_limited"),
        ("temporarily unavailable", "overloaded"),
        ("connection failed", "dropped"),
        ("busy", "busy"),
        ("time budget", "deadline"),
    ):
        if needle in text:
            return kind
    return "other"


async def _session(url: str, workspaces: list[Path], index: int, questions: int, report: LoadReport) -> None:
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=120.0))
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        for number in range(questions):
            workspace = workspaces[(index + number) % len(workspaces)]
            report.questions_sent += 1
            started = time.perf_counter()
            result = await client.call_tool(
                "ask_live_memory", {"question": f"session {index} question {number}?", "cwd": str(workspace)}
            )
            text = "\n".join(getattr(b, "text", "") for b in result.content)
            if result.is_error:
                report.errors[_classify(text)] += 1
            else:
                report.answers_returned += 1
                report.latencies_ms.append((time.perf_counter() - started) * 1000)


async def _notifier(base: str, workspaces: list[Path], index: int, events: int, report: LoadReport) -> None:
    batch = 50
    content = "x" * 4096
    async with httpx2.AsyncClient(base_url=base, timeout=30.0) as client:
        for start in range(0, events, batch):
            workspace = workspaces[(index + start // batch) % len(workspaces)]
            body = {
                "cwd": str(workspace),
                "events": [
                    {"path": f"src/f{(start + k) % 200}.py", "kind": "read", "content": content}
                    for k in range(min(batch, events - start))
                ],
            }
            response = await client.post("/notify", json=body)
            report.http_5xx += response.status_code >= 500
            report.notify_events += len(body["events"])


async def _sample_rss(pid: int, report: LoadReport, stop: asyncio.Event) -> None:
    while not stop.is_set():
        report.rss_mb.append(round(_rss_mb(pid), 1))
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except TimeoutError:
            pass


async def _drive(
    base: str, pid: int, workspaces: list[Path], *, sessions: int, questions: int, notifiers: int, events: int
) -> LoadReport:
    report = LoadReport()
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_rss(pid, report, stop))
    # Every workspace gets loaded first, so /notify has somewhere to land.
    await _session(f"{base}/mcp", workspaces, 0, len(workspaces), report)
    await asyncio.gather(
        *(_session(f"{base}/mcp", workspaces, i, questions, report) for i in range(sessions)),
        *(_notifier(base, workspaces, i, events // max(notifiers, 1), report) for i in range(notifiers)),
    )
    stop.set()
    await sampler
    async with httpx2.AsyncClient(base_url=base, timeout=30.0) as client:
        rows = (await client.get("/stats")).json()["workspaces"]
    report.answered = sum(r["questions_answered"] for r in rows)
    report.committed = sum(r["qa_retained"] for r in rows)
    report.summarized = sum(r["qa_summarized"] for r in rows)
    report.rebased = sum(r["rebased_commits"] for r in rows)
    return report


# Starts the server with this environment (LIVE_MEMORY_* settings, HOME) and yields (base URL, pid to sample).
Serve = Callable[[dict[str, str]], AbstractContextManager[tuple[str, int]]]


@contextlib.contextmanager
def serve_subprocess(env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """`live-memory serve` as its own process, stopped with SIGTERM."""
    command = [sys.executable, "-m", "live_memory", "serve"]
    server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        for line in server.stderr:
            if "serving http://" in line:
                break
        yield f"http://127.0.0.1:{env['LIVE_MEMORY_PORT']}", server.pid
    finally:
        server.terminate()
        server.wait(30)
        if server.stderr is not None:
            server.stderr.close()


def run_load(
    tmp: Path,
    *,
    sessions: int,
    workspaces: int,
    questions: int,
    notifiers: int,
    events: int,
    seed: int = 7,
    concurrency: str = "parallel",
    retry_base_s: float = RETRY_BASE_DELAY_S,
    serve: Serve = serve_subprocess,
) -> dict[str, Any]:
    roots = []
    for index in range(workspaces):
        root = tmp / f"ws{index}"
        (root / "src").mkdir(parents=True)
        (root / ".git").mkdir()
        for k in range(200):
            (root / "src" / f"f{k}.py").write_text(f"V{k} = {k}\n")
        roots.append(root)
    port = _free_port()
    with FakeLLM() as fake:
        fake.responder = chaos(seed)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LIVE_MEMORY_", "ANTHROPIC_", "OPENAI_"))},
            "HOME": str(tmp),
            "LIVE_MEMORY_PORT": str(port),
            "LIVE_MEMORY_DATA_DIR": str(tmp / "data"),
            "LIVE_MEMORY_BASE_URL": fake.base_url,
            "LIVE_MEMORY_API_KEY": "load",
            "LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD": "0",
            "LIVE_MEMORY_MAX_WAITING_QUERIES": "64",
            "LIVE_MEMORY_DEFAULT_TIMEOUT_S": "30",
            "LIVE_MEMORY_PROVIDER_RETRY_BASE_S": str(retry_base_s),
            "LIVE_MEMORY_LOG_LEVEL": "warning",
            "LIVE_MEMORY_CONCURRENCY": concurrency,
        }
        with serve(env) as (base, pid):
            report = asyncio.run(
                _drive(base, pid, roots, sessions=sessions, questions=questions, notifiers=notifiers, events=events)
            )
    return {"concurrency": concurrency, **report.summary()}


def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        figures = run_load(Path(tmp), sessions=16, workspaces=4, questions=50, notifiers=8, events=20_000)
    with tempfile.TemporaryDirectory() as tmp:
        figures["serial"] = run_load(
            Path(tmp), sessions=16, workspaces=4, questions=50, notifiers=8, events=20_000, concurrency="serial"
        )
    write_json(RESULTS, figures)
    print("load under chaos")
    for key, value in figures.items():
        print(f"  {key:<18} {value}")
    return figures


if __name__ == "__main__":
    main()
