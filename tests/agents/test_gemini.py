"""Gemini CLI: install/uninstall of its settings on temp dirs, the hook's parsing, and the real CLI end to end.

The end-to-end tests run `gemini -p` offline: a throwaway HOME and GEMINI_CLI_HOME whose settings.json is
what `install` wrote plus the test's offline settings (API-key auth, usage statistics, telemetry and update
checks off), the model at a FakeLLM speaking the Gemini API (GOOGLE_GEMINI_BASE_URL), and the real Live
Memory server (its own FakeLLM as provider). The only sockets Gemini CLI then opens are those two. The
tests assert on one run that they share (tests/agents/session.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from live_memory.cli.agents import gemini, note
from live_memory.core.errors import ConfigError
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from tests.agents import session as shared
from tests.fakes.agent_clis import require_cli, run_json_lines
from tests.fakes.wire import all_text
from tests.plugin.conftest import REPO_ROOT, Service
from tests.plugin.test_secret_floor import load_hook

CLI_CANDIDATE = REPO_ROOT / ".tools" / "agents" / "gemini" / "node_modules" / ".bin" / "gemini"
TOOL = "mcp_live_memory_ask_live_memory"  # Gemini CLI's name for an MCP tool: mcp_<server>_<tool>
MODEL = "gemini-2.5-flash"

USER_SETTINGS = {
    "theme": "GitHub",
    "mcpServers": {"github": {"command": "github-mcp", "args": ["--read-only"]}},
    "hooks": {"AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "echo mine"}]}]},
    "general": {"vimMode": True},
}


def install(home: Path, **kwargs: Any) -> list[str]:
    return gemini.install(home, "http://127.0.0.1:7711", kwargs.pop("token_env", None), instructions_dir=None, **kwargs)


def settings(home: Path) -> Any:
    return json.loads((home / "settings.json").read_text(encoding="utf-8"))


def write_settings(home: Path, value: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps(value, indent=4) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------------ settings.json


def test_gemini_home_follows_gemini_cli_home_else_the_users_home() -> None:
    assert gemini.gemini_home({"GEMINI_CLI_HOME": "/srv/gem", "HOME": "/home/me"}) == Path("/srv/gem/.gemini")
    assert gemini.gemini_home({"HOME": "/home/me"}) == Path("/home/me/.gemini")


def test_install_into_an_empty_home_writes_the_server_by_http_url_and_the_hook(tmp_path: Path) -> None:
    install(tmp_path, token_env="LIVE_MEMORY_AUTH_TOKEN")
    written = settings(tmp_path)
    server = written["mcpServers"]["live_memory"]
    assert server["httpUrl"] == "http://127.0.0.1:7711/mcp"
    assert server["headers"] == {
        "X-Live-Memory-Agent": "gemini-cli",  # the name /stats counts its questions under
        "Authorization": "Bearer ${LIVE_MEMORY_AUTH_TOKEN}",  # a reference, never a value
    }
    assert server["timeout"] == gemini.TOOL_TIMEOUT_MS and server["trust"] is True
    (group,) = written["hooks"]["AfterTool"]
    assert group["matcher"] == gemini.HOOK_MATCHER
    (handler,) = group["hooks"]
    assert str(tmp_path / "live-memory" / "gemini_notify.py") in handler["command"]
    assert handler["env"] == {
        "LIVE_MEMORY_URL": "http://127.0.0.1:7711",
        "LIVE_MEMORY_AUTH_TOKEN": "${LIVE_MEMORY_AUTH_TOKEN:-}",
    }
    assert sorted(p.name for p in (tmp_path / "live-memory").iterdir()) == sorted(gemini.HOOK_FILES)


def test_install_keeps_the_users_settings_in_order_and_uninstall_restores_them(tmp_path: Path) -> None:
    write_settings(tmp_path, USER_SETTINGS)
    install(tmp_path)
    written = settings(tmp_path)
    assert list(written) == list(USER_SETTINGS)
    assert list(written["mcpServers"]) == ["github", "live_memory"]
    assert [g["matcher"] for g in written["hooks"]["AfterTool"]] == ["write_file", gemini.HOOK_MATCHER]
    assert written["general"] == USER_SETTINGS["general"]
    gemini.uninstall(tmp_path, instructions_dir=None)
    assert settings(tmp_path) == USER_SETTINGS
    assert not (tmp_path / "live-memory").exists()


def test_a_new_url_replaces_our_entries_in_place(tmp_path: Path) -> None:
    write_settings(tmp_path, USER_SETTINGS)
    install(tmp_path)
    edited = settings(tmp_path)
    edited["hooks"]["AfterTool"].append({"matcher": "replace", "hooks": [{"type": "command", "command": "echo 2"}]})
    write_settings(tmp_path, edited)
    gemini.install(tmp_path, "http://10.0.0.5:9000/mcp/", None, instructions_dir=None)
    written = settings(tmp_path)
    assert written["mcpServers"]["live_memory"]["httpUrl"] == "http://10.0.0.5:9000/mcp"
    assert [g["matcher"] for g in written["hooks"]["AfterTool"]] == ["write_file", gemini.HOOK_MATCHER, "replace"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"theme": "GitHub"\n', r"settings\.json is not valid JSON \(line 2, column 1: Expecting"),
        ("[]\n", r"must hold a JSON object, got list"),
        ('{"mcpServers": []}\n', r"mcpServers must be a JSON object"),
        ('{"hooks": {"AfterTool": {}}}\n', r"hooks\.AfterTool must be a JSON array"),
        ('{"mcpServers": {"live_memory": {"httpUrl": "http://x/mcp"}}}\n', r"defines mcpServers\.live_memory by hand"),
    ],
)
def test_settings_we_cannot_edit_safely_are_refused_with_the_reason_and_left_untouched(
    tmp_path: Path, text: str, reason: str
) -> None:
    (tmp_path / "settings.json").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=reason):
        install(tmp_path)
    assert (tmp_path / "settings.json").read_text(encoding="utf-8") == text


COMMENTED = """{
  // Gemini CLI reads comments in settings.json
  "theme": "GitHub",
  "general": {"vimMode": true, "preferredEditor": "vim"},
  "mcpServers": {
    "github": {"command": "github-mcp", "args": ["--read-only"]} // mine
  }
}
"""


def test_settings_with_comments_keep_every_byte_and_uninstall_gives_them_back(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(COMMENTED, encoding="utf-8")
    install(tmp_path)
    text = (tmp_path / "settings.json").read_text(encoding="utf-8")
    assert '  "general": {"vimMode": true, "preferredEditor": "vim"},\n' in text  # compact objects stay compact
    assert '"args": ["--read-only"]}, // mine\n    "live_memory": {' in text
    gemini.uninstall(tmp_path, instructions_dir=None)
    assert (tmp_path / "settings.json").read_text(encoding="utf-8") == COMMENTED


def test_uninstall_leaves_a_hand_written_live_memory_server_alone(tmp_path: Path) -> None:
    mine = {"mcpServers": {"live_memory": {"httpUrl": "http://x/mcp"}}}
    write_settings(tmp_path, mine)
    assert "nothing of Live Memory's" in gemini.uninstall(tmp_path, instructions_dir=None)[0]
    assert settings(tmp_path) == mine


# ----------------------------------------------------------------------------------------- the hook's parsing


def test_the_hook_takes_each_file_tool_by_its_path_and_skips_failed_calls(tmp_path: Path) -> None:
    hook, root = load_hook("gemini_notify"), str(tmp_path)

    def touched(tool: str, args: dict[str, Any], response: dict[str, Any] | None = None) -> Any:
        payload = {"tool_name": tool, "tool_input": args, "tool_response": response or {"llmContent": "ok"}}
        return hook.touched_files(payload, root)

    assert touched("read_file", {"file_path": "src/a.py"}) == [("read", str(tmp_path / "src/a.py"))]
    assert touched("write_file", {"file_path": "/abs/b.py", "content": "x"}) == [("write", "/abs/b.py")]
    assert touched("replace", {"file_path": "c.py", "old_string": "1"}) == [("write", str(tmp_path / "c.py"))]
    assert touched("replace", {"file_path": "c.py"}, {"error": "0 occurrences found"}) == []
    assert touched("run_shell_command", {"command": "cat a.py"}) == []


def test_the_hook_reads_only_the_files_read_many_files_names_outright(tmp_path: Path) -> None:
    hook = load_hook("gemini_notify")
    (tmp_path / "docs").mkdir()
    for name in ("a.md", "docs/b.md"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    includes = ["a.md", "docs/b.md", "docs", "src/*.py", "missing.md"]
    assert hook.named_files(includes, str(tmp_path)) == [str(tmp_path / "a.md"), str(tmp_path / "docs/b.md")]


# ---------------------------------------------------------------------------------------- the real Gemini CLI


# Why API-key auth by name: with only GOOGLE_GEMINI_BASE_URL set, Gemini CLI picks its "gateway" auth type,
# which `-p` then refuses ("Invalid auth method selected").
OFFLINE_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every functionResponse part of a Gemini request's contents, in order."""
    return [
        part["functionResponse"]
        for content in body.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]


def step_of(request: RecordedRequest) -> int | None:
    """A model request's step: the tool results it carries (the conversation streams; nothing else does)."""
    return len(function_responses(request.body)) if request.path.endswith(":streamGenerateContent") else None


def run_gemini(
    gemini_path: str, model: FakeLLM, service: Service, repo: Path, home: Path, prompt: str
) -> list[dict[str, Any]]:
    """Install into a throwaway Gemini home (with the GEMINI.md note in `repo`), then `gemini -p` in `repo`;
    returns its stream-json events."""
    write_settings(home / ".gemini", OFFLINE_SETTINGS)
    gemini.install(home / ".gemini", service.url, None, instructions_dir=repo)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": "test",
        "GOOGLE_GEMINI_BASE_URL": model.base_url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # a headless run cannot answer the folder-trust prompt
        # Gemini CLI restarts itself in a second Node process for a larger heap (half a second of start-up);
        # the variable it sets for that child skips the restart.
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "LANG": "C.UTF-8",
    }
    # Why auto_edit: in `-p` mode Gemini CLI offers write_file and replace only when edits need no approval.
    args = ["-p", prompt, "-m", MODEL, "--output-format", "stream-json", "--approval-mode", "auto_edit"]
    return run_json_lines([gemini_path, *args], cwd=repo, env=env)


def steps(repo: Path) -> list[Reply]:
    """The session's turns 0-2: read_file, a replace edit, the question."""
    edit = {
        "file_path": str(repo / "src" / "app.py"),
        "instruction": "Make answer() return 43.",
        "old_string": "    return 42",
        "new_string": "    return 43",
    }
    return [
        Reply.tool_call("read_file", {"file_path": "src/app.py"}),
        Reply.tool_call("replace", edit),
        Reply.tool_call(TOOL, shared.question(repo)),
    ]


@pytest.fixture(scope="module")
def gemini_session(tmp_path_factory: pytest.TempPathFactory) -> shared.Outcome:
    """One `gemini -p` session (tests/agents/session.py) that the tests below share."""
    gemini_path = require_cli(CLI_CANDIDATE, "gemini", "scripts/install-agent-clis.sh gemini")

    def run(repo: Path, home: Path, model: FakeLLM, service: Service) -> list[dict[str, Any]]:
        return run_gemini(gemini_path, model, service, repo, home / "gemini-user", shared.PROMPT)

    return shared.record_session(tmp_path_factory.mktemp("gemini"), steps, step_of, run)


def declared_tools(body: dict[str, Any]) -> list[str]:
    return [str(f.get("name")) for tool in body.get("tools") or [] for f in tool.get("functionDeclarations") or []]


@pytest.mark.agent_cli
def test_gemini_lists_the_tool_reads_the_gemini_note_and_asks_with_the_repository_as_cwd(
    gemini_session: shared.Outcome,
) -> None:
    session = gemini_session.result()
    first = session.turns[0].body
    assert TOOL in declared_tools(first)
    assert note.TEXT.splitlines()[2] in all_text(first["contents"])  # GEMINI.md is in front of it
    shared.assert_asked_once_with_the_repository(session)


@pytest.mark.agent_cli
def test_the_memory_answer_reaches_gemini_next_model_request(gemini_session: shared.Outcome) -> None:
    session = gemini_session.result()
    assert [len(function_responses(r.body)) for r in session.turns] == [0, 1, 2, 3]  # one request a turn
    result = function_responses(session.turns[3].body)[2]  # the question's, in the request after it
    assert result["name"] == TOOL
    assert shared.MEMORY_ANSWER in json.dumps(result["response"])
    assert "[live-memory] model=claude-haiku-4-5" in json.dumps(result["response"])
    assert any(e.get("type") == "tool_result" and e.get("status") == "success" for e in session.events)
    shared.assert_counted_under(session, gemini.AGENT_NAME)


@pytest.mark.agent_cli
def test_a_read_file_and_a_replace_edit_reach_the_memory_through_the_hook(gemini_session: shared.Outcome) -> None:
    shared.assert_read_and_edit_teed(gemini_session.result())


@pytest.mark.agent_cli
def test_what_another_agent_taught_through_notify_is_known_to_a_question_from_gemini(
    gemini_session: shared.Outcome,
) -> None:
    shared.assert_the_memory_knew_what_was_taught(gemini_session.result().memory_requests)
