"""The tools package surface: byte-stable Anthropic-native schemas and a dispatcher that never raises."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from live_memory import constants as C
from live_memory.tools import TOOL_NAMES, TOOL_SCHEMAS, Toolbox, ToolLimits, ToolOutcome

_DUMP = "import json; from live_memory.tools import TOOL_SCHEMAS; print(json.dumps(TOOL_SCHEMAS))"


def test_schemas_are_anthropic_native_in_the_fixed_order() -> None:
    names = [schema["name"] for schema in TOOL_SCHEMAS]
    assert names == ["Read", "Grep", "Glob", "find_paths", "get_changed_files", "git_search"]
    assert frozenset(names) == TOOL_NAMES
    for schema in TOOL_SCHEMAS:
        assert set(schema) == {"name", "description", "input_schema"}
        assert schema["input_schema"]["type"] == "object"
        for prop in schema["input_schema"]["properties"].values():
            assert prop["type"] in ("string", "integer", "boolean") and prop["description"]
        assert len(schema["description"]) < 500, "descriptions sit in every prompt: keep them short"


def test_schemas_match_claude_code_parameter_names() -> None:
    props = {schema["name"]: set(schema["input_schema"]["properties"]) for schema in TOOL_SCHEMAS}
    assert props["Read"] == {"file_path", "offset", "limit"}
    assert props["Grep"] == {"pattern", "path", "glob", "output_mode", "-i", "head_limit"}
    assert {"pattern", "path"} <= props["Glob"]


def test_schemas_are_byte_stable_across_processes_and_workspaces(tmp_path: Path) -> None:
    here = json.dumps(TOOL_SCHEMAS)
    for seed, cwd in (("1", tmp_path), ("2", Path("/"))):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _DUMP],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert out.stdout.strip() == here


def test_numbers_in_descriptions_match_the_constants() -> None:
    text = json.dumps(TOOL_SCHEMAS)
    for value in (
        C.READ_DEFAULT_LINES,
        C.READ_MAX_LINE_CHARS,
        C.GREP_DEFAULT_HEAD_LIMIT,
        C.GLOB_DEFAULT_LIMIT,
    ):
        assert str(value) in text
    assert f"default {C.GIT_SEARCH_DEFAULT_COUNT}, max {C.GIT_SEARCH_MAX_COUNT}" in text
    assert f"default {C.FIND_PATHS_DEFAULT_LIMIT}" in text


async def test_unknown_tool_is_a_correctable_error_naming_the_tools(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("Bash", {"command": "cat /etc/passwd"})
    assert outcome.is_error
    assert "Unknown tool 'Bash'" in outcome.text and "git_search" in outcome.text


async def test_tool_names_are_matched_case_insensitively(toolbox: Toolbox) -> None:
    assert await toolbox.run("read", {"file_path": "README.md"}) == await toolbox.run(
        "Read", {"file_path": "README.md"}
    )


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("Read", {"file_path": 5}, "'file_path' must be a string"),
        ("Read", "README.md", "must be a JSON object"),
        ("Grep", {"pattern": ["a"]}, "'pattern' must be a string"),
        ("Grep", {"pattern": "a", "output_mode": "lines"}, "'output_mode' must be one of"),
        ("Grep", {"pattern": "a", "-i": "maybe"}, "'-i' must be true or false"),
        ("Grep", {}, "'pattern' is required"),
        ("Glob", {}, "'pattern' is required"),
        ("git_search", {"max_count": True}, "'max_count' must be an integer"),
        ("get_changed_files", {"path": 3}, "'path' must be a string"),
    ],
)
async def test_bad_arguments_come_back_as_errors_not_exceptions(
    toolbox: Toolbox, name: str, arguments: Any, fragment: str
) -> None:
    outcome = await toolbox.run(name, arguments)
    assert outcome.is_error
    assert fragment in outcome.text


async def test_none_arguments_mean_no_arguments(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("get_changed_files", None)  # type: ignore[arg-type]
    assert not outcome.is_error


async def test_concurrent_calls_do_not_interfere(toolbox: Toolbox) -> None:
    calls = [("Read", {"file_path": "README.md"}), ("Grep", {"pattern": "needle"}), ("git_search", {})] * 8
    results = await asyncio.gather(*(toolbox.run(n, a) for n, a in calls))
    assert all(not r.is_error for r in results)
    assert len({r.text for r in results}) == 3


async def test_every_tool_output_respects_the_byte_cap(repo_root: Path) -> None:
    box = await asyncio.to_thread(Toolbox, repo_root, ToolLimits(max_output_bytes=600))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Read", {"file_path": "data/big.txt"}),
        ("Grep", {"pattern": "e", "output_mode": "content"}),
        ("Glob", {"pattern": "**/*"}),
        ("find_paths", {}),
        ("get_changed_files", {}),
        ("git_search", {"include_patch": True}),
    ]
    for name, arguments in calls:
        outcome = await box.run(name, arguments)
        assert isinstance(outcome, ToolOutcome)
        assert len(outcome.text.encode()) <= 600, name
