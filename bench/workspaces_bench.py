"""Throughput of 20 workspaces answering concurrently vs the same questions on one workspace.

Method
    The real server runs in a spawned child process (`bench.common.server_process`: its own interpreter,
    so the load generator and the fake provider do not share its GIL). The fake provider
    (`live_memory.testing.llm_server.FakeLLM`) and the callers share the parent process. Each concurrent caller
    opens its own official MCP client session (`mcp` + `httpx2`) before the clock starts and then asks
    its questions back to back. Configurations, each on a fresh server and data directory:
    - `20 workspaces`: 20 callers, caller k asks workspace k (20 small git-like repositories);
    - `1 workspace, parallel`: the same 20 callers all ask one workspace in the default parallel mode
      (forked windows, `max_parallel_queries` = 4, the default);
    - `1 workspace, serial`: the same, with `concurrency` = serial (one question at a time, FIFO);
    - `20 workspaces, TCP_NODELAY`: the first configuration again with TCP_NODELAY set on the server's
      listening socket. As shipped (like `live_memory.cli.main.bind_socket`) the listener is made without it,
      so asyncio leaves Nagle on and keep-alive responses written in two pieces wait ~40 ms for the
      client's delayed ACK; this row shows what the one-line fix would give.
    Every caller asks QUESTIONS_PER_CALLER questions per round (80 per round), ROUNDS rounds on the same
    server and sessions; the median round's throughput is reported (this machine is shared, so single
    rounds are noisy). Each workspace answers one untimed warm-up question first (directory tree,
    snapshot restore and first freeze are not part of the steady state). `max_waiting_queries` is raised
    to 64 so that no caller is turned away (the default 16 would refuse 3 of 20 same-workspace callers in
    serial mode); `force_explore_when_cold` is off so each question is exactly one provider call.
    Two provider latencies: 0 ms (the fake answers at once: server + client CPU is all that is measured)
    and 100 ms (the fake holds each request open with `Reply.stall(seconds=0.1)`, polled every 10 ms, so
    the real latency is 100-110 ms; this is where concurrency pays off, as with a real model).
    Throughput = questions / wall time from a round's first question to its last answer; latency percentiles
    are per question as the caller saw them. CPU per question is measured for the server child (all its
    threads, from /proc) and for the parent (MCP clients + fake provider), so a CPU-bound result shows as
    such. "kept Q&A" is how many exchanges the committed windows hold afterwards (`/stats` qa_retained)
    out of the questions answered: in parallel mode a fork that loses the commit race is not kept.

Limits
    2 cores: in the 0 ms case the server child and the parent (20 MCP clients + the fake) compete for
    them, so the figure is a CPU bound for this machine, not a network bound. Prompts stay small (a few
    hundred tokens plus the directory tree); big windows cost more per question (see prefix_cache).

Run: `python -m bench.workspaces_bench`. Writes bench/results/workspaces_bench.json.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx2

from bench.common import (
    ChildServer,
    McpAsker,
    latency_summary,
    print_table,
    save_results,
    server_process,
    warn_if_busy,
)
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply

NAME = "workspaces_bench"
WORKSPACES = 20
CALLERS = 20
QUESTIONS_PER_CALLER = 4
ROUNDS = 3
LATENCIES_S = (0.0, 0.1)
FILES_PER_WORKSPACE = 30


def make_workspaces(root: Path) -> list[Path]:
    workspaces = []
    for index in range(WORKSPACES):
        workspace = root / f"ws{index:02d}"
        (workspace / ".git").mkdir(parents=True)
        for n in range(FILES_PER_WORKSPACE):
            package = workspace / "src" / f"pkg{n % 5}"
            package.mkdir(parents=True, exist_ok=True)
            (package / f"mod{n}.py").write_text(
                f'"""module {n} of workspace {index}"""\n\n\ndef f{n}():\n    return {n}\n'
            )
        workspaces.append(workspace)
    return workspaces


def responder(latency_s: float) -> Any:
    def reply(request: RecordedRequest) -> Reply:
        text = "Answer: " + FakeLLM.last_user_text(request.body).split("\n")[1][:80] + " — see src/pkg0/mod0.py."
        if latency_s <= 0:
            return Reply.text(text)
        return Reply.stall(seconds=latency_s, then=Reply.text(text))

    return reply


async def run_config(server: ChildServer, targets: list[Path]) -> dict[str, Any]:
    """`targets[k]` is the workspace caller k asks. Returns throughput, latency and CPU figures."""
    mcp_url = f"{server.url}/mcp"
    async with McpAsker(mcp_url) as warm:
        for workspace in dict.fromkeys(targets):  # untimed: load each workspace once
            _, is_error = await warm.ask("warm-up question", str(workspace))
            assert not is_error
    latencies: list[float] = []
    errors: list[str] = []
    rates: list[float] = []
    server_cpu = own_cpu = 0.0
    async with AsyncExitStack() as stack:  # one MCP session per caller, opened before any clock starts
        askers = [await stack.enter_async_context(McpAsker(mcp_url)) for _ in targets]
        for round_index in range(ROUNDS):

            async def caller(index: int, asker: McpAsker, workspace: Path, round_index: int = round_index) -> None:
                for n in range(QUESTIONS_PER_CALLER):
                    question = f"caller {index} round {round_index} question {n}: where is f{n} defined?"
                    began = time.perf_counter()
                    text, is_error = await asker.ask(question, str(workspace))
                    latencies.append((time.perf_counter() - began) * 1000)
                    if is_error:
                        errors.append(text[:200])

            cpu_before, own_before = server.cpu_seconds(), time.process_time()
            began = time.perf_counter()
            await asyncio.gather(*(caller(i, a, w) for i, (a, w) in enumerate(zip(askers, targets, strict=True))))
            wall = time.perf_counter() - began
            cpu_after = server.cpu_seconds()
            own_cpu += time.process_time() - own_before
            if cpu_before is not None and cpu_after is not None:
                server_cpu += cpu_after - cpu_before
            rates.append(len(targets) * QUESTIONS_PER_CALLER / wall)
    async with httpx2.AsyncClient(base_url=server.url, timeout=30) as http:
        stats = (await http.get("/stats")).json()["workspaces"]
    questions = len(latencies)
    return {
        "questions": questions,
        "rounds": ROUNDS,
        "questions_per_s": round(statistics.median(rates), 2),
        "questions_per_s_rounds": [round(r, 2) for r in rates],
        "latency": latency_summary(latencies),
        "server_cpu_ms_per_question": round(server_cpu * 1000 / questions, 2),
        "clients_and_fake_cpu_ms_per_question": round(own_cpu * 1000 / questions, 2),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "questions_answered": sum(int(s["questions_answered"]) for s in stats),
        "qa_retained": sum(int(s["qa_retained"]) for s in stats),
    }


def run_all(tmp: Path) -> list[dict[str, Any]]:
    workspaces = make_workspaces(tmp / "repos")
    configs = [
        ("20 workspaces", workspaces[:CALLERS], "parallel", False),
        ("1 workspace, parallel", [workspaces[0]] * CALLERS, "parallel", False),
        ("1 workspace, serial", [workspaces[0]] * CALLERS, "serial", False),
        ("20 workspaces, TCP_NODELAY", workspaces[:CALLERS], "parallel", True),
    ]
    rows = []
    for latency in LATENCIES_S:
        with FakeLLM() as fake:
            fake.responder = responder(latency)
            for run, (label, targets, mode, nodelay) in enumerate(configs):
                data_dir = tmp / f"data-{int(latency * 1000)}-{run}"
                print(f"provider latency {latency * 1000:.0f} ms: {label} ...", flush=True)
                with server_process(
                    fake.base_url,
                    data_dir,
                    tcp_nodelay=nodelay,
                    concurrency=mode,
                    max_waiting_queries=64,
                    force_explore_when_cold="false",
                ) as server:
                    result = asyncio.run(run_config(server, targets))
                rows.append({"provider_latency_ms": int(latency * 1000), "config": label, "mode": mode, **result})
    return rows


def main() -> dict[str, Any]:
    logging.basicConfig(level=logging.WARNING)
    warn_if_busy()
    with tempfile.TemporaryDirectory(prefix="lm-workspaces-bench-") as tmp:
        rows = run_all(Path(tmp))
    ratios = {}
    for latency in sorted({r["provider_latency_ms"] for r in rows}):
        by = {r["config"]: r for r in rows if r["provider_latency_ms"] == latency}
        many = by["20 workspaces"]["questions_per_s"]
        ratios[f"{latency}ms"] = {
            "20ws_over_1ws_parallel": round(many / by["1 workspace, parallel"]["questions_per_s"], 2),
            "20ws_over_1ws_serial": round(many / by["1 workspace, serial"]["questions_per_s"], 2),
            "20ws_nodelay_over_shipped": round(by["20 workspaces, TCP_NODELAY"]["questions_per_s"] / many, 2),
        }
    print_table(
        [
            "config",
            "latency",
            "questions",
            "q/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "srv cpu/q",
            "gen cpu/q",
            "errors",
            "kept Q&A",
        ],
        [
            (
                r["config"],
                f"{r['provider_latency_ms']} ms",
                r["questions"],
                r["questions_per_s"],
                r["latency"]["p50_ms"],
                r["latency"]["p95_ms"],
                r["latency"]["p99_ms"],
                r["server_cpu_ms_per_question"],
                r["clients_and_fake_cpu_ms_per_question"],
                r["errors"],
                f"{r['qa_retained']}/{r['questions_answered']}",
            )
            for r in rows
        ],
        title=(
            f"{CALLERS} concurrent MCP callers x {QUESTIONS_PER_CALLER} questions x {ROUNDS} rounds, median round "
            "(server in its own process)"
        ),
    )
    for latency, ratio in ratios.items():
        print(
            f"  provider {latency}: 20 workspaces = {ratio['20ws_over_1ws_parallel']}x the throughput of one "
            f"workspace in parallel mode, {ratio['20ws_over_1ws_serial']}x serial mode; TCP_NODELAY on the "
            f"listener: {ratio['20ws_nodelay_over_shipped']}x the shipped 20-workspace throughput"
        )
    print("  kept Q&A = exchanges in the committed windows / questions answered (incl. warm-ups)")
    print("  srv cpu/q = server process CPU ms per question; gen cpu/q = MCP clients + fake provider (parent process)")
    figures = {
        "workspaces": WORKSPACES,
        "callers": CALLERS,
        "questions_per_caller_per_round": QUESTIONS_PER_CALLER,
        "rounds": ROUNDS,
        "results": rows,
        "ratios": ratios,
    }
    save_results(NAME, figures)
    return figures


if __name__ == "__main__":
    main()
