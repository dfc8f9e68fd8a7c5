"""Grep (ripgrep, started in the search directory) and Glob (ripgrep or the walker, which must agree)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from live_memory.tools import Toolbox, ToolLimits
from live_memory.tools.grep_engines import GrepHits
from live_memory.tools.search import ShownCheck, format_grep, withheld_filter
from tests.fakes.repo_builder import IGNORED_MARKER, SECRET_MARKER, RepoBuilder


async def _text(box: Toolbox, name: str, **arguments: Any) -> str:
    outcome = await box.run(name, arguments)
    assert not outcome.is_error, outcome.text
    return outcome.text


# -- Grep -----------------------------------------------------------------------------------------
async def test_grep_lists_matching_files_sorted_honouring_gitignore_and_secrets(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "Grep", pattern="needle")
    # Not listed: secrets (.env, keys/, .aws/, config/.env.production, deploy/service-account-*.json),
    # ignored files (build/, debug.log, node_modules/, src/nested/drop.tmp) and the binary logo.png.
    assert text.splitlines() == [
        "Found 5 files",
        "data/big.txt",
        "keep.log",
        "notes/todo.txt",
        "src/app/feature.py",
        "src/nested/keep.tmp",
    ]
    assert IGNORED_MARKER not in text


async def test_grep_content_mode_prints_path_line_text(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "Grep", pattern="def (main|retry)", output_mode="content")
    assert text.splitlines() == [
        "src/app/helpers.py:1:def retry(fn, attempts=5):",
        "src/app/main.py:14:def main() -> None:",
    ]


async def test_grep_omits_overlong_matching_lines_and_strips_carriage_returns(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "Grep", pattern="RateLimiter", output_mode="content", path="src/app")
    lines = text.splitlines()
    assert "src/app/long_line.js:1:[Omitted long matching line]" in lines
    assert "src/app/crlf.txt:1:first RateLimiter line" in lines
    assert "src/app/unicode.txt:1:Grüße vom RateLimiter — ünïcödé" in lines


async def test_grep_count_mode_counts_matching_lines_per_file(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "Grep", pattern="needle", output_mode="count")
    assert "data/big.txt:10" in text.splitlines()
    assert text.splitlines()[-1] == "Found 14 matching lines in 5 files."


async def test_grep_is_case_insensitive_by_default_and_case_sensitive_on_request(
    toolbox: Toolbox,
) -> None:
    loose = await _text(toolbox, "Grep", pattern="ratelimiter", path="src/app/main.py", output_mode="count")
    strict = await _text(toolbox, "Grep", pattern="ratelimiter", path="src/app/main.py", **{"-i": False})
    assert loose.startswith("src/app/main.py:2\n")
    assert strict == "No files found"


async def test_grep_glob_filters_files_like_ripgrep(toolbox: Toolbox) -> None:
    only_py = await _text(toolbox, "Grep", pattern="RateLimiter", glob="*.py")
    assert only_py.splitlines()[1:] == ["src/app/main.py"]
    anchored = await _text(toolbox, "Grep", pattern="RateLimiter", glob="src/app/*.{txt,js}")
    assert anchored.splitlines()[1:] == ["src/app/crlf.txt", "src/app/long_line.js", "src/app/unicode.txt"]
    negated = await _text(toolbox, "Grep", pattern="needle", glob="!*.txt")
    assert "data/big.txt" not in negated and "keep.log" in negated
    pruned = await _text(toolbox, "Grep", pattern="needle", glob="!src")
    assert "src/" not in pruned


async def test_grep_head_limit_truncates_and_says_how_to_narrow(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "Grep", pattern="filler", output_mode="content", head_limit=3)
    lines = text.splitlines()
    assert lines[:3] == [
        "data/big.txt:1:line 1: filler text",
        "data/big.txt:2:line 2: filler text",
        "data/big.txt:3:line 3: filler text",
    ]
    assert lines[3].startswith("[Showing the first 3 of 5000 matching lines (head_limit)")


async def test_grep_accepts_legacy_aliases(toolbox: Toolbox) -> None:
    canonical = await _text(toolbox, "Grep", pattern="RateLimiter", glob="*.md", head_limit=1)
    legacy = await _text(toolbox, "Grep", regex="RateLimiter", file_pattern="*.md", max_results=1)
    assert canonical == legacy
    assert canonical.startswith("Found 1 file\ndocs/guide.md")


async def test_grep_invalid_regex_is_a_correctable_error(toolbox: Toolbox) -> None:
    outcome = await toolbox.run("Grep", {"pattern": "def (main"})
    assert outcome.is_error
    assert "Invalid regular expression" in outcome.text


async def test_grep_path_errors_are_precise(toolbox: Toolbox) -> None:
    cases = {"nope/": "does not exist", "assets/logo.png": "binary", ".env": "withheld", "pipe.fifo": "FIFO"}
    for path, fragment in cases.items():
        outcome = await toolbox.run("Grep", {"pattern": "x", "path": path})
        assert outcome.is_error and fragment in outcome.text, outcome.text


async def test_grep_searches_an_explicit_ignored_file(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "Grep", pattern="needle", path="debug.log", output_mode="count")
    assert text.startswith("debug.log:1")


async def test_grep_output_never_exceeds_the_byte_cap(repo_root: Path) -> None:
    box = await asyncio.to_thread(Toolbox, repo_root, ToolLimits(max_output_bytes=1500))
    text = await _text(box, "Grep", pattern="filler", output_mode="content", head_limit=5000)
    assert len(text.encode()) <= 1500
    assert "output truncated at 1500 bytes" in text


async def test_grep_without_ripgrep_is_a_clear_error_and_listings_still_work(repo_root: Path) -> None:
    box = await asyncio.to_thread(Toolbox, repo_root, ToolLimits(ripgrep_path="/nonexistent/rg"))
    assert box.ripgrep is None
    outcome = await box.run("Grep", {"pattern": "def main"})
    assert outcome.is_error and "ripgrep" in outcome.text and "Glob" in outcome.text
    assert (await _text(box, "Glob", pattern="src/app/m*.py")) == "src/app/main.py"


# A search started in a directory must find exactly what the whole-workspace search finds under it:
# the start's ancestors' ignore rules apply, root-anchored globs and secret patterns keep their meaning.
SUBDIR_QUERIES: list[dict[str, Any]] = [
    {"pattern": "needle"},
    {"pattern": "needle", "output_mode": "content", "head_limit": 5000},
    {"pattern": "needle", "output_mode": "count"},
    {"pattern": "RATELIMITER", "output_mode": "content"},
    {"pattern": "RateLimiter", "output_mode": "content", "-i": False},
    {"pattern": r"^\s+def \w+", "output_mode": "content"},
    {"pattern": "x{300}", "output_mode": "content"},
    {"pattern": "e", "glob": "*.md", "output_mode": "count"},
    {"pattern": "e", "glob": "src/**/*.py", "output_mode": "content"},
    {"pattern": "e", "glob": "src/app/*.{txt,js}"},
    {"pattern": "e", "glob": "/src/app/*.py"},
    {"pattern": "e", "glob": "**/app/*.py"},
    {"pattern": "e", "glob": "**/*.py"},
    {"pattern": "e", "glob": "docs/*.md"},
    {"pattern": "e", "glob": "!*.txt"},
    {"pattern": "e", "glob": "!*.py"},
    {"pattern": "e", "glob": "!src/app/*.py"},
    {"pattern": "e", "glob": "!**/nested/*.tmp"},
    {"pattern": "Grüße|ünï", "output_mode": "content"},
    {"pattern": "kept", "output_mode": "content"},
]
SUBDIRS = ["src", "src/app", "src/nested", "config", "deploy", "data"]


def _entries(text: str, mode: str) -> list[str]:
    lines = text.splitlines()
    if mode == "files_with_matches":
        return lines[1:] if lines[0].startswith("Found") else []
    if mode == "count":
        return lines[:-1] if lines[-1].startswith("Found") else []
    return [] if lines == ["No matches found"] else lines


@pytest.mark.parametrize("query", SUBDIR_QUERIES, ids=[str(q) for q in SUBDIR_QUERIES])
async def test_grep_in_a_directory_finds_what_the_root_search_finds_there(
    toolbox: Toolbox, query: dict[str, Any]
) -> None:
    mode = query.get("output_mode", "files_with_matches")
    everywhere = _entries((await toolbox.run("Grep", query)).text, mode)
    for subdir in SUBDIRS:
        inside = _entries((await toolbox.run("Grep", {**query, "path": subdir})).text, mode)
        assert inside == [e for e in everywhere if e.startswith(subdir + "/")], subdir


async def test_a_negated_glob_does_not_prune_the_directory_named_as_path(toolbox: Toolbox) -> None:
    # As when ripgrep is handed the path: what was named is searched; globs apply to what is walked.
    text = await _text(toolbox, "Grep", pattern="RateLimiter", path="src/app", glob="!app")
    assert "src/app/main.py" in text.splitlines()
    nested = await _text(toolbox, "Grep", pattern="needle", path="src", glob="!src/nested")
    assert nested.splitlines()[1:] == ["src/app/feature.py"]


async def test_grep_in_a_directory_keeps_anchored_secret_patterns_anchored(repo_root: Path) -> None:
    box = await Toolbox.create(repo_root, ToolLimits(secret_globs=("/src/app/main.py", "/docs/*.md")))
    text = await _text(box, "Grep", pattern="RateLimiter", path="src/app")
    assert "src/app/main.py" not in text and "src/app/helpers.py" not in text
    assert "src/app/crlf.txt" in text
    docs = await _text(box, "Grep", pattern="RateLimiter", path="docs")
    assert docs == "No files found"


# -- Glob -----------------------------------------------------------------------------------------
async def test_glob_lists_matching_files_sorted_without_ignored_files_or_git(any_toolbox: Toolbox) -> None:
    text = await _text(any_toolbox, "Glob", pattern="**/*.py")
    assert text.splitlines() == ["src/app/__init__.py", "src/app/feature.py", "src/app/helpers.py", "src/app/main.py"]


async def test_glob_pattern_without_slash_matches_names_at_any_depth(any_toolbox: Toolbox) -> None:
    text = await _text(any_toolbox, "Glob", pattern="*.md")
    assert text.splitlines() == ["README.md", "docs/guide.md"]


async def test_glob_pattern_with_slash_is_anchored(any_toolbox: Toolbox) -> None:
    assert (await _text(any_toolbox, "Glob", pattern="src/*.py")) == "No files found"
    assert (await _text(any_toolbox, "Glob", pattern="src/app/m*.py")) == "src/app/main.py"
    assert (await _text(any_toolbox, "Glob", pattern="*.{md,sh}", path="deploy")) == "deploy/run.sh"


async def test_glob_marks_secret_files_as_withheld(any_toolbox: Toolbox) -> None:
    text = await _text(any_toolbox, "Glob", pattern="**/*", path="config")
    assert text.splitlines() == ["config/.env.production [withheld: secret]", "config/app-settings.txt"]


async def test_glob_never_lists_git_internals_or_follows_links(any_toolbox: Toolbox) -> None:
    text = await _text(any_toolbox, "Glob", pattern="**/*", limit=5000)
    assert ".git/" not in text
    assert "escape" not in text and "etc_link" not in text and "passwd" not in text


async def test_glob_limit_truncates_and_says_how_to_narrow(any_toolbox: Toolbox) -> None:
    text = await _text(any_toolbox, "Glob", pattern="**/*", limit=2)
    lines = text.splitlines()
    assert len(lines) == 3
    assert lines[2].startswith("[Showing the first 2 of")


async def test_glob_accepts_an_absolute_pattern_inside_the_workspace(any_toolbox: Toolbox, repo_root: Path) -> None:
    text = await _text(any_toolbox, "Glob", pattern=f"{repo_root}/src/**/*.py")
    assert text.splitlines()[0] == "src/app/__init__.py"


async def test_glob_in_a_missing_directory_finds_nothing(any_toolbox: Toolbox) -> None:
    assert (await _text(any_toolbox, "Glob", pattern="nowhere/**/*.py")) == "No files found"


async def test_glob_on_a_file_path_is_an_error(any_toolbox: Toolbox) -> None:
    outcome = await any_toolbox.run("Glob", {"pattern": "*", "path": "README.md"})
    assert outcome.is_error and "not a directory" in outcome.text


async def test_glob_listing_is_identical_with_ripgrep_and_the_walker(toolbox: Toolbox, py_toolbox: Toolbox) -> None:
    cases: list[tuple[str, str | None]] = [("**/*", None), ("*", None), ("**/.*", None), ("src/**", None)]
    cases += [("**/*.tmp", None), ("**/*", "src"), ("*.tmp", "src/nested"), ("**/*", "config")]
    for pattern, path in cases:
        arguments = {"pattern": pattern, "limit": 5000, "path": path}
        assert await toolbox.run("Glob", arguments) == await py_toolbox.run("Glob", arguments)


@pytest.mark.parametrize("tool", ["Glob", "Grep", "find_paths"])
async def test_an_uncompilable_glob_is_a_correctable_error(toolbox: Toolbox, tool: str) -> None:
    arguments = {
        "Glob": {"pattern": "src/[z-a].py"},
        "Grep": {"pattern": "x", "glob": "[z-a].py"},
        "find_paths": {"name": "[z-a]*"},
    }[tool]
    outcome = await toolbox.run(tool, arguments)
    assert outcome.is_error
    assert "glob" in outcome.text.lower()


async def test_glob_classes_with_regex_set_operators_are_literal(any_toolbox: Toolbox) -> None:
    assert (await _text(any_toolbox, "Glob", pattern="[&&~~]*.md")) == "No files found"
    assert (await _text(any_toolbox, "Glob", pattern="[R&~|]EADME.md")) == "README.md"


def test_grep_output_drops_secret_and_git_paths_whatever_an_engine_returned(toolbox: Toolbox) -> None:
    hits = GrepHits(
        lines=[(".env", 1, SECRET_MARKER), ("a.py", 2, "ok"), (".git/config", 3, "x"), ("b/id_rsa", 1, "k")],
        files=[".env", "a.py", "sub/.git/HEAD"],
        counts=[(".env", 1), ("a.py", 1)],
    ).sort()
    withheld = withheld_filter(toolbox.context)
    assert format_grep(hits, "content", 10, withheld) == "a.py:2:ok"
    assert format_grep(hits, "files_with_matches", 10, withheld) == "Found 1 file\na.py"
    assert format_grep(hits, "count", 10, withheld) == "a.py:1\nFound 1 matching line in 1 file."


def test_entries_failing_the_last_check_are_dropped_and_the_next_ones_shown(toolbox: Toolbox) -> None:
    hits = GrepHits(
        lines=[("a.py", 1, "x"), ("b.py", 1, "y"), ("c.py", 1, "z")],
        files=["a.py", "b.py", "c.py"],
        counts=[("a.py", 2), ("b.py", 3), ("c.py", 4)],
    ).sort()
    withheld = withheld_filter(toolbox.context)
    check = ShownCheck(lambda path: path != "b.py", lambda line: line[0] != "b.py")
    assert format_grep(hits, "content", 2, withheld, check) == "a.py:1:x\nc.py:1:z"
    assert format_grep(hits, "files_with_matches", 2, withheld, check) == "Found 2 files\na.py\nc.py"
    assert format_grep(hits, "count", 2, withheld, check) == "a.py:2\nc.py:4\nFound 6 matching lines in 2 files."


# -- a workspace inside a directory whose ignore file would hide it ------------------------------
# "nested/" names the workspace (git does not apply it inside the workspace's own repository);
# "*" is a home directory kept in git that ignores everything it does not add.
PARENT_IGNORES = ["nested/", "*"]


def nested_workspace(base: Path, parent_ignore: str) -> Path:
    """parent/.gitignore holds `parent_ignore`; parent/nested is a git repository of its own whose .gitignore
    files (at its root and in src/) hide build/ and src/*.tmp."""
    (base / "parent").mkdir()
    (base / "parent" / ".gitignore").write_text(parent_ignore + "\n")
    repo = RepoBuilder(base / "parent" / "nested")
    repo.write(".gitignore", "build/\n").write("src/app.py", "def hello_world():\n    return 'needle'\n")
    repo.write("build/gen.py", "def hello_world():\n    return 'needle'\n")
    repo.write("src/.gitignore", "*.tmp\n").write("src/notes.tmp", "needle\n")
    return repo.root


@pytest.fixture(params=PARENT_IGNORES)
def nested(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return nested_workspace(tmp_path, request.param)


def needs_ripgrep(box: Toolbox) -> Toolbox:
    if box.ripgrep is None:
        pytest.skip("ripgrep is not installed (the `ripgrep` wheel provides it): only it reads ignore files above")
    return box


async def test_grep_at_the_root_finds_a_nested_repositorys_files_its_parent_ignores(nested: Path) -> None:
    box = needs_ripgrep(await Toolbox.create(nested))
    assert (await _text(box, "Grep", pattern="needle")).splitlines() == ["Found 1 file", "src/app.py"]
    content = await _text(box, "Grep", pattern="hello_world", output_mode="content")
    assert content.splitlines() == ["src/app.py:1:def hello_world():"]  # build/ and src/*.tmp stay ignored


@pytest.mark.parametrize("ripgrep", [True, False], ids=["ripgrep", "walker"])
async def test_glob_at_the_root_lists_the_files_of_a_nested_repository_its_parent_ignores(
    nested: Path, ripgrep: bool
) -> None:
    box = await Toolbox.create(nested, ToolLimits(use_ripgrep=ripgrep))
    if ripgrep:
        needs_ripgrep(box)
    listed = (await _text(box, "Glob", pattern="**/*")).splitlines()
    assert listed == [".gitignore", "src/.gitignore", "src/app.py"]  # not build/gen.py nor src/notes.tmp
