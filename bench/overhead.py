"""Per-question server overhead against the protocol floor, all measured in one run.

Method
    Four paths, each timed from the same load-generator process, with the servers in their own
    spawned processes (own interpreter and GIL) and a fake provider answering instantly:
    (a) question: `ask_live_memory` through the official MCP client over HTTP -> the real Live Memory
        server -> the fake provider (one model call per question, the workspace loaded beforehand);
    (b) echo: the same MCP client calling the one `echo` tool of a minimal `MCPServer`, served the same
        way (uvicorn, stateless streamable HTTP, the same transport-security settings);
    (c) provider: one direct call to the same fake provider with the official SDK (`anthropic`, or
        `openai` with `--protocol openai`), a one-line prompt;
    (c') replay: a direct call with the same SDK client sending the request the server sent for its
        latest question (the whole conversation: system, tools, history), fetched from the fake provider
        between timed calls. It goes through the client's plain `post` (the body as it is, the response
        parsed into the SDK's type): `chat.completions.create` would first walk every message of a long
        conversation in Python, which no forwarding server has to do. The server itself sends the body
        without even that (see `live_memory.providers.direct`), so its ratio to this floor may be below 1.
    The floor is p50(b) + p50(c): what any MCP server that forwards one model call must spend. The
    ratio is p50(a) / floor. Beside it, p50(b) + p50(c') is the floor of a server forwarding the same
    request Live Memory sends; p50(a) over it is what the server adds beyond the request's size. Calls
    are interleaved (a b c c', b c c' a, ...) so machine noise hits the paths alike; the run is split
    into REPETITIONS blocks, each with its own ratio, and the headline is the ratio over all samples
    (the per-block ratios show the spread).

Limits
    The machine is shared: quote ratios from one run, never a p50 of one run against another's. The
    conversation grows by one exchange per question, as it does in use. To compare with another
    checkout of the server (before a change), `--baseline-src DIR` serves that checkout too, in its
    own process, and interleaves its questions with the other paths (a fifth path, (a0)).

Run: `python -m bench.overhead [--protocol anthropic|openai] [--baseline-src DIR] [--profile DIR]`. Writes
bench/results/overhead.json. `--profile DIR` runs the server and the fake provider under cProfile (every
thread) and writes DIR/live-memory-bench-server.prof and DIR/fake-provider.prof (profiled figures are slower:
read the profiles, not the ratio).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from bench.common import (
    ChildServer,
    child_process,
    latency_summary,
    print_table,
    server_process,
    warn_if_busy,
    write_results,
)
from bench.common import _serve as serve_live_memory

NAME = "overhead"
LAST_REQUEST_PATH = "/bench/last-question-request"  # served by the fake's process for (c')
REPETITIONS = 5
PER_REPETITION = 40  # 200 questions in all, as the issue measured
WARMUP = 15
GOAL = 1.3


# -- the child processes -------------------------------------------------------------------------------
def _serve_fake(spec: dict[str, Any], conn: Any, stop: Any) -> None:
    from live_memory.testing.llm_server import FakeLLM

    logging.basicConfig(level=logging.WARNING)
    rules: Literal["anthropic", "openai"] = "anthropic" if spec["protocol"] == "anthropic" else "openai"
    fake = FakeLLM(cache_rules=rules)  # the default reply: instant text
    fake.app = _with_last_request(fake, fake.app)
    with fake:
        conn.send(("ok", fake.base_url))
        stop.wait()


def _with_last_request(fake: Any, app: Any) -> Any:
    """`app`, plus GET LAST_REQUEST_PATH: the body of the latest model request that carried tools (the
    server's; the direct calls send none), as JSON."""
    from starlette.responses import Response

    def latest() -> bytes | None:
        # Parsed from the bytes, newest first, keeping nothing: `record.body` would keep every parsed body for
        # the rest of the run, and the fake's garbage collections would walk them all.
        for record in reversed(fake.requests):
            if json.loads(record.raw_body).get("tools"):
                return bytes(record.raw_body)
        return None

    async def serve(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == LAST_REQUEST_PATH:
            body = latest()
            response = Response(body, media_type="application/json") if body is not None else Response(status_code=404)
            await response(scope, receive, send)
            return
        await app(scope, receive, send)

    return serve


def echo_app() -> Any:
    """A minimal MCP server: one echo tool, served like Live Memory's endpoint (stateless, same security)."""
    from mcp.server.mcpserver import MCPServer

    from live_memory.constants import MCP_PATH
    from live_memory.http.app import transport_security
    from live_memory.http.security import SecurityPolicy

    mcp = MCPServer(name="echo")

    @mcp.tool(structured_output=False, description="Echo the text back.")
    async def echo(text: str) -> str:
        return text

    policy = SecurityPolicy.build(bind_host="127.0.0.1", extra_hosts=(), token="")  # as Live Memory's defaults
    return mcp.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, transport_security=transport_security(policy)
    )


def _serve_echo(spec: dict[str, Any], conn: Any, stop: Any) -> None:
    from live_memory.testing.live_server import LiveServer

    logging.basicConfig(level=logging.WARNING)
    with LiveServer(echo_app()) as server:
        conn.send(("ok", server.mcp_url))
        stop.wait()


def _serve_baseline(spec: dict[str, Any], conn: Any, stop: Any) -> None:
    """Live Memory from another checkout: its sources go first on the path before anything is imported."""
    src = spec.pop("baseline_src")
    sys.path[:0] = [f"{src}/server", src]
    serve_live_memory(spec, conn, stop)


@contextlib.contextmanager
def baseline_process(src: str, fake_base_url: str, data_dir: Path, protocol: str) -> Iterator[ChildServer]:
    spec = {
        "baseline_src": src,
        "fake_base_url": fake_base_url,
        "data_dir": str(data_dir),
        "protocol": protocol,
        "tcp_nodelay": False,
        "options": {"force_explore_when_cold": "false"},
    }
    with child_process(_serve_baseline, spec, "live-memory-baseline-server") as (url, pid):
        yield ChildServer(url, pid)


@contextlib.contextmanager
def fake_provider(protocol: str, profile_dir: Path | None = None) -> Iterator[str]:
    with child_process(_serve_fake, {"protocol": protocol}, "fake-provider", profile_dir=profile_dir) as (url, _):
        yield url


@contextlib.contextmanager
def echo_server() -> Iterator[str]:
    with child_process(_serve_echo, {}, "mcp-echo-server") as (url, _):
        yield url


# -- the three paths -------------------------------------------------------------------------------------
class McpCaller:
    """One official MCP client session over HTTP (`mcp` + `httpx2`), kept open for every call."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._stack = contextlib.AsyncExitStack()
        self.client: Any = None

    async def __aenter__(self) -> McpCaller:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        http = await self._stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=120.0)))
        self.client = await self._stack.enter_async_context(Client(streamable_http_client(self.url, http_client=http)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call(self, tool: str, arguments: dict[str, Any]) -> None:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")


def sdk_sender(protocol: str, base_url: str, stack: contextlib.AsyncExitStack) -> Callable[..., Awaitable[Any]]:
    """The official SDK's call for one request (keyword arguments = the request body's fields)."""
    if protocol == "anthropic":
        import anthropic

        claude = anthropic.AsyncAnthropic(base_url=base_url, api_key="bench", max_retries=0)
        stack.push_async_callback(claude.close)
        return claude.messages.create
    import openai

    gpt = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="bench", max_retries=0)
    stack.push_async_callback(gpt.close)
    return gpt.chat.completions.create


def direct_call(protocol: str, base_url: str, stack: contextlib.AsyncExitStack) -> Callable[[int], Awaitable[Any]]:
    """One provider call with the official SDK, the way a bare forwarding server would make it."""
    send = sdk_sender(protocol, base_url, stack)
    model = "claude-haiku-4-5" if protocol == "anthropic" else "gpt-5-mini"

    def ask(index: int) -> Awaitable[Any]:
        return send(model=model, max_tokens=256, messages=[{"role": "user", "content": f"question {index}?"}])

    return ask


def raw_sender(protocol: str, base_url: str, stack: contextlib.AsyncExitStack) -> Callable[..., Awaitable[Any]]:
    """The official SDK client's `post` of a whole request body, its response parsed into the SDK's type."""
    if protocol == "anthropic":
        import anthropic

        claude = anthropic.AsyncAnthropic(base_url=base_url, api_key="bench", max_retries=0)
        stack.push_async_callback(claude.close)
        return lambda **body: claude.post("/v1/messages", cast_to=anthropic.types.Message, body=body)
    import openai
    from openai.types.chat import ChatCompletion

    gpt = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="bench", max_retries=0)
    stack.push_async_callback(gpt.close)
    return lambda **body: gpt.post("/chat/completions", cast_to=ChatCompletion, body=body)


class Replay:
    """(c'): the official SDK client sending the request the server sent for its latest question."""

    def __init__(self, protocol: str, base_url: str, stack: contextlib.AsyncExitStack) -> None:
        import httpx2

        self.send = raw_sender(protocol, base_url, stack)
        self.url = base_url + LAST_REQUEST_PATH
        self.http = httpx2.AsyncClient()
        stack.push_async_callback(self.http.aclose)
        self.body: dict[str, Any] | None = None

    async def fetch(self) -> None:
        """Take the server's latest request from the fake (between timed calls)."""
        response = await self.http.get(self.url)
        response.raise_for_status()
        self.body = response.json()

    def __call__(self, index: int) -> Awaitable[Any]:
        if self.body is None:
            raise RuntimeError("no request of the server to replay yet")
        return self.send(**self.body)


async def measure(
    protocol: str, mcp_url: str, echo_url: str, fake_url: str, workspace: Path, baseline_url: str | None = None
) -> dict[str, list[list[float]]]:
    """{kind: [samples of repetition 0, ...]} in milliseconds."""
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(McpCaller(mcp_url))
        echo = await stack.enter_async_context(McpCaller(echo_url))
        provider = direct_call(protocol, fake_url, stack)
        replay = Replay(protocol, fake_url, stack)
        cwd = str(workspace)
        calls: dict[str, Callable[[int], Awaitable[Any]]] = {
            "question": lambda i: server.call("ask_live_memory", {"question": f"question {i}?", "cwd": cwd}),
            "echo": lambda i: echo.call("echo", {"text": f"question {i}?"}),
            "provider": provider,
            "replay": replay,
        }
        if baseline_url is not None:
            baseline = await stack.enter_async_context(McpCaller(baseline_url))
            calls["baseline"] = lambda i: baseline.call("ask_live_memory", {"question": f"question {i}?", "cwd": cwd})
        kinds = tuple(calls)
        for index in range(WARMUP):  # loads the workspace, opens every connection
            for kind in kinds:
                await calls[kind](-index - 1)
                if kind == "question":
                    await replay.fetch()
        samples: dict[str, list[list[float]]] = {kind: [] for kind in kinds}
        counter = 0
        for _ in range(REPETITIONS):
            block: dict[str, list[float]] = {kind: [] for kind in kinds}
            for index in range(PER_REPETITION):
                shift = index % len(kinds)
                for kind in kinds[shift:] + kinds[:shift]:
                    started = time.perf_counter()
                    await calls[kind](counter)
                    block[kind].append((time.perf_counter() - started) * 1000)
                    counter += 1
                    if kind == "question":
                        await replay.fetch()
            for kind in kinds:
                samples[kind].append(block[kind])
        return samples


def ratio_of(question: Sequence[float], echo: Sequence[float], provider: Sequence[float]) -> float:
    return statistics.median(question) / (statistics.median(echo) + statistics.median(provider))


def summarize(protocol: str, samples: dict[str, list[list[float]]]) -> dict[str, Any]:
    flat = {kind: [t for block in samples[kind] for t in block] for kind in samples}
    floor = statistics.median(flat["echo"]) + statistics.median(flat["provider"])
    same_request_floor = statistics.median(flat["echo"]) + statistics.median(flat["replay"])
    return {
        "protocol": protocol,
        "repetitions": REPETITIONS,
        "calls_per_repetition": PER_REPETITION,
        "question": latency_summary(flat["question"]),
        "echo": latency_summary(flat["echo"]),
        "provider": latency_summary(flat["provider"]),
        "floor_p50_ms": round(floor, 2),
        "overhead_p50_ms": round(statistics.median(flat["question"]) - floor, 2),
        "ratio_p50": round(statistics.median(flat["question"]) / floor, 3),
        "ratio_per_repetition": [
            round(ratio_of(q, e, p), 3)
            for q, e, p in zip(samples["question"], samples["echo"], samples["provider"], strict=True)
        ],
        "goal_ratio": GOAL,
        "replay": latency_summary(flat["replay"]),
        "floor_same_request_p50_ms": round(same_request_floor, 2),
        "ratio_same_request_p50": round(statistics.median(flat["question"]) / same_request_floor, 3),
        "ratio_same_request_per_repetition": [
            round(ratio_of(q, e, r), 3)
            for q, e, r in zip(samples["question"], samples["echo"], samples["replay"], strict=True)
        ],
        **(_baseline_figures(samples, floor) if "baseline" in samples else {}),
    }


def _baseline_figures(samples: dict[str, list[list[float]]], floor: float) -> dict[str, Any]:
    flat = [t for block in samples["baseline"] for t in block]
    return {
        "baseline": latency_summary(flat),
        "baseline_ratio_p50": round(statistics.median(flat) / floor, 3),
        "baseline_ratio_per_repetition": [
            round(ratio_of(b, e, p), 3)
            for b, e, p in zip(samples["baseline"], samples["echo"], samples["provider"], strict=True)
        ],
    }


def run(
    protocol: str,
    baseline_src: str | None = None,
    profile_dir: Path | None = None,
    options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`options`: LIVE_MEMORY_* values for the server under test only (e.g. a team store that is down, with the
    same checkout as the baseline: what the option costs a question)."""
    with (
        tempfile.TemporaryDirectory(prefix="lm-overhead-") as tmp_name,
        fake_provider(protocol, profile_dir) as fake_url,
    ):
        tmp = Path(tmp_name)
        workspace = tmp / "repo"
        (workspace / ".git").mkdir(parents=True)
        (workspace / "app.py").write_text("print('hello')\n")
        server_options: dict[str, Any] = {"force_explore_when_cold": "false", **(options or {})}
        with contextlib.ExitStack() as stack:
            server = stack.enter_context(
                server_process(
                    fake_url,
                    tmp / "data",
                    protocol=protocol,
                    profile_dir=profile_dir,
                    **server_options,
                )
            )
            echo_url = stack.enter_context(echo_server())
            baseline_url = None
            if baseline_src is not None:
                baseline = stack.enter_context(baseline_process(baseline_src, fake_url, tmp / "baseline", protocol))
                baseline_url = f"{baseline.url}/mcp"
            samples = asyncio.run(measure(protocol, f"{server.url}/mcp", echo_url, fake_url, workspace, baseline_url))
    return summarize(protocol, samples)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.overhead", description=__doc__.split("\n")[0])
    parser.add_argument("--protocol", choices=("anthropic", "openai"), default="anthropic")
    parser.add_argument("--baseline-src", help="another checkout of the server, measured in the same run as (a0)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option for the server under test only (repeatable), e.g. team_store=postgresql://...",
    )
    parser.add_argument(
        "--profile", metavar="DIR", help="profile the server and the fake provider (cProfile, DIR/<process>.prof)"
    )
    args = parser.parse_args(argv if argv is not None else [])
    warn_if_busy()
    profile_dir = Path(args.profile).resolve() if args.profile else None
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    options = dict(item.split("=", 1) for item in args.option)
    figures = run(args.protocol, args.baseline_src, profile_dir, options)
    rows = [
        ("(a) question through Live Memory", *_row(figures["question"])),
        ("(b) MCP echo tool, same client", *_row(figures["echo"])),
        (f"(c) direct {args.protocol} SDK call", *_row(figures["provider"])),
        ("(c') the same, sending the server's request", *_row(figures["replay"])),
    ]
    if "baseline" in figures:
        rows.append(("(a0) question through the baseline", *_row(figures["baseline"])))
    print_table(
        ["path", "p50 ms", "p95 ms", "p99 ms"],
        rows,
        title=f"per-question overhead, {REPETITIONS} x {PER_REPETITION} interleaved calls of each path",
    )
    print(f"  floor = p50(b) + p50(c) = {figures['floor_p50_ms']} ms; overhead {figures['overhead_p50_ms']} ms")
    print(f"  per repetition: {', '.join(f'{r:.2f}x' for r in figures['ratio_per_repetition'])}")
    verdict = "met" if figures["ratio_p50"] <= GOAL else "missed"
    print(f"ratio to the floor (p50): {figures['ratio_p50']:.2f}x (goal {GOAL}x: {verdict})")
    spread = ", ".join(f"{r:.2f}x" for r in figures["ratio_same_request_per_repetition"])
    print(
        f"ratio to the same-request floor p50(b) + p50(c') = {figures['floor_same_request_p50_ms']} ms: "
        f"{figures['ratio_same_request_p50']:.2f}x (per repetition: {spread})"
    )
    if "baseline" in figures:
        spread = ", ".join(f"{r:.2f}x" for r in figures["baseline_ratio_per_repetition"])
        print(f"baseline's ratio to the floor (p50): {figures['baseline_ratio_p50']:.2f}x (per repetition: {spread})")
    write_results(NAME, figures)
    return figures


def _row(summary: dict[str, float]) -> tuple[float, float, float]:
    return summary["p50_ms"], summary["p95_ms"], summary["p99_ms"]


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
