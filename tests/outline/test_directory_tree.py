"""The directory tree for the stable prompt prefix: deterministic, within budget, collapsing deep and
large directories first, secrets marked, .gitignore honoured with and without git."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from live_memory.constants import DEFAULT_SECRET_GLOBS
from live_memory.fs.jail import SecretMatcher
from live_memory.outline.directory_tree import build_directory_tree, render_tree
from tests.fakes.repo_builder import IGNORED_MARKER, RepoBuilder, build_history_repo

SECRETS = SecretMatcher(DEFAULT_SECRET_GLOBS)


def _small_repo(base: Path) -> Path:
    repo = RepoBuilder(base / "ws")
    repo.write(".gitignore", "build/\n*.log\n")
    repo.write("README.md", "x\n").write("src/app/main.py", "x\n").write("src/app/util.py", "x\n")
    repo.write("src/lib/a.py", "x\n").write("docs/guide.md", "x\n").write(".env", "SECRET=1\n")
    repo.commit("init")
    repo.write("notes.txt", "untracked\n").write("build/out.txt", "ignored\n").write("debug.log", "ignored\n")
    return repo.root


async def test_tree_renders_the_whole_workspace_when_it_fits(tmp_path: Path) -> None:
    tree = await build_directory_tree(_small_repo(tmp_path), budget_chars=10_000)
    assert tree == "\n".join(
        [
            "8 files",
            "docs/",
            "  guide.md",
            "src/",
            "  app/",
            "    main.py",
            "    util.py",
            "  lib/",
            "    a.py",
            ".env [withheld: secret]",
            ".gitignore",
            "README.md",
            "notes.txt",
        ]
    )


async def test_tree_without_git_walks_with_the_same_rules_and_output(tmp_path: Path) -> None:
    root = _small_repo(tmp_path)
    with_git = await build_directory_tree(root, budget_chars=10_000)
    plain = tmp_path / "plain"
    shutil.copytree(root, plain, ignore=shutil.ignore_patterns(".git"))
    without_git = await build_directory_tree(plain, budget_chars=10_000)
    assert without_git == with_git


async def test_tree_of_the_hostile_fixture_hides_ignored_files_git_and_secret_contents(
    tmp_path: Path,
) -> None:
    repo = build_history_repo(tmp_path, hostile=True)
    tree = await build_directory_tree(repo.root, budget_chars=20_000)
    lines = tree.splitlines()
    assert ".git" not in {line.strip().rstrip("/") for line in lines}
    assert not any(line.strip() in ("build/", "node_modules/", "debug.log", "drop.tmp") for line in lines)
    assert "keys/" in lines and "  server.pem [withheld: secret]" in lines
    assert IGNORED_MARKER not in tree


async def test_tree_is_deterministic_and_independent_of_listing_order() -> None:
    paths = [f"pkg{i % 7}/mod{i % 3}/file{i}.py" for i in range(300)] + ["README.md", "setup.cfg"]
    shuffled = paths[:]
    random.Random(4).shuffle(shuffled)
    for budget in (200, 1000, 5000, 100_000):
        assert render_tree(paths, budget, SECRETS) == render_tree(shuffled, budget, SECRETS)


@pytest.mark.parametrize("budget", [0, 5, 40, 80, 120, 300, 700, 1500, 4000, 20_000])
def test_tree_never_exceeds_its_budget(budget: int) -> None:
    paths = [f"a{i % 5}/b{i % 4}/c{i % 3}/f{i}.txt" for i in range(2000)] + [f"top{i}.md" for i in range(40)]
    tree = render_tree(paths, budget, SECRETS)
    assert len(tree) <= budget


def test_tree_collapses_deepest_then_largest_directories_and_keeps_top_levels() -> None:
    paths = (
        ["README.md"]
        + [f"big/x/y/file{i}.txt" for i in range(200)]
        + [f"small/z/file{i}.txt" for i in range(3)]
        + ["docs/index.md"]
    )
    header = '205 files; "dir/ (N files)" is collapsed: list it with find_paths'
    assert render_tree(paths, 180, SECRETS).splitlines() == [
        header,
        "big/",
        "  x/",
        "    y/ (200 files)",  # deepest first
        "docs/",
        "  index.md",
        "small/",
        "  z/",
        "    file0.txt",
        "    file1.txt",
        "    file2.txt",
        "README.md",
    ]
    assert render_tree(paths, 170, SECRETS).splitlines()[1:6] == [
        "big/",
        "  x/ (200 files)",  # then, at the next level, the largest first
        "docs/",
        "  index.md",
        "small/",
    ]
    assert render_tree(paths, 125, SECRETS).splitlines() == [
        header,
        "big/ (200 files)",  # top-level names always survive
        "docs/ (1 file)",
        "small/ (3 files)",
        "README.md",
    ]


def test_tree_cuts_a_huge_flat_directory_and_says_how_much_is_missing() -> None:
    paths = [f"file{i:05d}.txt" for i in range(5000)]
    tree = render_tree(paths, 2000, SECRETS)
    assert len(tree) <= 2000
    assert tree.splitlines()[-1].startswith("... (")
    assert "more entries not shown: use find_paths or Glob" in tree


def test_tree_collapses_secret_directories_and_marks_nested_repositories() -> None:
    tree = render_tree(["venv/.env/lib/site.py", "venv/.env/bin/python", "vendor/lib/", "a.py"], 10_000, SECRETS)
    assert "  .env/ (2 files) [withheld: secret]" in tree.splitlines()
    assert "  lib/ [separate git repository]" in tree.splitlines()
    assert "site.py" not in tree


def test_tree_of_an_empty_workspace_says_so() -> None:
    assert render_tree([], 100, SECRETS) == "(no files)"


async def test_tree_budget_is_applied_to_a_real_repository(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "wide")
    for i in range(60):
        repo.write(f"pkg{i % 6}/sub{i % 2}/m{i}.py", "x\n")
    repo.commit("many files")
    tree = await build_directory_tree(repo.root, budget_chars=400)
    assert len(tree) <= 400
    assert tree.startswith('60 files; "dir/ (N files)" is collapsed')
    assert "pkg0/" in tree


async def test_tree_outside_git_is_bounded_in_time_and_says_when_it_was_cut(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    assert await build_directory_tree(tmp_path, budget_chars=1000) == "1 file\na.txt"
    cut = await build_directory_tree(tmp_path, budget_chars=1000, timeout_s=0)
    assert "cut short" in cut


async def test_tree_of_a_secret_directory_never_lists_its_files(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "ws")
    repo.write(".aws/credentials", "x\n").write("venv/.env/lib/x.py", "x\n").write("app.py", "x\n")
    repo.commit("init")
    tree = await build_directory_tree(repo.root, budget_chars=1000, secret_globs=(*DEFAULT_SECRET_GLOBS, "venv/"))
    assert tree.splitlines()[1:] == [
        ".aws/",
        "  credentials [withheld: secret]",
        "venv/ (1 file) [withheld: secret]",
        "app.py",
    ]
