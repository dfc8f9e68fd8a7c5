"""OpenCode: the installer's edits (unit tests), then the real `opencode run`, offline, against a scripted model.

The end-to-end tests run OpenCode with a throwaway HOME and XDG dirs, its model a custom OpenAI-compatible
provider pointed at a FakeLLM on loopback; Live Memory runs for real on another loopback port with its own
FakeLLM. They assert on one run that they share (tests/agents/session.py), and skip with a notice when the
CLI is not installed (scripts/install-agent-clis.sh opencode).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from live_memory.cli.agents import note, opencode
from live_memory.constants import DEFAULT_SECRET_GLOBS, PASSIVE_MAX_FILE_BYTES
from live_memory.core.errors import ConfigError
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from tests.agents.session import (
    BILLING_QUESTION,
    MEMORY_ANSWER,
    ORIGINAL,
    PROMPT,
    Outcome,
    assert_asked_once_with_the_repository,
    assert_counted_under,
    assert_read_and_edit_teed,
    assert_the_memory_knew_what_was_taught,
    question,
    record_session,
)
from tests.fakes.agent_clis import require_cli, run_json_lines
from tests.plugin.conftest import Service
from tests.plugin.test_secret_floor import load_hook

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI_CANDIDATE = REPO_ROOT / ".tools" / "agents" / "opencode" / "node_modules" / ".bin" / "opencode"
MODEL = "fake/fake-model"
INSTALL_SCRIPT = REPO_ROOT / "scripts" / "install-agent-clis.sh"
URL = "http://127.0.0.1:7711"


# ------------------------------------------------------------------------------------------------ installer


def config_of(config_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((config_dir / "opencode.json").read_text(encoding="utf-8"))
    return data


def test_install_adds_a_remote_mcp_server_and_names_the_token_by_variable_only(tmp_path: Path) -> None:
    lines = opencode.install(tmp_path, URL + "/", "LIVE_MEMORY_AUTH_TOKEN", instructions_dir=None, plugin=False)
    assert lines == [f"{tmp_path / 'opencode.json'}: added mcp.live_memory -> {URL}/mcp"]
    config = config_of(tmp_path)
    assert config["$schema"] == opencode.SCHEMA_URL
    assert config["mcp"]["live_memory"] == {
        "type": "remote",
        "url": URL + "/mcp",
        "timeout": opencode.MCP_TIMEOUT_MS,
        "headers": {"X-Live-Memory-Agent": "opencode", "Authorization": "Bearer {env:LIVE_MEMORY_AUTH_TOKEN}"},
    }


def test_install_without_a_token_sends_no_authorization_header(tmp_path: Path) -> None:
    opencode.install(tmp_path, URL + "/mcp", None, instructions_dir=None, plugin=False)
    entry = config_of(tmp_path)["mcp"]["live_memory"]
    assert entry["url"] == URL + "/mcp" and entry["headers"] == {"X-Live-Memory-Agent": "opencode"}


def test_a_token_value_in_place_of_a_variable_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="environment variable"):
        opencode.install(tmp_path, URL, "sk-live-1234 secret", instructions_dir=None, plugin=False)
    assert not (tmp_path / "opencode.json").exists()


def test_install_is_idempotent_and_says_so(tmp_path: Path) -> None:
    opencode.install(tmp_path, URL, None, instructions_dir=tmp_path, plugin=True)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    lines = opencode.install(tmp_path, URL, None, instructions_dir=tmp_path, plugin=True)
    assert all("already" in line for line in lines), lines
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_install_keeps_every_other_setting_and_other_mcp_servers_in_their_order(tmp_path: Path) -> None:
    mine = {
        "model": "anthropic/claude-sonnet-4-5",
        "mcp": {"docs": {"type": "local", "command": ["docs-mcp"]}, "zeta": {"type": "remote", "url": "https://z"}},
        "provider": {"acme": {"options": {"baseURL": "https://acme.example/v1"}}},
        "theme": "ünïcode",
    }
    (tmp_path / "opencode.json").write_text(json.dumps(mine), encoding="utf-8")
    opencode.install(tmp_path, URL, None, instructions_dir=None, plugin=False)
    config = config_of(tmp_path)
    assert list(config) == ["model", "mcp", "provider", "theme"]
    assert list(config["mcp"]) == ["docs", "zeta", "live_memory"]
    assert {k: v for k, v in config.items() if k != "mcp"} == {k: v for k, v in mine.items() if k != "mcp"}
    assert {k: v for k, v in config["mcp"].items() if k != "live_memory"} == mine["mcp"]


def test_install_updates_a_changed_url_in_place(tmp_path: Path) -> None:
    opencode.install(tmp_path, URL, None, instructions_dir=None, plugin=False)
    lines = opencode.install(tmp_path, "http://127.0.0.1:9999", None, instructions_dir=None, plugin=False)
    assert "updated mcp.live_memory" in lines[0]
    assert config_of(tmp_path)["mcp"]["live_memory"]["url"] == "http://127.0.0.1:9999/mcp"


def test_uninstall_removes_only_what_install_added(tmp_path: Path) -> None:
    mine = {"mcp": {"docs": {"type": "local", "command": ["docs-mcp"]}}, "theme": "dark"}
    (tmp_path / "opencode.json").write_text(json.dumps(mine), encoding="utf-8")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "other.js").write_text("export const Other = async () => ({})\n", encoding="utf-8")
    (tmp_path / "AGENTS.md").write_text("# Rules\n\nUse tabs.\n", encoding="utf-8")
    opencode.install(tmp_path, URL, "TOKEN", instructions_dir=tmp_path, plugin=True)
    assert (tmp_path / "plugins" / "live-memory.js").exists()

    lines = opencode.uninstall(tmp_path, instructions_dir=tmp_path)
    assert len(lines) == 3, lines
    assert config_of(tmp_path) == mine
    assert sorted(p.name for p in (tmp_path / "plugins").iterdir()) == ["other.js"]
    assert (tmp_path / "AGENTS.md").read_text(encoding="utf-8") == "# Rules\n\nUse tabs.\n"
    assert opencode.uninstall(tmp_path, instructions_dir=tmp_path) == [
        f"{tmp_path}: nothing of Live Memory's to remove"
    ]


def test_uninstall_deletes_the_files_install_created(tmp_path: Path) -> None:
    opencode.install(tmp_path, URL, None, instructions_dir=tmp_path, plugin=True)
    opencode.uninstall(tmp_path, instructions_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_uninstall_leaves_a_plugin_file_that_is_not_ours(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "live-memory.js").write_text("// someone else's\n", encoding="utf-8")
    assert opencode.uninstall(tmp_path, instructions_dir=None) == [
        f"{tmp_path / 'plugins' / 'live-memory.js'}: left alone (not Live Memory's plugin)"
    ]
    with pytest.raises(ConfigError, match="not Live Memory's plugin"):
        opencode.install(tmp_path, URL, None, instructions_dir=None, plugin=True)


def test_an_invalid_config_is_refused_with_the_entry_to_add_and_left_untouched(tmp_path: Path) -> None:
    text = '{"model": "a/b"'
    (tmp_path / "opencode.json").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        opencode.install(tmp_path, URL, "TOKEN", instructions_dir=None, plugin=True)
    message = str(refused.value)
    assert "not valid JSON (line 1, column 16" in message and '"url": "http://127.0.0.1:7711/mcp"' in message
    assert [p.name for p in tmp_path.iterdir()] == ["opencode.json"]  # no plugin either: all or nothing
    assert (tmp_path / "opencode.json").read_text(encoding="utf-8") == text


JSONC = """{
  // my model, my rules
  "model": "a/b", "small_model": "a/c",
  "mcp": {
    "docs": {"type": "local", "command": ["docs-mcp"]}, /* read-only */
  },
}
"""


def test_a_jsonc_config_keeps_its_comments_and_compact_objects_and_uninstall_gives_back_its_bytes(
    tmp_path: Path,
) -> None:
    (tmp_path / "opencode.jsonc").write_text(JSONC, encoding="utf-8")
    opencode.install(tmp_path, URL, None, instructions_dir=None, plugin=False)
    text = (tmp_path / "opencode.jsonc").read_text(encoding="utf-8")
    assert text.startswith(JSONC.split("  },", maxsplit=1)[0])  # every line before ours, as it was
    assert '    "live_memory": {\n      "type": "remote",' in text  # ours indented as its neighbours
    opencode.uninstall(tmp_path, instructions_dir=None)
    assert (tmp_path / "opencode.jsonc").read_text(encoding="utf-8") == JSONC


def test_uninstall_leaves_a_jsonc_config_without_our_entry_alone(tmp_path: Path) -> None:
    text = '{\n  // mine\n  "theme": "dark",\n}\n'
    (tmp_path / "opencode.jsonc").write_text(text, encoding="utf-8")
    assert opencode.uninstall(tmp_path, instructions_dir=None) == [f"{tmp_path}: nothing of Live Memory's to remove"]
    assert (tmp_path / "opencode.jsonc").read_text(encoding="utf-8") == text


def test_instructions_for_a_missing_repository_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory"):
        opencode.install(tmp_path / "cfg", URL, None, instructions_dir=tmp_path / "nowhere", plugin=False)


def test_an_existing_jsonc_config_is_the_one_edited(tmp_path: Path) -> None:
    (tmp_path / "opencode.jsonc").write_text('{"theme": "dark"}\n', encoding="utf-8")
    opencode.install(tmp_path, URL, None, instructions_dir=None, plugin=False)
    assert not (tmp_path / "opencode.json").exists()
    assert json.loads((tmp_path / "opencode.jsonc").read_text(encoding="utf-8"))["theme"] == "dark"


def test_instructions_are_added_once_and_replaced_when_they_change(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Project\n", encoding="utf-8")
    opencode.install(tmp_path / "cfg", URL, None, instructions_dir=tmp_path, plugin=False)
    text = agents.read_text(encoding="utf-8")
    assert text.startswith("# Project\n\n<!-- live-memory:begin for opencode (") and text.endswith(note.END + "\n")
    assert opencode.TOOL_NAME in text and "absolute path of this repository's root" in text
    agents.write_text(text.replace("Ask it", "ASK IT") + "\nMore rules.\n", encoding="utf-8")
    assert "up to date" in opencode.install(tmp_path / "cfg", URL, None, instructions_dir=tmp_path, plugin=False)[1]
    assert agents.read_text(encoding="utf-8") == text + "\nMore rules.\n"
    opencode.uninstall(tmp_path / "cfg", instructions_dir=tmp_path)
    assert agents.read_text(encoding="utf-8") == "# Project\n\nMore rules.\n"


def test_the_installed_plugin_carries_the_url_and_the_token_variable_never_a_token(tmp_path: Path) -> None:
    opencode.install(tmp_path, URL, "MY_TOKEN", instructions_dir=None, plugin=True)
    text = (tmp_path / "plugins" / "live-memory.js").read_text(encoding="utf-8")
    assert f'const INSTALLED_URL = "{URL}"' in text and 'const TOKEN_ENV = "MY_TOKEN"' in text
    assert "__LIVE_MEMORY_URL__" not in text


def js_constant(name: str) -> Any:
    """A constant of the plugin as installed, written as a JSON literal in `const NAME = <literal>`."""
    source = opencode.plugin_text("http://127.0.0.1:7711", None)
    match = re.search(rf"^const {name} = ", source, re.M)
    assert match is not None, f"opencode_plugin.js lacks const {name}"
    return json.JSONDecoder().raw_decode(source, match.end())[0]


def test_the_plugin_withholds_exactly_the_secret_names_the_hook_and_the_server_do() -> None:
    plugin = {g.lower() for g in js_constant("SECRET_NAMES")}
    server = {g.lower() for g in DEFAULT_SECRET_GLOBS if "/" not in g}
    assert plugin == {g.lower() for g in load_hook("notify").SECRET_NAMES}
    assert not server - plugin, f"opencode_plugin.js SECRET_NAMES lacks {sorted(server - plugin)}"
    assert not plugin - server, f"constants.DEFAULT_SECRET_GLOBS lacks {sorted(plugin - server)}"


def test_the_plugins_file_cap_and_limits_are_the_hooks_and_the_servers() -> None:
    notify = load_hook("notify")
    assert js_constant("MAX_FILE_BYTES") == PASSIVE_MAX_FILE_BYTES == load_hook("_client").MAX_FILE_BYTES
    assert js_constant("BINARY_SNIFF_BYTES") == notify.BINARY_SNIFF_BYTES
    assert js_constant("MAX_SESSION_ID_CHARS") == notify.MAX_SESSION_ID_CHARS
    assert js_constant("TEE_TIMEOUT_MS") == notify.TEE_TIMEOUT_S * 1000


# ------------------------------------------------------------------------------------------------ the real CLI


def verified_version() -> str:
    """The OpenCode version scripts/install-agent-clis.sh opencode installs by default."""
    found = re.search(r"OPENCODE_CLI_VERSION:-([0-9][0-9.]*)", INSTALL_SCRIPT.read_text(encoding="utf-8"))
    assert found is not None, "scripts/install-agent-clis.sh opencode names no default version"
    return found.group(1)


def agent_turn(request: RecordedRequest) -> bool:
    """OpenCode's main conversation sends tools; side requests (a title) do not."""
    return bool(request.body.get("tools"))


def tool_messages(request: RecordedRequest) -> list[str]:
    return [str(m.get("content")) for m in request.body.get("messages") or [] if m.get("role") == "tool"]


def tool_names(request: RecordedRequest) -> list[str]:
    return [str(t.get("function", {}).get("name")) for t in request.body.get("tools") or []]


def step_of(request: RecordedRequest) -> int | None:
    """An agent turn's step: the tool results it carries; None for a side request."""
    return len(tool_messages(request)) if agent_turn(request) else None


def run_opencode(
    opencode_bin: str, prompt: str, *, repo: Path, home: Path, model: FakeLLM, service: Service
) -> list[dict[str, Any]]:
    """Install Live Memory into a throwaway OpenCode config (beside a user's provider settings, with the
    AGENTS.md note in `repo`), then run `opencode run` once, offline; returns its JSON events."""
    config_dir = home / ".config" / "opencode"
    config_dir.mkdir(parents=True)
    users = {
        "$schema": opencode.SCHEMA_URL,
        "model": MODEL,
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": model.base_url + "/v1", "apiKey": "test"},
                "models": {"fake-model": {"name": "Fake model", "tool_call": True}},
            }
        },
    }
    (config_dir / "opencode.json").write_text(json.dumps(users, indent=2), encoding="utf-8")
    # OpenCode installs its plugin SDK into each config dir from the npm registry unless the lockfile there
    # already lists it; the plugin under test imports nothing from it.
    sdk = {"dependencies": {"@opencode-ai/plugin": verified_version()}}
    (config_dir / "package.json").write_text(json.dumps(sdk), encoding="utf-8")
    (config_dir / "package-lock.json").write_text(json.dumps({"packages": {"": sdk}}), encoding="utf-8")
    (config_dir / "node_modules").mkdir()
    opencode.install(config_dir, service.url, "LIVE_MEMORY_AUTH_TOKEN", instructions_dir=repo, plugin=True)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCODE", "LIVE_MEMORY_", "XDG_"))}
    env.update(
        HOME=str(home),
        PWD=str(repo),  # OpenCode takes its project directory from PWD
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        # Offline: no update check, no models.dev catalog, no LSP or plugin downloads, no sharing.
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_SHARE="1",
        OPENCODE_DISABLE_CLAUDE_CODE="1",
        OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER="1",
        # Anything that still tries the internet meets a dead proxy at once; loopback goes direct.
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
    )
    args = [opencode_bin, "run", "--print-logs", "--format", "json", "--title", "test", "-m", MODEL, prompt]
    return run_json_lines(args, cwd=repo, env=env)


def steps(repo: Path) -> list[Reply]:
    """The session's turns 0-2: a read, an edit, the question."""
    source = str(repo / "src" / "app.py")
    return [
        Reply.tool_call("read", {"filePath": source}),
        Reply.tool_call("edit", {"filePath": source, "oldString": "return 42", "newString": "return 43"}),
        Reply.tool_call(opencode.TOOL_NAME, question(repo)),
    ]


@pytest.fixture(scope="module")
def opencode_session(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """One `opencode run` session (tests/agents/session.py) that the tests below share."""
    opencode_bin = require_cli(CLI_CANDIDATE, "opencode", "scripts/install-agent-clis.sh opencode")

    def run(repo: Path, home: Path, model: FakeLLM, service: Service) -> list[dict[str, Any]]:
        return run_opencode(opencode_bin, PROMPT, repo=repo, home=home / "oc", model=model, service=service)

    root = tmp_path_factory.mktemp("opencode")
    return record_session(root, steps, step_of, run, cache_rules="openai", model="fake-model")


@pytest.mark.agent_cli
def test_opencode_lists_the_tool_calls_it_with_the_repository_and_the_answer_reaches_the_model(
    opencode_session: Outcome,
) -> None:
    session = opencode_session.result()
    first = session.turns[0]
    assert opencode.TOOL_NAME in tool_names(first)  # (a) listed to the model
    system = "\n".join(str(m.get("content")) for m in first.body["messages"] if m.get("role") == "system")
    assert note.TEXT.splitlines()[2] in system and f"`{opencode.TOOL_NAME}`" in system  # AGENTS.md reached it
    assert_asked_once_with_the_repository(session)  # (a) called with the repository
    assert [len(tool_messages(r)) for r in session.turns] == [0, 1, 2, 3]  # one request a turn
    answer = tool_messages(session.turns[3])[2]  # (b) the memory's answer is in the next model request
    assert MEMORY_ANSWER in answer
    assert "[live-memory] model=" in answer
    assert_counted_under(session, opencode.AGENT_NAME)  # /stats says who asked


@pytest.mark.agent_cli
def test_a_file_opencode_reads_reaches_the_memory_through_the_plugin(opencode_session: Outcome) -> None:
    session = opencode_session.result()
    tee = session.agent_notifies()[0]
    assert tee.json()["cwd"] == str(session.repo) and tee.json()["session_id"].startswith("ses_")
    assert tee.json()["events"] == [{"path": str(session.source), "kind": "read", "content": ORIGINAL}]
    assert tee.answer()["accepted"] == 1
    assert session.held_before_turn[:2] == [1, 2]  # beside the taught billing.py, the memory now holds app.py


@pytest.mark.agent_cli
def test_an_edit_by_opencode_reaches_the_memory_before_its_next_model_request(opencode_session: Outcome) -> None:
    assert_read_and_edit_teed(opencode_session.result())


@pytest.mark.agent_cli
def test_what_another_agent_fed_the_memory_answers_a_question_asked_from_opencode(opencode_session: Outcome) -> None:
    """A file another agent's hook teed to /notify (a file OpenCode never reads) is in the memory's prompt
    when OpenCode asks, and the answer built on it reaches OpenCode's model."""
    session = opencode_session.result()
    (asked,) = session.memory_requests  # the memory answered at once, from what it held
    assert BILLING_QUESTION in json.dumps(asked.body)
    assert_the_memory_knew_what_was_taught(session.memory_requests)
    assert MEMORY_ANSWER in tool_messages(session.turns[3])[-1]
