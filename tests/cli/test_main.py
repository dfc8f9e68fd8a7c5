"""The `live-memory` command: idempotent serve and SIGTERM as a real subprocess; ask, config show, and
configuration errors. What only a process shows (signals, exit statuses, closed pipes, the singleton) runs
`python -m live_memory`; the client commands' own behaviour runs `main()` in this process (a new interpreter
costs about a second of CPU)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import httpx2
import pytest

from live_memory.cli.main import build_parser, cmd_ask, cmd_serve, main
from live_memory.constants import SHUTDOWN_GRACE_S
from live_memory.settings.config import load_settings
from live_memory.testing.live_server import live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from live_memory.testing.ports import free_port
from live_memory.workspaces.store import TREE_SUFFIX
from tests.fakes.process_logging import restored_logging

REPO = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "live_memory"]


def cli_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIVE_MEMORY_", "ANTHROPIC_", "OPENAI_"))}
    env.update({"LIVE_MEMORY_PORT": str(port), "LIVE_MEMORY_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)})
    env.update(extra)
    return env


def openai_env(fake: FakeLLM) -> dict[str, str]:
    """A server process answering through the fake's OpenAI-compatible endpoint: that SDK loads in half the
    time of the Anthropic one (a second of CPU less per process; the demo and the session-bill benchmark run the
    Anthropic path in a server process)."""
    return {
        "LIVE_MEMORY_PROVIDER": "openai",
        "LIVE_MEMORY_BASE_URL": fake.base_url + "/v1",
        "LIVE_MEMORY_MODEL": "gpt-5-mini",
        "LIVE_MEMORY_API_KEY": "test",
    }


class ServeProcess:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([*COMMAND, "serve", *args], env=env, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # the process announces itself once it serves
            self.stderr.append(line)
            if "serving http://" in line:
                break
        else:
            self.proc.wait(30)  # it exited: reaped, its pipe closed, before the test fails
            self.proc.stderr.close()
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
            **openai_env(fake),
            LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD="0",
            LIVE_MEMORY_DEFAULT_TIMEOUT_S="120",
            LIVE_MEMORY_SHUTDOWN_GRACE_S="0.1",  # the question's cut deadline: no test waits on the default
        )
        server = ServeProcess(env)
        try:
            second_code, second_out, second_err = serve_in_process(env)
            assert (second_code, server.proc.poll()) == (0, None), second_err
            assert "already running" in second_out
            # Another key and base URL: the running server would keep its own, so this is no "nothing to do".
            other = {**env, "LIVE_MEMORY_BASE_URL": "http://127.0.0.1:9/v1", "LIVE_MEMORY_API_KEY": "a-new-key-5678"}
            third_code, third_out, third_err = serve_in_process(other)
            assert (third_code, third_out, server.proc.poll()) == (1, "", None), third_err
            assert "already running" in third_err and "with other settings than this shell's" in third_err
            assert "base_url" in third_err and "(here: http://127.0.0.1:9/v1)" in third_err
            assert "(here: ****5678)" in third_err and "a-new-key" not in third_err  # masked, as config show does
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
    # The workspace's snapshot (beside it, perhaps, its directory tree kept for the next start: not a snapshot).
    written = (tmp_path / "data" / "workspaces").glob("*.json")
    snapshots = [path for path in written if not path.name.endswith(TREE_SUFFIX)]
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


def serve_in_process(env: dict[str, str]) -> tuple[int, str, str]:
    """`live-memory serve` on a port that is already taken, run in this process (it answers before it would
    load the server, and a new interpreter costs seconds): exit code, stdout, stderr. In a thread, so a serve
    that wrongly went on to serve fails (signal handlers need the main thread) instead of hanging."""
    settings = load_settings(env=env, data_dir=Path(env["LIVE_MEMORY_DATA_DIR"]))
    out, err = io.StringIO(), io.StringIO()
    result: list[int] = []

    def run() -> None:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result.append(cmd_serve(settings))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert result, f"serve did not return: {err.getvalue()}"
    return result[0], out.getvalue(), err.getvalue()


def use_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Exactly `env` as this process's environment, for this test."""
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict[str, str], *argv: str
) -> tuple[int, str, str]:
    """`live-memory ARGV` run by `main()` in this process with exactly `env` as its environment: exit code
    (argparse's usage exit included), stdout, stderr."""
    use_env(monkeypatch, env)
    capsys.readouterr()
    with restored_logging():
        try:
            code = main(list(argv))
        except SystemExit as exit:
            code = int(exit.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_foreign_port_holder_makes_serve_exit_1(tmp_path: Path) -> None:
    class Teapot(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(418)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    foreign = HTTPServer(("127.0.0.1", 0), Teapot)
    thread = threading.Thread(target=foreign.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        env = cli_env(tmp_path, foreign.server_address[1])
        code, _, err = serve_in_process(env)
    finally:
        foreign.shutdown()
        foreign.server_close()
    assert code == 1
    assert f"port {foreign.server_address[1]}" in err
    assert "another program" in err


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
            refused, _, said = ask_in_process(env, "What does main.py do?", tmp_path / "nowhere")
            agents = httpx2.get(f"{server.url}/stats", params={"cwd": str(workspace)}).json()["workspace"]["agents"]
    assert code == 0, err
    assert out.startswith("main.py prints hi.")
    assert "[live-memory] model=claude-haiku-4-5" in out
    assert "files_read=1" in out
    assert agents == {"live-memory-cli": 1}  # the command line's questions, under its own name
    assert refused == 1 and said.startswith("live-memory: cwd ") and "Error executing tool" not in said


def test_ask_without_a_server_says_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = cli_env(tmp_path, free_port())
    started = time.monotonic()
    code, _, err = run_cli(monkeypatch, capsys, env, "ask", "q", "--cwd", str(tmp_path), "--wait", "0.5")
    elapsed = time.monotonic() - started
    assert code == 1
    assert "(waited 0.5 s); start one with `live-memory serve`" in err
    assert elapsed < 0.5 + 1.0  # the wait bounds the whole command: no import or probe adds seconds to it


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", "--port", "99999"], "argument --port: must be a port number from 1 to 65535, got '99999'"),
        (["ask", "q", "--max-answer-tokens", "-1"], "argument --max-answer-tokens: must be 0 (the server's default)"),
        (["ask", "q", "--wait", "soon"], "argument --wait: must be a number of seconds"),
    ],
)
def test_a_bad_option_value_is_refused_naming_the_option_not_a_variable(
    argv: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(monkeypatch, capsys, cli_env(tmp_path, free_port()), *argv)
    assert code == 2 and said in err and "LIVE_MEMORY_" not in err


def test_config_show_lists_values_with_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = cli_env(tmp_path, free_port(), LIVE_MEMORY_API_KEY="sk-secret-value-1234")
    code, out, _ = run_cli(monkeypatch, capsys, env, "config", "show")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "[env LIVE_MEMORY_PORT]" in lines["port"]
    assert "[default]" in lines["default_timeout_s"]
    assert "****1234" in lines["api_key"]
    assert "sk-secret-value" not in out


def test_invalid_configuration_fails_at_start_naming_the_key(tmp_path: Path) -> None:
    env = cli_env(tmp_path, 7799, LIVE_MEMORY_DEFAULT_TIMEOUT_S="soon")
    result = subprocess.run([*COMMAND, "serve"], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "default_timeout_s" in result.stderr and "LIVE_MEMORY_DEFAULT_TIMEOUT_S" in result.stderr


# --- client commands: waiting, stdin, formats, foreign programs, closed pipes ----------------------------------


def run_into_closed_pipe(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """Run with stdout a pipe whose reader is already gone (what `| head` leaves behind once it exits)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(argv, env=env, stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)


class FirstWrite(io.StringIO):
    """A captured stream that says when something was first written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def write(self, text: str) -> int:
        count = super().write(text)
        self.written.set()
        return count


def test_ask_waits_for_a_starting_server_and_reads_the_question_from_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "main.py").write_text("print('hi')\n")
    with FakeLLM() as fake:
        fake.script(Reply.tool_call("Read", {"file_path": "main.py"}), Reply.text("main.py prints hi."))
        env = cli_env(tmp_path, free_port(), **openai_env(fake))
        use_env(monkeypatch, env)
        monkeypatch.setattr(sys, "stdin", io.StringIO("What does main.py do?\n"))
        out, err = io.StringIO(), FirstWrite()
        codes: list[int] = []

        def ask() -> None:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), restored_logging():
                codes.append(main(["ask", "-", "--cwd", str(workspace), "--wait", "120"]))

        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        assert err.written.wait(30)  # said once nothing answers yet; the server starts only now
        assert "yet; waiting up to 120 s for one that is starting" in err.getvalue().splitlines()[0]
        server = ServeProcess(env)
        try:
            asking.join(120)
            ledger = run_cli(monkeypatch, capsys, env, "ledger", "show", "--format", "json", "--cwd", str(workspace))
            piped = run_into_closed_pipe([*COMMAND, "stats"], env)
        finally:
            server.stop()
    assert codes == [0], err.getvalue()
    assert out.getvalue().startswith("main.py prints hi.")
    assert err.getvalue().count("waiting up to") == 1  # on the first line only
    ledger_code, ledger_out, ledger_err = ledger
    assert ledger_code == 0, ledger_err
    assert json.loads(ledger_out) == []  # JSON, as asked, even when the ledger is empty
    assert b"Traceback" not in piped.stderr and b"BrokenPipe" not in piped.stderr
    assert piped.returncode == 128 + signal.SIGPIPE


@pytest.fixture
def foreign_port() -> Iterator[int]:
    """Another HTTP program holding a port: it answers every request with a non-JSON page."""

    class Page(BaseHTTPRequestHandler):
        def _page(self) -> None:
            body = b"<html>not live memory</html>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _page

        def log_message(self, *args: object) -> None:
            pass

    foreign = HTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=foreign.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield foreign.server_address[1]
    finally:
        foreign.shutdown()
        foreign.server_close()


@pytest.mark.parametrize(
    "command", [["stats"], ["ledger", "show"], ["ask", "q", "--wait", "0"]], ids=["stats", "ledger", "ask"]
)
def test_client_commands_say_another_program_holds_the_port(
    tmp_path: Path,
    foreign_port: int,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = cli_env(tmp_path, foreign_port)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(monkeypatch, capsys, env, *command)
    assert code == 1
    assert "not Live Memory" in err
    assert "Traceback" not in err


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    env = cli_env(tmp_path, 7799)
    result = run_into_closed_pipe([*COMMAND, "config", "show"], env)
    assert result.stderr == b""
    assert result.returncode == 128 + signal.SIGPIPE


def test_config_get_without_a_key_prints_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(monkeypatch, capsys, cli_env(tmp_path, free_port()), "config", "get")
    assert code == 2
    assert err.startswith("usage: live-memory config get KEY")


def test_serve_port_flag_wins_doctor_passes_and_an_open_client_stream_does_not_hold_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README setup: `live-memory serve` with a credential; `live-memory doctor` then finds nothing to fix
    (the data dir is private). A Claude Code session keeps a `GET /mcp` event stream open; SIGTERM with no
    question running ends it and the process exits 0 at once (not at uvicorn's graceful-shutdown timeout)."""
    data_dir = tmp_path / "state" / "live-memory"
    port = free_port()
    with FakeLLM() as fake:
        env = cli_env(
            tmp_path,
            port,
            LIVE_MEMORY_BASE_URL=fake.base_url,
            LIVE_MEMORY_API_KEY="test",
            LIVE_MEMORY_DATA_DIR=str(data_dir),
        )
        server = ServeProcess({**env, "LIVE_MEMORY_PORT": "1"}, "--host", "127.0.0.1", "--port", str(port))
        try:
            health = httpx2.get(f"http://127.0.0.1:{port}/health", timeout=10).json()
            # `live-memory doctor` in this process, in the same environment (a new interpreter costs seconds)
            use_env(monkeypatch, env)
            doctor = io.StringIO()
            with contextlib.redirect_stdout(doctor):
                doctor_code = main(["doctor", "--plugin-dir", str(REPO), "--cwd", str(tmp_path)])
            with socket.create_connection(("127.0.0.1", port), timeout=10) as stream:
                stream.sendall(
                    b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                    b"mcp-protocol-version: 2025-06-18\r\n\r\n"
                )
                assert stream.recv(4096).startswith(b"HTTP/1.1 200")  # the idle stream is open
                started = time.monotonic()
                code = server.stop()
                elapsed = time.monotonic() - started
                rest = b""
                while chunk := stream.recv(4096):  # the server ended the stream: EOF, not a reset
                    rest += chunk
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
                server.close()
    assert health["service"] == "live-memory"
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert doctor_code == 0, doctor.getvalue()
    assert "[ok  ] data dir" in doctor.getvalue()
    assert code == 0
    assert elapsed < SHUTDOWN_GRACE_S, elapsed  # well before any grace period or timeout ran out
