"""The `live-memory` command: idempotent serve and SIGTERM as a real subprocess; ask, config show, and
configuration errors."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from live_memory.cli import build_parser, cmd_ask
from live_memory.config import load_settings
from tests.fakes.live_server import live_server, settings_for
from tests.fakes.llm_server import FakeLLM, Reply

COMMAND = [sys.executable, "-m", "live_memory"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIVE_MEMORY_", "ANTHROPIC_", "OPENAI_"))}
    env.update({"LIVE_MEMORY_PORT": str(port), "LIVE_MEMORY_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)})
    env.update(extra)
    return env


class ServeProcess:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([*COMMAND, "serve"], env=env, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # the process announces itself once it serves
            self.stderr.append(line)
            if "serving http://" in line:
                break
        else:
            raise AssertionError("server did not start: " + "".join(self.stderr))
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()

    def _read_rest(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.close()

    def close(self) -> int:
        """Wait for the process (killing it if it lingers) and release the pipe."""
        try:
            code = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout=10)
        self._drain.join(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return code


def test_serve_is_a_singleton_and_sigterm_mid_question_returns_a_best_effort_answer_and_flushes(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    release = threading.Event()
    with FakeLLM() as fake:
        fake.script(Reply.stall(release, seconds=60))
        env = cli_env(
            tmp_path,
            free_port(),
            LIVE_MEMORY_BASE_URL=fake.base_url,
            LIVE_MEMORY_API_KEY="t",
            LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD="0",
            LIVE_MEMORY_DEFAULT_TIMEOUT_S="120",
            LIVE_MEMORY_SHUTDOWN_GRACE_S="0.5",  # the question's cut deadline: no test waits on the default
        )
        server = ServeProcess(env)
        try:
            second = subprocess.run([*COMMAND, "serve"], env=env, capture_output=True, text=True, timeout=30)
            assert (second.returncode, server.proc.poll()) == (0, None), second.stderr
            assert "already running" in second.stdout
            answers: list[tuple[int, str, str]] = []
            asking = threading.Thread(target=lambda: answers.append(ask_in_process(env, "slow question", workspace)))
            asking.start()
            assert fake.stalled.wait(30), answers
            code = server.stop()
            asking.join(30)
        finally:
            release.set()
            if server.proc.poll() is None:
                server.proc.kill()
                server.close()
    assert code == 0
    [(ask_code, out, _)] = answers
    assert ask_code == 0
    assert "Live Memory is shutting down and cut this question short" in out and "timed_out=true" in out
    snapshots = list((tmp_path / "data" / "workspaces").glob("*.json"))
    assert len(snapshots) == 1 and "slow question" in snapshots[0].read_text()


def ask_in_process(env: dict[str, str], question: str, cwd: Path) -> tuple[int, str, str]:
    """`live-memory ask` run in this process (its MCP client is what is tested; importing it in a new
    interpreter costs seconds): exit code, stdout, stderr."""
    settings = load_settings(env=env, data_dir=Path(env["LIVE_MEMORY_DATA_DIR"]))
    args = build_parser().parse_args(["ask", question, "--cwd", str(cwd)])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cmd_ask(settings, args)
    return code, out.getvalue(), err.getvalue()


def test_foreign_port_holder_makes_serve_exit_1(tmp_path: Path) -> None:
    class Teapot(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(418)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    foreign = HTTPServer(("127.0.0.1", 0), Teapot)
    thread = threading.Thread(target=foreign.serve_forever, daemon=True)
    thread.start()
    try:
        env = cli_env(tmp_path, foreign.server_address[1])
        result = subprocess.run([*COMMAND, "serve"], env=env, capture_output=True, text=True, timeout=30)
    finally:
        foreign.shutdown()
        foreign.server_close()
    assert result.returncode == 1
    assert f"port {foreign.server_address[1]}" in result.stderr
    assert "another program" in result.stderr


def test_ask_prints_the_answer_and_trailer(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "main.py").write_text("print('hi')\n")
    with FakeLLM() as fake:
        fake.script(Reply.tool_call("Read", {"file_path": "main.py"}), Reply.text("main.py prints hi."))
        settings = settings_for(fake.base_url, tmp_path / "data")
        with live_server(settings) as server:
            env = cli_env(tmp_path, server.port)
            code, out, err = ask_in_process(env, "What does main.py do?", workspace)
    assert code == 0, err
    assert out.startswith("main.py prints hi.")
    assert "[live-memory] model=claude-haiku-4-5" in out
    assert "files_read=1" in out


def test_ask_without_a_server_says_how_to_start_one(tmp_path: Path) -> None:
    env = cli_env(tmp_path, free_port())
    result = subprocess.run([*COMMAND, "ask", "q", "--cwd", str(tmp_path)], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert "live-memory serve" in result.stderr


def test_config_show_lists_values_with_sources(tmp_path: Path) -> None:
    env = cli_env(tmp_path, 7799, LIVE_MEMORY_API_KEY="sk-secret-value-1234")
    result = subprocess.run([*COMMAND, "config", "show"], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert "[env LIVE_MEMORY_PORT]" in lines["port"]
    assert "[default]" in lines["default_timeout_s"]
    assert "****1234" in lines["api_key"]
    assert "sk-secret-value" not in result.stdout


def test_invalid_configuration_fails_at_start_naming_the_key(tmp_path: Path) -> None:
    env = cli_env(tmp_path, 7799, LIVE_MEMORY_DEFAULT_TIMEOUT_S="soon")
    result = subprocess.run([*COMMAND, "serve"], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "default_timeout_s" in result.stderr and "LIVE_MEMORY_DEFAULT_TIMEOUT_S" in result.stderr
