"""The plugin's manifests, as Claude Code reads them: names, wiring, limits, and `claude plugin validate`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from live_memory import constants as C
from tests.plugin.conftest import REPO_ROOT, TOOL_NAME, Service, cli_env, run_cli

PLUGIN_JSON = REPO_ROOT / ".claude-plugin" / "plugin.json"
MARKETPLACE_JSON = REPO_ROOT / ".claude-plugin" / "marketplace.json"
MCP_JSON = REPO_ROOT / ".mcp.json"
HOOKS_JSON = REPO_ROOT / "hooks" / "hooks.json"
COMMANDS = ("stats", "reset", "empty", "config")
CLAUDE_DESCRIPTION_LIMIT = 2048  # Claude Code truncates MCP tool descriptions at 2 KB


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def frontmatter(path: Path) -> dict[str, str]:
    """The flat `key: value` frontmatter of a skill or command file (quotes stripped)."""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, f"{path} has no frontmatter"
    fields = {}
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip().strip('"')
    return fields


def test_plugin_manifest_names_the_plugin_and_its_options() -> None:
    manifest = load(PLUGIN_JSON)
    assert manifest["name"] == "live-memory"
    for key in ("description", "repository", "license", "version"):
        assert isinstance(manifest[key], str) and manifest[key]
    assert manifest["author"]["name"]
    assert isinstance(manifest["keywords"], list) and manifest["keywords"]
    options = manifest["userConfig"]
    url = options["server_url"]
    assert url["type"] == "string" and not url.get("required", False)
    assert url["default"] == "http://127.0.0.1:${LIVE_MEMORY_PORT:-7711}"
    token = options["auth_token"]
    assert token["sensitive"] is True and not token.get("required", False)


def test_repository_is_a_one_plugin_marketplace_rooted_at_itself() -> None:
    marketplace = load(MARKETPLACE_JSON)
    assert marketplace["owner"]["name"]
    (entry,) = marketplace["plugins"]
    assert entry["name"] == load(PLUGIN_JSON)["name"]
    assert entry["source"] == "./"


def test_mcp_server_is_http_always_loaded_with_a_generous_timeout_and_the_project_header() -> None:
    (name, server), *rest = load(MCP_JSON)["mcpServers"].items()
    assert not rest and name == "live-memory"  # -> mcp__plugin_live-memory_live-memory__ask_live_memory
    assert server["type"] == "http"
    assert server["url"] == "${user_config.server_url}/mcp"
    assert server["alwaysLoad"] is True
    # The hard per-call limit must leave the soft deadline room to return a best-effort answer.
    assert server["timeout"] >= 2 * C.DEFAULT_TIMEOUT_S * 1000 + 60_000
    headers = server["headers"]
    (project_header,) = [key for key in headers if key.lower() == C.PROJECT_HEADER]  # the name the server reads
    assert headers[project_header] == "${CLAUDE_PROJECT_DIR}"
    assert headers["Authorization"] == "Bearer ${LIVE_MEMORY_AUTH_TOKEN:-${user_config.auth_token}}"


def hook_groups(event: str) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = load(HOOKS_JSON)["hooks"][event]
    return groups


def test_every_hook_runs_an_existing_script_with_a_short_timeout() -> None:
    for event, groups in load(HOOKS_JSON)["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                assert handler["type"] == "command"
                script = re.fullmatch(r'python3 "\$\{CLAUDE_PLUGIN_ROOT\}/(hooks/[a-z_]+\.py)"', handler["command"])
                assert script, f"{event}: {handler['command']}"
                assert (REPO_ROOT / script.group(1)).is_file()
                assert 1 <= handler["timeout"] <= 15


# What a synchronous tee may cost per tool call at most (seconds): notify.py's own deadline is 1 s.
SYNC_TEE_TIMEOUT_S = 3
FILE_TOOLS = {"Read", "Write", "Edit", "NotebookEdit"}  # Claude Code's file tools (2.1.332 has no MultiEdit)


def test_reads_and_edits_are_teed_synchronously_with_a_tight_timeout() -> None:
    """Synchronous: Claude Code sends its next model request only after the tee, so a question right after an
    edit sees the new text, and a `-p` run that ends right after the edit does not cancel it."""
    by_matcher = {g["matcher"]: g["hooks"][0] for g in hook_groups("PostToolUse")}
    assert set(by_matcher) == {"Read", "Write|Edit|NotebookEdit"}
    for handler in by_matcher.values():
        assert not handler.get("async", False) and not handler.get("asyncRewake", False)
        assert handler["timeout"] <= SYNC_TEE_TIMEOUT_S
    assert "matcher" not in hook_groups("FileChanged")[0]  # watchPaths from SessionStart drive it
    assert hook_groups("SessionStart")[0]["hooks"][0]["command"].endswith('hooks/notify.py"')


def test_tool_matchers_name_only_file_tools_the_hook_handles() -> None:
    matched = {name for g in hook_groups("PostToolUse") for name in g["matcher"].split("|")}
    assert matched == FILE_TOOLS
    notify = (REPO_ROOT / "hooks" / "notify.py").read_text(encoding="utf-8")
    assert "MultiEdit" not in re.sub(r"#.*", "", notify)  # no code path for a tool that does not exist


def test_command_hook_matches_exactly_the_plugins_four_commands() -> None:
    (group,) = hook_groups("UserPromptExpansion")
    matcher = re.compile(group["matcher"])
    for command in COMMANDS:
        assert matcher.search(f"live-memory:{command}")
    for other in ("stats", "other:stats", "live-memory:statsx", "xlive-memory:stats", "live-memory:ask"):
        assert not matcher.search(other)


@pytest.mark.parametrize("command", COMMANDS)
def test_commands_are_user_only_and_documented(command: str) -> None:
    fields = frontmatter(REPO_ROOT / "commands" / f"{command}.md")
    assert fields["disable-model-invocation"] == "true"
    assert len(fields["description"]) > 20


def test_skill_says_when_to_ask_and_to_pass_the_absolute_repo_root() -> None:
    path = REPO_ROOT / "skills" / "live-memory" / "SKILL.md"
    fields = frontmatter(path)
    assert fields["name"] == "live-memory"
    assert TOOL_NAME in fields["description"] and len(fields["description"]) <= 1536
    body = path.read_text(encoding="utf-8")
    for phrase in ("before exploring unfamiliar code", "instead of re-reading", "why code is the way it is"):
        assert phrase in body.lower()
    assert "absolute path of the repository root" in body


async def test_tool_description_fits_claude_codes_2kb_limit(service: Service) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(timeout=httpx2.Timeout(10.0))
    async with http, Client(streamable_http_client(service.url + "/mcp", http_client=http)) as client:
        tools = await client.list_tools()
    (tool,) = [t for t in tools.tools if t.name == "ask_live_memory"]
    assert tool.description and len(tool.description.encode("utf-8")) <= CLAUDE_DESCRIPTION_LIMIT


@pytest.mark.parametrize("target", [".", ".claude-plugin/plugin.json"])
def test_claude_plugin_validate_strict_passes(claude: str, tmp_path: Path, target: str) -> None:
    """The real CLI: the folder checks the marketplace; plugin.json checks hooks, commands and skills."""
    done = run_cli(
        claude, ["plugin", "validate", target, "--strict"], cwd=REPO_ROOT, env=cli_env(tmp_path / "home"), timeout_s=60
    )
    assert "Validation passed" in done.stdout


# --- what an install copies ----------------------------------------------------------------------------------------

BUILD_SCRIPT = REPO_ROOT / "scripts" / "build-plugin.sh"
PLUGIN_BUDGET_BYTES = 512 * 1024  # the plugin is a few stdlib scripts and manifests


def folder_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def build_plugin(dest: Path) -> Path:
    done = subprocess.run([str(BUILD_SCRIPT), str(dest)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dest


def test_plugin_build_holds_the_plugin_and_nothing_else(tmp_path: Path) -> None:
    plugin = build_plugin(tmp_path / "plugin")
    files = {str(p.relative_to(plugin)) for p in plugin.rglob("*") if p.is_file()}
    assert {".claude-plugin/plugin.json", ".claude-plugin/marketplace.json", ".mcp.json", "LICENSE"} <= files
    assert {f"commands/{c}.md" for c in COMMANDS} | {"skills/live-memory/SKILL.md", "hooks/hooks.json"} <= files
    for handler in (h for groups in load(HOOKS_JSON)["hooks"].values() for g in groups for h in g["hooks"]):
        script = re.search(r"(hooks/[a-z_]+\.py)", handler["command"])
        assert script and script.group(1) in files
    assert not any(f.startswith(("server/", "tests/", ".venv/", ".tools/")) for f in files)
    assert folder_bytes(plugin) < PLUGIN_BUDGET_BYTES


def test_plugin_build_never_removes_a_folder_it_did_not_make(tmp_path: Path) -> None:
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    done = subprocess.run([str(BUILD_SCRIPT), str(precious)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "not an earlier plugin build" in done.stderr
    assert (precious / "keep.txt").read_text() == "mine"


def test_installing_the_built_plugin_copies_only_the_plugin_into_claude_codes_cache(
    claude: str, tmp_path: Path
) -> None:
    plugin = build_plugin(tmp_path / "plugin")
    home = tmp_path / "home"
    env = cli_env(home)
    for argv in (["plugin", "marketplace", "add", str(plugin)], ["plugin", "install", "live-memory@shofer"]):
        run_cli(claude, argv, cwd=tmp_path, env=env)
    cache = home / ".claude" / "plugins" / "cache" / "shofer" / "live-memory"
    (installed,) = list(cache.iterdir())  # one version
    assert (installed / "hooks" / "notify.py").is_file()
    assert folder_bytes(installed) < PLUGIN_BUDGET_BYTES
