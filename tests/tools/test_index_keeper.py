"""Keeping a checkout's symbol index: built by the child in the background while the scan answers, reused after
a restart when its directories did not move, kept current from what changes (a stamp checked before use, files
told of, new ones only when ripgrep lists them), and answering every lookup as the scan does, with no scan."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import sqlite3
import stat
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from live_memory.tools import Toolbox, ToolLimits
from live_memory.tools.index_keeper import BUILDING, FAILED, READY, STARTING
from tests.fakes.engine import until
from tests.fakes.indexed import indexed_toolbox
from tests.fakes.repo_builder import HistoryRepo, small_repo

MODELS = "class Card:\n    def render(self):\n        return ''\n\n\ndef load(path):\n    return Card()\n"
VIEWS = "from models import Card, load\n\n\ndef show(path):\n    return load(path).render()\n"


@contextlib.asynccontextmanager
async def _kept(box: Toolbox) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(box.keep_index())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _lookup(box: Toolbox, name: str, **arguments: object) -> str:
    outcome = await box.run("find_symbol", {"name": name, **arguments})
    assert not outcome.is_error, outcome.text
    return outcome.text


async def test_a_keeper_stopped_with_its_server_leaves_no_thread_behind(tmp_path: Path) -> None:
    """A stopping server cancels its tasks at every await: the index's thread still ends, or the process would
    wait for it at exit."""
    root = small_repo(tmp_path, {"models.py": MODELS, "views.py": VIEWS})
    box = await Toolbox.create(root, index_path=tmp_path / "data" / "index.sqlite")
    before = set(threading.enumerate())
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(box.keep_index)
        await until(lambda: box.index is not None and box.index.ready, timeout_s=60)
        tasks.cancel_scope.cancel()
    left = [t for t in set(threading.enumerate()) - before if t.name.startswith("live-memory symbol index")]
    for thread in left:
        await anyio.to_thread.run_sync(thread.join, 10.0)
    assert not [t.name for t in left if t.is_alive()]


async def test_the_child_builds_the_index_while_the_scan_answers_then_lookups_read_it(tmp_path: Path) -> None:
    root = small_repo(tmp_path, {"models.py": MODELS, "views.py": VIEWS})
    box = await Toolbox.create(root, index_path=tmp_path / "data" / "index.sqlite")
    assert box.index is not None
    box.index.update_max_files = 0  # a workspace this small is recorded in the server: make it big
    async with _kept(box):
        await until(lambda: box.index is not None and box.index.state != STARTING)
        assert box.index.state in (BUILDING, READY)
        scanned = await _lookup(box, "load")  # never waits for the build
        await until(lambda: box.index is not None and box.index.ready, timeout_s=60)
        assert await _lookup(box, "load") == scanned
        assert box.index_status() == {
            "state": READY,
            "ready_after_s": box.index.ready_after_s,
            "detail": box.index.detail,
        }
        assert box.index.detail.startswith("built in ")


async def test_a_restart_reuses_an_index_whose_directories_did_not_move_without_the_child(tmp_path: Path) -> None:
    root = small_repo(tmp_path, {"models.py": MODELS})
    async with indexed_toolbox(root, tmp_path / "index.sqlite"):
        pass
    (root / "models.py").write_text(MODELS + "\n\ndef later():\n    pass\n")  # edited while the server was down
    box = await Toolbox.create(root, index_path=tmp_path / "index.sqlite")
    assert box.index is not None
    box.index.python = str(tmp_path / "no-python")  # a build would fail: none must be needed
    async with _kept(box):
        await until(lambda: box.index is not None and box.index.ready)
        assert box.index.detail == "reused: 1 files read again"
        assert "models.py:10-11  later (function)" in await _lookup(box, "later")


async def test_a_file_changed_behind_the_index_is_read_again_before_a_lookup_uses_it(tmp_path: Path) -> None:
    root = small_repo(tmp_path, {"models.py": MODELS, "views.py": VIEWS})
    async with indexed_toolbox(root, tmp_path / "index.sqlite") as box:
        await asyncio.to_thread((root / "models.py").write_text, "\n\n" + MODELS)  # no event: only its stamp moved
        text = await _lookup(box, "load", kind="definition")
        assert "models.py:8-9  load (function)" in text
        assert text == await _lookup(await Toolbox.create(root), "load", kind="definition")


async def test_files_told_of_are_indexed_unless_ripgrep_would_not_list_them(tmp_path: Path) -> None:
    root = small_repo(tmp_path, {".gitignore": "out/\n", "models.py": MODELS})
    async with indexed_toolbox(root, tmp_path / "index.sqlite") as box:
        assert box.index is not None
        await asyncio.to_thread(
            _repo_files, root, {"pkg/new.py": "def fresh():\n    pass\n", "out/gen.py": "def fresh():\n    pass\n"}
        )
        box.files_changed(["pkg/new.py", "out/gen.py", "models.py"])
        text = await _lookup(box, "fresh", kind="definition")
        assert text.splitlines()[1:] == ["pkg/new.py:1-2  fresh (function)  def fresh()"]
        assert box.index.ready


def _repo_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


async def test_a_change_to_an_ignore_file_relists_the_workspace(tmp_path: Path) -> None:
    root = small_repo(tmp_path, {"models.py": MODELS, "gen/made.py": "def made():\n    pass\n"})
    async with indexed_toolbox(root, tmp_path / "index.sqlite") as box:
        assert box.index is not None
        assert "gen/made.py:1-2" in await _lookup(box, "made")
        await asyncio.to_thread((root / ".gitignore").write_text, "gen/\n")
        box.files_changed([".gitignore"])
        assert "No definition of 'made'" in await _lookup(box, "made")  # the scan, while it relists
        await until(lambda: box.index is not None and box.index.ready and not box.index.detail.startswith("reused"))
        assert "No definition of 'made'" in await _lookup(box, "made")  # the index, as ripgrep lists now


async def test_a_build_that_fails_leaves_the_scan_answering_and_says_why(tmp_path: Path) -> None:
    root = small_repo(tmp_path, {"models.py": MODELS})
    box = await Toolbox.create(root, index_path=tmp_path / "index.sqlite")
    assert box.index is not None
    box.index.update_max_files, box.index.python = 0, str(tmp_path / "no-python")
    async with _kept(box):
        await until(lambda: box.index is not None and box.index.state == FAILED)
        assert "no-python" in box.index.detail  # why, for /stats
        assert "models.py:6-7  load" in await _lookup(box, "load")


async def test_a_lookup_the_index_answers_runs_no_ripgrep(tmp_path: Path) -> None:
    real = shutil.which("rg", path=str(Path(sys.executable).parent)) or shutil.which("rg")
    assert real is not None
    log = tmp_path / "rg-calls.log"
    wrapper = tmp_path / "rg"
    wrapper.write_text(f'#!/bin/sh\necho call >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    log.write_text("")
    root = small_repo(tmp_path, {"models.py": MODELS, "views.py": VIEWS})
    limits = ToolLimits(ripgrep_path=str(wrapper))
    async with indexed_toolbox(root, tmp_path / "index.sqlite", limits) as box:
        assert "Used in 1 file:" in await _lookup(box, "Card.render")
        assert log.read_text() == ""  # a lookup, not a scan
    assert "Used in 1 file:" in await _lookup(await Toolbox.create(root, limits), "Card.render")
    assert log.read_text().count("\n") == 2  # the scan's two passes go through the same ripgrep


async def test_the_index_answers_every_lookup_as_the_scan_does(history_repo: HistoryRepo, tmp_path: Path) -> None:
    plain = await Toolbox.create(history_repo.root)
    async with indexed_toolbox(history_repo.root, tmp_path / "index.sqlite") as box:
        for number, name in enumerate(_names(history_repo.root)):
            arguments = {
                "name": name,
                "kind": ("definition", "both", "uses")[number % 3],
                "code": number % 2 == 0,
                "prefer": [] if number % 4 else ["src/app/main.py"],
            }
            indexed = await box.run("find_symbol", arguments)
            scanned = await plain.run("find_symbol", arguments)
            assert (indexed.text, indexed.files_read) == (scanned.text, scanned.files_read), arguments


def _names(root: Path) -> list[str]:
    """Words of the fixture's files (a sample: every file's names are covered by the line-level tests), and names
    that are qualified, defined in Markdown, or nowhere."""
    words: set[str] = set()
    for path in root.rglob("*"):
        if ".git" not in path.parts and path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError, UnicodeDecodeError):
                words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", path.read_text()))
    return [*sorted(words)[::6], "RateLimiter.allow", "no_such_name_zz", "retry", "Guide", "guide", "FEATURE"]


async def test_an_index_sqlite_refuses_in_use_is_built_anew_while_the_scan_answers(tmp_path: Path) -> None:
    root = small_repo(tmp_path, {"models.py": MODELS})
    index = tmp_path / "index.sqlite"
    async with indexed_toolbox(root, index) as box:
        assert box.index is not None and box.index.detail.startswith("reused")

        def damage() -> None:  # another process breaks it under the server
            db = sqlite3.connect(index)
            db.execute("DROP TABLE lines")
            db.commit()
            db.close()

        await asyncio.to_thread(damage)
        assert "models.py:6-7  load" in await _lookup(box, "load")  # the scan, the index refused
        await until(lambda: box.index is not None and box.index.ready and box.index.detail.startswith("built"))
        assert "models.py:6-7  load" in await _lookup(box, "load")
