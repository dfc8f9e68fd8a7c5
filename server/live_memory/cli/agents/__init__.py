"""Connecting other coding agents to the running service: `live-memory install|uninstall <agent>`.

Each agent's module edits that agent's own configuration (idempotent, marked, removable) and says what it
changed; this registry names them and where each keeps its configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from live_memory.cli.agents import codex, gemini, opencode


@dataclass(frozen=True)
class AgentSetup:
    home: Callable[[Mapping[str, str]], Path]  # where the agent keeps its configuration, from the environment
    install: Callable[[Path, str, str | None, Path | None], list[str]]  # home, url, token env, instructions dir
    uninstall: Callable[[Path, Path | None], list[str]]  # home, instructions dir
    connection: Callable[[Path], tuple[str, str | None] | None]  # home -> the installed entry's URL, token variable


def _codex_install(home: Path, url: str, token_env: str | None, instructions: Path | None) -> list[str]:
    return codex.install(home, url, token_env, instructions_dir=instructions)


def _codex_uninstall(home: Path, instructions: Path | None) -> list[str]:
    return codex.uninstall(home, instructions_dir=instructions)


def _opencode_install(home: Path, url: str, token_env: str | None, instructions: Path | None) -> list[str]:
    # The plugin is OpenCode's way to tee reads and edits: always installed with the connection.
    return opencode.install(home, url, token_env, instructions_dir=instructions, plugin=True)


def _opencode_uninstall(home: Path, instructions: Path | None) -> list[str]:
    return opencode.uninstall(home, instructions_dir=instructions)


def _gemini_install(home: Path, url: str, token_env: str | None, instructions: Path | None) -> list[str]:
    return gemini.install(home, url, token_env, instructions_dir=instructions)


def _gemini_uninstall(home: Path, instructions: Path | None) -> list[str]:
    return gemini.uninstall(home, instructions_dir=instructions)


AGENTS: dict[str, AgentSetup] = {
    "codex": AgentSetup(codex.codex_home, _codex_install, _codex_uninstall, codex.connection),
    "opencode": AgentSetup(opencode.default_config_dir, _opencode_install, _opencode_uninstall, opencode.connection),
    "gemini": AgentSetup(gemini.gemini_home, _gemini_install, _gemini_uninstall, gemini.connection),
}
