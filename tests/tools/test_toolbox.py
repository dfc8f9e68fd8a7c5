"""The tools package surface: one dispatcher that never raises, whatever the call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from live_memory.tools import Toolbox, ToolLimits, ToolOutcome


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
