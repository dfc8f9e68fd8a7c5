"""Workspace file listing for Glob and find_paths: ripgrep's `--files` or the walker, listing exactly
the same files (ignore rules honoured, hidden files included, .git and symlinked directories not)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from live_memory.core.errors import JailRefusal
from live_memory.fs.jail import Jail
from live_memory.tools import Toolbox
from live_memory.tools.context import ToolContext, ToolLimits, find_ripgrep
from live_memory.tools.listing import GIT_EXCLUDE, FileListing, list_files, ripgrep_base_args, walk_listing
from tests.fakes.repo_builder import RepoBuilder

FILES = {
    ".gitignore": "build/\n*.log\n",
    "README.md": "readme\n",
    "src/app.py": "app\n",
    "src/.hidden.py": "hidden\n",
    "src/deep/mod.py": "mod\n",
    "build/out.js": "ignored\n",
    "debug.log": "ignored\n",
    ".env": "SECRET=1\n",
    ".git/config": "[core]\n",
    ".git/HEAD": "ref: refs/heads/main\n",
}
LISTED = [".env", ".gitignore", "README.md", "src/.hidden.py", "src/app.py", "src/deep/mod.py"]


def build(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    outside = root.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "leak.py").write_text("leak\n")
    (root / "src" / "link").symlink_to(outside, target_is_directory=True)
    return root


async def context(root: Path, *, ripgrep: bool, timeout_s: float = 10.0) -> ToolContext:
    limits = ToolLimits(use_ripgrep=ripgrep, subprocess_timeout_s=timeout_s)

    def make() -> ToolContext:
        return ToolContext(jail=Jail(root.resolve()), limits=limits, ripgrep=find_ripgrep(limits))

    ctx = await asyncio.to_thread(make)
    assert (ctx.ripgrep is not None) is ripgrep
    return ctx


@pytest.fixture(params=["ripgrep", "walker"])
def engine(request: pytest.FixtureRequest) -> bool:
    return bool(request.param == "ripgrep")


@pytest.fixture
async def workspace(tmp_path: Path) -> Path:
    return await asyncio.to_thread(build, tmp_path / "ws")


async def test_every_non_ignored_file_is_listed_sorted_without_git_internals_or_symlinks(
    workspace: Path, engine: bool
) -> None:
    listing = await list_files(await context(workspace, ripgrep=engine), "")
    assert listing == FileListing(LISTED, complete=True)


async def test_a_listing_below_the_root_keeps_workspace_relative_paths(workspace: Path, engine: bool) -> None:
    listing = await list_files(await context(workspace, ripgrep=engine), "src")
    assert listing.paths == ["src/.hidden.py", "src/app.py", "src/deep/mod.py"]


async def test_an_empty_directory_lists_nothing_and_is_complete(workspace: Path, engine: bool) -> None:
    await asyncio.to_thread((workspace / "empty").mkdir)
    assert await list_files(await context(workspace, ripgrep=engine), "empty") == FileListing([], complete=True)


async def test_a_symlinked_start_leading_outside_is_refused_by_ripgrep_and_not_walked(workspace: Path) -> None:
    with pytest.raises(JailRefusal):
        await list_files(await context(workspace, ripgrep=True), "src/link")
    # the walker opens each directory with O_NOFOLLOW: a link is not entered, so nothing is listed
    assert await list_files(await context(workspace, ripgrep=False), "src/link") == FileListing([], complete=True)


async def test_the_walker_out_of_time_returns_what_it_has_marked_incomplete(workspace: Path) -> None:
    listing = await walk_listing(await context(workspace, ripgrep=False, timeout_s=0.0), "")
    assert not listing.complete
    assert set(listing.paths) <= set(LISTED)


def test_every_ripgrep_call_ignores_user_config_and_includes_hidden_files() -> None:
    assert ripgrep_base_args("/bin/rg") == ["/bin/rg", "--no-config", "--hidden", "--no-messages", "--no-require-git"]
    assert ripgrep_base_args("/bin/rg", at_root=True)[-1] == "--no-ignore-parent"
    # In a repository ripgrep stops at its root by itself, as git does.
    assert "--no-require-git" not in ripgrep_base_args("/bin/rg", in_git=True)
    assert GIT_EXCLUDE == ("--glob", "!.git")


async def test_a_repository_inside_a_directory_that_ignores_everything_is_searched_below_its_root(
    tmp_path: Path,
) -> None:
    """A checkout under a directory that ignores everything in it (a cache directory's own `.gitignore` of "*",
    as tools write them): a search that starts in one of its directories finds its files, as one that starts at
    its root does (the ignore files above a repository are not its own, for git nor for the search)."""

    def nested() -> Path:
        cache = tmp_path / ".cache"
        cache.mkdir()
        (cache / ".gitignore").write_text("*\n")
        inner = cache / "repo"
        (inner / ".git").mkdir(parents=True)
        (inner / "src").mkdir()
        (inner / "src" / "app.py").write_text("x = 1\n")
        return inner

    root = await asyncio.to_thread(nested)
    toolbox = await Toolbox.create(root)
    for path in ("", "src"):
        outcome = await toolbox.run("Grep", {"pattern": "x", "path": path})
        assert outcome.text.splitlines() == ["Found 1 file", "src/app.py"], path


async def test_ignore_rules_apply_without_a_git_repository(tmp_path: Path, engine: bool) -> None:
    def plain_tree() -> Path:
        root = tmp_path / "plain"
        (root / "node_modules").mkdir(parents=True)
        (root / "node_modules" / "dep.js").write_text("x")
        (root / ".ignore").write_text("node_modules/\n")
        (root / "index.js").write_text("x")
        os.chmod(root, 0o755)
        return root

    root = await asyncio.to_thread(plain_tree)
    listing = await list_files(await context(root, ripgrep=engine), "")
    assert listing.paths == [".ignore", "index.js"]


@pytest.mark.parametrize("parent_ignore", ["nested/", "*"])
async def test_a_nested_repository_is_listed_at_its_root_whatever_its_parent_ignores(
    tmp_path: Path, engine: bool, parent_ignore: str
) -> None:
    def nested_repository() -> Path:
        (tmp_path / "parent").mkdir()
        (tmp_path / "parent" / ".gitignore").write_text(parent_ignore + "\n")
        repo = RepoBuilder(tmp_path / "parent" / "nested").write(".gitignore", "build/\n")
        return repo.write("src/app.py", "app\n").write("build/out.js", "ignored\n").root

    root = await asyncio.to_thread(nested_repository)
    if engine and find_ripgrep(ToolLimits()) is None:
        pytest.skip("ripgrep is not installed (the `ripgrep` wheel provides it): only it reads ignore files above")
    listing = await list_files(await context(root, ripgrep=engine), "")
    assert listing == FileListing([".gitignore", "src/app.py"], complete=True)  # its own .gitignore still applies
