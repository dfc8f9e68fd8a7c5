"""hooks/notify.py as Claude Code runs it: a subprocess fed the exact hook JSON, against the real server. The
ignore filter's many cases call the script's `handle()` in this process: the subprocess cases prove the
script's contract, and another interpreter per path would prove nothing more."""

from __future__ import annotations

import importlib
import json
import shutil
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from live_memory.http.app import create_app
from live_memory.testing.live_server import LiveServer, settings_for
from live_memory.testing.llm_server import FakeLLM
from live_memory.testing.ports import free_port
from tests.plugin.conftest import (
    HOOKS,
    TOOL_NAME,
    Recorder,
    Service,
    edit_payload,
    file_changed_payload,
    hook_env,
    read_payload,
    run_script,
    session_start_payload,
    tool_event,
    write_payload,
)

CAP = 256 * 1024
# The hooks promise "exits 0 within ~1 s" beyond the interpreter's own start-up, which a busy machine slows:
# the bound is taken over a run of the same script that has nothing to do, measured just before.
DOWN_BOUND_S = 1.0


def down_bound_s() -> float:
    idle = run_script("notify.py", {})  # no event in it: the script starts, finds nothing to do, exits
    assert (idle.returncode, idle.stdout, idle.stderr) == (0, "", "")
    return idle.seconds + DOWN_BOUND_S


def only_event(service: Service) -> dict[str, Any]:
    calls = service.recorder.wait_for(lambda calls: any(c.path == "/notify" for c in calls))
    (call,) = [c for c in calls if c.path == "/notify"]
    body = call.json()
    assert len(body["events"]) == 1
    event: dict[str, Any] = body["events"][0]
    return {**event, "_cwd": body["cwd"], "_session": body.get("session_id"), "_answer": call.answer()}


def test_read_tees_the_files_current_bytes_from_disk_not_the_payload(service: Service, repo: Path) -> None:
    service.load(repo)
    app = repo / "src" / "app.py"
    run = run_script(
        "notify.py", read_payload(repo, app, shown="STALE TEXT FROM THE PAYLOAD"), env=hook_env(service.url, repo)
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    event = only_event(service)
    assert event["kind"] == "read"
    assert event["path"] == str(app)
    assert event["content"] == app.read_text(encoding="utf-8")
    assert event["_cwd"] == str(repo)
    assert event["_session"] == "0b7c3f8e-5d2a-4c1e-9f6b-2a7d8e9c1f00"
    assert event["_answer"]["accepted"] == 1
    assert service.stats(repo).json()["workspace"]["file_contexts"] == 1


@pytest.mark.parametrize("tool", ["Write", "Edit", "NotebookEdit"])
def test_edits_tee_the_file_as_written_on_disk(service: Service, repo: Path, tool: str) -> None:
    service.load(repo)
    app = repo / "src" / "app.py"
    app.write_text("def answer() -> int:\n    return 43\n", encoding="utf-8")
    if tool == "Write":
        payload = write_payload(repo, app, "whatever the model sent")
    elif tool == "Edit":
        payload = edit_payload(repo, app, "return 42", "return 43")
    else:  # NotebookEdit names its file notebook_path
        payload = tool_event(repo, "NotebookEdit", {"notebook_path": str(app), "new_source": "x"}, {})
    run = run_script("notify.py", payload, env=hook_env(service.url, repo))
    assert (run.returncode, run.stdout) == (0, "")
    event = only_event(service)
    assert (event["kind"], event["content"]) == ("write", "def answer() -> int:\n    return 43\n")
    assert event["_answer"]["accepted"] == 1


def test_relative_tool_path_is_resolved_against_the_project(service: Service, repo: Path) -> None:
    service.load(repo)
    payload = read_payload(repo, Path("src/app.py"))
    run_script("notify.py", payload, env=hook_env(service.url, repo))
    assert only_event(service)["path"] == str(repo / "src" / "app.py")


def test_oversized_file_is_announced_by_path_only(service: Service, repo: Path) -> None:
    service.load(repo)
    big = repo / "big.txt"
    big.write_bytes(b"x" * (CAP + 1))
    run = run_script("notify.py", read_payload(repo, big), env=hook_env(service.url, repo))
    assert run.returncode == 0
    event = only_event(service)
    assert event["kind"] == "read"
    assert "content" not in event


def test_file_exactly_at_the_cap_is_still_teed(service: Service, repo: Path) -> None:
    service.load(repo)
    edge = repo / "edge.txt"
    edge.write_bytes(b"y" * CAP)
    run_script("notify.py", read_payload(repo, edge), env=hook_env(service.url, repo))
    assert len(str(only_event(service)["content"])) == CAP


def test_binary_file_is_announced_without_content(service: Service, repo: Path) -> None:
    service.load(repo)
    blob = repo / "logo.png"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    run = run_script("notify.py", read_payload(repo, blob), env=hook_env(service.url, repo))
    assert run.returncode == 0
    event = only_event(service)
    assert event["path"] == str(blob)
    assert "content" not in event


def test_missing_file_or_directory_sends_nothing(service: Service, repo: Path) -> None:
    env = hook_env(service.url, repo)
    for target in (repo / "gone.py", repo / "src"):
        run = run_script("notify.py", read_payload(repo, target), env=env)
        assert (run.returncode, run.stdout) == (0, "")
    assert service.notifies() == []


@pytest.mark.parametrize("kind", ["change", "add", "unlink"])
def test_file_changed_posts_the_event_kind_without_content(service: Service, repo: Path, kind: str) -> None:
    service.load(repo)
    app = repo / "src" / "app.py"
    if kind == "unlink":
        app.unlink()
    run = run_script("notify.py", file_changed_payload(repo, app, kind), env=hook_env(service.url, repo))
    assert (run.returncode, run.stdout) == (0, "")
    event = only_event(service)
    assert (event["path"], event["kind"]) == (str(app), kind)
    assert "content" not in event


@pytest.fixture
def notify_hook(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """hooks/notify.py imported into this process (as the script does, beside its `_client`)."""
    monkeypatch.syspath_prepend(str(HOOKS))
    return importlib.import_module("notify")


@pytest.mark.parametrize(
    "relative",
    [
        ".git/index",
        ".git/refs/heads/main",
        "node_modules/left-pad/index.js",
        "web/node_modules/x/y.js",
        "src/__pycache__/app.cpython-311.pyc",
        ".venv/lib/site.py",
        "src/.app.py.swp",
        "src/app.py~",
        "src/4913",
        "dist/bundle.js",  # ignored by the repository's .gitignore
        "debug.log",  # ignored by the repository's .gitignore
    ],
)
def test_file_changed_drops_ignored_paths_before_any_network_call(
    service: Service, repo: Path, relative: str, notify_hook: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    if (relative.startswith("dist/") or relative.endswith(".log")) and shutil.which("git") is None:
        pytest.skip("git is needed for .gitignore checks")
    for name, value in hook_env(service.url, repo).items():
        monkeypatch.setenv(name, value)
    path = repo / relative
    assert notify_hook.handle(file_changed_payload(repo, path, "change")) is None  # nothing to print
    # A control event proves the hook does post, so the absence above is the filter, not a dead hook.
    notify_hook.handle(file_changed_payload(repo, repo / "src" / "app.py", "change"))
    calls = service.recorder.wait_for(lambda calls: any(c.path == "/notify" for c in calls))
    paths = [e["path"] for c in calls if c.path == "/notify" for e in c.json()["events"]]
    assert paths == [str(repo / "src" / "app.py")]


def test_unknown_file_changed_event_and_other_tools_are_ignored(service: Service, repo: Path) -> None:
    env = hook_env(service.url, repo)
    run_script("notify.py", file_changed_payload(repo, repo / "src" / "app.py", "rename"), env=env)
    run_script("notify.py", tool_event(repo, "Bash", {"command": "ls"}, {"stdout": ""}), env=env)
    assert service.notifies() == []


@pytest.mark.parametrize(
    "stdin",
    [b"", b"not json at all", b"[1, 2, 3]", b'{"hook_event_name": 7}', b"\xff\xfe\x00garbage", b'{"tool_input": '],
)
def test_garbage_stdin_exits_zero_silently(service: Service, repo: Path, stdin: bytes) -> None:
    run = run_script("notify.py", stdin, env=hook_env(service.url, repo))
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert service.notifies() == []


def test_server_down_exits_zero_silently_and_fast(repo: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for payload in (
        read_payload(repo, repo / "src" / "app.py"),
        write_payload(repo, repo / "src" / "app.py", ""),
        file_changed_payload(repo, repo / "src" / "app.py", "change"),
    ):
        bound = down_bound_s()
        run = run_script("notify.py", payload, env=hook_env(url, repo))
        assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
        assert run.seconds < bound


def test_server_that_never_answers_cannot_hold_the_hook(repo: Path) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) but never reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        bound = down_bound_s()
        run = run_script("notify.py", read_payload(repo, repo / "src" / "app.py"), env=hook_env(url, repo))
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert run.seconds < bound


def test_session_start_watches_the_project_and_announces_live_memory(
    service: Service, repo: Path, tmp_path: Path
) -> None:
    data = tmp_path / "plugin-data"
    run = run_script(
        "notify.py", session_start_payload(repo), env=hook_env(service.url, repo, CLAUDE_PLUGIN_DATA=str(data))
    )
    assert run.returncode == 0
    output = run.json()["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert output["watchPaths"] == [str(repo)]
    line = output["additionalContext"]
    assert "\n" not in line
    assert TOOL_NAME in line and f'cwd="{repo}"' in line
    assert len(line.replace(str(repo), "")) / 4 < 60  # under 60 tokens at ~4 chars per token


def test_session_start_with_the_server_down_says_live_memory_is_unavailable_this_session(repo: Path) -> None:
    bound = down_bound_s()
    run = run_script("notify.py", session_start_payload(repo), env=hook_env(f"http://127.0.0.1:{free_port()}", repo))
    assert run.returncode == 0 and run.seconds < bound
    output = run.json()["hookSpecificOutput"]
    assert output["watchPaths"] == [str(repo)]  # outside edits still reach the memory once it is back
    line = output["additionalContext"]
    assert "unavailable this session" in line and "normal tools" in line
    assert "\n" not in line and len(line) / 4 < 60
    assert "before exploring" not in line  # no invitation to call a tool that is not there


def test_session_start_keeps_a_status_line_copy_in_the_plugin_data_dir(
    service: Service, repo: Path, tmp_path: Path
) -> None:
    data = tmp_path / "plugin-data"
    env = hook_env(service.url, repo, CLAUDE_PLUGIN_DATA=str(data), CLAUDE_PLUGIN_OPTION_SERVER_URL="http://h:1")
    run_script("notify.py", session_start_payload(repo), env=env)
    hooks = Path(__file__).resolve().parents[2] / "hooks"
    for name in ("statusline.py", "_client.py"):
        assert (data / name).read_bytes() == (hooks / name).read_bytes()
    assert json.loads((data / "client.json").read_text()) == {"server_url": "http://h:1"}


def test_server_url_comes_from_the_plugin_option_when_no_env_override(service: Service, repo: Path) -> None:
    service.load(repo)
    env = {"CLAUDE_PROJECT_DIR": str(repo), "CLAUDE_PLUGIN_OPTION_SERVER_URL": service.url + "/"}
    run_script("notify.py", read_payload(repo, repo / "README.md"), env=env)
    assert only_event(service)["kind"] == "read"


def test_bearer_token_from_the_plugin_option_is_sent(service: Service, repo: Path) -> None:
    env = hook_env(service.url, repo, CLAUDE_PLUGIN_OPTION_AUTH_TOKEN="s3cret-token")
    run_script("notify.py", read_payload(repo, repo / "README.md"), env=env)
    (call,) = service.recorder.wait_for(bool)
    assert call.headers["authorization"] == "Bearer s3cret-token"


def oldest_python() -> str | None:
    """A python3.8 interpreter if one is installed and runs (the hooks promise python3 >= 3.8)."""
    for name in ("python3.8",):
        path = shutil.which(name)
        if path and subprocess.run([path, "-c", "pass"], capture_output=True).returncode == 0:
            return path
    return None


def test_hooks_run_on_python_3_8(service: Service, repo: Path) -> None:
    python = oldest_python()
    if python is None:
        pytest.skip("no runnable python3.8 on PATH")
    service.load(repo)
    run = run_script(
        "notify.py", read_payload(repo, repo / "README.md"), env=hook_env(service.url, repo), python=python
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert only_event(service)["content"] == "# demo\n"
    for script in ("slash_commands.py", "statusline.py"):
        assert run_script(script, {}, env=hook_env(service.url, repo), python=python).stderr == ""


def test_files_outside_the_repository_are_never_sent(service: Service, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("private\n", encoding="utf-8")
    run = run_script("notify.py", read_payload(repo, outside), env=hook_env(service.url, repo))
    assert (run.returncode, run.stdout) == (0, "")
    assert service.notifies() == []


def test_files_of_the_repository_above_the_project_dir_are_teed(service: Service, repo: Path) -> None:
    service.load(repo)
    run_script("notify.py", read_payload(repo, repo / "README.md"), env=hook_env(service.url, repo / "src"))
    assert only_event(service)["content"] == "# demo\n"


@pytest.mark.parametrize(
    "name", [".env", "config/.env.production", "deploy/server.pem", "id_ed25519", "CREDENTIALS.json"]
)
def test_credential_files_are_announced_without_their_bytes(service: Service, repo: Path, name: str) -> None:
    secret = repo / name
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("TOKEN=do-not-leak\n", encoding="utf-8")
    run_script("notify.py", read_payload(repo, secret), env=hook_env(service.url, repo))
    event = only_event(service)
    assert event["path"] == str(secret) and "content" not in event


def test_token_protected_server_accepts_the_plugin_token_and_refusal_stays_silent(repo: Path) -> None:
    data_dir = repo.parent.parent / "live-memory-data"
    with FakeLLM() as provider:
        recorder = Recorder(create_app(settings_for(provider.base_url, data_dir, auth_token="tok-123456789")))
        with LiveServer(recorder) as server:  # type: ignore[arg-type]
            service = Service(server.url, recorder, data_dir, provider)
            wrong = run_script("notify.py", read_payload(repo, repo / "README.md"), env=hook_env(server.url, repo))
            assert (wrong.returncode, wrong.stdout, wrong.stderr) == (0, "", "")
            right = hook_env(server.url, repo, CLAUDE_PLUGIN_OPTION_AUTH_TOKEN="tok-123456789")
            run_script("notify.py", read_payload(repo, repo / "README.md"), env=right)
            calls = service.recorder.wait_for(lambda calls: len([c for c in calls if c.path == "/notify"]) == 2)
    assert [c.status for c in calls if c.path == "/notify"] == [401, 200]


def test_session_start_against_a_server_without_credential_says_why_it_is_unavailable(repo: Path) -> None:
    class Degraded(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"status": "degraded", "service": "live-memory", "credential": "missing"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = HTTPServer(("127.0.0.1", 0), Degraded)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        run = run_script("notify.py", session_start_payload(repo), env=hook_env(url, repo))
    finally:
        server.shutdown()
        server.server_close()
    line = run.json()["hookSpecificOutput"]["additionalContext"]
    assert "unavailable this session (its service has no model credential)" in line and "normal tools" in line
