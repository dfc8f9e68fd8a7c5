"""The OS file watcher: stays inside the workspace, skips what the tree skips, watches big trees within its cap
(recently used directories first), adds a new directory's watches without a rescan, survives failures."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from live_memory.core.records import FileEvent
from live_memory.workspaces.watcher import (
    WATCHING_CAPPED,
    WATCHING_FAILED,
    WATCHING_ON,
    WorkspaceWatcher,
    watched_directories,
)
from tests.fakes.engine import until


class Seen:
    """What the watcher delivered: (path, kind) pairs, and an event per arrival."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.arrived = asyncio.Event()

    async def sink(self, root: Path, events: Sequence[FileEvent]) -> None:
        self.events.extend((e.path, e.kind) for e in events)
        self.arrived.set()

    async def wait_for(self, path: str, timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not any(p == path for p, _ in self.events):
                self.arrived.clear()
                await self.arrived.wait()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git" / "objects").mkdir(parents=True)
    (root / "node_modules" / "lib").mkdir(parents=True)
    (root / "build" / "out").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n")
    (root / "src" / "pkg" / "app.py").write_text("VALUE = 1\n")
    return root


@pytest.fixture
async def watcher() -> AsyncIterator[WorkspaceWatcher]:
    watching = WorkspaceWatcher(debounce_ms=50, poll_ms=200, restart_delay_s=0.01, restart_max_delay_s=0.05)
    yield watching
    await watching.aclose()


def test_the_directories_watched_are_the_real_ones_inside_the_workspace(repo: Path) -> None:
    (repo / "src" / "to-root").symlink_to("/")
    (repo / "src" / "to-usr").symlink_to("/usr")
    found, capped = watched_directories(repo, 100)
    assert sorted(os.path.relpath(d, repo) for d in found) == [".", "src", "src/pkg"]
    assert not capped


async def test_a_link_to_the_filesystem_root_is_not_followed_and_edits_still_arrive(
    repo: Path, watcher: WorkspaceWatcher
) -> None:
    (repo / "src" / "to-root").symlink_to("/")
    seen = Seen()
    watcher.watch(repo, seen.sink)
    await until(lambda: watcher.status(repo) == WATCHING_ON, timeout_s=10)
    assert watcher.directories(repo) == 3  # the root, src, src/pkg: not /, not .git, node_modules or build
    await asyncio.to_thread((repo / "src" / "pkg" / "app.py").write_text, "VALUE = 2\n")
    await seen.wait_for("src/pkg/app.py")
    assert ("src/pkg/app.py", "change") in seen.events
    assert watcher.statuses() == {str(repo): WATCHING_ON}


async def test_edits_in_ignored_directories_are_not_reported(repo: Path, watcher: WorkspaceWatcher) -> None:
    seen = Seen()
    watcher.watch(repo, seen.sink)
    await until(lambda: watcher.status(repo) == WATCHING_ON, timeout_s=10)
    for noise in ("build/out/a.o", "node_modules/lib/x.js", ".git/objects/ab"):
        await asyncio.to_thread((repo / noise).write_text, "x")
    await asyncio.to_thread((repo / "src" / "marker.py").write_text, "x")
    await seen.wait_for("src/marker.py")
    assert [p for p, _ in seen.events] == ["src/marker.py"]


async def test_a_directory_created_later_is_watched_too(repo: Path, watcher: WorkspaceWatcher) -> None:
    seen = Seen()
    watcher.watch(repo, seen.sink)
    await until(lambda: watcher.status(repo) == WATCHING_ON, timeout_s=10)
    await asyncio.to_thread((repo / "src" / "new").mkdir)
    await until(lambda: watcher.directories(repo) == 4, timeout_s=10)
    await asyncio.to_thread((repo / "src" / "new" / "mod.py").write_text, "x")
    await seen.wait_for("src/new/mod.py")


def _deep_tree(root: Path, count: int) -> None:
    for i in range(count):
        (root / f"d{i // 100}" / f"e{i % 100}").mkdir(parents=True, exist_ok=True)


async def test_a_tree_larger_than_the_cap_is_watched_where_it_pays_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "big"
    _deep_tree(root, 300)
    watching = WorkspaceWatcher(debounce_ms=50, poll_ms=200, max_directories=50)
    seen = Seen()
    try:
        watching.watch(root, seen.sink, lambda: ["d2/e77"])  # the directory of a file the memory just used
        await until(lambda: watching.status(root) == WATCHING_CAPPED, timeout_s=10)
        assert watching.statuses() == {str(root): "on (capped: the most recently used directories first)"}
        assert watching.directories(root) == 45  # nine tenths of the cap: the rest is for new directories
        await asyncio.to_thread((root / "d2" / "e77" / "used.py").write_text, "x")  # deep, but used: watched
        await asyncio.to_thread((root / "d0" / "e1" / "near.py").write_text, "x")  # shallow enough: watched
        await seen.wait_for("d2/e77/used.py")
        await seen.wait_for("d0/e1/near.py")
    finally:
        await watching.aclose()


def test_the_directories_chosen_under_a_cap_are_the_preferred_then_the_shallow_ones(tmp_path: Path) -> None:
    root = tmp_path / "big"
    _deep_tree(root, 300)
    found, capped = watched_directories(root, 6, ["d2/e77", "missing/dir", "d1/e3"])
    assert [os.path.relpath(d, root) for d in found] == [".", "d2/e77", "d1/e3", "d0", "d1", "d2"]
    assert capped


async def test_a_new_directory_adds_its_own_watches_and_reports_what_it_holds(
    repo: Path, watcher: WorkspaceWatcher
) -> None:
    seen = Seen()
    watcher.watch(repo, seen.sink)
    await until(lambda: watcher.status(repo) == WATCHING_ON, timeout_s=10)
    staged = repo.parent / "staged"
    (staged / "inner").mkdir(parents=True)
    (staged / "inner" / "made.py").write_text("x")
    await asyncio.to_thread(staged.rename, repo / "src" / "moved")  # a whole tree appears at once
    await seen.wait_for("src/moved/inner/made.py")
    assert ("src/moved/inner/made.py", "add") in seen.events
    await until(lambda: watcher.directories(repo) == 5, timeout_s=10)
    await asyncio.to_thread((repo / "src" / "moved" / "inner" / "later.py").write_text, "x")
    await seen.wait_for("src/moved/inner/later.py")


async def test_a_deep_tree_under_the_cap_is_watched_to_its_leaves(tmp_path: Path, watcher: WorkspaceWatcher) -> None:
    root = tmp_path / "deep"
    _deep_tree(root, 1000)
    seen = Seen()
    watcher.watch(root, seen.sink)
    await until(lambda: watcher.status(root) == WATCHING_ON, timeout_s=20)
    assert watcher.directories(root) == 1 + 10 + 1000
    await asyncio.to_thread((root / "d9" / "e99" / "leaf.txt").write_text, "x")
    await seen.wait_for("d9/e99/leaf.txt")


async def test_a_watcher_that_fails_is_restarted(tmp_path: Path, watcher: WorkspaceWatcher) -> None:
    root = tmp_path / "later"  # missing: adding the watch fails until it exists
    seen = Seen()
    watcher.watch(root, seen.sink)
    await until(lambda: watcher.status(root) == WATCHING_FAILED, timeout_s=10)
    await asyncio.to_thread(root.mkdir)
    await until(lambda: watcher.status(root) == WATCHING_ON, timeout_s=10)
    await asyncio.to_thread((root / "f.txt").write_text, "x")
    await seen.wait_for("f.txt")
