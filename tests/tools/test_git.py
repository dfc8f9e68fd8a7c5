"""get_changed_files and git_search on a fixture repository with history."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from live_memory.tools import Toolbox
from tests.fakes.repo_builder import HISTORY_SECRET_MARKER, RENAMED_SECRET_MARKER, RepoBuilder


async def _text(box: Toolbox, name: str, **arguments: Any) -> str:
    outcome = await box.run(name, arguments)
    assert not outcome.is_error, outcome.text
    return outcome.text


async def test_changed_files_shows_branch_staged_unstaged_and_untracked(toolbox: Toolbox) -> None:
    lines = (await _text(toolbox, "get_changed_files")).splitlines()
    assert lines[0] == "Branch: main"
    assert " M README.md" in lines
    assert "A  src/app/feature.py" in lines
    assert "?? notes/todo.txt" in lines
    assert "?? config/.env.production [withheld: secret]" in lines
    assert not any("build/" in line or "debug.log" in line for line in lines)  # ignored files stay out


async def test_changed_files_can_be_scoped_to_a_path(toolbox: Toolbox) -> None:
    lines = (await _text(toolbox, "get_changed_files", path="src/app")).splitlines()
    assert lines[2:] == ["A  src/app/feature.py"]
    clean = await _text(toolbox, "get_changed_files", path="docs")
    assert "Working tree clean" in clean


async def test_changed_files_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    outcome = await (await asyncio.to_thread(Toolbox, tmp_path)).run("get_changed_files", {})
    assert outcome.is_error
    assert "not a git repository" in outcome.text


async def test_changed_files_does_not_write_to_the_repository(toolbox: Toolbox, repo_root: Path) -> None:
    index = repo_root / ".git" / "index"
    before = index.stat().st_mtime_ns
    await toolbox.run("get_changed_files", {})
    assert index.stat().st_mtime_ns == before
    assert not (repo_root / ".git" / "index.lock").exists()


async def test_git_search_greps_commit_messages_case_insensitively(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "git_search", query="RENAME UTIL")
    assert text.splitlines() == [
        f"commit {text.split()[1]}  2024-01-01  Ada Example",
        "    Rename util module to helpers",
        "  R src/app/util.py -> src/app/helpers.py",
    ]


async def test_git_search_shows_message_bodies(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "git_search", query="guide docs")
    assert "    Explains the rate limiter design." in text.splitlines()


async def test_git_search_by_path_follows_renames(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "git_search", path="src/app/helpers.py")
    subjects = [line.strip() for line in text.splitlines() if line.startswith("    ")]
    assert subjects == [
        "Fix retry bug: allow five attempts",
        "Rename util module to helpers",
        "Initial commit: app skeleton with RateLimiter",
    ]


async def test_git_search_finds_history_of_a_deleted_path(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "git_search", path="src/app/util.py")
    assert "Initial commit" in text and "Rename util module" in text


async def test_git_search_include_patch_shows_diffs(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "git_search", query="fix retry", include_patch=True)
    assert "-def retry(fn, attempts=3):" in text
    assert "+def retry(fn, attempts=5):" in text


async def test_git_search_never_shows_secret_diffs_even_through_renames(any_toolbox: Toolbox) -> None:
    queries: list[dict[str, Any]] = [
        {"include_patch": True, "max_count": 50},
        {"path": "config/app-settings.txt", "include_patch": True},
        {"path": "deploy", "include_patch": True},
        {"query": "env|deploy|settings", "include_patch": True},
    ]
    for query in queries:
        text = await _text(any_toolbox, "git_search", **query)
        assert HISTORY_SECRET_MARKER not in text
        assert RENAMED_SECRET_MARKER not in text
    followed = await _text(any_toolbox, "git_search", path="config/app-settings.txt", include_patch=True)
    assert "[diff withheld: secret file]" in followed


async def test_git_search_max_count_bounds_the_output_and_says_so(toolbox: Toolbox) -> None:
    text = await _text(toolbox, "git_search", max_count=2)
    assert text.count("commit ") == 2
    assert text.splitlines()[-1].startswith("[Showing the 2 most recent matching commits")


async def test_git_search_reports_no_match_and_bad_regex(toolbox: Toolbox) -> None:
    assert (await _text(toolbox, "git_search", query="zebra crossing")) == "No commits found matching 'zebra crossing'."
    bad = await toolbox.run("git_search", {"query": "fix ("})
    assert bad.is_error and "git failed" in bad.text


async def test_git_search_in_a_repository_without_commits_says_so(tmp_path: Path) -> None:
    RepoBuilder(tmp_path / "empty")
    outcome = await (await asyncio.to_thread(Toolbox, tmp_path / "empty")).run("git_search", {})
    assert outcome.is_error and "no commits yet" in outcome.text


async def test_git_tools_work_when_the_workspace_is_a_repository_subdirectory(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "mono")
    repo.write("svc/api/app.py", "x = 1\n").write("other/b.py", "y = 1\n")
    repo.commit("Add api and other")
    repo.write("svc/api/app.py", "x = 2\n").write("other/b.py", "y = 2\n")
    box = await asyncio.to_thread(Toolbox, tmp_path / "mono" / "svc")
    status = await _text(box, "get_changed_files")
    assert status.splitlines()[2:] == [" M api/app.py"]
    log = await _text(box, "git_search")
    assert "  A api/app.py" in log and "other/b.py" not in log
