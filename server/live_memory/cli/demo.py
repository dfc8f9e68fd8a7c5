"""`make demo` / `live-memory demo`: Live Memory end to end on this checkout, with no key and no network.

Starts a scripted model (`live_memory.testing.scripted_model`: a loopback server speaking enough of the
Anthropic Messages API for the official SDK the service uses, its usage from the prompt-cache simulator),
a throwaway `live-memory serve` pointed at it (temporary data dir, the checkout as its only allowed root),
asks two questions with `live-memory ask` (its code, in this process, handed in by the command line so
this module never imports it back), prints the answers and stops everything. The script is honest about
what it is given: the first answer asks for a `Read` of `server/live_memory/constants.py` and quotes the
line it finds there; the second answers from what the service already put in its prompt (no tool call),
and the simulated prompt cache reports that prompt's unchanged prefix as `cache_read_input_tokens`.

Standard library only on the model's side, so the demo runs from a fresh clone with `pip install .`, and from a wheel
installed anywhere: with no checkout at hand it asks about a copy of the installed package (`package_workspace`).
"""

from __future__ import annotations

import contextlib
import io
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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from live_memory.constants import CHARS_PER_TOKEN
from live_memory.testing.prompt_cache import PromptCache
from live_memory.testing.scripted_model import ScriptedModel

if TYPE_CHECKING:
    from live_memory.settings.config import Settings

DEMO_FILE = "server/live_memory/constants.py"
QUESTIONS = (
    "Where is the default port of the Live Memory service set, and to what?",
    "And which address does the service bind by default?",
)
# This checkout's prompt is shorter than the default model's minimum cacheable prefix (4,096 tokens on Haiku
# 4.5), under which nothing would be cached: the demo's cache takes any length, to show the mechanism.
DEMO_MIN_CACHEABLE_TOKENS = 0
SERVER_START_TIMEOUT_S = 30.0
SERVER_POLL_S = 0.05
STOP_TIMEOUT_S = 30.0
# The caller's own configuration must not leak into the throwaway server (a real key, another port, ...).
_FOREIGN_ENV_PREFIXES = ("LIVE_MEMORY_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "DEEPSEEK_", "OPENROUTER_", "OLLAMA_")
_NUMBERED_LINE = r"^\s*(\d+)\t({name}\s*=\s*(.+?))\s*$"
_CITED_HOST = re.compile(r"`(DEFAULT_HOST\s*=\s*(.+?))` \(([^()\s]+:\d+)\)")
_TRAILER = re.compile(r"\[live-memory\].*")


# ------------------------------------------------------------------------------------------- the script


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


# ------------------------------------------------------------------------------------------- the run


def default_repo() -> Path | None:
    """The checkout this package was installed from (an editable install or a source tree), else the
    repository around the current directory, if either holds the demo's file; None for neither (a wheel
    installed elsewhere: `package_workspace` then stands in)."""
    here = Path(__file__).resolve().parents[3]
    candidates = [here, *[p for p in (Path.cwd(), *Path.cwd().parents) if (p / ".git").exists()][:1]]
    for candidate in candidates:
        if (candidate / DEMO_FILE).is_file():
            return candidate
    return None


def package_workspace(scratch: Path) -> Path:
    """A throwaway workspace holding a copy of the installed package's sources, laid out as in a checkout
    (`server/live_memory/...`): what the demo asks about when no checkout is at hand."""
    import live_memory

    root = scratch / "live-memory"
    package = Path(live_memory.__file__).resolve().parent
    shutil.copytree(package, root / "server" / "live_memory", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


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
    from live_memory.cli.client import probe_client, who_answers

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


# Runs `live-memory ask QUESTION --cwd REPO` with these settings as the command line does (printing the
# answer), returning its exit status: the command line hands its own in, so this module never imports it.
AskCommand = Callable[["Settings", str, Path], int]


@dataclass(frozen=True)
class Asked:
    question: str
    returncode: int
    answer: str
    trailer: str

    def field(self, name: str) -> str:
        match = re.search(rf"\b{name}=(\S+)", self.trailer)
        return match.group(1) if match else ""


def ask(question: str, repo: Path, env: dict[str, str], ask_command: AskCommand) -> Asked:
    """`live-memory ask QUESTION --cwd REPO` against the demo's server: the command's own code, run in this
    process (a new interpreter per question would add a second of start-up)."""
    from live_memory.settings.config import load_settings

    settings = load_settings(env=env, data_dir=Path(env["LIVE_MEMORY_DATA_DIR"]))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        returncode = ask_command(settings, question, repo)
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


def run_demo(ask_command: AskCommand, repo: Path | None = None, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    repo = repo or default_repo()
    if repo is not None and not (repo / DEMO_FILE).is_file():
        print(f"live-memory demo: {repo} is not a checkout of Live Memory (no {DEMO_FILE}); pass --repo", file=out)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="live-memory-demo-"))  # 0700
    if repo is None:
        repo = package_workspace(scratch)
        print(
            f"demo: no checkout of Live Memory here: asking about a copy of the installed package in {repo}", file=out
        )
    repo = repo.resolve()
    file_text = (repo / DEMO_FILE).read_text(encoding="utf-8", errors="replace")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with ScriptedModel(
        script_reply, cache=PromptCache("anthropic", min_cacheable_tokens=DEMO_MIN_CACHEABLE_TOKENS)
    ) as model:
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
                answer = ask(question, repo, env, ask_command)
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
    for line in saved(file_text, first, second):
        print(line, file=out)
    return 0


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _dollars(field: str) -> float:
    try:
        return float(field.lstrip("$"))
    except ValueError:
        return 0.0


def saved(file_text: str, first: Asked, second: Asked) -> list[str]:
    """What these two answers saved the asking agent, against reading the file itself and against a subagent that
    reads it for each question, and what the memory's own model spent (estimates from this run; the session bill
    measures whole sessions)."""
    # The file as an agent's Read returns it: numbered lines.
    read = _tokens("".join(f"{n:6}\t{line}" for n, line in enumerate(file_text.splitlines(keepends=True), 1)))
    answers = _tokens(first.answer) + _tokens(second.answer)
    cost = _dollars(first.field("cost")) + _dollars(second.field("cost"))
    return [
        f"demo: what the agent saved, for these two questions (estimated at {CHARS_PER_TOKEN:g} characters a token):",
        f"  - with Live Memory, its own context took the two answers: ~{answers:,} tokens;",
        f"  - with no memory, it reads {DEMO_FILE} itself: ~{read:,} tokens, carried for the rest of its session;",
        f"  - an Explore subagent reads the file for each question: ~{2 * read:,} tokens in contexts of its own,"
        " then hands back a report;",
        f"  - Live Memory's own model spent ${cost:.4f} at {first.field('model')} list prices: the first answer "
        f"{first.field('cost')} (it read the file), the second {second.field('cost')} (from memory). It pays off "
        "as questions return to what it holds.",
        "demo: over whole generated sessions, with scripted models, the session bill measures it: "
        "docs/benchmarks.md, `python -m bench.session_bill`.",
    ]
