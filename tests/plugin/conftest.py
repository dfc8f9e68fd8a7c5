"""Fixtures for the Claude Code plugin: the real server behind a request recorder, a small git repo,
a runner for the plugin's scripts as real subprocesses, and the Claude Code CLI when installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from live_memory.http.app import create_app
from live_memory.testing.live_server import LiveServer, settings_for
from live_memory.testing.llm_server import FakeLLM
from tests.fakes.agent_clis import require_cli

REPO_ROOT = Path(__file__).resolve().parents[2]
HOOKS = REPO_ROOT / "hooks"
CLI_CANDIDATE = REPO_ROOT / ".tools" / "claude-cli" / "node_modules" / ".bin" / "claude"
TOOL_NAME = "mcp__plugin_live-memory_live-memory__ask_live_memory"
WAIT_S = 10.0


@dataclass
class Call:
    """One HTTP exchange the server handled."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    status: int = 0
    response: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)

    def answer(self) -> Any:
        return json.loads(self.response)


@dataclass
class Recorder:
    """ASGI middleware around the real app: records every request and response, in order."""

    app: ASGIApp
    calls: list[Call] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        call = Call(scope["method"], scope["path"], scope.get("query_string", b"").decode(), headers, b"")
        recorded = False

        def record() -> None:
            nonlocal recorded
            if not recorded:
                recorded = True
                with self.changed:
                    self.calls.append(call)
                    self.changed.notify_all()

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                call.body += message.get("body", b"")
            return message

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                call.status = int(message["status"])
            elif message["type"] == "http.response.body":
                call.response += message.get("body", b"")
                if not message.get("more_body", False):
                    record()  # why before sending: a client that has the whole answer finds the call recorded
            await send(message)

        try:
            await self.app(scope, recording_receive, recording_send)
        finally:
            record()

    def find(self, path: str) -> list[Call]:
        with self.changed:
            return [c for c in self.calls if c.path == path]

    def wait_for(self, predicate: Callable[[list[Call]], bool], timeout: float = WAIT_S) -> list[Call]:
        """Block until `predicate(calls)` holds (bounded); returns a snapshot of the calls."""
        with self.changed:
            if not self.changed.wait_for(lambda: predicate(list(self.calls)), timeout):
                raise AssertionError(f"condition not met within {timeout} s; calls: {[c.path for c in self.calls]}")
            return list(self.calls)


@dataclass
class Service:
    url: str
    recorder: Recorder
    data_dir: Path
    provider: FakeLLM

    def post(self, path: str, body: Mapping[str, Any]) -> httpx2.Response:
        return httpx2.post(self.url + path, json=dict(body), timeout=WAIT_S)

    def stats(self, cwd: Path) -> httpx2.Response:
        return httpx2.get(self.url + "/stats", params={"cwd": str(cwd)}, timeout=WAIT_S)

    def load(self, cwd: Path) -> None:
        """Load the workspace (/notify only applies to a loaded one)."""
        assert self.post("/reset", {"cwd": str(cwd)}).status_code == 200

    def notifies(self) -> list[Call]:
        return self.recorder.find("/notify")


@contextmanager
def recorded_service(data_dir: Path) -> Iterator[Service]:
    """The real Live Memory app on a loopback port, its provider a FakeLLM, every request recorded."""
    with FakeLLM() as provider:
        recorder = Recorder(create_app(settings_for(provider.base_url, data_dir)))
        with LiveServer(recorder) as server:  # type: ignore[arg-type]
            yield Service(server.url, recorder, data_dir, provider)


@pytest.fixture
def service(tmp_path: Path, sealed_environment: Path) -> Iterator[Service]:
    with recorded_service(Path(os.environ["LIVE_MEMORY_DATA_DIR"])) as running:
        yield running


@pytest.fixture
def repo(sealed_environment: Path) -> Path:
    return make_repo(sealed_environment)


def make_repo(home: Path) -> Path:
    """A small git repository under HOME (the server's default allowed root): sources and a .gitignore."""
    root = home / "src" / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def answer() -> int:\n    return 42\n", encoding="utf-8")
    (root / "README.md").write_text("# demo\n", encoding="utf-8")
    (root / ".gitignore").write_text("dist/\n*.log\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


@dataclass
class ScriptRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_script(
    name: str | Path,
    stdin: Any = None,
    *,
    env: Mapping[str, str] | None = None,
    args: tuple[str, ...] = (),
    python: str | None = None,
    timeout: float = 30.0,
) -> ScriptRun:
    """Run hooks/<name> (or a script path) as Claude Code does: a subprocess with the payload on stdin.

    PLUGIN_HOOK_PYTHON names another interpreter for every script (e.g. a python3.8 in CI).
    """
    python = python or os.environ.get("PLUGIN_HOOK_PYTHON") or sys.executable
    if stdin is None:
        data = b""
    elif isinstance(stdin, bytes):
        data = stdin
    elif isinstance(stdin, str):
        data = stdin.encode()
    else:
        data = json.dumps(stdin).encode()
    full_env = {**os.environ, **(env or {})}
    started = time.monotonic()
    done = subprocess.run(
        [python, str(name if isinstance(name, Path) else HOOKS / name), *args],
        input=data,
        env=full_env,
        capture_output=True,
        timeout=timeout,
    )
    return ScriptRun(
        done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8"), time.monotonic() - started
    )


def hook_env(service_url: str, project: Path, **extra: str) -> dict[str, str]:
    """What Claude Code exports to a plugin hook, pointed at the test server."""
    return {"LIVE_MEMORY_URL": service_url, "CLAUDE_PROJECT_DIR": str(project), **extra}


# ------------------------------------------------------------------------------ hook payloads (reference §5)


def common(project: Path, event: str) -> dict[str, Any]:
    return {
        "session_id": "0b7c3f8e-5d2a-4c1e-9f6b-2a7d8e9c1f00",
        "transcript_path": f"/tmp/home/.claude/projects/x/{event}.jsonl",
        "cwd": str(project),
        "hook_event_name": event,
    }


def tool_event(project: Path, tool_name: str, tool_input: dict[str, Any], tool_response: Any) -> dict[str, Any]:
    return {
        **common(project, "PostToolUse"),
        "prompt_id": "5a1d2c3b-0000-4000-8000-000000000001",
        "permission_mode": "acceptEdits",
        "effort": {"level": "high"},
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_response": tool_response,
        "tool_use_id": "toolu_01ABCDEF",
        "duration_ms": 3,
    }


def read_payload(project: Path, path: Path, shown: str = "") -> dict[str, Any]:
    file = {"filePath": str(path), "content": shown, "numLines": 1, "startLine": 1, "totalLines": 1}
    return tool_event(project, "Read", {"file_path": str(path)}, {"type": "text", "file": file})


def write_payload(project: Path, path: Path, content: str) -> dict[str, Any]:
    response = {"type": "update", "filePath": str(path), "content": content, "structuredPatch": [], "originalFile": ""}
    return tool_event(project, "Write", {"file_path": str(path), "content": content}, response)


def edit_payload(project: Path, path: Path, old: str, new: str) -> dict[str, Any]:
    response = {
        "filePath": str(path),
        "oldString": old,
        "newString": new,
        "originalFile": "",
        "structuredPatch": [],
        "userModified": False,
        "replaceAll": False,
    }
    tool_input = {"file_path": str(path), "old_string": old, "new_string": new, "replace_all": False}
    return tool_event(project, "Edit", tool_input, response)


def file_changed_payload(project: Path, path: Path, event: str) -> dict[str, Any]:
    return {**common(project, "FileChanged"), "file_path": str(path), "event": event}


def session_start_payload(project: Path, source: str = "startup") -> dict[str, Any]:
    return {**common(project, "SessionStart"), "source": source}


def expansion_payload(project: Path, command: str, args: str = "") -> dict[str, Any]:
    return {
        **common(project, "UserPromptExpansion"),
        "prompt_id": "5a1d2c3b-0000-4000-8000-000000000002",
        "permission_mode": "default",
        "expansion_type": "slash_command",
        "command_name": f"live-memory:{command}",
        "command_args": args,
        "command_source": "plugin",
        "prompt": f"/live-memory:{command} {args}".rstrip(),
    }


# ------------------------------------------------------------------------------ the real Claude Code CLI


@pytest.fixture
def claude() -> str:
    return require_cli(CLI_CANDIDATE, "claude", "scripts/install-claude-cli.sh")


def run_cli(
    claude: str,
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: str | None = None,
    timeout_s: float = 120,
    shown_chars: int = 2000,
) -> subprocess.CompletedProcess[str]:
    """Run the Claude Code CLI to its end; a failed run fails the test with the end of each of its outputs."""
    done = subprocess.run(
        [claude, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=timeout_s
    )
    assert done.returncode == 0, done.stdout[-shown_chars:] + done.stderr[-shown_chars:]
    return done


# Where a Claude Code that needs no model sends model calls: a loopback port nothing serves (discard).
NO_MODEL_URL = "http://127.0.0.1:9"


def cli_env(home: Path, anthropic_base_url: str = NO_MODEL_URL, **extra: str) -> dict[str, str]:
    """An offline Claude Code: throwaway HOME, no updater/telemetry, the model endpoint always on loopback.

    Why always: with the first-party endpoint every command (even `plugin install`) first fetches remote
    settings and policy limits from api.anthropic.com, and without a network each waits ~18 s on DNS."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC", "LIVE_MEMORY_"))}
    env.update(
        HOME=str(home),
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        ANTHROPIC_API_KEY="test",
    )
    env["ANTHROPIC_BASE_URL"] = anthropic_base_url
    env.update(extra)
    return env
