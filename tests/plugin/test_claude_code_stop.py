"""A stop with the real Claude Code CLI connected: `live-memory serve` as its own process, SIGTERM while a
`claude -p` session holds its MCP event stream (the 2026-07-28 protocol's `subscriptions/listen`).

Claude Code's model is a FakeLLM that holds the session open (its reply waits for the test); the memory's
model is another FakeLLM. The stop must end the client's stream itself: a stream left open holds the
process until uvicorn's graceful-shutdown timeout, which then cancels it with a traceback in the log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from live_memory.testing.ports import free_port
from tests.cli.test_main import openai_env
from tests.plugin.conftest import REPO_ROOT, TOOL_NAME, cli_env
from tests.plugin.test_claude_code_e2e import is_agent_turn, tool_results

pytestmark = pytest.mark.slow
WAIT_S = 60.0
GRACE_S = "0.1"  # the cut deadline of a question running at the stop: no test waits on the default


@dataclass
class Session:
    server: subprocess.Popen[bytes]
    log: Path
    cli: subprocess.Popen[str]
    agent: FakeLLM
    memory: FakeLLM
    release: threading.Event
    holding: threading.Event  # the agent's model holds the session open: Claude Code is connected and waiting
    asked: list[RecordedRequest]  # the agent's model requests, as they arrive

    def stop_server(self) -> int:
        self.server.send_signal(signal.SIGTERM)
        return self.server.wait(WAIT_S)

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def project(sealed_environment: Path) -> Path:
    root = sealed_environment / "src" / "proj"
    root.mkdir(parents=True)
    (root / "app.py").write_text("def answer() -> int:\n    return 42\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def start_server(tmp_path: Path, home: Path, memory: FakeLLM) -> tuple[subprocess.Popen[bytes], Path, int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIVE_MEMORY_", "ANTHROPIC_", "CLAUDE_"))}
    env.update(
        HOME=str(home),
        LIVE_MEMORY_PORT=str(port),
        LIVE_MEMORY_DATA_DIR=str(tmp_path / "data"),
        **openai_env(memory),  # the question's first provider call loads that SDK, the quicker one to load
        LIVE_MEMORY_OAUTH="false",
        LIVE_MEMORY_ALLOWED_ROOTS=str(home),
        LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD="0",
        LIVE_MEMORY_SHUTDOWN_GRACE_S=GRACE_S,
        LIVE_MEMORY_LOG_LEVEL="INFO",
    )
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "live_memory", "serve"], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    with httpx2.Client(timeout=2.0) as client:
        for _ in range(int(WAIT_S / 0.05)):
            if server.poll() is not None:
                raise AssertionError("the server exited: " + log.read_text(errors="replace"))
            try:
                if client.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    return server, log, port
            except httpx2.HTTPError:
                threading.Event().wait(0.05)  # polling a child's readiness, bounded by the loop
    server.kill()
    raise AssertionError("the server did not answer /health in time")


Starter = Callable[[list[Reply], Reply | None], Session]


@pytest.fixture
def start(claude: str, tmp_path: Path, project: Path, sealed_environment: Path) -> Iterator[Starter]:
    """Start the server and a `claude -p` session: the agent's model plays `turns`, then holds the session
    open until the test ends; the memory's model plays `memory_reply` (or answers "ok")."""
    started: list[Session] = []

    def starter(turns: list[Reply], memory_reply: Reply | None) -> Session:
        release, holding = threading.Event(), threading.Event()
        asked: list[RecordedRequest] = []
        agent, memory = FakeLLM(), FakeLLM()
        agent.__enter__()
        memory.__enter__()
        if memory_reply is not None:
            memory.script(memory_reply)

        def respond(request: RecordedRequest) -> Reply:
            if not is_agent_turn(request):
                return Reply.text("ok")
            asked.append(request)  # recorded on arrival: the fake records a request once it is answered
            step = len(tool_results(request.body))
            if step < len(turns):
                return turns[step]
            holding.set()
            release.wait(WAIT_S)  # hold the session open until the test ends
            return Reply.text("done")

        agent.responder = respond
        server, log, port = start_server(tmp_path, sealed_environment, memory)
        arguments = ["-p", "What does answer() return?", "--plugin-dir", str(REPO_ROOT), "--output-format"]
        arguments += ["stream-json", "--verbose", "--permission-mode", "acceptEdits", "--allowedTools", TOOL_NAME]
        cli = subprocess.Popen(
            [claude, *arguments],
            cwd=project,
            env=cli_env(tmp_path / "cli-home", agent.base_url, LIVE_MEMORY_PORT=str(port)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        session = Session(server, log, cli, agent, memory, release, holding, asked)
        started.append(session)
        return session

    yield starter
    for session in started:
        session.release.set()
        for process in (session.server, session.cli):
            if process.poll() is None:
                process.kill()
            process.wait(WAIT_S)
        session.agent.__exit__(None, None, None)
        session.memory.__exit__(None, None, None)


def wait_until(predicate: Callable[[], bool], what: str) -> None:
    pause = threading.Event()
    for _ in range(int(WAIT_S / 0.05)):
        if predicate():
            return
        pause.wait(0.05)  # polling another process's progress, bounded by the loop
    raise AssertionError(f"timed out waiting for {what}")


def assert_clean_stop(session: Session, code: int) -> None:
    log = session.server_log()
    assert code == 0, log[-3000:]
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
    assert "graceful shutdown exceeded" not in log, log[-3000:]


def agent_turns(session: Session) -> list[RecordedRequest]:
    return list(session.asked)


def test_sigterm_with_an_idle_claude_code_session_connected_stops_cleanly(start: Starter) -> None:
    session = start([], None)
    # Claude Code connects to its MCP servers before its first model request, which now waits.
    wait_until(session.holding.is_set, "Claude Code's first model request")
    assert_clean_stop(session, session.stop_server())


def test_sigterm_mid_question_delivers_the_cut_answer_to_claude_code(start: Starter, project: Path) -> None:
    memory_released = threading.Event()
    ask = Reply.tool_call(TOOL_NAME, {"question": "What does answer() return?", "cwd": str(project)})
    session = start([ask], Reply.stall(memory_released, seconds=WAIT_S))
    try:
        wait_until(session.memory.stalled.is_set, "the question to reach the memory's model")
        code = session.stop_server()
        wait_until(
            lambda: any(len(tool_results(r.body)) == 1 for r in agent_turns(session)),
            "the answer to reach Claude Code's next model request",
        )
    finally:
        memory_released.set()
    (after,) = [r for r in agent_turns(session) if len(tool_results(r.body)) == 1]
    assert "Live Memory is shutting down and cut this question short" in tool_results(after.body)[0]
    assert_clean_stop(session, code)
