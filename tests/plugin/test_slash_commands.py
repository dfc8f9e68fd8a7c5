"""The /live-memory:* commands: a UserPromptExpansion hook that acts, then blocks the prompt with the result."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from live_memory.testing.live_server import ask_via_mcp
from live_memory.testing.ports import free_port
from tests.plugin.conftest import HOOKS, Service, expansion_payload, hook_env, run_script


def load_hook_module(name: str) -> ModuleType:
    """Import a hook script by path (hooks/ is not a package; scripts import their sibling _client)."""
    sys.path.insert(0, str(HOOKS))
    try:
        spec = importlib.util.spec_from_file_location(f"plugin_hook_{name}", HOOKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(HOOKS))


def blocked_reason(service_url: str, repo: Path, command: str, args: str = "", **env: str) -> str:
    run = run_script(
        "slash_commands.py", expansion_payload(repo, command, args), env=hook_env(service_url, repo, **env)
    )
    assert (run.returncode, run.stderr) == (0, "")
    answer = run.json()
    assert answer["decision"] == "block"
    reason: str = answer["reason"]
    return reason


async def ask(service: Service, repo: Path, question: str = "What does answer() return?") -> None:
    _, is_error = await ask_via_mcp(service.url + "/mcp", {"question": question, "cwd": str(repo)})
    assert not is_error


async def test_stats_blocks_the_prompt_and_shows_the_formatted_block(service: Service, repo: Path) -> None:
    await ask(service, repo)
    reason = blocked_reason(service.url, repo, "stats")
    lines = reason.splitlines()
    assert lines[0] == f"Live Memory · {repo}"
    assert "context   [" in lines[1] and "tokens" in lines[1]
    assert "1 question answered" in reason and "$" in reason
    assert "Q&A retained" in reason and "compacted never" in reason
    assert "claude-haiku-4-5" in reason  # the server line names the model


def test_stats_for_a_workspace_not_loaded_yet_says_so(service: Service, repo: Path) -> None:
    reason = blocked_reason(service.url, repo, "stats")
    assert "not loaded yet" in reason
    assert "server" in reason


def test_stats_with_the_server_down_explains_how_to_start_it(repo: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    reason = blocked_reason(url, repo, "stats")
    assert f"not answering at {url}" in reason and "live-memory serve" in reason


async def test_reset_drops_the_workspace_and_reports_what_went(service: Service, repo: Path) -> None:
    await ask(service, repo)
    reason = blocked_reason(service.url, repo, "reset")
    assert reason.startswith("Live Memory reset")
    assert "dropped:" in reason and "Q&A" in reason
    (call,) = service.recorder.find("/reset")
    assert call.json() == {"cwd": str(repo)}
    assert service.stats(repo).json()["workspace"]["questions_answered"] == 0


async def test_empty_wipes_without_reloading(service: Service, repo: Path) -> None:
    await ask(service, repo)
    reason = blocked_reason(service.url, repo, "empty")
    assert reason.startswith("Live Memory emptied")
    assert service.recorder.find("/empty")[0].json() == {"cwd": str(repo)}
    assert service.stats(repo).status_code == 404  # not re-loaded until the next question


def test_config_show_names_the_connection_and_the_servers_config_file(service: Service, repo: Path) -> None:
    reason = blocked_reason(service.url, repo, "config")
    assert service.url in reason
    assert str(service.data_dir / "config.json") in reason
    assert "claude-haiku-4-5" in reason


def test_config_set_posts_to_the_server_which_writes_its_own_file(service: Service, repo: Path) -> None:
    reason = blocked_reason(service.url, repo, "config", "set max_iterations=7 port=7815")
    assert f"saved to {service.data_dir / 'config.json'}" in reason and "applied now: max_iterations" in reason
    assert "port takes effect at the next start" in reason
    config = json.loads((service.data_dir / "config.json").read_text())
    assert config == {"max_iterations": 7, "port": 7815}  # typed by the server's options table
    (call,) = service.recorder.find("/config")
    assert call.method == "POST" and call.json() == {"max_iterations": "7", "port": "7815"} and call.status == 200
    assert service.recorder.find("/reload") == []  # the route applies it itself
    shown = blocked_reason(service.url, repo, "config", "show")
    assert "max_iterations = 7" in shown


def test_config_set_with_the_server_down_writes_nothing(repo: Path, sealed_environment: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    reason = blocked_reason(url, repo, "config", "set max_iterations=7")
    assert "not changed" in reason and f"No server answers at {url}" in reason
    assert not list(sealed_environment.rglob("config.json"))


def test_config_set_a_value_the_server_rejects_restores_the_file(service: Service, repo: Path) -> None:
    path = service.data_dir / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"max_iterations": 9}\n')
    reason = blocked_reason(service.url, repo, "config", "set max_iterations=many")
    assert "not changed" in reason and "max_iterations" in reason
    assert json.loads(path.read_text()) == {"max_iterations": 9}


def test_config_set_secret_is_masked_when_shown(service: Service, repo: Path) -> None:
    blocked_reason(service.url, repo, "config", "set api_key=sk-test-abcdef123456")
    shown = blocked_reason(service.url, repo, "config")
    assert "sk-test-abcdef123456" not in shown and "****3456" in shown


def test_config_show_masks_secrets_only_not_every_key_that_says_token(service: Service, repo: Path) -> None:
    blocked_reason(service.url, repo, "config", "set max_answer_tokens=900")
    shown = blocked_reason(service.url, repo, "config")
    assert "max_answer_tokens = 900" in shown


@pytest.mark.parametrize("args", ["set", "set =x", "set Key=1", "frobnicate"])
def test_config_misuse_gets_a_usage_line(service: Service, repo: Path, args: str) -> None:
    reason = blocked_reason(service.url, repo, "config", args)
    assert "config" in reason
    assert [c for c in service.recorder.find("/config") if c.method == "POST"] == []


def test_commands_of_other_plugins_pass_through_untouched(service: Service, repo: Path) -> None:
    payload: dict[str, Any] = {**expansion_payload(repo, "stats"), "command_name": "other-plugin:stats"}
    run = run_script("slash_commands.py", payload, env=hook_env(service.url, repo))
    assert (run.returncode, run.stdout) == (0, "")


@pytest.mark.parametrize("stdin", [b"", b"{", b"null"])
def test_garbage_stdin_lets_the_prompt_through(service: Service, repo: Path, stdin: bytes) -> None:
    run = run_script("slash_commands.py", stdin, env=hook_env(service.url, repo))
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


def test_terminal_use_prints_the_same_block(service: Service, repo: Path) -> None:
    run = run_script("slash_commands.py", args=("stats",), env=hook_env(service.url, repo))
    assert run.returncode == 0 and "not loaded yet" in run.stdout


FULL_STATS: dict[str, Any] = {
    "server": {"version": "0.1.0", "uptime_s": 11_520.0, "provider": "anthropic", "model": "claude-haiku-4-5"},
    "workspace": {
        "workspace": "/home/me/src/app",
        "fill": {"used_tokens": 96_100, "total_tokens": 200_000, "ratio": 0.4805},
        "qa_retained": 12,
        "file_contexts": 41,
        "stale_files": 3,
        "ledger_facts": 27,
        "questions_answered": 37,
        "cost_usd": 0.42131,
        "cache_read_share": 0.82,
        "compactions": 2,
        "last_compaction_at": 1_000_000.0 - 14 * 60,
        "summaries_written": 5,
        "in_flight": 1,
        "queue_depth": 2,
        "estimated_tokens_saved": 120_400,
    },
}


def test_formatted_stats_read_well_in_a_terminal() -> None:
    slash = load_hook_module("slash_commands")
    text = slash.format_stats(FULL_STATS, now=1_000_000.0)
    assert text.splitlines() == [
        "Live Memory · /home/me/src/app",
        "  context   [██████████░░░░░░░░░░]  48%  96.1k / 200k tokens",
        "  cost      $0.4213 · 37 questions answered · 82% of prompt tokens from cache",
        "  memory    41 files (3 stale) · 12 Q&A retained · 27 facts",
        "  compacted 2× · last 14m ago · 5 summaries written",
        "  saved     ~120.4k tokens of re-reading (estimate)",
        "  busy      1 question in flight · 2 waiting",
        "  server    anthropic · claude-haiku-4-5 · up 3h 12m · v0.1.0",
    ]
    assert all(len(line) <= 100 for line in text.splitlines())


def test_a_net_loss_is_not_shown_as_negative_savings() -> None:
    slash = load_hook_module("slash_commands")
    data = {**FULL_STATS, "workspace": {**FULL_STATS["workspace"], "estimated_tokens_saved": -3_200}}
    saved = [line for line in slash.format_stats(data, now=1_000_000.0).splitlines() if "saved" in line]
    assert saved == ["  saved     nothing yet: its own tokens exceed the reading it spared by ~3.2k"]


@pytest.mark.parametrize("data", [{}, {"workspace": None}, {"workspace": {"fill": "?"}, "server": []}])
def test_formatting_survives_missing_or_odd_fields(data: dict[str, Any]) -> None:
    slash = load_hook_module("slash_commands")
    assert slash.format_stats(data).startswith("Live Memory · ")
