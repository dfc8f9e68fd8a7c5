"""find_paths: find-style listing by name, type and depth over the gitignore-aware listing."""

from __future__ import annotations

from typing import Any

from live_memory.tools import Toolbox


async def _lines(box: Toolbox, **arguments: Any) -> list[str]:
    outcome = await box.run("find_paths", arguments)
    assert not outcome.is_error, outcome.text
    return outcome.text.splitlines()


async def test_find_paths_lists_top_level_directories_with_file_counts(any_toolbox: Toolbox) -> None:
    lines = await _lines(any_toolbox, type="d", max_depth=1)
    assert lines == [
        ".aws/ (1 file)",
        "assets/ (1 file)",
        "config/ (2 files)",
        "data/ (1 file)",
        "deploy/ (2 files)",
        "docs/ (1 file)",
        "keys/ (1 file)",
        "notes/ (1 file)",
        "src/ (9 files)",
    ]  # never build/ or node_modules/ (ignored), never .git/


async def test_find_paths_depth_limits_files_and_directories(any_toolbox: Toolbox) -> None:
    lines = await _lines(any_toolbox, path="src", max_depth=1)
    assert lines == ["src/app/ (7 files)", "src/nested/ (2 files)"]
    deeper = await _lines(any_toolbox, path="src", max_depth=2, type="f", name="*.tmp")
    assert deeper == ["src/nested/keep.tmp"]


async def test_find_paths_name_is_a_case_insensitive_base_name_glob(any_toolbox: Toolbox) -> None:
    assert await _lines(any_toolbox, name="readme*") == ["README.md"]
    assert await _lines(any_toolbox, name="APP", type="d") == ["src/app/ (7 files)"]


async def test_find_paths_marks_secrets_and_lists_files_with_type_f(any_toolbox: Toolbox) -> None:
    lines = await _lines(any_toolbox, type="f", path="deploy")
    assert lines == ["deploy/run.sh", "deploy/service-account-prod.json [withheld: secret]"]


async def test_find_paths_limit_truncates_and_says_how_to_narrow(any_toolbox: Toolbox) -> None:
    lines = await _lines(any_toolbox, limit=3)
    assert len(lines) == 4
    assert lines[3].startswith("[Showing the first 3 of")


async def test_find_paths_argument_errors_are_precise(any_toolbox: Toolbox) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": "x"}, "'type' must be 'f'"),
        ({"name": "src/*.py"}, "use Glob"),
        ({"max_depth": 0}, "'max_depth' must be at least 1"),
        ({"path": "README.md"}, "is a file"),
        ({"path": "nowhere"}, "does not exist"),
    ]
    for arguments, fragment in cases:
        outcome = await any_toolbox.run("find_paths", arguments)
        assert outcome.is_error and fragment in outcome.text, outcome.text


async def test_find_paths_accepts_long_type_names_and_aliases(any_toolbox: Toolbox) -> None:
    assert await _lines(any_toolbox, type="directory", max_results=1, pattern="d*") == [
        "data/ (1 file)",
        "[Showing the first 1 of 3 paths, sorted by path. Narrow with name, type, max_depth or path, or raise limit.]",
    ]
