"""`live-memory install|uninstall AGENT`: the agent's configuration gets this server's URL (the one URL
precedence), the token by the variable's name, and on request the AGENTS.md note; uninstall takes back only
what install added."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from live_memory.testing.live_server import live_server, settings_for
from live_memory.testing.llm_server import FakeLLM
from live_memory.testing.ports import free_port
from tests.cli.test_main import cli_env, run_cli

USER_CONFIG = 'model = "gpt-5.5"\n\n[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\n'


def test_install_connects_codex_to_this_server_once_and_uninstall_leaves_the_users_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG)
    repo = tmp_path / "repo"
    repo.mkdir()
    env = cli_env(tmp_path, 7799, CODEX_HOME=str(codex_home), LIVE_MEMORY_AUTH_TOKEN="s3cret-token-value")
    code, _, err = run_cli(monkeypatch, capsys, env, "install", "codex", "--instructions", str(repo))
    assert code == 0, err
    settings = tomllib.loads(config.read_text())
    entry = settings["mcp_servers"]["live_memory"]
    assert entry["url"] == "http://127.0.0.1:7799/mcp"
    assert entry["bearer_token_env_var"] == "LIVE_MEMORY_AUTH_TOKEN"
    assert "s3cret-token-value" not in config.read_text()  # the token itself never lands in the file
    assert settings["model"] == "gpt-5.5" and settings["mcp_servers"]["docs"]["url"] == "https://docs.example.com/mcp"
    assert "ask_live_memory" in (repo / "AGENTS.md").read_text()
    again = config.read_text()
    assert run_cli(monkeypatch, capsys, env, "install", "codex", "--instructions", str(repo))[0] == 0
    assert config.read_text() == again  # idempotent
    code, _, err = run_cli(monkeypatch, capsys, env, "uninstall", "codex", "--instructions", str(repo))
    assert code == 0, err
    assert config.read_text() == USER_CONFIG
    assert not (repo / "AGENTS.md").exists() or "ask_live_memory" not in (repo / "AGENTS.md").read_text()


def test_an_unknown_agent_is_refused_with_the_ones_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(monkeypatch, capsys, cli_env(tmp_path, 7799), "install", "emacs")
    assert code == 2 and "codex" in err


def test_install_connects_opencode_with_its_plugin_and_uninstall_takes_them_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config_dir = tmp_path / ".config" / "opencode"
    config_dir.mkdir(parents=True)
    user = '{\n  "theme": "dark",\n  "mcp": {"docs": {"type": "remote", "url": "https://docs.example.com/mcp"}}\n}\n'
    (config_dir / "opencode.json").write_text(user)
    env = cli_env(tmp_path, 7799)
    code, _, err = run_cli(monkeypatch, capsys, env, "install", "opencode")
    assert code == 0, err
    config = json.loads((config_dir / "opencode.json").read_text())
    assert config["theme"] == "dark" and config["mcp"]["docs"]["url"] == "https://docs.example.com/mcp"
    assert config["mcp"]["live_memory"]["url"] == "http://127.0.0.1:7799/mcp"
    assert list((config_dir / "plugins").glob("*.js"))  # the plugin that tees reads and edits
    code, _, err = run_cli(monkeypatch, capsys, env, "uninstall", "opencode")
    assert code == 0, err
    assert json.loads((config_dir / "opencode.json").read_text()) == json.loads(user)
    assert not (config_dir / "plugins").exists() or not list((config_dir / "plugins").glob("*.js"))


def test_install_gemini_finds_its_home_by_gemini_cli_home_and_writes_the_token_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / "gem" / ".gemini" / "settings.json"
    env = cli_env(tmp_path, 7799, GEMINI_CLI_HOME=str(tmp_path / "gem"), LIVE_MEMORY_AUTH_TOKEN="s3cret-token-value")
    code, _, err = run_cli(monkeypatch, capsys, env, "install", "gemini")
    assert code == 0, err
    entry = json.loads(settings.read_text())["mcpServers"]["live_memory"]
    assert entry["httpUrl"] == "http://127.0.0.1:7799/mcp"
    assert "s3cret-token-value" not in settings.read_text() and "${LIVE_MEMORY_AUTH_TOKEN}" in settings.read_text()
    assert run_cli(monkeypatch, capsys, env, "uninstall", "gemini")[0] == 0
    assert not settings.exists()


def test_install_warns_when_nothing_listens_at_the_servers_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    env = cli_env(tmp_path, port, CODEX_HOME=str(tmp_path / "codex"))
    code, out, err = run_cli(monkeypatch, capsys, env, "install", "codex")
    assert code == 0 and "[mcp_servers.live_memory]" in out
    assert f"warning: nothing listens at http://127.0.0.1:{port}: codex shows no tool and no error" in err
    assert "live-memory serve" in err


def test_install_names_the_token_a_server_requires_and_warns_when_this_shell_lacks_it(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with live_server(settings_for(fake.base_url, tmp_path / "data", auth_token="s3cret-token")) as server:
        env = cli_env(tmp_path, server.port, GEMINI_CLI_HOME=str(tmp_path / "gem"))  # no token in this shell
        code, _, err = run_cli(monkeypatch, capsys, env, "install", "gemini")
        with_token = {**env, "LIVE_MEMORY_AUTH_TOKEN": "s3cret-token"}
        again, _, quiet = run_cli(monkeypatch, capsys, with_token, "install", "gemini")
    assert code == 0 and again == 0
    written = (tmp_path / "gem" / ".gemini" / "settings.json").read_text()
    assert "Bearer ${LIVE_MEMORY_AUTH_TOKEN}" in written  # named although this shell had none to go by
    assert "warning: LIVE_MEMORY_AUTH_TOKEN is not set in this shell: gemini started from it sends no token" in err
    assert "export LIVE_MEMORY_AUTH_TOKEN=" in err and "warning" not in quiet
