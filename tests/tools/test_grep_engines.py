"""Grep's engine: the ripgrep command line (no path ever handed over, secrets and .git excluded), the
user glob re-anchored when the search starts below the root, and ripgrep's output parsed into
workspace-relative hits."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from live_memory.constants import GREP_MAX_COLUMNS
from live_memory.core.errors import GrepError
from live_memory.fs.jail import Jail
from live_memory.tools.context import ToolContext, ToolLimits, find_ripgrep
from live_memory.tools.grep_engines import (
    GrepHits,
    GrepQuery,
    glob_filter,
    relative_glob,
    ripgrep_argv,
    ripgrep_grep,
)

FILES = {
    "src/app.py": "def main():\n    return 1\n",
    "src/util.py": "def helper():\n    pass\nDEF = 2\n",
    "src/tests/test_app.py": "def test_main():\n    pass\n",
    "docs/guide.md": "def is not code here\n",
    "crlf.txt": "def windows\r\nother\r\n",
    ".env": "def secret\n",
}


def query(
    pattern: str = "def",
    start: str = "",
    *,
    glob: str | None = None,
    mode: str = "content",
    ignore_case: bool = True,
    is_file: bool = False,
) -> GrepQuery:
    return GrepQuery(pattern, start, is_file, glob, mode, ignore_case)


async def context(root: Path) -> ToolContext:
    def make() -> ToolContext:
        limits = ToolLimits()
        return ToolContext(jail=Jail(root.resolve()), limits=limits, ripgrep=find_ripgrep(limits))

    ctx = await asyncio.to_thread(make)
    assert ctx.ripgrep is not None, "the ripgrep wheel must be installed (it is a declared dependency)"
    return ctx


@pytest.fixture
async def ctx(tmp_path: Path) -> ToolContext:
    def build() -> Path:
        for rel, text in FILES.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
        return tmp_path

    return await context(await asyncio.to_thread(build))


async def grep(ctx: ToolContext, q: GrepQuery) -> GrepHits:
    target = ctx.root / q.start_rel
    opener = ctx.jail.open_text_fd if q.start_is_file else ctx.jail.open_dir
    fd = await asyncio.to_thread(opener, target)
    try:
        return (await ripgrep_grep(ctx, q, start_fd=fd)).sort()
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("glob", "start", "seen_by_ripgrep"),
    [
        ("*.py", "src", "*.py"),  # a base-name glob means the same from anywhere
        ("**/*.py", "src", "**/*.py"),
        ("src/**/*.py", "src", "/**/*.py"),  # re-anchored below the start
        ("!src/tests/", "src", "!/tests/"),
        ("src/*.py", "", "src/*.py"),  # from the root nothing changes
        ("docs/*.md", "src", None),  # another directory: applied in Python
        ("s*/tests/*.py", "src", None),  # a wildcard among the start's components
    ],
)
def test_a_slash_glob_is_re_anchored_below_the_start_when_it_can_be(
    glob: str, start: str, seen_by_ripgrep: str | None
) -> None:
    assert relative_glob(glob, start) == seen_by_ripgrep


def test_a_glob_ripgrep_cannot_apply_is_filtered_in_python_on_workspace_paths() -> None:
    keep = glob_filter(query(start="src", glob="s*/tests/*.py"))
    assert keep is not None
    assert keep("src/tests/test_app.py") and not keep("src/app.py")
    assert glob_filter(query(start="src", glob="*.py")) is None  # ripgrep handles it


def test_a_negated_python_glob_drops_matching_files_and_whole_directories_below_the_start() -> None:
    keep = glob_filter(query(start="src", glob="!s*/tests"))
    assert keep is not None
    assert not keep("src/tests/test_app.py")
    assert keep("src/app.py")  # the start itself was named, not matched


def test_an_uncompilable_glob_is_a_grep_error_for_the_model() -> None:
    with pytest.raises(GrepError, match=r"^Invalid glob: invalid glob pattern"):
        glob_filter(query(start="src", glob="s*/[z-a]"))


async def test_the_command_line_names_no_path_and_excludes_git_after_the_users_glob(ctx: ToolContext) -> None:
    argv = ripgrep_argv(ctx, query(glob="*.py", ignore_case=False, mode="count"))
    assert argv[0] == ctx.ripgrep
    assert f"--max-columns={GREP_MAX_COLUMNS}" in argv and "--case-sensitive" in argv and "--count" in argv
    assert argv.index("--glob") < argv.index("!.git")  # the later glob wins in ripgrep
    assert "!.env" in argv  # a default secret glob, as an --iglob negation
    assert argv[-2:] == ["--regexp", "def"]  # the pattern comes last, never mistaken for a path
    assert not any(arg.startswith(str(ctx.root)) for arg in argv)


async def test_an_explicit_file_is_read_from_standard_input(ctx: ToolContext) -> None:
    argv = ripgrep_argv(ctx, query(start="src/app.py", is_file=True))
    assert argv[-3:] == ["--regexp", "def", "-"]
    assert "--glob" not in argv


async def test_content_hits_are_workspace_relative_sorted_and_without_carriage_returns(ctx: ToolContext) -> None:
    hits = await grep(ctx, query())
    assert hits.lines == [
        ("crlf.txt", 1, "def windows"),
        ("docs/guide.md", 1, "def is not code here"),
        ("src/app.py", 1, "def main():"),
        ("src/tests/test_app.py", 1, "def test_main():"),
        ("src/util.py", 1, "def helper():"),
        ("src/util.py", 3, "DEF = 2"),
    ]
    assert hits.complete and hits.walked


async def test_a_search_below_the_root_reports_paths_from_the_root(ctx: ToolContext) -> None:
    hits = await grep(ctx, query(start="src", mode="files_with_matches", ignore_case=False))
    assert hits.files == ["src/app.py", "src/tests/test_app.py", "src/util.py"]


async def test_count_mode_counts_matching_lines_per_file(ctx: ToolContext) -> None:
    hits = await grep(ctx, query(start="src", mode="count", glob="src/*.py"))
    assert hits.counts == [("src/app.py", 1), ("src/util.py", 2)]


async def test_an_explicit_file_is_searched_and_named_by_its_own_path(ctx: ToolContext) -> None:
    hits = await grep(ctx, query(start="src/util.py", is_file=True, ignore_case=False))
    assert hits.lines == [("src/util.py", 1, "def helper():")]
    assert not hits.walked  # read from the jail's descriptor: no re-check needed


async def test_a_bad_regular_expression_is_a_grep_error_naming_the_syntax(ctx: ToolContext) -> None:
    with pytest.raises(GrepError, match=r"^Invalid regular expression \(ripgrep/Rust syntax\)"):
        await grep(ctx, query(pattern="def("))


def test_hits_sort_by_path_keeping_each_files_lines_in_order() -> None:
    hits = GrepHits(
        lines=[("b.py", 1, "x"), ("a.py", 3, "y"), ("b.py", 2, "z"), ("a.py", 9, "w")],
        files=["b.py", "a.py"],
        counts=[("b.py", 1), ("a.py", 2)],
    ).sort()
    assert hits.lines == [("a.py", 3, "y"), ("a.py", 9, "w"), ("b.py", 1, "x"), ("b.py", 2, "z")]
    assert hits.files == ["a.py", "b.py"]
    assert hits.counts == [("a.py", 2), ("b.py", 1)]


async def test_only_a_search_from_the_root_ignores_the_ignore_files_above_the_workspace(ctx: ToolContext) -> None:
    assert "--no-ignore-parent" in ripgrep_argv(ctx, query())
    # Below the root, the workspace's own ignore files are the start's parents: they must still apply.
    assert "--no-ignore-parent" not in ripgrep_argv(ctx, query(start="src"))
    assert "--no-ignore-parent" not in ripgrep_argv(ctx, query(start="src/app.py", is_file=True))
