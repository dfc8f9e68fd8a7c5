"""Codex CLI: install/uninstall of its config on temp dirs, the hook's parsing, and the real CLI end to end.

The end-to-end tests run `codex exec` offline: a throwaway HOME and CODEX_HOME whose config.toml is what
`install` wrote plus a custom model provider on loopback (a FakeLLM speaking the OpenAI Responses API), and
the real Live Memory server (its own FakeLLM as provider). Codex's plugin sync, connectors and update
checks are switched off, so the only sockets it opens are those two loopback servers. The tests assert on
one run that they share (tests/agents/session.py).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from live_memory.cli.agents import codex, note
from live_memory.core.errors import ConfigError
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from tests.agents import session as shared
from tests.fakes.agent_clis import require_cli, run_json_lines
from tests.fakes.wire import all_text
from tests.plugin.conftest import REPO_ROOT, Service
from tests.plugin.test_secret_floor import load_hook

CLI_CANDIDATE = REPO_ROOT / ".tools" / "agents" / "codex" / "node_modules" / ".bin" / "codex"
TOOL = "mcp__live_memory__ask_live_memory"  # Codex's namespace for the server + the tool's own name

USER_CONFIG = """\
# my Codex settings
model = "gpt-5.5"  # the one I like
approval_policy = "on-request"

[mcp_servers.github]
command = "github-mcp"
args = ["--read-only"]

[[hooks.PostToolUse]]
matcher = "Bash"
[[hooks.PostToolUse.hooks]]
type = "command"
command = "echo mine"

[profiles.fast]
model_reasoning_effort = "low"
"""


def install(home: Path, **kwargs: Any) -> list[str]:
    return codex.install(home, "http://127.0.0.1:7711", kwargs.pop("token_env", None), instructions_dir=None, **kwargs)


# ------------------------------------------------------------------------------------------ config.toml


def test_install_into_an_empty_home_writes_the_server_by_url_and_the_hook(tmp_path: Path) -> None:
    lines = install(tmp_path, token_env="LIVE_MEMORY_AUTH_TOKEN")
    config = tomllib.loads((tmp_path / "config.toml").read_text(encoding="utf-8"))
    assert config["mcp_servers"]["live_memory"] == {
        "url": "http://127.0.0.1:7711/mcp",
        "bearer_token_env_var": "LIVE_MEMORY_AUTH_TOKEN",
        "http_headers": {"X-Live-Memory-Agent": "codex"},  # the name /stats counts its questions under
        "tool_timeout_sec": codex.TOOL_TIMEOUT_S,
    }
    (group,) = config["hooks"]["PostToolUse"]
    assert group["matcher"] == codex.HOOK_MATCHER
    command = group["hooks"][0]["command"]
    assert str(tmp_path / "live-memory" / "codex_notify.py") in command
    assert 'LIVE_MEMORY_AUTH_TOKEN="${LIVE_MEMORY_AUTH_TOKEN:-}"' in command  # a reference, never a value
    assert sorted(p.name for p in (tmp_path / "live-memory").iterdir()) == sorted(codex.HOOK_FILES)
    assert any("/hooks" in line for line in lines)  # says how to trust the hook


def test_install_keeps_every_byte_of_the_users_settings_and_uninstall_restores_them(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(USER_CONFIG, encoding="utf-8")
    install(tmp_path)
    text = config.read_text(encoding="utf-8")
    assert text.startswith(USER_CONFIG)
    parsed = tomllib.loads(text)
    assert set(parsed["mcp_servers"]) == {"github", "live_memory"}
    assert [g["matcher"] for g in parsed["hooks"]["PostToolUse"]] == ["Bash", codex.HOOK_MATCHER]
    codex.uninstall(tmp_path, instructions_dir=None)
    assert config.read_text(encoding="utf-8") == USER_CONFIG
    assert not (tmp_path / "live-memory").exists()


def test_a_new_url_replaces_our_block_in_place(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(USER_CONFIG, encoding="utf-8")
    install(tmp_path)
    config.write_text(config.read_text(encoding="utf-8") + '\n[tui]\ntheme = "dark"\n', encoding="utf-8")
    codex.install(tmp_path, "http://10.0.0.5:9000/mcp/", None, instructions_dir=None)
    text = config.read_text(encoding="utf-8")
    assert text.startswith(USER_CONFIG) and text.endswith('\n[tui]\ntheme = "dark"\n')
    assert tomllib.loads(text)["mcp_servers"]["live_memory"]["url"] == "http://10.0.0.5:9000/mcp"
    assert text.count(codex.BEGIN) == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('model = "gpt-5.5\n', r"config\.toml is not valid TOML .*fix it"),
        ("hooks = { PostToolUse = [] }\n", r"cannot be added to this file"),  # an inline table ours cannot extend
    ],
)
def test_a_config_we_cannot_edit_safely_is_refused_with_the_reason_and_left_untouched(
    tmp_path: Path, text: str, reason: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=reason):
        install(tmp_path)
    assert config.read_text(encoding="utf-8") == text


def test_a_hand_written_live_memory_server_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[mcp_servers.live_memory]\nurl = "http://x/mcp"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"already defines \[mcp_servers\.live_memory\] by hand"):
        install(tmp_path)


def test_uninstall_refuses_when_user_keys_follow_our_block_without_a_header(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(USER_CONFIG, encoding="utf-8")
    install(tmp_path)
    config.write_text(config.read_text(encoding="utf-8") + "stray = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="move them above the block"):
        codex.uninstall(tmp_path, instructions_dir=None)


# ------------------------------------------------------------------------------------------- AGENTS.md


# ----------------------------------------------------------------------------------------- the hook's parsing


def test_the_hook_reads_every_file_an_apply_patch_touches() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: new.py\n+x = 1\n*** Update File: a.py\n*** Move to: b.py\n@@\n-1\n+2\n"
        "*** Delete File: old.py\n*** Update File: c.py\n@@\n-3\n+4\n*** End Patch\n"
    )
    assert load_hook("codex_notify").patch_events(patch) == [
        ("write", "new.py"),
        ("unlink", "a.py"),
        ("write", "b.py"),
        ("unlink", "old.py"),
        ("write", "c.py"),
    ]


def test_the_hook_takes_reads_from_plain_commands_and_guesses_nothing_the_shell_would_expand(tmp_path: Path) -> None:
    hook = load_hook("codex_notify")
    (tmp_path / "src").mkdir()
    for name in ("src/a.py", "src/b.py", "README.md"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    root = str(tmp_path)
    assert hook.read_paths("sed -n '1,80p' src/a.py", root) == [str(tmp_path / "src/a.py")]
    assert hook.read_paths("cd src && nl -ba b.py | head -n 20", root) == [str(tmp_path / "src/b.py")]
    assert hook.read_paths("cat README.md missing.md; wc -l src/a.py", root) == [str(tmp_path / "README.md")]
    assert hook.read_paths("cat src/*.py", root) == []
    assert hook.read_paths("cat $HOME/x", root) == []
    assert hook.read_paths("rm src/a.py", root) == []


# ---------------------------------------------------------------------------------------- the real Codex CLI


def codex_cli() -> str:
    return require_cli(CLI_CANDIDATE, "codex", "scripts/install-agent-clis.sh codex")


@pytest.fixture
def codex_bin() -> str:
    return codex_cli()


# Why a catalog entry of the test's own (`model_catalog_json`, as a custom provider's user may write): for a
# model of Codex's built-in catalog (all support OpenAI's tool search, in 0.171) Codex defers MCP tools behind
# `tool_search`, which the fake does not speak; a model unknown to every catalog gets MCP tools up front but
# no freeform `apply_patch`. Described without tool search and with `apply_patch`, the fake model gets both,
# so one run proves the tool and the hook.
MODEL = "fake-model"
MODEL_ENTRY = {
    "slug": MODEL,
    "display_name": "Fake model",
    "base_instructions": "You are a coding agent.",
    "apply_patch_tool_type": "freeform",
    "supports_search_tool": False,
    "shell_type": "shell_command",
    "supported_reasoning_levels": [],
    "visibility": "list",
    "supported_in_api": True,
    "priority": 1,
    "support_verbosity": False,
    "truncation_policy": {"mode": "tokens", "limit": 10000},
    "experimental_supported_tools": [],
}


def offline_config(model_url: str, catalog: Path) -> str:
    """What the test adds to install's config.toml: the fake as provider, every remote feature off."""
    return f"""\
model = "{MODEL}"
model_provider = "fake"
model_catalog_json = "{catalog}"
check_for_update_on_startup = false

[model_providers.fake]
name = "FakeLLM"
base_url = "{model_url}/v1"
wire_api = "responses"
env_key = "FAKE_PROVIDER_KEY"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
in_app_updates = false
"""


def function_outputs(body: dict[str, Any]) -> list[str]:
    """The text of every tool result in a Responses request's input, in order."""
    outputs = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output"):
            output = item.get("output")
            if isinstance(output, list):
                output = "".join(str(part.get("text", "")) for part in output if isinstance(part, dict))
            outputs.append(str(output))
    return outputs


def step_of(request: RecordedRequest) -> int | None:
    """A model request's step: the tool results it carries (Codex sends no side requests to the model)."""
    return len(function_outputs(request.body)) if request.path.endswith("/responses") else None


def run_codex(
    codex_path: str, model: FakeLLM, service: Service, repo: Path, home: Path, prompt: str, *, instructions: bool
) -> list[dict[str, Any]]:
    """Install into a throwaway CODEX_HOME under `home`, then `codex exec` in `repo`; returns its JSON events."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    catalog = codex_home / "catalog.json"
    catalog.write_text(json.dumps({"models": [MODEL_ENTRY]}), encoding="utf-8")
    (codex_home / "config.toml").write_text(offline_config(model.base_url, catalog), encoding="utf-8")
    codex.install(codex_home, service.url, None, instructions_dir=repo if instructions else None)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "FAKE_PROVIDER_KEY": "test",
        "LANG": "C.UTF-8",
    }
    # Why the trust bypass: a user trusts the hook once in the TUI (/hooks); `exec` cannot ask.
    args = ["exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "-C", str(repo)]
    return run_json_lines([codex_path, *args, "--dangerously-bypass-hook-trust", prompt], cwd=repo, env=env)


PATCH = (
    "*** Begin Patch\n*** Update File: src/app.py\n@@\n def answer() -> int:\n"
    "-    return 42\n+    return 43\n*** End Patch\n"
)


def steps(repo: Path) -> list[Reply]:
    """The session's turns 0-2: a shell read, an apply_patch edit, the question."""
    return [
        Reply.tool_call("exec_command", {"cmd": "sed -n '1,80p' src/app.py"}),
        Reply.tool_call("apply_patch", {"input": PATCH}),
        Reply.tool_call(TOOL, shared.question(repo)),
    ]


@pytest.fixture(scope="module")
def codex_session(tmp_path_factory: pytest.TempPathFactory) -> shared.Outcome:
    """One `codex exec` session (tests/agents/session.py) that the tests below share."""
    codex_path = codex_cli()

    def run(repo: Path, home: Path, model: FakeLLM, service: Service) -> list[dict[str, Any]]:
        return run_codex(codex_path, model, service, repo, home / "codex-user", shared.PROMPT, instructions=True)

    return shared.record_session(tmp_path_factory.mktemp("codex"), steps, step_of, run)


def namespace_tools(body: dict[str, Any], namespace: str) -> list[str]:
    return [
        str(inner.get("name"))
        for tool in body.get("tools") or []
        if tool.get("type") == "namespace" and tool.get("name") == namespace
        for inner in tool.get("tools") or []
    ]


@pytest.mark.agent_cli
def test_codex_lists_the_tool_reads_the_agents_note_and_asks_with_the_repository_as_cwd(
    codex_session: shared.Outcome,
) -> None:
    session = codex_session.result()
    first = session.turns[0].body
    assert namespace_tools(first, "mcp__live_memory") == ["ask_live_memory"]
    assert note.TEXT.splitlines()[2] in all_text(first["input"])  # Codex put AGENTS.md in front of it
    shared.assert_asked_once_with_the_repository(session)


@pytest.mark.agent_cli
def test_the_memory_answer_reaches_codex_next_model_request(codex_session: shared.Outcome) -> None:
    session = codex_session.result()
    assert [len(function_outputs(r.body)) for r in session.turns] == [0, 1, 2, 3]  # one request a turn
    result = function_outputs(session.turns[3].body)[2]  # the question's, in the request after it
    assert shared.MEMORY_ANSWER in result
    assert "[live-memory] model=claude-haiku-4-5" in result
    done = [e["item"] for e in session.events if e.get("type") == "item.completed"]
    assert any(i.get("type") == "mcp_tool_call" and i.get("status") == "completed" for i in done)
    shared.assert_counted_under(session, codex.AGENT_NAME)


@pytest.mark.agent_cli
def test_a_shell_read_and_an_apply_patch_edit_reach_the_memory_through_the_hook(codex_session: shared.Outcome) -> None:
    shared.assert_read_and_edit_teed(codex_session.result())


@pytest.mark.agent_cli
def test_what_another_agent_taught_through_notify_is_known_to_a_question_from_codex(
    codex_session: shared.Outcome,
) -> None:
    shared.assert_the_memory_knew_what_was_taught(codex_session.result().memory_requests)
