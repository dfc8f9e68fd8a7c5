"""What `live-memory <command> --help` says: every command has a one-line help, a description and the
environment it reads, and the variables and defaults it names are the real ones."""

from __future__ import annotations

import argparse
import re

import pytest

from live_memory import constants as C
from live_memory.cli.help import HELP
from live_memory.cli.main import build_parser
from live_memory.settings.options import OPTIONS

_VARIABLE = re.compile(r"\bLIVE_MEMORY_[A-Z0-9_]+\b")
# Read before the options table (it says where config.json is), or by clients only (where the server is).
_NOT_OPTIONS = {"LIVE_MEMORY_DATA_DIR", "LIVE_MEMORY_URL"}


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    assert parser._subparsers is not None
    action = parser._subparsers._group_actions[0]
    assert isinstance(action, argparse._SubParsersAction)
    return action.choices


def subcommands() -> set[str]:
    return set(commands_of(build_parser()))


def test_every_subcommand_help_says_what_it_does_and_what_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    commands = commands_of(parser)
    assert set(commands) >= {"serve", "ask", "stats", "ledger", "doctor", "install-service", "config", "demo"}
    for name in commands:
        with pytest.raises(SystemExit):
            parser.parse_args([name, "--help"])
        text = capsys.readouterr().out
        description = text.split("\n\n")[1]
        assert len(description) > 40, f"{name}: {description!r}"
        assert "environment:" in text, name
        if name != "demo":
            assert "LIVE_MEMORY_" in text.split("environment:")[1], name


def test_every_command_of_the_parser_has_help_and_every_help_has_a_command() -> None:
    assert set(HELP) == subcommands()


def test_every_live_memory_variable_named_in_a_help_text_exists() -> None:
    known = {option.env for option in OPTIONS} | _NOT_OPTIONS
    for name, texts in HELP.items():
        named = set(_VARIABLE.findall(" ".join(texts))) - {"LIVE_MEMORY_"}
        assert named <= known, f"{name}: {sorted(named - known)}"


def test_the_default_address_shown_is_the_servers_default() -> None:
    assert f"(default {C.DEFAULT_HOST}:{C.DEFAULT_PORT})" in HELP["ask"][2]


@pytest.mark.parametrize("name", sorted(HELP))
def test_one_line_helps_are_short_lowercase_phrases(name: str) -> None:
    short = HELP[name][0]
    assert short[0].islower() and not short.endswith("."), short
    assert len(short) <= 80 and "\n" not in short


@pytest.mark.parametrize("name", sorted(HELP))
def test_descriptions_fit_a_terminal_and_end_with_a_full_stop(name: str) -> None:
    description = HELP[name][1]
    assert description.endswith("."), name
    assert all(len(line) <= 110 for line in description.split("\n")), name


def test_the_client_commands_name_the_variables_that_find_the_server() -> None:
    for name in ("ask", "stats", "ledger"):
        environment = HELP[name][2]
        for variable in ("LIVE_MEMORY_HOST", "LIVE_MEMORY_PORT", "LIVE_MEMORY_AUTH_TOKEN"):
            assert variable in environment, (name, variable)


def test_every_option_of_every_command_has_help_and_uninstall_says_remove(capsys: pytest.CaptureFixture[str]) -> None:
    commands = commands_of(build_parser())
    for name, parser in commands.items():
        for action in parser._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["uninstall", "--help"])
    text = capsys.readouterr().out
    assert "take this agent out of the note" in text and "add (remove)" not in text
