"""The tool definitions the model sees: Anthropic-native, byte-stable (they sit in the cached prompt
prefix), named like Claude Code's tools, and in step with the limits and the handlers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from live_memory import constants as C
from live_memory.providers.openai_compat import tool_to_openai
from live_memory.tools import TOOL_NAMES, TOOL_SCHEMAS, Toolbox

_DUMP = "import json; from live_memory.tools import TOOL_SCHEMAS; print(json.dumps(TOOL_SCHEMAS))"
# Both Anthropic and OpenAI accept tool and function names of this shape only.
_PROVIDER_SAFE_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def test_schemas_are_anthropic_native_in_the_fixed_order() -> None:
    names = [schema["name"] for schema in TOOL_SCHEMAS]
    assert names == ["Read", "Grep", "Glob", "find_paths", "get_changed_files", "git_search", "find_symbol"]
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


def test_every_required_parameter_is_declared() -> None:
    for schema in TOOL_SCHEMAS:
        declared = set(schema["input_schema"]["properties"])
        assert set(schema["input_schema"].get("required", [])) <= declared, schema["name"]


def test_only_the_path_and_pattern_tools_require_an_argument() -> None:
    required = {s["name"]: s["input_schema"].get("required", []) for s in TOOL_SCHEMAS}
    assert required == {
        "Read": ["file_path"],
        "Grep": ["pattern"],
        "Glob": ["pattern"],
        "find_paths": [],
        "get_changed_files": [],
        "git_search": [],
        "find_symbol": ["name"],
    }


def test_tool_and_parameter_names_are_accepted_by_every_provider() -> None:
    for schema in TOOL_SCHEMAS:
        assert _PROVIDER_SAFE_NAME.fullmatch(schema["name"]), schema["name"]
        for name in schema["input_schema"]["properties"]:
            assert _PROVIDER_SAFE_NAME.fullmatch(name), (schema["name"], name)


def test_each_schema_becomes_an_openai_function_with_the_same_parameters() -> None:
    for schema in TOOL_SCHEMAS:
        function = tool_to_openai(schema)["function"]
        assert function["name"] == schema["name"]
        assert function["parameters"] is schema["input_schema"]
        assert function["description"] == schema["description"]


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_every_grep_output_mode_the_schema_offers_is_accepted(toolbox: Toolbox, mode: str) -> None:
    grep = next(s for s in TOOL_SCHEMAS if s["name"] == "Grep")
    assert mode in grep["input_schema"]["properties"]["output_mode"]["enum"]
    outcome = await toolbox.run("Grep", {"pattern": "def", "output_mode": mode})
    assert not outcome.is_error, outcome.text


@pytest.mark.parametrize("kind", ["f", "d"])
async def test_every_find_paths_type_the_schema_offers_is_accepted(toolbox: Toolbox, kind: str) -> None:
    find = next(s for s in TOOL_SCHEMAS if s["name"] == "find_paths")
    assert find["input_schema"]["properties"]["type"]["enum"] == ["f", "d"]
    outcome = await toolbox.run("find_paths", {"type": kind, "max_depth": 1})
    assert not outcome.is_error, outcome.text
    assert "ignored unsupported parameter" not in outcome.text
