"""Arm B of the session bill: the real Live Memory server in its own process, answered by a scripted model.

- `ServerProcess`: `live-memory serve` on the run's virtual clock (bench/virtual_serve.py; any checkout: the
  interpreter and the `server/` directory put on PYTHONPATH are options) on a free loopback port, configured
  only through its environment, against the fake provider (`live_memory.testing.llm_server.FakeLLM`, Anthropic cache
  rules, the same clock).
- `MemoryModel`: the fake's responder. It reads the prompt the server sent, finds the current question,
  and decides like a model would:
    strict   - Read what the question needs of every file whose current bytes the prompt does not show (a
               held copy, an observation, held lines, an earlier Read result of the same bytes, a Read in
               this question): the definition's lines when it was told them reliably (`range_told`), else
               the whole file;
    trusting - skip that Read when an earlier answer or a ledger fact names the file and no change notice
               for it follows.
  Search rule: it searches whenever it must read a file whose location it has not been told for this task:
  no line of its context names the file together with the name the task asks about (an answer, a ledger
  fact, a file card, a result of this question's tools), and no earlier Read of the file showed that name.
  An unrelated mention of the path does not count. It searches with the server's `find_symbol` tool when the
  server offers it (one call per name; the result gives the definition's lines, so no decoy is opened),
  else with Grep (then it also opens the task's decoys). Locate questions ("where is X defined") need the
  definition's lines, not the file: strict takes them from held bytes, from a file card or lookup result
  whose content hash matches the file on disk, or from this question's search or the lookup the server made
  for it (the question's hint); trusting also from an
  earlier answer or fact that names the name with the file, unless a change notice for it followed. Uses
  questions ("who calls X") need the files that use the name as they are now: a lookup of its uses made for
  this question (the hint, or `find_symbol`'s uses), else a search; an earlier answer is not relied on.
  It answers with the task's answer text (files named with line ranges). Summarizer requests (standalone,
  or folds that continue the conversation: `bench.common.summary_request`) get the ledger's changes naming
  files. Only the prompt and the disk are consulted: no server internals.
- `MemoryExplorer`: the main agent's side (one ask per exploration task through the official MCP client);
  the hooks' tees go to `POST /notify` with the payload hooks/notify.py sends.
- `classify_memory`: splits the server's recorded prompts into kinds of spend for the report.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from bench.bill_agents import PROJECT_ROOT, MainAgent, tool_result, tool_use, worth_exploring
from bench.bill_outline import definition_range, symbols_in
from bench.bill_workload import Repo, Task
from bench.common import PATHISH, ledger_changes, summary_request
from live_memory.core.prompts import DIRECTORY_TREE_HEADING, MATERIAL_HEADING
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from live_memory.testing.ports import free_port

HERE = Path(__file__).parent
DEFAULT_SERVER_SRC = HERE.parent / "server"
MEMORY_STEP_S = 3.0  # virtual seconds per memory-model request
SERVER_START_TIMEOUT_S = 60.0
SERVER_STOP_TIMEOUT_S = 20.0
MAX_TOOL_CALLS = 24  # per question: a safety stop, far above what the script ever asks for
READ_MAX_LINE_CHARS = 2000  # the Read tool cuts longer lines
READ_DEFAULT_LINES = 2000  # a Read without a limit shows this many lines
ANSWER_LEAD_CHARS = 120  # what of an answer's first line identifies it (the history keeps an answer's lead)

_FENCE = re.compile(r"^### (\S+)[^\n]*\n```\n.*?\n```", re.S | re.M)  # held files and held cited lines
_NUMBERED = re.compile(r"^\s*\d+\t(.*)$", re.M)
_NUMBERED_LINE = re.compile(r"^\s*(\d+)\t(.*)$", re.M)
_NOTICE = re.compile(r"CHANGED|DELETED|out of date|Modified by|re-read before|no longer exists", re.I)
_NOTICE_SECTION = re.compile(r"out of date|stale|changed|deleted", re.I)
_FILES_SECTION = re.compile(r"seen|re-read|current content|reference", re.I)
_RANGE = re.compile(r"\b(\d+)-(\d+)\b")
_CARD_HEADER = re.compile(r"^\s*(\S+) \((?:[^()]*\b)?sha ([0-9a-f]{6,})\b[^()]*\)")
SYMBOL_TOOL = "find_symbol"  # the server's symbol lookup, used when it offers one
SEARCH_TOOLS = ("Grep", SYMBOL_TOOL)


# -- the server process ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ServerCommand:
    """How to start the service under test: an interpreter and the source directory of its package."""

    python: str = sys.executable
    src: Path = DEFAULT_SERVER_SRC
    extra_env: tuple[tuple[str, str], ...] = ()

    @classmethod
    def given(cls, python: str, server_src: str) -> ServerCommand:
        """The command a benchmark's --server-python and --server-src name; exits when there is no package."""
        src = Path(server_src).resolve()
        if not (src / "live_memory").is_dir():
            raise SystemExit(f"--server-src {src} holds no live_memory package")
        return cls(python, src)

    def describe(self) -> str:
        """The command without this machine's paths (the checkout's own `server/` is named so)."""
        src = self.src.resolve()
        try:
            shown = src.relative_to(HERE.parent.resolve()).as_posix() + "/"
        except ValueError:
            shown = f"another checkout's {src.name}/"
        return f"live-memory serve on the replay's virtual clock (bench/virtual_serve.py, PYTHONPATH={shown})"


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
        self.clock_file = tmp / "virtual-clock"
        env["LIVE_MEMORY_BENCH_CLOCK_FILE"] = str(self.clock_file)
        env.update({f"LIVE_MEMORY_{k.upper()}": v for k, v in options.items()})
        env.update(dict(command.extra_env))
        self.env = env
        self.cwd = tmp
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ServerProcess:
        handle = self.log.open("wb")
        self.process = subprocess.Popen(
            [self.command.python, str(HERE / "virtual_serve.py")],  # `serve` on the replay's clock
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        handle.close()
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        with httpx2.Client(timeout=2.0) as client:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.process.returncode}: {self._log_tail()}")
                with contextlib.suppress(httpx2.HTTPError):
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


def norm_path(path: str, root: str) -> str:
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
                path = norm_path(str(args.get("file_path") or args.get("path") or ""), root)
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


def _read_holds(seg_text: str, current: str, lines: tuple[int, int] | None = None) -> bool:
    """A Read result shows the file's current content: from line 1 to its end, or (with `lines`) every
    line of that 1-based range, as the file has it now."""
    now = current.splitlines()
    if lines is None:  # from line 1
        shown = _NUMBERED.findall(seg_text)
        return bool(shown) and now[: len(shown)] == shown
    first, last = lines
    seen = {int(n): text for n, text in _NUMBERED_LINE.findall(seg_text) if first <= int(n) <= last}
    return len(seen) == last - first + 1 and all(now[n - 1] == text for n, text in seen.items() if n <= len(now))


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
        self.versions: dict[str, dict[str, None]] = {}  # path -> every version of the file seen on disk

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
        offered = {str(t.get("name")) for t in request.body.get("tools") or [] if isinstance(t, dict)}
        searched = any(s.kind == "tool_use" and s.name in SEARCH_TOOLS for s in tail)
        if task.kind == "locate":
            return self.locate(task, segs, at, searched, offered)
        if task.kind == "uses":
            return self.uses(task, segs, at, searched, offered)
        if task.need is not None:
            return self.content(task, segs, at, searched)
        names = dict(zip(task.files, task.symbols, strict=True))
        missing = [p for p in task.files if not self.held(p, segs, tail, names[p])]
        if self.mode == "trusting":
            missing = [p for p in missing if not self.trusted(p, segs[:at])]
        if not missing:
            return Reply.text(task.answer)
        unlocated = [p for p in missing if not self.located(p, names[p], segs, at)]
        if not searched and unlocated:
            return self.search(task, [names[p] for p in unlocated], offered)
        grepped = any(s.kind == "tool_use" and s.name == "Grep" for s in tail)
        opened = {s.path for s in tail if s.kind == "tool_use" and s.name == "Read"}
        decoys = [d for d in task.decoys if d not in opened and d not in missing] if grepped else []
        reads: list[tuple[str, dict[str, object]]] = [("Read", {"file_path": p}) for p in decoys]
        reads += [("Read", self.read_arguments(p, names[p], segs, at)) for p in missing]
        return Reply.tool_calls(reads)

    def read_arguments(self, path: str, name: str, segs: Sequence[Seg], at: int) -> dict[str, object]:
        """The whole file, or only the definition's lines when the prompt gives them and they can be relied on
        (the model reads the window the lookup or the card names, as the Read tool invites)."""
        lines = self.definition_lines(path, name)
        if lines is None or not self.range_told(path, name, segs, at):
            return {"file_path": path}
        first, last = lines
        return {"file_path": path, "offset": first, "limit": last - first + 1}

    def definition_lines(self, path: str, name: str) -> tuple[int, int] | None:
        """The lines that define `name` in the file as it is now (the bench's own outline of the file)."""
        current = self.current(path)
        return definition_range(path, current, name) if current is not None else None

    def search(self, task: Task, names: Sequence[str], offered: set[str]) -> Reply:
        if SYMBOL_TOOL in offered:
            return Reply.tool_calls([(SYMBOL_TOOL, {"name": n, "kind": "definition", "code": True}) for n in names])
        return Reply.tool_calls([("Grep", {"pattern": task.pattern, "-i": False})])

    def locate(self, task: Task, segs: Sequence[Seg], at: int, searched: bool, offered: set[str]) -> Reply:
        """Where a name is defined: answered from what the prompt shows, else after one search."""
        path, name = task.files[0], task.symbols[0]
        told = self.held(path, segs, segs[at + 1 :], name) or self.range_told(path, name, segs, at)
        if not told and self.mode == "trusting":
            told = self.trusted(path, segs[:at]) and self.located(path, name, segs, at)
        if told or searched:
            return Reply.text(task.answer)
        if SYMBOL_TOOL in offered:
            return Reply.tool_calls([(SYMBOL_TOOL, {"name": name, "kind": "definition", "code": True})])
        return Reply.tool_calls([("Grep", {"pattern": task.pattern, "-i": False, "output_mode": "content"})])

    def uses(self, task: Task, segs: Sequence[Seg], at: int, searched: bool, offered: set[str]) -> Reply:
        """Who uses a name: answered from a lookup of its uses made for this question (the hint, or its own
        search). Any file may have changed since an earlier answer, so neither model answers from memory."""
        name = task.symbols[0]
        fresh = [
            seg.text
            for i, seg in enumerate(segs)
            if (i >= at and seg.where == "user" and seg.kind == "text") or (i > at and seg.kind == "tool_result")
        ]
        if searched or any(_lists_uses(text, name) for text in fresh):
            return Reply.text(task.answer)
        if SYMBOL_TOOL in offered:
            return Reply.tool_calls([(SYMBOL_TOOL, {"name": name, "kind": "uses"})])
        return Reply.tool_calls([("Grep", {"pattern": task.pattern, "-i": False})])

    # -- content questions (bench/bill_content.py) ---------------------------------------------------------
    def content(self, task: Task, segs: Sequence[Seg], at: int, searched: bool) -> Reply:
        """A question that needs whole files: answered when the prompt shows every one as it is now (trusting:
        also when an earlier answer to the same need stands, no change notice for its files since); else each
        missing file is Read whole, in one turn, after one search when one of them was not located."""
        assert task.need is not None
        missing = [p for p in task.files if not self.whole(p, segs)]
        if missing and self.mode == "trusting" and self.answered_before(task, segs[:at]):
            missing = []
        if not missing:
            return Reply.text(task.answer)
        if not searched and any(not self.content_located(task, p, segs, at) for p in missing):
            need = task.need
            if need.kind == "area":
                return Reply.tool_calls([("Grep", {"pattern": task.pattern, "path": need.area, "-i": True})])
            return Reply.tool_calls([("Glob", {"pattern": f"**/{task.pattern}"})])
        return Reply.tool_calls([("Read", self.rest_of(p, segs, at)) for p in missing])

    def rest_of(self, path: str, segs: Sequence[Seg], at: int) -> dict[str, object]:
        """Read the file whole (all of it at once when the prompt says how many lines it has and that is more than
        a Read shows), or, after a Read in this question that stopped short, from the first line it did not
        show."""
        reads = [s.text for s in segs[at + 1 :] if s.kind == "tool_result" and s.path == path]
        shown = [int(n) for text in reads for n, _ in _NUMBERED_LINE.findall(text)]
        if shown:
            return {"file_path": path, "offset": max(shown) + 1}
        told = [int(m) for s in segs if s.kind == "text" for m in _lines_told(path).findall(s.text)]
        return (
            {"file_path": path, "limit": max(told)} if told and max(told) > READ_DEFAULT_LINES else {"file_path": path}
        )

    def whole(self, path: str, segs: Sequence[Seg]) -> bool:
        """The prompt shows every line of the file as it is now: a held copy (with the diffs after it applied),
        Read results and held lines, whichever came last for each line (a window counts for its lines only)."""
        current = self.current(path)
        if current is None:
            return True  # nothing to read
        versions = self.versions.setdefault(path, {self.repo.files.get(path, ""): None})
        versions[current] = None
        shown: dict[int, str] = {}
        for seg in segs:
            if seg.kind == "text":
                held = next((v for v in versions if v and f"### {path}\n```\n{v}\n```" in seg.text), None)
                if held is not None:
                    shown = dict(enumerate(held.splitlines(), 1))
                edited = _edited(seg.text, path)
                if edited is not None:
                    shown = _patched(shown, edited)
                for block in _line_blocks(seg.text, path):
                    shown.update((int(n), text) for n, text in _NUMBERED_LINE.findall(block))
            elif seg.kind == "tool_result" and seg.name == "Read" and seg.path == path:
                shown.update((int(n), text) for n, text in _NUMBERED_LINE.findall(seg.text))
        lines = current.splitlines()
        return all(shown.get(n) in (line, line[:READ_MAX_LINE_CHARS]) for n, line in enumerate(lines, 1))

    def content_located(self, task: Task, path: str, segs: Sequence[Seg], at: int) -> bool:
        """The model knows where to read `path` for this need: for a file asked about, the prompt names its
        path (the tree counts); for an area, a line names it with the topic, or this question's search found it."""
        assert task.need is not None
        named = re.compile(rf"(?<![\w/.-]){re.escape(path)}(?![\w/-])")
        for i, seg in enumerate(segs):
            if seg.where == "tool":
                continue
            if seg.where == "system" and seg.index == 0:
                if task.need.kind != "area" and path in tree_paths(seg.text):
                    return True
                continue
            if task.need.kind != "area":
                if named.search(seg.text):
                    return True
            elif (i > at and seg.kind == "tool_result" and named.search(seg.text)) or _names_topic(
                seg.text, named, task.need.topic
            ):
                return True
        return False

    def answered_before(self, task: Task, segs: Sequence[Seg]) -> bool:
        """An earlier answer to this very need stands in the prompt (its first line, which cites each file whole
        as it was), and no change notice for any of its files came after it."""
        lead = task.answer.split("\n", 1)[0][:ANSWER_LEAD_CHARS]
        answered = notice = -1
        for i, seg in enumerate(segs):
            if seg.kind != "text":
                continue
            if seg.where == "assistant" and lead in seg.text:
                answered = i
            if any(p in seg.text for p in task.files) and _NOTICE.search(seg.text):
                notice = i
        return answered > notice

    # -- what the prompt shows -----------------------------------------------------------------------------
    def held(self, path: str, segs: Sequence[Seg], tail: Sequence[Seg], name: str = "") -> bool:
        """The prompt shows what the question needs of the file as it is now: the whole file, or (given the
        name asked about) every line of that name's definition; a Read of it in this question counts."""
        if any(s.kind == "tool_use" and s.name == "Read" and s.path == path for s in tail):
            return True
        current = self.current(path)
        if current is None:
            return True  # nothing to read
        lines = self.definition_lines(path, name) if name else None
        for seg in segs:
            if seg.kind == "text" and current in seg.text:
                return True
            shown = lines is not None and seg.kind in ("text", "tool_result")  # held lines, or a lookup's code
            blocks = _line_blocks(seg.text, path) if shown else []
            if any(_read_holds(block, current, lines) for block in blocks):
                return True
            shows_file = seg.kind == "tool_result" and seg.name == "Read" and seg.path == path
            if shows_file and (_read_holds(seg.text, current) or _read_holds(seg.text, current, lines)):
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

    def located(self, path: str, name: str, segs: Sequence[Seg], at: int) -> bool:
        """This task's file was located for it: a line of the context names the file with the name asked
        about (a card lists the name under the file's header), or an earlier Read of the file showed the
        name. The directory tree and other questions' search results do not count."""
        for i, seg in enumerate(segs):
            if seg.where == "tool" or (seg.where == "system" and seg.index == 0):
                continue
            if seg.kind == "tool_result":
                if seg.name == "Read" and seg.path == path and name in seg.text:
                    return True
                if i <= at:
                    continue  # another question's search
            if seg.kind in ("text", "tool_result") and any(p == path for p, _ in _named_with(seg.text, name)):
                return True
        return False

    def range_told(self, path: str, name: str, segs: Sequence[Seg], at: int) -> bool:
        """The prompt gives the lines defining `name` in `path` and they can be relied on: from a file card
        or lookup result whose hash matches the file's current bytes, or from this question's own search or
        the lookup the server made for it."""
        current = self.current(path)
        digest = hashlib.sha256(current.encode()).hexdigest() if current is not None else ""
        for i, seg in enumerate(segs):
            if (
                seg.where == "tool"
                or (seg.where == "system" and seg.index == 0)
                or seg.kind not in ("text", "tool_result")
            ):
                continue
            # This question's own results, and what the server looked up for it (the hint): fresh.
            this_question = (i > at and seg.kind == "tool_result") or (i >= at and seg.where == "user")
            for named_path, sha in _named_with(seg.text, name, ranged=True):
                if named_path == path and (this_question or (sha and digest.startswith(sha))):
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


def tree_paths(system_text: str) -> set[str]:
    """The file paths the prompt's directory tree shows (two spaces of indent a level, directories end in "/";
    a collapsed directory's "name/ (N files)" shows none of its files)."""
    tree = system_text.partition(DIRECTORY_TREE_HEADING)[2]
    out: set[str] = set()
    stack: list[str] = []
    for line in tree.splitlines()[1:]:
        if line.startswith("#"):
            break  # the next section
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.strip().split(" [", 1)[0]
        del stack[depth:]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
        elif " (" not in name:
            out.add("/".join([*stack, name]))
    return out


def _lines_told(path: str) -> re.Pattern[str]:
    """How the prompt says a file's length: "path (N lines" (a card's or a summary's header)."""
    return re.compile(rf"(?<![\w/.-]){re.escape(path)}`? \((\d+) lines?\b")


def _edited(text: str, path: str) -> str | None:
    """The unified diff of an observation saying `path` was edited, or None."""
    head = f"[observation] {path} was edited; what changed (unified diff):\n\n"
    return text.partition(head)[2] or None if head in text else None


def _patched(shown: dict[int, str], diff: str) -> dict[int, str]:
    """`shown` (a whole file's lines by number) with a unified diff applied; empty when it does not apply."""
    lines = [shown[n] for n in range(1, len(shown) + 1)] if shown and max(shown) == len(shown) else None
    if lines is None:
        return {}
    out: list[str] = []
    at = 0
    for hunk in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@[^\n]*\n((?:[ +-][^\n]*\n?)*)", diff, re.M):
        start = int(hunk.group(1)) - (0 if hunk.group(2) == "0" else 1)
        out += lines[at:start]
        at = start
        for line in hunk.group(3).splitlines():
            if line[:1] in (" ", "-"):
                if at >= len(lines) or lines[at] != line[1:]:
                    return {}
                at += 1
            if line[:1] in (" ", "+"):
                out.append(line[1:])
    out += lines[at:]
    return dict(enumerate(out, 1))


def _names_topic(text: str, named: re.Pattern[str], topic: str) -> bool:
    """A line of `text` names the path (`named`) together with the topic word, in any case."""
    if not named.search(text):
        return False
    word = re.compile(rf"\b{re.escape(topic)}\b", re.I)
    return any(named.search(line) and word.search(line) for line in text.splitlines())


def read_calls(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(call id, file_path) of every Read call a request's messages hold, in order."""
    return [
        (str(block.get("id")), str((block.get("input") or {}).get("file_path", "")))
        for message in body.get("messages") or []
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "Read"
    ]


def _line_blocks(text: str, path: str) -> list[str]:
    """The numbered lines of each block of `text` headed `### path:first-last` (lines held for the model)."""
    if f"### {path}:" not in text:
        return []
    heading = rf"^### {re.escape(path)}:\d+-\d+[^\n]*\n```\n(.*?)\n```"
    return [m.group(1) for m in re.finditer(heading, text, re.M | re.S)]


def _lists_uses(text: str, name: str) -> bool:
    """`text` holds find_symbol's list of the files that use `name` (or its word that none does)."""
    listed = f"'{name}'" in text and re.search(r"^Used in \d+ files?:", text, re.M) is not None
    return listed or f"No file uses '{name}'" in text


def _named_with(text: str, name: str, *, ranged: bool = False) -> list[tuple[str, str]]:
    """(path, content hash or "") of each line of `text` that names `name` with a path: on the same line
    (`path:12-30`, "path defines name"), or under a file card's header (`path (40 lines, sha 1a2b...)`).
    With `ranged`, only lines that also give a line range count."""
    if name not in text:
        return []
    out: list[tuple[str, str]] = []
    header: tuple[str, str] | None = None
    for line in text.splitlines():
        card = _CARD_HEADER.match(line)
        if card is not None:
            header = (card.group(1), card.group(2))
            continue
        if not line.startswith((" ", "\t")):
            header = None
        if not re.search(rf"\b{re.escape(name)}\b", line) or (ranged and not _RANGE.search(line)):
            continue
        if header is not None:
            out.append(header)
        out += [(m.group(0).rstrip(":.,"), "") for m in PATHISH.finditer(line)]
    return out


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

    asker: Any  # bench.common.McpAsker (an open session)
    http: httpx2.AsyncClient
    cwd: str  # the copy the server reads
    # How the main agent names the repository in its context: the same root as in arms A and C, so B's
    # prompts are not charged for the length of the benchmark's scratch path.
    shown_root: str = PROJECT_ROOT
    session_id: str = "bench-session-0"
    errors: int = 0
    notify_accepted: int = 0
    notify_ignored: int = 0
    # Answers that are not this question's (an earlier answer given again for another need): each a wrong answer.
    wrong: list[int] = field(default_factory=list)

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
        elif task.answer not in text:
            self.wrong.append(task.index)
        agent.context.add(tool_result(text, "memory answers"))
        agent.heard(task)

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
