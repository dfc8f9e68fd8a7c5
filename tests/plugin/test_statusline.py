"""hooks/statusline.py: one short segment (fill % and cost) for the project of Claude Code's status JSON."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from live_memory.testing.live_server import ask_via_mcp
from live_memory.testing.ports import free_port
from tests.plugin.conftest import HOOKS, Service, run_script


def status_input(project: Path) -> dict[str, Any]:
    """The JSON Claude Code pipes to a status-line command (reference §7), trimmed to typical fields."""
    return {
        "hook_event_name": "Status",
        "session_id": "0b7c3f8e-5d2a-4c1e-9f6b-2a7d8e9c1f00",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(project / "src"),
        "model": {"id": "claude-opus-4-7", "display_name": "Opus"},
        "workspace": {"current_dir": str(project / "src"), "project_dir": str(project), "added_dirs": []},
        "version": "2.1.332",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.01, "total_duration_ms": 1000},
        "context_window": {"used_percentage": 12, "remaining_percentage": 88},
    }


async def test_segment_shows_fill_and_cost_of_the_project(service: Service, repo: Path) -> None:
    _, is_error = await ask_via_mcp(service.url + "/mcp", {"question": "What is here?", "cwd": str(repo)})
    assert not is_error
    run = run_script("statusline.py", status_input(repo), env={"LIVE_MEMORY_URL": service.url})
    assert run.returncode == 0
    assert re.fullmatch(r"LM \d+% · \$\d+\.\d+\n", run.stdout), run.stdout
    (call,) = service.recorder.find("/stats")
    assert f"cwd={str(repo).replace('/', '%2F')}" in call.query


def test_segment_for_a_project_not_loaded_says_idle(service: Service, repo: Path) -> None:
    run = run_script("statusline.py", status_input(repo), env={"LIVE_MEMORY_URL": service.url})
    assert run.stdout == "LM idle\n"


def test_segment_with_the_server_down_says_off_quickly(repo: Path) -> None:
    run = run_script("statusline.py", status_input(repo), env={"LIVE_MEMORY_URL": f"http://127.0.0.1:{free_port()}"})
    assert (run.returncode, run.stdout) == (0, "LM off\n")
    assert run.seconds < 1.5


def test_copied_status_line_uses_the_saved_server_url(service: Service, repo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "plugin-data"
    copy.mkdir()
    for name in ("statusline.py", "_client.py"):
        (copy / name).write_bytes((HOOKS / name).read_bytes())
    (copy / "client.json").write_text(json.dumps({"server_url": service.url}))
    # Run as a user's statusLine runs it: no plugin variables; the port fallback points nowhere.
    run = run_script(copy / "statusline.py", status_input(repo), env={"LIVE_MEMORY_PORT": str(free_port())})
    assert run.stdout == "LM idle\n"
    assert service.recorder.find("/stats")


def documented_command() -> str:
    """The statusLine command docs/claude-code.md tells users to put in their settings."""
    text = (HOOKS.parent / "docs" / "claude-code.md").read_text(encoding="utf-8")
    snippet = text.split("<!-- statusline-command", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    command: str = json.loads(snippet)["statusLine"]["command"]
    return command


def run_documented(home: Path, project: Path, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LIVE_MEMORY_", "CLAUDE_"))}
    full.update(HOME=str(home), **env)
    done = subprocess.run(
        ["bash", "-c", documented_command()],
        input=json.dumps(status_input(project)),
        env=full,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def install_copy(folder: Path) -> None:
    folder.mkdir(parents=True)
    for name in ("statusline.py", "_client.py"):
        (folder / name).write_bytes((HOOKS / name).read_bytes())


def test_documented_status_line_works_before_the_first_session_start_made_its_copy(
    service: Service, repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    assert run_documented(home, repo) == "LM ?\n"  # nothing installed: says so instead of staying blank
    install_copy(home / ".claude" / "plugins" / "cache" / "shofer" / "live-memory" / "0.1.0" / "hooks")
    assert run_documented(home, repo, LIVE_MEMORY_URL=service.url) == "LM idle\n"  # the installed plugin's script


def test_documented_status_line_prefers_the_session_copy_and_its_saved_url(
    service: Service, repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    install_copy(home / ".claude" / "plugins" / "cache" / "shofer" / "live-memory" / "0.1.0" / "hooks")
    data = home / ".claude" / "plugins" / "data" / "live-memory-shofer"
    install_copy(data)
    (data / "client.json").write_text(json.dumps({"server_url": service.url}))
    # The plugin's own copy would look at the default port, where nothing answers.
    assert run_documented(home, repo, LIVE_MEMORY_PORT=str(free_port())) == "LM idle\n"
