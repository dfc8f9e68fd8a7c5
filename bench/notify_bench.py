"""`/notify` ingestion throughput and latency, and the OS watcher's change-detection latency.

Method
    The real server runs in a spawned child process (`bench._common.server_process`) with default settings
    (passive ingestion on, the OS watcher on) on a copy of the Django 5.1.4 sdist repository (built by
    `bench.tools_bench.django_repo`). The workspace is loaded by one question (fake provider, instant
    answer) and then holds the real bytes of PRELOAD_FILES teed files.
    - Throughput: CLIENTS concurrent `httpx` clients (keep-alive, one connection each) each post
      REQUESTS_PER_CLIENT `/notify` requests of BATCH `read` events; every event carries 4 KiB of content
      that differs from the previous post of that path (a real update each time, not a no-op re-tee), on
      paths drawn from a pool of POOL real files. Baseline: the same clients issuing the same number of
      `GET /health` requests (the HTTP floor of the same server). The two are run in ROUNDS alternating
      rounds after a warm-up; throughput is the median over rounds, latency percentiles are over all
      requests of all rounds.
    - Both are measured twice, on two fresh servers: "as shipped" (the listening socket is made like
      `live_memory.cli.bind_socket` makes it, without TCP_NODELAY, so every keep-alive response whose body
      is a second small write waits ~40 ms for the client's delayed ACK) and "TCP_NODELAY" (the option set
      on the listener, what the one-line fix would give).
    - Watcher latency (on the TCP_NODELAY server, so that the /stats poll itself takes ~2 ms, not ~44):
      EDITS files the memory holds (teed, so "current") are each rewritten by a worker thread (append a
      line, close); the clock starts right before the write and stops when `GET /stats?cwd=` first
      reports one more `stale_files` (polled back to back). Median and p95.

Limits
    2 cores: the server child and the load generator compete for them, so throughput is this machine's
    CPU bound. The watcher figure includes the /stats polling period (one request, about a millisecond)
    and the watcher's debounce (`WATCH_DEBOUNCE_MS`).

Run: `python -m bench.notify_bench`. Writes bench/results/notify_bench.json.
"""

from __future__ import annotations

import asyncio
import logging
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from tests.fakes.llm_server import FakeLLM, Reply

from bench._common import (
    ChildServer,
    McpAsker,
    latency_summary,
    load_note,
    percentile,
    print_table,
    server_process,
    write_results,
)
from bench.tools_bench import django_repo
from live_memory.constants import WATCH_DEBOUNCE_MS

NAME = "notify_bench"
CLIENTS = 8
BATCH = 16
CONTENT_BYTES = 4096
REQUESTS_PER_CLIENT = 60
WARMUP_REQUESTS = 10
ROUNDS = 3
POOL = 400
PRELOAD_FILES = 200
EDITS = 20
SEED = 77
WATCH_TIMEOUT_S = 10.0
# (label, TCP_NODELAY on the listening socket): as shipped (cli.bind_socket leaves it off) and with it on.
VARIANTS = (("as shipped", False), ("TCP_NODELAY", True))


def pool_paths(repo: Path) -> list[str]:
    files = sorted(p.relative_to(repo).as_posix() for p in (repo / "django").rglob("*.py"))
    return random.Random(SEED).sample(files, POOL + EDITS)


def content(path: str, version: int) -> str:
    head = f"# {path} version {version}\n"
    return head + "x" * (CONTENT_BYTES - len(head) - 1) + "\n"


async def hammer(url: str, kind: str, paths: list[str], cwd: str, requests: int, round_index: int) -> list[float]:
    """One client: `requests` back-to-back calls; returns their latencies in ms."""
    rng = random.Random(f"{SEED}-{kind}-{round_index}-{url}")
    timings: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=1)) as http:
        for n in range(requests):
            if kind == "health":
                started = time.perf_counter()
                response = await http.get("/health")
            else:
                chosen = rng.sample(paths, BATCH)
                events = [{"path": p, "kind": "read", "content": content(p, round_index * 10_000 + n)} for p in chosen]
                started = time.perf_counter()
                response = await http.post("/notify", json={"cwd": cwd, "events": events})
            timings.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
    return timings


async def load_phase(server: ChildServer, repo: Path, paths: list[str]) -> dict[str, Any]:
    cwd = str(repo)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        preload = [{"path": p, "kind": "read", "content": (repo / p).read_text()} for p in paths[:PRELOAD_FILES]]
        response = await http.post("/notify", json={"cwd": cwd, "events": preload})
        response.raise_for_status()
    results: dict[str, list[float]] = {"health": [], "notify": []}
    throughput: dict[str, list[float]] = {"health": [], "notify": []}
    cpu: dict[str, list[float]] = {"health": [0.0, 0.0], "notify": [0.0, 0.0]}  # server, load generator
    for kind in ("health", "notify"):  # warm-up
        await asyncio.gather(*(hammer(server.url, kind, paths, cwd, WARMUP_REQUESTS, -1) for _ in range(CLIENTS)))
    for round_index in range(ROUNDS):
        order = ("health", "notify") if round_index % 2 == 0 else ("notify", "health")
        for kind in order:
            server_cpu, own_cpu = server.cpu_seconds() or 0.0, time.process_time()
            started = time.perf_counter()
            samples = await asyncio.gather(
                *(hammer(server.url, kind, paths, cwd, REQUESTS_PER_CLIENT, round_index) for _ in range(CLIENTS))
            )
            wall = time.perf_counter() - started
            cpu[kind][0] += (server.cpu_seconds() or 0.0) - server_cpu
            cpu[kind][1] += time.process_time() - own_cpu
            throughput[kind].append(CLIENTS * REQUESTS_PER_CLIENT / wall)
            results[kind].extend(t for s in samples for t in s)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        stats = (await http.get("/stats", params={"cwd": cwd})).json()["workspace"]
    notify_rps = statistics.median(throughput["notify"])
    health_rps = statistics.median(throughput["health"])
    return {
        "clients": CLIENTS,
        "events_per_request": BATCH,
        "content_bytes": CONTENT_BYTES,
        "requests_per_round": CLIENTS * REQUESTS_PER_CLIENT,
        "rounds": ROUNDS,
        "notify_requests_per_s": round(notify_rps, 1),
        "notify_events_per_s": round(notify_rps * BATCH, 1),
        "notify_mib_per_s": round(notify_rps * BATCH * CONTENT_BYTES / 2**20, 2),
        "notify_latency": latency_summary(results["notify"]),
        "health_requests_per_s": round(health_rps, 1),
        "health_latency": latency_summary(results["health"]),
        "requests_per_s_ratio_notify_over_health": round(notify_rps / health_rps, 3),
        "p50_ratio_notify_over_health": round(
            statistics.median(results["notify"]) / statistics.median(results["health"]), 2
        ),
        "server_cpu_ms_per_notify": round(cpu["notify"][0] * 1000 / len(results["notify"]), 2),
        "server_cpu_ms_per_health": round(cpu["health"][0] * 1000 / len(results["health"]), 2),
        "load_generator_cpu_ms_per_notify": round(cpu["notify"][1] * 1000 / len(results["notify"]), 2),
        "load_generator_cpu_ms_per_health": round(cpu["health"][1] * 1000 / len(results["health"]), 2),
        "file_contexts_after": stats["file_contexts"],
    }


async def watcher_phase(server: ChildServer, repo: Path, paths: list[str]) -> dict[str, Any]:
    cwd = str(repo)
    targets = paths[POOL : POOL + EDITS]
    latencies: list[float] = []
    timeouts = 0
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:

        async def stale() -> int:
            response = await http.get("/stats", params={"cwd": cwd})
            return int(response.json()["workspace"]["stale_files"])

        events = [{"path": p, "kind": "read", "content": (repo / p).read_text()} for p in targets]
        (await http.post("/notify", json={"cwd": cwd, "events": events})).raise_for_status()
        await asyncio.sleep(2 * WATCH_DEBOUNCE_MS / 1000)  # let any pending watcher batch settle
        for index, rel in enumerate(targets):
            before = await stale()
            path = repo / rel

            def edit(p: Path = path, n: int = index) -> None:
                with p.open("a", encoding="utf-8") as handle:
                    handle.write(f"# watcher bench edit {n}\n")

            started = time.perf_counter()
            await asyncio.to_thread(edit)
            while await stale() <= before:
                if time.perf_counter() - started > WATCH_TIMEOUT_S:
                    timeouts += 1
                    break
            else:
                latencies.append((time.perf_counter() - started) * 1000)
    return {
        "edits": EDITS,
        "noticed": len(latencies),
        "timeouts": timeouts,
        "debounce_ms": WATCH_DEBOUNCE_MS,
        "median_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(percentile(latencies, 0.95), 1) if latencies else None,
        "min_ms": round(min(latencies), 1) if latencies else None,
        "max_ms": round(max(latencies), 1) if latencies else None,
    }


async def run(server: ChildServer, repo: Path, *, watcher: bool) -> dict[str, Any]:
    async with McpAsker(f"{server.url}/mcp") as asker:  # loads the workspace (events never create one)
        _, is_error = await asker.ask("where is the URL resolver?", str(repo))
        assert not is_error
    paths = pool_paths(repo)
    figures = {"notify": await load_phase(server, repo, paths)}
    if watcher:
        figures["watcher"] = await watcher_phase(server, repo, paths)
    return figures


def main() -> dict[str, Any]:
    logging.basicConfig(level=logging.WARNING)
    note = load_note()
    if note:
        print(note, flush=True)
    pristine = django_repo()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lm-notify-bench-") as tmp_name, FakeLLM() as fake:
        tmp = Path(tmp_name)
        repo = tmp / "repo"
        shutil.copytree(pristine, repo, symlinks=True)
        fake.responder = lambda request: Reply.text("The resolver lives in django/urls/resolvers.py.")
        for variant, nodelay in VARIANTS:
            print(f"{variant} ...", flush=True)
            data_dir = tmp / f"data-{int(nodelay)}"
            with server_process(fake.base_url, data_dir, tcp_nodelay=nodelay, force_explore_when_cold="false") as srv:
                figures[variant] = asyncio.run(run(srv, repo, watcher=nodelay))
    rows = []
    for variant, _ in VARIANTS:
        n = figures[variant]["notify"]
        rows.append(
            (
                f"POST /notify, {variant}",
                n["notify_requests_per_s"],
                n["notify_events_per_s"],
                n["notify_mib_per_s"],
                n["notify_latency"]["p50_ms"],
                n["notify_latency"]["p99_ms"],
                n["server_cpu_ms_per_notify"],
                n["load_generator_cpu_ms_per_notify"],
            )
        )
        rows.append(
            (
                f"GET /health, {variant}",
                n["health_requests_per_s"],
                "-",
                "-",
                n["health_latency"]["p50_ms"],
                n["health_latency"]["p99_ms"],
                n["server_cpu_ms_per_health"],
                n["load_generator_cpu_ms_per_health"],
            )
        )
    print_table(
        ["endpoint", "req/s", "events/s", "MiB/s", "p50 ms", "p99 ms", "srv cpu/req", "gen cpu/req"],
        rows,
        title=(
            f"/notify: {CLIENTS} clients, {BATCH} events x {CONTENT_BYTES} B per request, "
            f"median of {ROUNDS} rounds x {CLIENTS * REQUESTS_PER_CLIENT} requests"
        ),
    )
    print("  srv cpu/req = server process CPU ms per request (all threads); gen cpu/req = the 8 clients' process")
    for variant, _ in VARIANTS:
        n = figures[variant]["notify"]
        print(
            f"  {variant}: /notify sustains {n['requests_per_s_ratio_notify_over_health']:.1%} of the /health "
            f"request rate; p50 latency {n['p50_ratio_notify_over_health']}x /health"
        )
    w = figures[VARIANTS[-1][0]]["watcher"]
    print_table(
        ["watcher", "edits", "noticed", "median ms", "p95 ms", "min ms", "max ms"],
        [("write -> stale_files", w["edits"], w["noticed"], w["median_ms"], w["p95_ms"], w["min_ms"], w["max_ms"])],
        title=f"watcher latency (debounce {w['debounce_ms']} ms, watcher on; polled with ~2 ms resolution)",
    )
    path = write_results(NAME, figures)
    print(f"\nwrote {path}")
    return figures


if __name__ == "__main__":
    main()
