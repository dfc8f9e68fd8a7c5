"""A checkout's tree kept for the next start: given back exactly when nothing it rests on moved (the directories'
entries, the ignore files, git's index, the files its outline names, how it is sized), never when one did."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from live_memory.constants import DEFAULT_SECRET_GLOBS
from live_memory.outline.directory_tree import TreePolicy
from live_memory.outline.tree_outline import ScannedTree, scan_tree
from live_memory.workspaces.tree_cache import capture, restore, write
from tests.fakes.repo_builder import small_repo

FILES = {
    ".gitignore": "build/\n",
    "src/service.py": "class Service:\n    pass\n",
    "src/util.py": "def slugify(text):\n    return text\n",
    "docs/guide.md": "# Guide\n",
}
POLICY = TreePolicy(2_000, 4_300, head_chars=6_000, max_share=0.1, secret_globs=DEFAULT_SECRET_GLOBS)
KEY = "the policy and the code"


def _backdate(root: Path) -> None:
    """Every stamp a minute old: as a checkout is when a scan lists it (not edited that very second)."""
    past = time.time() - 60
    for path in [root, *root.rglob("*")]:
        os.utime(path, (past, past), follow_symlinks=False)


def _scan(root: Path) -> tuple[ScannedTree, int]:
    listed_at = time.time_ns()
    return asyncio.run(scan_tree(root, POLICY, budget_tokens=200_000, chars_per_token=4.0)), listed_at


def _kept(root: Path, tmp_path: Path) -> tuple[ScannedTree, Path]:
    _backdate(root)
    scanned, listed_at = _scan(root)
    saved = capture(root, scanned, KEY, listed_at)
    assert saved is not None
    path = tmp_path / "data" / "tree.json"
    write(path, saved)
    return scanned, path


def test_a_tree_nothing_moved_under_is_given_back_as_scanned(tmp_path: Path) -> None:
    root = small_repo(tmp_path, FILES)
    scanned, path = _kept(root, tmp_path)
    restored = restore(path, root, KEY)
    assert restored is not None
    assert (restored.text, restored.paths.files) == (scanned.text, scanned.paths.files)
    assert scanned.outlined  # a small repository: its files' names follow the tree
    assert path.stat().st_mode & 0o077 == 0


def test_a_file_added_removed_or_renamed_anywhere_moves_the_tree(tmp_path: Path) -> None:
    for change in ("add", "remove", "rename", "in an empty directory"):
        root = small_repo(tmp_path / change, FILES)
        (root / "docs" / "void").mkdir()  # empty: not in the listing, but a file written there would be
        _, path = _kept(root, tmp_path / change)
        if change == "add":
            (root / "src" / "new.py").write_text("x = 1\n")
        elif change == "remove":
            (root / "src" / "util.py").unlink()
        elif change == "rename":
            (root / "src" / "util.py").rename(root / "src" / "tools.py")
        else:
            (root / "docs" / "void" / "later.md").write_text("# Later\n")
        assert restore(path, root, KEY) is None, change


def test_an_edited_ignore_file_or_outlined_file_moves_the_tree(tmp_path: Path) -> None:
    for edited in (".gitignore", "src/util.py"):
        root = small_repo(tmp_path / edited.replace("/", "_"), FILES)
        _, path = _kept(root, tmp_path / edited.replace("/", "_"))
        with (root / edited).open("a") as handle:  # in place: no directory moves
            handle.write("\n# more\n")
        assert restore(path, root, KEY) is None, edited


def test_another_policy_or_a_damaged_file_is_a_miss(tmp_path: Path) -> None:
    root = small_repo(tmp_path, FILES)
    _, path = _kept(root, tmp_path)
    assert restore(path, root, "another window size") is None
    path.write_bytes(b"{not json")
    assert restore(path, root, KEY) is None
    assert restore(tmp_path / "never-written.json", root, KEY) is None


def test_a_directory_that_moved_while_it_was_listed_is_not_kept(tmp_path: Path) -> None:
    root = small_repo(tmp_path, FILES)
    _backdate(root)
    scanned, listed_at = _scan(root)
    (root / "src" / "during.py").write_text("x = 1\n")  # the listing may have missed it
    assert capture(root, scanned, KEY, listed_at) is None
