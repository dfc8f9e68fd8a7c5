"""`/notify` ingestion throughput and latency, and the OS watcher's change-detection latency.

Method
    The real server runs in a spawned child process (`bench.common.server_process`) with default settings
    (passive ingestion on, the OS watcher on) on a copy of the Django 5.1.4 sdist repository (built by
    `bench.tools_bench.django_repo`). The workspace is loaded by one question (fake provider, instant
    answer) and then holds the real bytes of PRELOAD_FILES teed files.
    - Throughput: CLIENTS concurrent clients (keep-alive, one connection each, requests encoded before the
      clock starts: see `RawClient`) each post
      REQUESTS_PER_CLIENT `/notify` requests of BATCH `read` events; every event carries 4 KiB of content
      that differs from the previous post of that path (a real update each time, not a no-op re-tee), on
      paths drawn from a pool of POOL real files, written absolute as the hook sends them (with a
      session id). Baseline: the same clients issuing the same number of
      `GET /health` requests (the HTTP floor of the same server). The two are run in ROUNDS alternating
      rounds after a warm-up; throughput is the median over rounds, latency percentiles are over all
      requests of all rounds.
    - While the /notify rounds run, one more client probes `GET /health` every HEALTH_PROBE_MS: its p99
      is the server's responsiveness under the ingestion load (goal: under HEALTH_P99_GOAL_MS).
    - Watcher latency:
      EDITS files the memory holds (teed, so "current") are each rewritten by a worker thread (append a
      line, close); the clock starts right before the write and stops when `GET /stats?cwd=` first
      reports one more `stale_files` (polled back to back). Median and p95.

Limits
    2 cores: the server child and the load generator compete for them, so throughput is this machine's
    CPU bound. The watcher figure includes the /stats polling period (one request, about a millisecond)
    and the watcher's debounce (`WATCH_DEBOUNCE_MS`).

Comparing a change
    The machine's load drifts between runs; `--baseline-src DIR` serves another checkout of the server
    (before a change) in a second child process and runs the same rounds against it, alternating with
    this one, so the two are compared in one run ("baseline" in the results).

Run: `python -m bench.notify_bench [--baseline-src DIR]`. Writes bench/results/notify_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from bench.common import (
    ChildServer,
    McpAsker,
    latency_summary,
    percentile,
    print_table,
    save_results,
    server_process,
    warn_if_busy,
)
from bench.tools_bench import django_repo
from live_memory.constants import WATCH_DEBOUNCE_MS
from live_memory.testing.llm_server import FakeLLM, Reply

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
HEALTH_PROBE_MS = 10.0
EVENTS_GOAL = 5000.0
HEALTH_P99_GOAL_MS = 50.0


def pool_paths(repo: Path) -> list[str]:
    files = sorted(p.relative_to(repo).as_posix() for p in (repo / "django").rglob("*.py"))
    return random.Random(SEED).sample(files, POOL + EDITS)


def content(path: str, version: int) -> str:
    head = f"# {path} version {version}\n"
    return head + "x" * (CONTENT_BYTES - len(head) - 1) + "\n"


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on one connection: the request bytes are built before the
    clock starts, so the load generator's own cost (an HTTP library, JSON encoding) does not cap what
    is measured on a 2-core machine."""

    def __init__(self, url: str) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> RawClient:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()

    def request(self, method: str, path: str, body: bytes = b"") -> bytes:
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        return (head + "\r\n").encode() + body

    async def send(self, raw: bytes) -> int:
        """Send one prepared request and read its whole response; returns the status."""
        assert self.reader is not None and self.writer is not None
        self.writer.write(raw)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return status


def prepare(
    url: str, kind: str, paths: list[str], cwd: str, requests: int, round_index: int, client: int
) -> list[bytes]:
    """One client's requests, encoded before the clock starts."""
    rng = random.Random(f"{SEED}-{kind}-{round_index}-{client}")
    http = RawClient(url)
    if kind == "health":
        return [http.request("GET", "/health")] * requests
    prepared = []
    for n in range(requests):
        chosen = rng.sample(paths, BATCH)
        version = round_index * 10_000 + n
        # as the hook tees a read: an absolute path, the content, the session
        events = [{"path": f"{cwd}/{p}", "kind": "read", "content": content(p, version)} for p in chosen]
        body = {"cwd": cwd, "session_id": f"bench-session-{client}", "events": events}
        prepared.append(http.request("POST", "/notify", json.dumps(body).encode()))
    return prepared


async def hammer(url: str, prepared: list[bytes]) -> list[float]:
    """One client: its prepared requests back to back; returns their latencies in ms."""
    timings: list[float] = []
    async with RawClient(url) as http:
        for raw in prepared:
            started = time.perf_counter()
            status = await http.send(raw)
            timings.append((time.perf_counter() - started) * 1000)
            if status != 200:
                raise RuntimeError(f"HTTP {status}: {raw[:40]!r}")
    return timings


def batches(url: str, kind: str, paths: list[str], cwd: str, requests: int, round_index: int) -> list[list[bytes]]:
    return [prepare(url, kind, paths, cwd, requests, round_index, client) for client in range(CLIENTS)]


async def probe_health(url: str, done: asyncio.Event) -> list[float]:
    """`GET /health` every HEALTH_PROBE_MS until `done`; returns the latencies in ms."""
    timings: list[float] = []
    async with RawClient(url) as http:
        raw = http.request("GET", "/health")
        while not done.is_set():
            started = time.perf_counter()
            if await http.send(raw) != 200:
                raise RuntimeError("/health failed during the load")
            timings.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(max(HEALTH_PROBE_MS / 1000 - (time.perf_counter() - started), 0.0))
    return timings


@dataclass
class Tally:
    """One server's samples over all rounds."""

    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"health": [], "notify": [], "health_during_notify": []}
    )
    throughput: dict[str, list[float]] = field(default_factory=lambda: {"health": [], "notify": []})
    cpu: dict[str, list[float]] = field(  # server, load generator
        default_factory=lambda: {"health": [0.0, 0.0], "notify": [0.0, 0.0]}
    )


async def preload(server: ChildServer, repo: Path, paths: list[str]) -> None:
    async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
        events = [{"path": p, "kind": "read", "content": (repo / p).read_text()} for p in paths[:PRELOAD_FILES]]
        response = await http.post("/notify", json={"cwd": str(repo), "events": events})
        response.raise_for_status()


async def measure(server: ChildServer, kind: str, work: list[list[bytes]], tally: Tally) -> None:
    """One round of one kind against one server, added to its tally."""
    server_cpu, own_cpu = server.cpu_seconds() or 0.0, time.process_time()
    started = time.perf_counter()
    done = asyncio.Event()
    prober = asyncio.create_task(probe_health(server.url, done)) if kind == "notify" else None
    samples = await asyncio.gather(*(hammer(server.url, prepared) for prepared in work))
    wall = time.perf_counter() - started
    done.set()
    if prober is not None:
        tally.latencies["health_during_notify"].extend(await prober)
    tally.cpu[kind][0] += (server.cpu_seconds() or 0.0) - server_cpu
    tally.cpu[kind][1] += time.process_time() - own_cpu
    tally.throughput[kind].append(CLIENTS * REQUESTS_PER_CLIENT / wall)
    tally.latencies[kind].extend(t for s in samples for t in s)


async def load_phase(servers: dict[str, ChildServer], repo: Path, paths: list[str]) -> dict[str, dict[str, Any]]:
    """The rounds, against each server in turn (the order alternates by round, so drift in the machine's
    load hits them alike); figures per server."""
    cwd = str(repo)
    tallies = {label: Tally() for label in servers}
    for server in servers.values():
        await preload(server, repo, paths)
        for kind in ("health", "notify"):  # warm-up
            warmup = batches(server.url, kind, paths, cwd, WARMUP_REQUESTS, -1)
            await asyncio.gather(*(hammer(server.url, prepared) for prepared in warmup))
    for round_index in range(ROUNDS):
        labels = list(servers) if round_index % 2 == 0 else list(reversed(servers))
        for label in labels:
            server = servers[label]
            order = ("health", "notify") if round_index % 2 == 0 else ("notify", "health")
            for kind in order:
                work = batches(server.url, kind, paths, cwd, REQUESTS_PER_CLIENT, round_index)
                await measure(server, kind, work, tallies[label])
    figures = {}
    for label, server in servers.items():
        async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
            stats = (await http.get("/stats", params={"cwd": cwd})).json()["workspace"]
        figures[label] = summarize(tallies[label], stats["file_contexts"])
    return figures


def summarize(tally: Tally, file_contexts: int) -> dict[str, Any]:
    results, cpu = tally.latencies, tally.cpu
    notify_rps = statistics.median(tally.throughput["notify"])
    health_rps = statistics.median(tally.throughput["health"])
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
        "health_during_notify_latency": latency_summary(results["health_during_notify"]),
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
        "file_contexts_after": file_contexts,
    }


async def watcher_phase(server: ChildServer, repo: Path, paths: list[str]) -> dict[str, Any]:
    cwd = str(repo)
    targets = paths[POOL : POOL + EDITS]
    latencies: list[float] = []
    timeouts = 0
    async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:

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


async def load_workspace(server: ChildServer, repo: Path) -> None:
    async with McpAsker(f"{server.url}/mcp") as asker:  # loads the workspace (events never create one)
        _, is_error = await asker.ask("where is the URL resolver?", str(repo))
        assert not is_error


async def run(server: ChildServer, repo: Path, *, watcher: bool, baseline: ChildServer | None = None) -> dict[str, Any]:
    servers = {"notify": server} if baseline is None else {"notify": server, "baseline": baseline}
    for each in servers.values():
        await load_workspace(each, repo)
    paths = pool_paths(repo)
    figures: dict[str, Any] = await load_phase(servers, repo, paths)
    if watcher:
        figures["watcher"] = await watcher_phase(server, repo, paths)
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-src", help="another checkout of the server, measured in the same run")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    warn_if_busy()
    pristine = django_repo()
    with tempfile.TemporaryDirectory(prefix="lm-notify-bench-") as tmp_name, FakeLLM() as fake:
        tmp = Path(tmp_name)
        repo = tmp / "repo"
        shutil.copytree(pristine, repo, symlinks=True)
        fake.responder = lambda request: Reply.text("The resolver lives in django/urls/resolvers.py.")
        with contextlib.ExitStack() as stack:
            srv = stack.enter_context(server_process(fake.base_url, tmp / "data", force_explore_when_cold="false"))
            baseline = None
            if args.baseline_src:
                baseline = stack.enter_context(
                    server_process(
                        fake.base_url, tmp / "baseline-data", src=args.baseline_src, force_explore_when_cold="false"
                    )
                )
            figures = asyncio.run(run(srv, repo, watcher=True, baseline=baseline))
    n = figures["notify"]
    servers = [("", n)] + ([(", baseline", figures["baseline"])] if "baseline" in figures else [])
    rows: list[tuple[Any, ...]] = []
    for suffix, f in servers:
        rows.append(
            (
                f"POST /notify{suffix}",
                f["notify_requests_per_s"],
                f["notify_events_per_s"],
                f["notify_mib_per_s"],
                f["notify_latency"]["p50_ms"],
                f["notify_latency"]["p99_ms"],
                f["server_cpu_ms_per_notify"],
                f["load_generator_cpu_ms_per_notify"],
            )
        )
    for suffix, f in servers:
        rows.append(
            (
                f"GET /health, alone{suffix}",
                f["health_requests_per_s"],
                "-",
                "-",
                f["health_latency"]["p50_ms"],
                f["health_latency"]["p99_ms"],
                f["server_cpu_ms_per_health"],
                f["load_generator_cpu_ms_per_health"],
            )
        )
    for suffix, f in servers:
        during = f["health_during_notify_latency"]
        rows.append((f"GET /health, during /notify{suffix}", "-", "-", "-", during["p50_ms"], during["p99_ms"], "", ""))
    print_table(
        ["endpoint", "req/s", "events/s", "MiB/s", "p50 ms", "p99 ms", "srv cpu/req", "gen cpu/req"],
        rows,
        title=(
            f"/notify: {CLIENTS} clients, {BATCH} events x {CONTENT_BYTES} B per request, "
            f"median of {ROUNDS} rounds x {CLIENTS * REQUESTS_PER_CLIENT} requests"
        ),
    )
    print("  srv cpu/req = server process CPU ms per request (all threads); gen cpu/req = the clients' process")
    print(
        f"  /notify sustains {n['requests_per_s_ratio_notify_over_health']:.1%} of the /health request rate; "
        f"p50 latency {n['p50_ratio_notify_over_health']}x /health"
    )
    if "baseline" in figures:
        b = figures["baseline"]
        print(
            f"  against the baseline in the same run: {n['notify_events_per_s'] / b['notify_events_per_s']:.2f}x "
            f"events/s, {n['server_cpu_ms_per_notify'] / b['server_cpu_ms_per_notify']:.2f}x server CPU per request"
        )
    w = figures["watcher"]
    print_table(
        ["watcher", "edits", "noticed", "median ms", "p95 ms", "min ms", "max ms"],
        [("write -> stale_files", w["edits"], w["noticed"], w["median_ms"], w["p95_ms"], w["min_ms"], w["max_ms"])],
        title=f"watcher latency (debounce {w['debounce_ms']} ms; polled with ~2 ms resolution)",
    )
    events_ok = n["notify_events_per_s"] >= EVENTS_GOAL
    health_ok = n["health_during_notify_latency"]["p99_ms"] < HEALTH_P99_GOAL_MS
    events = f"{n['notify_events_per_s']:,.0f} events/s (goal {EVENTS_GOAL:,.0f}: {'met' if events_ok else 'missed'})"
    health_p99 = n["health_during_notify_latency"]["p99_ms"]
    health = f"/health p99 during the load {health_p99} ms (goal < {HEALTH_P99_GOAL_MS:.0f}: "
    print(f"\n/notify: {events}; {health}{'met' if health_ok else 'missed'})")
    save_results(NAME, figures)
    return figures


if __name__ == "__main__":
    main()
