"""Arm B of the session bill: the real Live Memory server in its own process, answered by a scripted model.

- `ServerProcess`: `python -m live_memory serve` (any checkout: the interpreter and the `server/` directory
  put on PYTHONPATH are options) on a free loopback port, configured only through its environment, against
  the fake provider (`tests.fakes.llm_server.FakeLLM`, Anthropic cache rules, the run's virtual clock).
- `MemoryModel`: the fake's responder. It reads the prompt the server sent, finds the current question,
  and decides like a model would:
    strict   - Read every needed file whose current bytes are not in the prompt verbatim (a held copy, an
               observation, an earlier Read result of the same bytes, a Read in this question);
    trusting - skip that Read when an earlier answer or a ledger fact names the file and no change notice
               for it follows.
  It Greps first when a file to read was never named in its context (then also opens the task's decoys),
  and answers with the task's answer text (files named with line ranges). Summarizer requests (standalone,
  or folds that continue the conversation: `bench._common.summary_request`) get the ledger's changes naming
  files. Only the prompt and the disk are consulted: no server internals.
- `MemoryExplorer`: the main agent's side (one ask per exploration task through the official MCP client);
  the hooks' tees go to `POST /notify` with the payload hooks/notify.py sends.
- `classify_memory`: splits the server's recorded prompts into kinds of spend for the report.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.fakes.llm_server import FakeLLM, RecordedRequest, Reply
from tests.fakes.ports import free_port

from bench._common import MATERIAL_HEADING, PATHISH, ledger_changes, summary_request
from bench.bill_agents import PROJECT_ROOT, MainAgent, tool_result, tool_use, worth_exploring
from bench.bill_workload import Repo, Task, symbols_in

HERE = Path(__file__).parent
DEFAULT_SERVER_SRC = HERE.parent / "server"
MEMORY_STEP_S = 3.0  # virtual seconds per memory-model request
SERVER_START_TIMEOUT_S = 60.0
SERVER_STOP_TIMEOUT_S = 20.0
MAX_TOOL_CALLS = 24  # per question: a safety stop, far above what the script ever asks for

_FENCE = re.compile(r"^### (\S+)\n```\n.*?\n```", re.S | re.M)
_NUMBERED = re.compile(r"^\s*\d+\t(.*)$", re.M)
_NOTICE = re.compile(r"CHANGED|DELETED|out of date|Modified by|re-read before|no longer exists", re.I)
_NOTICE_SECTION = re.compile(r"out of date|stale|changed|deleted", re.I)
_FILES_SECTION = re.compile(r"seen|re-read|current content|reference", re.I)


# -- the server process ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ServerCommand:
    """How to start the service under test: an interpreter and the source directory of its package."""

    python: str = sys.executable
    src: Path = DEFAULT_SERVER_SRC
    extra_env: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """The command without this machine's paths (the checkout's own `server/` is named so)."""
        src = self.src.resolve()
        try:
            shown = src.relative_to(HERE.parent.resolve()).as_posix() + "/"
        except ValueError:
            shown = f"another checkout's {src.name}/"
        return f"python -m live_memory serve (PYTHONPATH={shown})"


class ServerProcess:
    """`with ServerProcess(cmd, provider_url, tmp) as server:` a running `live-memory serve` child."""

    def __init__(self, command: ServerCommand, provider_url: str, tmp: Path, options: Mapping[str, str]) -> None:
        self.command = command
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mcp_url = self.url + "/mcp"
        home = tmp / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.log = tmp / "server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LIVE_MEMORY_", "ANTHROPIC_", "CLAUDE_"))}
        env.update(
            {
                "HOME": str(home),
                "PYTHONPATH": str(command.src),
                "LIVE_MEMORY_DATA_DIR": str(tmp / "data"),
                "LIVE_MEMORY_HOST": "127.0.0.1",
                "LIVE_MEMORY_PORT": str(self.port),
                "LIVE_MEMORY_PROVIDER": "anthropic",
                "LIVE_MEMORY_BASE_URL": provider_url,
                "LIVE_MEMORY_API_KEY": "bench-key",
                "LIVE_MEMORY_MODEL": "claude-haiku-4-5",
                "LIVE_MEMORY_OAUTH": "false",
                "LIVE_MEMORY_ALLOWED_ROOTS": str(tmp),
                "LIVE_MEMORY_LOG_LEVEL": "WARNING",
            }
        )
        env.update({f"LIVE_MEMORY_{k.upper()}": v for k, v in options.items()})
        env.update(dict(command.extra_env))
        self.env = env
        self.cwd = tmp
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ServerProcess:
        handle = self.log.open("wb")
        self.process = subprocess.Popen(
            [self.command.python, "-m", "live_memory", "serve"],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        handle.close()
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        with httpx.Client(timeout=2.0) as client:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.process.returncode}: {self._log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(self.url + "/health").status_code == 200:
                        return self
                if time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(f"the server did not answer /health in time: {self._log_tail()}")
                time.sleep(0.05)  # polling a child process's readiness, bounded by the deadline

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-2000:]
        return ""

    def __exit__(self, *exc: object) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()  # SIGTERM: a clean uvicorn shutdown
        try:
            process.wait(SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


# -- the prompt as the scripted model sees it --------------------------------------------------------------
@dataclass(frozen=True)
class Seg:
    """One prompt block in the fake's order: tools, system blocks, then every message block."""

    where: str  # tool | system | user | assistant
    kind: str  # text | tool_use | tool_result | other
    text: str
    name: str = ""
    path: str = ""  # Read/Grep argument (tool_use) or the Read it answers (tool_result)
    index: int = 0  # position among the system blocks


def _norm(path: str, root: str) -> str:
    """A tool argument as a workspace-relative path."""
    path = path.strip()
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.removeprefix("./")


def segments(body: Mapping[str, Any], root: str = "") -> list[Seg]:
    out: list[Seg] = [Seg("tool", "other", json.dumps(t, sort_keys=True)) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append(Seg("system", "text", system))
    elif isinstance(system, list):
        out += [
            Seg("system", "text", str(b.get("text", "")), index=i) for i, b in enumerate(system) if isinstance(b, dict)
        ]
    uses: dict[str, tuple[str, str]] = {}
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", ""))
        content = message.get("content")
        if not isinstance(content, list):
            out.append(Seg(role, "text", content if isinstance(content, str) else json.dumps(content)))
            continue
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                out.append(Seg(role, "text", str(block.get("text", ""))))
            elif kind == "tool_use":
                args = block.get("input") or {}
                name = str(block.get("name", ""))
                path = _norm(str(args.get("file_path") or args.get("path") or ""), root)
                uses[str(block.get("id"))] = (name, path)
                out.append(Seg(role, "tool_use", name + json.dumps(args, sort_keys=True), name, path))
            elif kind == "tool_result":
                name, path = uses.get(str(block.get("tool_use_id")), ("", ""))
                raw = block.get("content")
                text = (
                    raw
                    if isinstance(raw, str)
                    else "\n".join(str(b.get("text", "")) for b in raw or [] if isinstance(b, dict))
                )
                out.append(Seg(role, "tool_result", text, name, path))
            else:
                out.append(Seg(role, "other", json.dumps(block, sort_keys=True)))
    return out


class Questions:
    """Finds which task a prompt is about: the last user text block holding a known question."""

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.by_question = {t.question: t for t in tasks if t.question}

    def find(self, segs: Sequence[Seg]) -> tuple[int, Task | None]:
        for i in range(len(segs) - 1, -1, -1):
            seg = segs[i]
            if seg.where != "user" or seg.kind != "text":
                continue
            for line in seg.text.splitlines():
                task = self.by_question.get(line.strip())
                if task is not None:
                    return i, task
            if len(seg.text) < 4000:
                for question, task in self.by_question.items():
                    if question in seg.text:
                        return i, task
        return -1, None


def _read_holds(seg_text: str, current: str) -> bool:
    """An earlier Read result shows the file's current content (from line 1)."""
    shown = _NUMBERED.findall(seg_text)
    return bool(shown) and current.splitlines()[: len(shown)] == shown


class MemoryModel:
    """The scripted model behind the fake provider (see the module docstring)."""

    def __init__(self, repo_dir: Path, repo: Repo, tasks: Sequence[Task], mode: str, clock: Any) -> None:
        if mode not in ("strict", "trusting"):
            raise ValueError(f"unknown memory model {mode!r}")
        self.repo_dir = repo_dir
        self.root = str(repo_dir) + "/"
        self.repo = repo
        self.questions = Questions(tasks)
        self.mode = mode
        self.clock = clock
        self.unknown = 0
        self.summaries = 0

    def current(self, path: str) -> str | None:
        try:
            return (self.repo_dir / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def __call__(self, request: RecordedRequest) -> Reply:
        self.clock.advance(MEMORY_STEP_S)
        segs = segments(request.body, self.root)
        upkeep = summary_request(request.body)
        if upkeep is not None:
            self.summaries += 1
            return Reply.text(self.ledger(upkeep))
        at, task = self.questions.find(segs)
        if task is None:
            self.unknown += 1
            return Reply.text("(no scripted question found)")
        tail = segs[at + 1 :]
        if sum(1 for s in tail if s.kind == "tool_use") >= MAX_TOOL_CALLS:
            return Reply.text(task.answer)
        missing = [p for p in task.files if not self.held(p, segs, tail)]
        if self.mode == "trusting":
            missing = [p for p in missing if not self.trusted(p, segs[:at])]
        if not missing:
            return Reply.text(task.answer)
        grepped = any(s.kind == "tool_use" and s.name == "Grep" for s in tail)
        if not grepped and any(not self.known(p, segs) for p in missing):
            return Reply.tool_calls([("Grep", {"pattern": task.pattern, "-i": False})])
        opened = {s.path for s in tail if s.kind == "tool_use" and s.name == "Read"}
        decoys = [d for d in task.decoys if d not in opened and d not in missing] if grepped else []
        return Reply.tool_calls([("Read", {"file_path": p}) for p in [*decoys, *missing]])

    # -- what the prompt shows -----------------------------------------------------------------------------
    def held(self, path: str, segs: Sequence[Seg], tail: Sequence[Seg]) -> bool:
        if any(s.kind == "tool_use" and s.name == "Read" and s.path == path for s in tail):
            return True
        current = self.current(path)
        if current is None:
            return True  # nothing to read
        for seg in segs:
            if seg.kind == "text" and current in seg.text:
                return True
            if seg.kind == "tool_result" and seg.name == "Read" and seg.path == path and _read_holds(seg.text, current):
                return True
        return False

    def trusted(self, path: str, segs: Sequence[Seg]) -> bool:
        """An earlier answer or ledger fact names the file, and no change notice for it came after."""
        last_mention = last_notice = -1
        position = 0
        for seg in segs:
            if seg.kind != "text" or (seg.where == "system" and seg.index == 0):
                continue
            section = "facts"
            for line in seg.text.splitlines():
                position += 1
                if line.startswith("#"):
                    section = (
                        "notice"
                        if _NOTICE_SECTION.search(line)
                        else "files"
                        if _FILES_SECTION.search(line)
                        else "facts"
                    )
                    continue
                if path not in line:
                    continue
                if section == "notice" or _NOTICE.search(line):
                    last_notice = position
                elif section == "facts" and (seg.where in ("system", "assistant")):
                    last_mention = position
        return last_mention > last_notice

    def known(self, path: str, segs: Sequence[Seg]) -> bool:
        """The file was named in the context (not only in the directory tree or a search result)."""
        for seg in segs:
            if seg.where == "tool" or (seg.where == "system" and seg.index == 0) or seg.kind == "tool_result":
                continue
            if path in seg.text or seg.path == path:
                return True
        return False

    def ledger(self, text: str) -> str:
        """The fake summarizer: one fact per file the material names that the ledger lacks (`ledger_changes`)."""
        material = text.partition(MATERIAL_HEADING)[2]
        found = [
            f"{path} defines {', '.join(symbols_in(path, self.repo.files[path])[:4]) or 'module-level code'}"
            for path in dict.fromkeys(m.group(0) for m in PATHISH.finditer(material))
            if path in self.repo.files
        ]
        return ledger_changes(text, found)


# -- classification of the server's prompts ----------------------------------------------------------------
def classify_memory(questions: Questions, root: str) -> Any:
    """A function body -> per block [(kind, chars)], in the fake's block order."""

    def classify(body: dict[str, Any]) -> list[list[tuple[str, int]]]:
        segs = segments(body, root)
        at, task = (-1, None) if summary_request(body) is not None else questions.find(segs)
        out: list[list[tuple[str, int]]] = []
        for i, seg in enumerate(segs):
            size = max(1, len(seg.text))
            if task is None:
                out.append([("ledger upkeep (summarizer)", size)])
            elif seg.where == "tool" or (seg.where == "system" and seg.index == 0):
                out.append([("system+tree", size)])
            elif seg.kind == "tool_use":
                out.append([("tool calls", size)])
            elif seg.kind == "tool_result":
                out.append([("own Read results" if seg.name == "Read" else "other tool results", size)])
            elif seg.where == "system":
                out.append(_split_fences(seg.text, "frozen block / ledger"))
            elif i >= at:
                out.append([("per-question tail", size)])
            else:
                out.append(_split_fences(seg.text, "history Q&A"))
        return out

    return classify


def _split_fences(text: str, rest: str) -> list[tuple[str, int]]:
    held = sum(len(m.group(0)) for m in _FENCE.finditer(text))
    return [(label, chars) for label, chars in (("held file copies", held), (rest, len(text) - held)) if chars > 0] or [
        (rest, 1)
    ]


# -- the main agent's side -----------------------------------------------------------------------------
@dataclass
class MemoryExplorer:
    """Arm B: one ask per exploration task; the hooks' tees go to /notify."""

    asker: Any  # bench._common.McpAsker (an open session)
    http: httpx.AsyncClient
    cwd: str  # the copy the server reads
    # How the main agent names the repository in its context: the same root as in arms A and C, so B's
    # prompts are not charged for the length of the benchmark's scratch path.
    shown_root: str = PROJECT_ROOT
    session_id: str = "bench-session-0"
    errors: int = 0
    notify_accepted: int = 0
    notify_ignored: int = 0

    async def explore(self, agent: MainAgent, task: Task) -> None:
        if not worth_exploring(agent, task):
            return
        agent.delegated.add(task.index)
        call = tool_use(
            "mcp__plugin_live-memory_live-memory__ask_live_memory",
            {"question": task.question, "cwd": self.shown_root.rstrip("/")},
        )
        for _ in range(8):
            if agent.turn(task, [call]):
                break
        text, is_error = await self.asker.ask(task.question, self.cwd)
        if is_error:
            self.errors += 1
        agent.context.add(tool_result(text, "memory answers"))
        agent.known.update(task.files)

    async def tee(self, events: list[dict[str, object]]) -> None:
        """What hooks/notify.py posts for one hook run (paths under the shown root name the server's copy)."""
        real = self.cwd.rstrip("/") + "/"
        events = [
            {**e, "path": real + str(e["path"])[len(self.shown_root) :]}
            if str(e.get("path", "")).startswith(self.shown_root)
            else e
            for e in events
        ]
        response = await self.http.post(
            "/notify", json={"cwd": self.cwd, "events": events, "session_id": self.session_id}
        )
        response.raise_for_status()
        data = response.json()
        self.notify_accepted += int(data.get("accepted", 0))
        self.notify_ignored += int(data.get("ignored", 0))


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def copy_workspace(repo: Repo, target: Path) -> Path:
    """A fresh copy of the repository for the server to read and the edits to change. A git checkout is
    hard-linked (fast; edits replace files, never write through a link); this checkout is written out."""
    if (repo.root / ".git").is_dir():
        shutil.copytree(repo.root, target, symlinks=True, copy_function=_link_or_copy)
    else:
        target.mkdir(parents=True)
        for rel in repo.files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(repo.files[rel], encoding="utf-8")
        subprocess.run(["git", "init", "-q"], cwd=target, check=False, capture_output=True, timeout=30)
    return target


def fake_provider(clock: Any) -> FakeLLM:
    return FakeLLM(cache_rules="anthropic", model="claude-haiku-4-5", cache_ttl_s=300.0, clock=clock)
