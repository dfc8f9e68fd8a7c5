"""Shared helpers for the benchmarks (not a benchmark itself).

- `percentile` / `latency_summary`: nearest-rank percentiles of a sample (no interpolation, so a p99
  over 100 samples is the 99th smallest value actually observed).
- `cumulative` / `first_index_staying_below`: running totals of a cost series and where one series stays
  below another (the break-even point).
- `write_results` / `save_results` / `print_table` / `warn_if_busy`: the common output shape,
  `bench/results/<name>.json`, stamped with the commit and the date it was measured on (`bench.provenance`;
  `bench.report` prints them beside every figure).
- `McpAsker`: one official MCP client session (`mcp` + `httpx2`) reused for many `ask_live_memory` calls.
- `scripted_settings`: the in-process server a scripted session (prefix_cache, savings) drives.
- `server_process`: the real Live Memory app under uvicorn in a *child process* (spawned, so it has its
  own interpreter and GIL). Throughput benchmarks use it so that the load generator and the fake provider
  do not share a GIL with the server they measure; the child serves `create_app(settings_for(...))` with
  `live_memory.testing.live_server.LiveServer`, exactly like the tests do in-process (optionally with TCP_NODELAY
  on the listening socket, see `server_process`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import multiprocessing
import os
import re
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar

from bench.provenance import write_json
from live_memory.core.prompts import (
    FOLD_PREAMBLE,
    FROZEN_LEDGER_POINTER,
    LEDGER_HEADING,
    MATERIAL_HEADING,
    NEUTRAL_SUMMARY_SYSTEM_PROMPT,
    NEWLY_STALE_FACTS,
    OBSERVATION_ACK,
    QUESTION_HEADING,
    STALE_LEDGER_HEADING,
)
from live_memory.settings.config import Settings

RESULTS_DIR = Path(__file__).parent / "results"
SERVER_START_TIMEOUT_S = 60.0
SERVER_STOP_TIMEOUT_S = 20.0


# -- statistics ----------------------------------------------------------------------------------------
def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty sample."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency_summary(samples_ms: Sequence[float], digits: int = 2) -> dict[str, float]:
    """p50 / p95 / p99 / mean / max of millisecond samples, rounded."""
    return {
        "p50_ms": round(statistics.median(samples_ms), digits),
        "p95_ms": round(percentile(samples_ms, 0.95), digits),
        "p99_ms": round(percentile(samples_ms, 0.99), digits),
        "mean_ms": round(statistics.fmean(samples_ms), digits),
        "max_ms": round(max(samples_ms), digits),
    }


def cumulative(values: Sequence[float]) -> list[float]:
    """Running totals of `values`, each rounded to 6 places (the sum itself is not rounded)."""
    out: list[float] = []
    total = 0.0
    for value in values:
        total += value
        out.append(round(total, 6))
    return out


def first_index_staying_below(ours: Sequence[float], theirs: Sequence[float]) -> int | None:
    """The first index from which `ours` is below `theirs` at every later index too; None when `ours` ends
    at or above `theirs`."""
    start: int | None = None
    for index in range(len(ours) - 1, -1, -1):
        if ours[index] >= theirs[index]:
            break
        start = index
    return start


# -- output --------------------------------------------------------------------------------------------
def write_results(name: str, figures: Mapping[str, Any]) -> Path:
    """Write `bench/results/<name>.json`, stamped with the commit and date, and return its path."""
    return write_json(RESULTS_DIR / f"{name}.json", figures)


def save_results(name: str, figures: Mapping[str, Any]) -> None:
    """`write_results`, then say where: the last line a benchmark's run prints."""
    print(f"\nwrote {write_results(name, figures)}")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
    """A plain left/right aligned text table (first column left, the rest right)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    if title:
        print(f"\n{title}")

    def line(values: Sequence[str]) -> str:
        first = values[0].ljust(widths[0])
        return "  " + "  ".join([first, *(v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True))])

    print(line(list(headers)))
    print("  " + "  ".join("-" * w for w in widths))
    for row in cells:
        print(line(row))


J = TypeVar("J")
R = TypeVar("R")


def map_jobs(work: Callable[[J], R], jobs: Sequence[J], workers: int) -> list[R]:
    """`work` over `jobs` in order: in this process with one worker (or one job), else in spawned processes."""
    if workers <= 1 or len(jobs) <= 1:
        return [work(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(work, jobs))


def warn_if_busy() -> None:
    """Print a warning when the machine is busy (figures get noisy)."""
    load = os.getloadavg()[0]
    if load > 1.0:
        print(f"note: load average {load:.1f} on {os.cpu_count()} cores; figures will be noisy", flush=True)


# -- MCP client ----------------------------------------------------------------------------------------
class McpAsker:
    """`async with McpAsker(url) as asker: text, is_error = await asker.ask(question, cwd)` — one session."""

    def __init__(self, mcp_url: str, *, read_timeout_s: float = 120.0) -> None:
        self.mcp_url = mcp_url
        self.read_timeout_s = read_timeout_s
        self._stack: AsyncExitStack | None = None
        self._client: Any = None

    async def __aenter__(self) -> McpAsker:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=self.read_timeout_s))
            )
            transport = streamable_http_client(self.mcp_url, http_client=http)
            self._client = await stack.enter_async_context(Client(transport))
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._stack is not None:
            await self._stack.__aexit__(exc_type, exc, tb)
            self._stack = None

    async def tool_definitions(self) -> tuple[str, str]:
        """What a client puts in its model's prompt for this server: the tools' definitions (name,
        description, input schema, as JSON) and the server's instructions."""

        listed = await self._client.list_tools()
        tools = [
            {"name": t.name, "description": t.description or "", "input_schema": t.input_schema} for t in listed.tools
        ]
        return json.dumps(tools, separators=(",", ":")), self._client.instructions or ""

    async def ask(self, question: str, cwd: str, **extra: Any) -> tuple[str, bool]:
        result = await self._client.call_tool("ask_live_memory", {"question": question, "cwd": cwd, **extra})
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return text, bool(result.is_error)


# -- the server in a child process ---------------------------------------------------------------------
def _serve(spec: dict[str, Any], conn: Any, stop: Any) -> None:
    if spec.get("src"):  # another checkout of the server (a baseline): its sources replace ours
        _use_checkout(spec["src"])
    from live_memory.http.app import create_app
    from live_memory.testing.live_server import LiveServer, settings_for

    logging.basicConfig(level=logging.WARNING)  # before the app: the MCP SDK would configure INFO
    try:
        settings = settings_for(
            spec["fake_base_url"], Path(spec["data_dir"]), protocol=spec["protocol"], **spec["options"]
        )
        server = LiveServer(create_app(settings))
        if spec["tcp_nodelay"]:  # accepted sockets inherit it (Linux)
            server.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with server:
            conn.send(("ok", server.url))
            stop.wait()
    except BaseException as exc:  # report start-up failures to the parent instead of hanging it
        with contextlib.suppress(OSError, ValueError):
            conn.send(("error", repr(exc)))
        raise


def _use_checkout(src: str) -> None:
    """Import the server and its test fakes from `src` from now on. The spawned child has already
    imported this checkout's modules (its parent's main module runs again here), so they are dropped."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("live_memory", "tests")]:
        del sys.modules[name]
    sys.path[:0] = [f"{src}/server", src]


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a process has used so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ChildServer:
    url: str
    pid: int

    def cpu_seconds(self) -> float | None:
        return process_cpu_seconds(self.pid)


def _profiled(target: Any, out: str, spec: dict[str, Any], conn: Any, stop: Any) -> None:
    """Run a child's target with every thread it starts under cProfile; write the merged stats to `out`.

    The servers run their event loop in a thread of their own, so each new thread enables its own
    profiler the first time it runs (`threading.setprofile`); the stats are merged at the end.
    """
    import cProfile
    import pstats
    import threading

    profiles: list[cProfile.Profile] = []

    def start_profiling(frame: Any, event: str, arg: Any) -> None:
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()  # replaces this hook for the calling thread

    threading.setprofile(start_profiling)
    try:
        target(spec, conn, stop)
    finally:
        threading.setprofile(None)
        stats: pstats.Stats | None = None
        for profile in profiles:
            profile.create_stats()
            if profile.stats:
                stats = pstats.Stats(profile) if stats is None else stats.add(profile)
        if stats is not None:
            stats.dump_stats(out)


@contextlib.contextmanager
def child_process(
    target: Any, spec: dict[str, Any], name: str, *, profile_dir: Path | None = None
) -> Iterator[tuple[str, int]]:
    """Run `target(spec, conn, stop)` in a spawned child; yields (the value it sends once ready, its pid).

    The target sends ("ok", value) when it serves (or ("error", repr) when it cannot) and then waits on
    `stop`. On exit the child is asked to stop (a clean shutdown) and joined; it is terminated only if
    it does not stop in time. With `profile_dir`, the child runs under cProfile and writes
    `<profile_dir>/<name>.prof` when it stops (every thread it starts: see `_profiled`).
    """
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    stop = ctx.Event()
    if profile_dir is not None:
        target = functools.partial(_profiled, target, str(profile_dir / f"{name}.prof"))
    process = ctx.Process(target=target, args=(spec, child, stop), name=name, daemon=True)
    process.start()
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not parent.poll(0.1):
            if not process.is_alive():
                raise RuntimeError(f"the {name} process exited (code {process.exitcode})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {name} process did not start in time")
        status, value = parent.recv()
        if status != "ok":
            raise RuntimeError(f"the {name} process failed to start: {value}")
        yield str(value), int(process.pid or 0)
    finally:
        stop.set()
        process.join(SERVER_STOP_TIMEOUT_S)
        if process.is_alive():
            process.terminate()
            process.join(5)
        parent.close()
        child.close()


@contextlib.contextmanager
def server_process(
    fake_base_url: str,
    data_dir: Path,
    *,
    protocol: str = "anthropic",
    tcp_nodelay: bool = False,
    src: str | None = None,
    profile_dir: Path | None = None,
    **options: Any,
) -> Iterator[ChildServer]:
    """Serve Live Memory (settings as `settings_for`) in a spawned child process; yields its URL and pid.
    `src`: serve another checkout of the server instead (a baseline measured in the same run).

    The listening socket is made like `live_memory.testing.live_server.LiveServer` (and
    `live_memory.cli.main.bind_socket`) make it: with IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted
    connections. `tcp_nodelay=True` also sets it on the listener (no difference on Linux since that fix; kept for
    comparisons).
    `profile_dir`: profile the child (see `child_process`).
    """
    spec = {
        "fake_base_url": fake_base_url,
        "data_dir": str(data_dir),
        "protocol": protocol,
        "tcp_nodelay": tcp_nodelay,
        "src": src,
        "options": options,
    }
    with child_process(_serve, spec, "live-memory-bench-server", profile_dir=profile_dir) as (url, pid):
        yield ChildServer(url, pid)


class ServedModel(Protocol):
    """What a scripted benchmark's setup names for the server: wire protocol, provider profile, model."""

    @property
    def protocol(self) -> str: ...

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...


def scripted_settings(fake_base_url: str, data_dir: Path, served: ServedModel, max_context_tokens: int) -> Settings:
    """The server a scripted session drives, in process: `served` on the fake provider with a
    `max_context_tokens` window; it summarizes whenever a compaction is due (no minimum interval) and runs
    no OS watcher (the script reports its own edits through /notify)."""
    from live_memory.testing.live_server import settings_for

    return settings_for(
        fake_base_url,
        data_dir,
        protocol=served.protocol,
        provider=served.provider,
        model=served.model,
        max_context_tokens=max_context_tokens,
        distill_min_interval_s=0,
        watch="false",
    )


# The fake summarizers (the scripted sessions' and the session bill's) and their answers' form.
LEDGER_CAP_CHARS = 6000
PATHISH = re.compile(r"[\w.-]+(?:/[\w.-]+)+|[\w-]+\.(?:py|md)\b")
_LEDGER_LINE = re.compile(r"^(\d+)\. (\(possibly stale\) )?(.*)$")


def ledger_changes(request_text: str, found: Sequence[str]) -> str:
    """What a summarizer following the prompt answers (see `Ledger.apply_summary`): each fact `found` in the
    material that the ledger lacks is added; a possibly-stale fact is confirmed when the material names its
    first path, else dropped; the oldest facts go while the ledger would pass LEDGER_CAP_CHARS."""
    current, _, material = request_text.partition(MATERIAL_HEADING)
    changes: list[str] = []
    kept: list[tuple[str, str]] = []
    for line in current.splitlines():
        match = _LEDGER_LINE.match(line.strip())
        if match is None:
            continue
        number, stale, text = match.groups()
        paths = PATHISH.findall(text)
        if stale and not (paths and paths[0] in material):
            changes.append(f"- {number}")
            continue
        if stale:
            changes.append(f"= {number}")
        kept.append((number, text))
    known = {text for _, text in kept}
    added = [fact for fact in dict.fromkeys(found) if fact not in known]
    size = sum(len(text) + 3 for _, text in kept) + sum(len(fact) + 3 for fact in added)
    for number, text in kept:  # the oldest go first
        if size <= LEDGER_CAP_CHARS:
            break
        changes.append(f"- {number}")
        size -= len(text) + 3
    changes += [f"+ {fact}" for fact in added]
    return "\n".join(changes) or "(no change)"


def scripted_ledger(request_text: str) -> str:
    """The fake summarizer: one fact per retired file or Q&A that the ledger lacks (`ledger_changes`)."""
    material = request_text.partition(MATERIAL_HEADING)[2]
    found: list[str] = []
    for match in re.finditer(r"^### (\S+)\n```\n(.*?)\n```", material, re.S | re.M):
        path, body = match.group(1), match.group(2)
        names = re.findall(r"^(?:class|def) (\w+)", body, re.M)[:4]
        found.append(f"{path} defines {', '.join(names) or 'module-level code'} ({body.count(chr(10)) + 1} lines)")
    for match in re.finditer(r"^Q: (.*?)\nA: (.*?)(?=\n\nQ: |\Z)", material, re.S | re.M):
        question, answer = match.group(1), match.group(2)
        paths = list(dict.fromkeys(re.findall(r"django/[\w/]+\.py", answer)))[:3]
        if paths:
            found.append(f"{', '.join(paths)}: {question.strip()[:90]}")
    return ledger_changes(request_text, found)


# -- request anatomy (both protocols) ------------------------------------------------------------------------
def content_text(content: Any) -> str:
    """The text blocks of a message's content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def system_text(body: dict[str, Any]) -> str:
    """The first system text of a recorded request body (Anthropic `system` or an OpenAI system message)."""
    system = body.get("system")
    if isinstance(system, list) and system:
        return str(system[0].get("text", ""))
    messages = body.get("messages") or []
    return str(messages[0].get("content") or "") if messages and messages[0].get("role") == "system" else ""


def summary_request(body: dict[str, Any]) -> str | None:
    """What a fake summarizer reads in a summarizer call (the ledger, then the material), or None for any
    other request. A standalone call has the summarizer's own system prompt; a fold continues the answering
    conversation, and its material is the exchanges before its last turn, written out as a standalone call
    would get them ("Q: ...\\nA: ..."; the file notices between them carry no durable fact)."""
    messages = body.get("messages") or []
    if system_text(body).startswith(NEUTRAL_SUMMARY_SYSTEM_PROMPT[:40]):
        last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        return content_text(last.get("content")) if last else ""
    instruction = content_text(messages[-1].get("content")) if messages else ""
    if FOLD_PREAMBLE not in instruction:
        return None
    if FROZEN_LEDGER_POINTER in instruction:  # the ledger is the one the frozen block numbers
        instruction = instruction.replace(FROZEN_LEDGER_POINTER, _frozen_ledger(body, instruction))
    pairs: list[list[str]] = []  # [question, its answer: the last assistant text before the next question]
    for message in messages[:-1]:
        text = content_text(message.get("content"))
        if message.get("role") == "user" and text.startswith(QUESTION_HEADING):
            pairs.append([text[len(QUESTION_HEADING) :].strip(), ""])
        elif message.get("role") == "assistant" and pairs and text and text != OBSERVATION_ACK:
            pairs[-1][1] = text
    return instruction + "\n" + "\n\n".join(f"Q: {q}\nA: {a}" for q, a in pairs)


def _frozen_ledger(body: dict[str, Any], instruction: str) -> str:
    """The numbered facts of the frozen block, flagged as `text_for_summary` flags them."""
    system = body.get("system")
    text = (
        "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
        if isinstance(system, list)
        else system_text(body)
    )
    sections = text.partition(LEDGER_HEADING)[2].split("\n## ")
    fresh = sections[0]
    stale = sections[1] if len(sections) > 1 and STALE_LEDGER_HEADING.endswith(sections[1].split("\n")[0]) else ""
    newly = {n.strip() for n in instruction.partition(NEWLY_STALE_FACTS)[2].split("\n")[0].split(",") if n.strip()}
    facts: list[tuple[int, str]] = []
    for part, flagged in ((fresh, False), (stale, True)):
        for line in part.splitlines():
            number, dot, fact = line.partition(". ")
            if dot and number.isdigit():
                flag = "(possibly stale) " if flagged or number in newly else ""
                facts.append((int(number), f"{number}. {flag}{fact}"))
    return "\n".join(line for _, line in sorted(facts))
