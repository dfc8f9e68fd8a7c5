"""What every agent's installer does alike (Codex's config.toml, OpenCode's opencode.json, Gemini CLI's
settings.json): a second run changes nothing, a token given instead of a variable's name is refused, uninstall
removes the files install created, the one instructions note comes only on request, is shared by the agents that
read the same file and goes byte for byte with the last of them, and a refused or failed install or uninstall
leaves the disk as it was. Each agent's own format is tested in its module."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from live_memory.cli.agents import AGENTS, codex, gemini, note
from live_memory.core.errors import ConfigError

URL = "http://127.0.0.1:7711"
CONFIG = {"codex": "config.toml", "opencode": "opencode.json", "gemini": "settings.json"}
NOTE_FILE = {"codex": "AGENTS.md", "opencode": "AGENTS.md", "gemini": "GEMINI.md"}
# What each installer cannot read, refused before anything is written.
BROKEN = {"codex": 'model = "gpt-5.5\n', "opencode": '{"model": "a/b"', "gemini": '{"theme": "GitHub"\n'}
HOOKED: dict[str, tuple[ModuleType, str]] = {"codex": (codex, "config.toml"), "gemini": (gemini, "settings.json")}


def install(agent: str, home: Path, instructions: Path | None = None, token_env: str | None = None) -> list[str]:
    return AGENTS[agent].install(home, URL, token_env, instructions)


def uninstall(agent: str, home: Path, instructions: Path | None = None) -> list[str]:
    return AGENTS[agent].uninstall(home, instructions)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under `root`, with the files' bytes."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


@pytest.fixture(params=sorted(AGENTS))
def agent(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_second_install_changes_nothing_and_says_so(agent: str, tmp_path: Path) -> None:
    install(agent, tmp_path)
    first = snapshot(tmp_path)
    lines = install(agent, tmp_path)
    assert snapshot(tmp_path) == first
    assert "already" in lines[0]


def test_without_the_hook_scripts_only_the_server_is_installed(tmp_path: Path) -> None:
    for module, name in HOOKED.values():
        lines = module.install(tmp_path, URL, None, instructions_dir=None, hooks_source=None)
        written = (tmp_path / name).read_text(encoding="utf-8")
        assert "live_memory" in written and "notify.py" not in written  # the server, and no hook command
        assert any("watcher" in line for line in lines)  # says what feeds the memory instead


def test_a_token_instead_of_a_variable_name_is_refused(agent: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must name an environment variable"):
        install(agent, tmp_path, token_env="sk-secret-value")
    assert list(tmp_path.iterdir()) == []


def test_uninstall_removes_what_install_created_and_then_finds_nothing(agent: str, tmp_path: Path) -> None:
    install(agent, tmp_path / "home", tmp_path)
    uninstall(agent, tmp_path / "home", tmp_path)
    assert snapshot(tmp_path) == {"home": None}
    assert "nothing of Live Memory's" in uninstall(agent, tmp_path / "home")[0]


RULES = "# Rules\n\nRun make check.\n"


def test_the_note_is_added_only_on_request_and_removed_byte_for_byte(agent: str, tmp_path: Path) -> None:
    notes = tmp_path / NOTE_FILE[agent]
    notes.write_text(RULES, encoding="utf-8")
    install(agent, tmp_path / "home")
    assert notes.read_text(encoding="utf-8") == RULES
    install(agent, tmp_path / "home", tmp_path)
    text = notes.read_text(encoding="utf-8")
    assert text.startswith(RULES) and "`ask_live_memory`" in text
    install(agent, tmp_path / "home", tmp_path)
    assert notes.read_text(encoding="utf-8") == text
    uninstall(agent, tmp_path / "home", tmp_path)
    assert notes.read_text(encoding="utf-8") == RULES


def test_codex_and_opencode_share_one_note_that_goes_with_the_last_of_them(tmp_path: Path) -> None:
    repo, notes = tmp_path / "repo", tmp_path / "repo" / "AGENTS.md"
    repo.mkdir()
    notes.write_text(RULES, encoding="utf-8")
    install("codex", tmp_path / "codex", repo)
    install("opencode", tmp_path / "opencode", repo)
    text = notes.read_text(encoding="utf-8")
    assert text.count("## Live Memory") == 1 and text.count(note.END) == 1
    assert "<!-- live-memory:begin for codex opencode (" in text
    uninstall("codex", tmp_path / "codex", repo)
    assert notes.read_text(encoding="utf-8") == text.replace("for codex opencode (", "for opencode (")
    uninstall("opencode", tmp_path / "opencode", repo)
    assert notes.read_text(encoding="utf-8") == RULES


def test_the_notes_an_older_version_wrote_per_agent_are_folded_into_one(tmp_path: Path) -> None:
    old_codex = (
        "<!-- added by live-memory install codex -->\n## Live Memory\nold\n<!-- end of live-memory install codex -->\n"
    )
    old_opencode = (
        "<!-- live-memory:begin (written by live-memory; its uninstall removes this block) -->\n## Live Memory\n"
        "Call `live_memory_ask_live_memory`.\n<!-- live-memory:end -->\n"
    )
    notes = tmp_path / "AGENTS.md"
    notes.write_text(RULES + "\n" + old_codex + "\nMore rules.\n\n" + old_opencode, encoding="utf-8")
    install("opencode", tmp_path / "home", tmp_path)
    text = notes.read_text(encoding="utf-8")
    assert text == RULES + "\n" + note.section({"codex", "opencode"}) + "\nMore rules.\n"
    uninstall("opencode", tmp_path / "home", tmp_path)
    uninstall("codex", tmp_path / "home", tmp_path)
    assert notes.read_text(encoding="utf-8") == RULES + "\nMore rules.\n"


def test_a_refused_install_writes_nothing_at_all(agent: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / CONFIG[agent]).write_text(BROKEN[agent], encoding="utf-8")
    (tmp_path / NOTE_FILE[agent]).write_text(RULES, encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match="not valid"):
        install(agent, home, tmp_path)
    assert snapshot(tmp_path) == before  # no hook script, no plugin, no note


def test_a_refused_uninstall_removes_nothing(tmp_path: Path) -> None:
    install("codex", tmp_path / "home", tmp_path)
    config = tmp_path / "home" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + "stray = 1\n", encoding="utf-8")  # keys after our block
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match="move them above the block"):
        uninstall("codex", tmp_path / "home", tmp_path)
    assert snapshot(tmp_path) == before  # the hook scripts and the note are still there


# Where each installer writes its second file (hook scripts, OpenCode's plugin), after the configuration.
SECOND = {"codex": "live-memory", "opencode": "plugins", "gemini": "live-memory"}


def test_a_write_that_fails_midway_puts_back_what_was_already_written(agent: str, tmp_path: Path) -> None:
    (tmp_path / CONFIG[agent]).write_text("", encoding="utf-8")
    (tmp_path / SECOND[agent]).write_text("a file where a folder must go\n", encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match="nothing was changed"):
        install(agent, tmp_path)
    assert snapshot(tmp_path) == before
