"""What every agent's installer does alike (Codex's config.toml, Gemini CLI's settings.json): a second run changes
nothing, a missing set of hook scripts leaves the server entry alone, a token given instead of a variable's
name is refused, uninstall removes the files install created, and the instructions note comes only on request
and goes byte for byte. Each agent's own format is tested in its module."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from live_memory.cli.agents import codex, gemini
from live_memory.errors import ConfigError

URL = "http://127.0.0.1:7711"
INSTALLERS = {"codex": (codex, "config.toml"), "gemini": (gemini, "settings.json")}


@pytest.fixture(params=sorted(INSTALLERS))
def installer(request: pytest.FixtureRequest) -> tuple[ModuleType, str]:
    return INSTALLERS[request.param]


def test_a_second_install_changes_nothing_and_says_so(installer: tuple[ModuleType, str], tmp_path: Path) -> None:
    module, name = installer
    module.install(tmp_path, URL, None, instructions_dir=None)
    first = (tmp_path / name).read_bytes()
    lines = module.install(tmp_path, URL, None, instructions_dir=None)
    assert (tmp_path / name).read_bytes() == first
    assert "already up to date" in lines[0]


def test_without_the_hook_scripts_only_the_server_is_installed(
    installer: tuple[ModuleType, str], tmp_path: Path
) -> None:
    module, name = installer
    lines = module.install(tmp_path, URL, None, instructions_dir=None, hooks_source=None)
    written = (tmp_path / name).read_text(encoding="utf-8")
    assert "live_memory" in written and "notify.py" not in written  # the server, and no hook command
    assert any("watcher" in line for line in lines)  # says what feeds the memory instead


def test_a_token_instead_of_a_variable_name_is_refused(installer: tuple[ModuleType, str], tmp_path: Path) -> None:
    module, name = installer
    with pytest.raises(ConfigError, match="must name an environment variable"):
        module.install(tmp_path, URL, "sk-secret-value", instructions_dir=None)
    assert not (tmp_path / name).exists()


def test_uninstall_removes_the_config_install_created_and_then_finds_nothing(
    installer: tuple[ModuleType, str], tmp_path: Path
) -> None:
    module, name = installer
    module.install(tmp_path, URL, None, instructions_dir=None)
    module.uninstall(tmp_path, instructions_dir=None)
    assert not (tmp_path / name).exists()
    assert "nothing of Live Memory's" in module.uninstall(tmp_path, instructions_dir=None)[0]


RULES = "# Rules\n\nRun make check.\n"


def test_the_note_is_added_only_on_request_and_removed_byte_for_byte(
    installer: tuple[ModuleType, str], tmp_path: Path
) -> None:
    module, _ = installer
    notes = tmp_path / module.NOTE.file_name  # AGENTS.md, GEMINI.md
    notes.write_text(RULES, encoding="utf-8")
    module.install(tmp_path / "home", URL, None, instructions_dir=None)
    assert notes.read_text(encoding="utf-8") == RULES
    module.install(tmp_path / "home", URL, None, instructions_dir=tmp_path)
    text = notes.read_text(encoding="utf-8")
    assert text.startswith(RULES) and "`ask_live_memory`" in text
    module.install(tmp_path / "home", URL, None, instructions_dir=tmp_path)
    assert notes.read_text(encoding="utf-8") == text
    module.uninstall(tmp_path / "home", instructions_dir=tmp_path)
    assert notes.read_text(encoding="utf-8") == RULES


def test_a_note_file_install_created_is_removed_again(installer: tuple[ModuleType, str], tmp_path: Path) -> None:
    module, _ = installer
    module.install(tmp_path / "home", URL, None, instructions_dir=tmp_path)
    assert (tmp_path / module.NOTE.file_name).is_file()
    module.uninstall(tmp_path / "home", instructions_dir=tmp_path)
    assert not (tmp_path / module.NOTE.file_name).exists()
