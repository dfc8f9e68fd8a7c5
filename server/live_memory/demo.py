"""`make demo` / `live-memory demo`: Live Memory end to end on this checkout, with no key and no network.

Starts a scripted model (`DemoModel`: a loopback HTTP server speaking enough of the Anthropic Messages API
for the official SDK the service uses), a throwaway `live-memory serve` pointed at it (temporary data dir,
the checkout as its only allowed root), asks two questions with `live-memory ask` (its code, in this
process), prints the answers and stops everything. The model is honest about what it is given: the first
answer asks for a `Read` of `server/live_memory/constants.py` and quotes the line it finds there; the
second answers from what the service already put in its prompt (no tool call), and the simulated prompt
cache reports that prompt's unchanged prefix as `cache_read_input_tokens`.

Standard library only on the model's side, so the demo runs from a fresh clone with `pip install .`.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

DEMO_FILE = "server/live_memory/constants.py"
QUESTIONS = (
    "Where is the default port of the Live Memory service set, and to what?",
    "And which address does the service bind by default?",
)
CHARS_PER_TOKEN = 4
SERVER_START_TIMEOUT_S = 30.0
SERVER_POLL_S = 0.05
STOP_TIMEOUT_S = 30.0
# The caller's own configuration must not leak into the throwaway server (a real key, another port, ...).
_FOREIGN_ENV_PREFIXES = ("LIVE_MEMORY_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "DEEPSEEK_", "OPENROUTER_", "OLLAMA_")
_NUMBERED_LINE = r"^\s*(\d+)\t({name}\s*=\s*(.+?))\s*$"
_CITED_HOST = re.compile(r"`(DEFAULT_HOST\s*=\s*(.+?))` \(([^()\s]+:\d+)\)")
_TRAILER = re.compile(r"\[live-memory\].*")


# ------------------------------------------------------------------------------------------- the model


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _without_cache_control(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def prompt_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The prompt as ordered (serialized block, is a cache breakpoint) pairs: tools, system, messages."""
    blocks: list[tuple[str, bool]] = []
    for tool in body.get("tools") or []:
        blocks.append(("tool:" + json.dumps(_without_cache_control(tool), sort_keys=True), "cache_control" in tool))
    system = body.get("system") or []
    for part in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        blocks.append(("system:" + json.dumps(_without_cache_control(part), sort_keys=True), "cache_control" in part))
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            serial = f"{message.get('role')}:" + json.dumps(_without_cache_control(part), sort_keys=True)
            blocks.append((serial, isinstance(part, dict) and "cache_control" in part))
    return blocks


class PrefixCache:
    """Prompt caching, simply: the blocks identical to the previous request's, up to a breakpoint, are read
    from the cache; the rest up to the last breakpoint is written; anything after it is plain input."""

    def __init__(self) -> None:
        self._previous: list[str] = []
        self._lock = threading.Lock()

    def usage(self, blocks: Sequence[tuple[str, bool]]) -> dict[str, int]:
        with self._lock:
            same = 0
            for (serial, _), earlier in zip(blocks, self._previous, strict=False):
                if serial != earlier:
                    break
                same += 1
            self._previous = [serial for serial, _ in blocks]
        breakpoints = [index + 1 for index, (_, marked) in enumerate(blocks) if marked]
        read_to = max((b for b in breakpoints if b <= same), default=0)
        write_to = max(breakpoints, default=0)
        sizes = [_tokens(serial) for serial, _ in blocks]
        read = sum(sizes[:read_to])
        written = sum(sizes[read_to:write_to]) if write_to > read_to else 0
        return {
            "input_tokens": sum(sizes) - read - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }


def _texts(value: Any) -> list[str]:
    """Every string under `value` (the text of blocks, tool results and system parts alike)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    return []


def find_numbered_line(texts: Sequence[str], name: str) -> tuple[int, str, str] | None:
    """(line number, the line, its value) of `NAME = value` in a numbered Read result, if any."""
    pattern = re.compile(_NUMBERED_LINE.format(name=re.escape(name)), re.MULTILINE)
    for text in reversed(texts):
        match = pattern.search(text)
        if match:
            return int(match.group(1)), match.group(2), match.group(3)
    return None


def _message(model: str, content: list[dict[str, Any]], stop: str, usage: dict[str, int]) -> dict[str, Any]:
    output = sum(_tokens(json.dumps(block)) for block in content)
    return {
        "id": f"msg_demo_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": output},
    }


def script_reply(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The scripted turn for one request: (content blocks, stop reason)."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content")
    parts = content if isinstance(content, list) else []
    results = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_result"]
    if results:  # the Read came back: answer from it, citing the lines
        texts = _texts(results)
        port, host = find_numbered_line(texts, "DEFAULT_PORT"), find_numbered_line(texts, "DEFAULT_HOST")
        if port is None or host is None:
            return [{"type": "text", "text": f"I could not find DEFAULT_PORT in {DEMO_FILE}."}], "end_turn"
        text = (
            f"The default port is {port[2]}: `{port[1]}` ({DEMO_FILE}:{port[0]}), next to the default address "
            f"`{host[1]}` ({DEMO_FILE}:{host[0]}). The `port` option (LIVE_MEMORY_PORT, or `serve --port`) "
            "overrides it."
        )
        return [{"type": "text", "text": text}], "end_turn"
    question = "\n".join(_texts(content))
    if QUESTIONS[0] in question:
        call = {"type": "tool_use", "id": "toolu_demo_read", "name": "Read", "input": {"file_path": DEMO_FILE}}
        return [{"type": "text", "text": f"Let me read {DEMO_FILE}."}, call], "tool_use"
    if QUESTIONS[1] in question:
        # Answer only from what the prompt already holds: the earlier answer, as the service kept it.
        earlier = _CITED_HOST.search("\n".join(_texts(body.get("system")) + _texts(messages[:-1])))
        if earlier is not None:
            text = (
                f"It binds {earlier.group(2)} by default: `{earlier.group(1)}` ({earlier.group(3)}), as I found "
                "when I read that file for the previous question; it is in my memory, so no tool call was needed."
            )
            return [{"type": "text", "text": text}], "end_turn"
        call = {"type": "tool_use", "id": "toolu_demo_read2", "name": "Read", "input": {"file_path": DEMO_FILE}}
        return [call], "tool_use"
    return [{"type": "text", "text": "This scripted demo model only knows the demo's two questions."}], "end_turn"


class DemoModel:
    """The scripted model on 127.0.0.1:<free port>; a context manager. Records every request body."""

    def __init__(self) -> None:
        self.cache = PrefixCache()
        self.requests: list[dict[str, Any]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: the demo prints its own story
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = None
                if self.path.split("?")[0] != "/v1/messages" or not isinstance(body, dict):
                    error = {"type": "not_found_error", "message": "the demo model serves POST /v1/messages only"}
                    self._send(404, {"type": "error", "error": error})
                    return
                model.requests.append(body)
                content, stop = script_reply(body)
                usage = model.cache.usage(prompt_blocks(body))
                self._send(200, _message(str(body.get("model") or "demo"), content, stop, usage))

            def do_GET(self) -> None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll: shutdown() waits for the serving loop to look, half a second by default.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="demo-model", daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> DemoModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(STOP_TIMEOUT_S)


# ------------------------------------------------------------------------------------------- the run


def default_repo() -> Path | None:
    """The checkout this package was installed from (an editable install or a source tree), else the
    repository around the current directory, if either holds the demo's file."""
    here = Path(__file__).resolve().parents[2]
    candidates = [here, *[p for p in (Path.cwd(), *Path.cwd().parents) if (p / ".git").exists()][:1]]
    for candidate in candidates:
        if (candidate / DEMO_FILE).is_file():
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(model_url: str, port: int, data_dir: Path, repo: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_ENV_PREFIXES)}
    env.update(
        LIVE_MEMORY_HOST="127.0.0.1",
        LIVE_MEMORY_PORT=str(port),
        LIVE_MEMORY_DATA_DIR=str(data_dir),
        LIVE_MEMORY_ALLOWED_ROOTS=str(repo),
        LIVE_MEMORY_PROVIDER="anthropic",
        LIVE_MEMORY_BASE_URL=model_url,
        LIVE_MEMORY_API_KEY="demo-key",
        LIVE_MEMORY_OAUTH="0",
        LIVE_MEMORY_KEEP_WARM="0",
        LIVE_MEMORY_BACKGROUND="0",
        LIVE_MEMORY_WATCH="0",
        LIVE_MEMORY_LOG_LEVEL="warning",
        PYTHONUNBUFFERED="1",
    )
    return env


def wait_until_serving(url: str, process: subprocess.Popen[bytes], timeout_s: float) -> str | None:
    """None once Live Memory answers /health at `url`; else why not (the server exited, or the bound passed)."""
    from live_memory.client import probe_client, who_answers

    deadline = time.monotonic() + timeout_s
    with probe_client() as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return f"the server exited with status {process.returncode}"
            state, _ = who_answers(url, client)
            if state == "ours":
                return None
            if state == "foreign":
                return f"another program answers at {url}"
            time.sleep(SERVER_POLL_S)  # nothing listens yet: a port has no event to wait on
    return f"no answer at {url} within {timeout_s:.0f} s"


@dataclass(frozen=True)
class Asked:
    question: str
    returncode: int
    answer: str
    trailer: str

    def field(self, name: str) -> str:
        match = re.search(rf"\b{name}=(\S+)", self.trailer)
        return match.group(1) if match else ""


def ask(question: str, repo: Path, env: dict[str, str]) -> Asked:
    """`live-memory ask QUESTION --cwd REPO` against the demo's server: the command's own code, run in this
    process (a new interpreter per question would add a second of start-up)."""
    from live_memory.cli import build_parser, cmd_ask
    from live_memory.config import load_settings

    settings = load_settings(env=env, data_dir=Path(env["LIVE_MEMORY_DATA_DIR"]))
    args = build_parser().parse_args(["ask", question, "--cwd", str(repo)])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        returncode = cmd_ask(settings, args)
    text = (out.getvalue() or err.getvalue()).strip()
    trailer = _TRAILER.search(text)
    return Asked(question, returncode, text, trailer.group(0) if trailer else "")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)


def verdict(first: Asked, second: Asked) -> list[str]:
    """What went wrong, if anything (empty: the demo showed what it promises)."""
    problems = [f"`ask` failed ({a.returncode}): {a.answer}" for a in (first, second) if a.returncode != 0]
    if problems:
        return problems
    if first.field("tool_calls") != "1" or DEMO_FILE not in first.answer:
        problems.append("the first answer should read and cite " + DEMO_FILE)
    if second.field("tool_calls") != "0":
        problems.append("the second answer should need no tool call")
    if second.field("cached").rstrip("%") in ("", "0"):
        problems.append("the second answer should read its prompt prefix from the cache")
    return problems


def run_demo(repo: Path | None = None, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    repo = (repo or default_repo() or Path.cwd()).resolve()
    if not (repo / DEMO_FILE).is_file():
        print(f"live-memory demo: {repo} is not a checkout of Live Memory (no {DEMO_FILE}); pass --repo", file=out)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="live-memory-demo-"))  # 0700
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with DemoModel() as model:
        env = server_env(model.base_url, port, scratch / "data", repo)
        print(f"demo: a scripted model at {model.base_url} (no key, no network)", file=out)
        print(f"demo: live-memory serve at {url}, data dir {scratch / 'data'}, allowed root {repo}", file=out)
        out.flush()
        with (scratch / "serve.log").open("wb") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "live_memory", "serve"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            problem = wait_until_serving(url, server, SERVER_START_TIMEOUT_S)
            if problem is not None:
                print(f"demo: the server did not start: {problem}", file=out)
                print((scratch / "serve.log").read_text(errors="replace")[-2000:], file=out)
                return 1
            asked = []
            for question in QUESTIONS:
                print(f"\n$ live-memory ask {shlex.quote(question)} --cwd {shlex.quote(str(repo))}", file=out)
                out.flush()
                answer = ask(question, repo, env)
                print(answer.answer, file=out)
                out.flush()
                asked.append(answer)
        finally:
            _stop(server)
            shutil.rmtree(scratch, ignore_errors=True)
    first, second = asked
    problems = verdict(first, second)
    print("", file=out)
    if problems:
        for line in problems:
            print(f"demo: unexpected: {line}", file=out)
        return 1
    print(
        f"demo: the first answer read {DEMO_FILE} once (tool_calls=1); the second came from memory "
        f"(tool_calls=0) with {second.field('cached')} of its prompt read from the cache. Everything stopped.",
        file=out,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return run_demo(Path(args[0]) if args else None)


if __name__ == "__main__":
    sys.exit(main())
