"""Building and refreshing the symbol index: ripgrep's files and no others, only the files whose stamp moved are
read again, the gone ones forgotten, the directories' stamps telling a restart whether anything was added; the
child process's own entry point."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

from live_memory.core.errors import IndexStopped
from live_memory.fs.jail import Jail
from live_memory.outline.symbol_store import SymbolStore, build_path
from live_memory.tools.index_build import (
    Refreshed,
    build,
    build_or_refresh,
    changed_since,
    main,
    refresh,
)


def _repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n")
    files = {
        "src/a.py": "def alpha():\n    pass\n",
        "src/b.py": "def beta():\n    pass\n",
        "src/c.py": "def gamma():\n    pass\n",
        "build/out.py": "def ignored():\n    pass\n",
        ".env": "SECRET = 1\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _build(root: Path, index: Path, secret_globs: tuple[str, ...], *, rebuild: bool) -> Refreshed:
    return asyncio.run(build_or_refresh(root, index, secret_globs, rebuild=rebuild))


def _store(index: Path, root: Path) -> SymbolStore:
    store = SymbolStore.open(index, str(root.resolve()))
    assert store is not None
    return store


def test_a_build_records_the_files_ripgrep_lists_and_no_ignored_or_secret_one(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    done = _build(root, tmp_path / "index.sqlite", (".env",), rebuild=False)
    assert done.rebuilt and done.files == done.parsed == 4  # .gitignore and src/a-c
    store = _store(tmp_path / "index.sqlite", root)
    assert sorted(store.paths()) == [".gitignore", "src/a.py", "src/b.py", "src/c.py"]
    assert not build_path(tmp_path / "index.sqlite").exists()  # renamed into place
    store.close()


def test_a_stopping_server_stops_a_build_between_two_files_and_no_half_index_is_put_in_place(
    tmp_path: Path,
) -> None:
    """The server waits for its index thread as it exits: a build in it gives up as soon as the keeper closes."""
    root = _repo(tmp_path / "ws")
    index = tmp_path / "index.sqlite"
    jail = Jail(root, (".env",))
    stopped = threading.Event()
    stopped.set()
    with pytest.raises(IndexStopped, match="stopped after 0 of 3 files"):
        build(root, index, jail, ["src/a.py", "src/b.py", "src/c.py"], {}, stopped)
    assert not index.exists()  # the next start builds anew
    _build(root, index, (".env",), rebuild=False)
    (root / "src" / "a.py").write_text("def alpha_two():\n    pass\n")
    store = _store(index, root)
    with pytest.raises(IndexStopped):
        refresh(store, jail, ["src/a.py"], listed=False, stop=stopped)
    assert store.definition_lines("alpha_two") == []  # not recorded: its old stamp still says so
    assert changed_since(root, store) == ["src/a.py"]
    store.close()


def test_a_refresh_reads_again_only_what_moved_and_forgets_what_went(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    index = tmp_path / "index.sqlite"
    _build(root, index, (".env",), rebuild=False)
    (root / "src" / "a.py").write_text("def alpha_two():\n    pass\n")  # new bytes
    os.utime(root / "src" / "b.py", ns=(1, 1))  # same bytes, another stamp
    (root / "src" / "c.py").unlink()
    (root / "src" / "d.py").write_text("def delta():\n    pass\n")
    done = _build(root, index, (".env",), rebuild=False)
    assert (done.rebuilt, done.read, done.parsed, done.dropped, done.files) == (False, 3, 2, 1, 4)
    store = _store(index, root)
    assert store.definition_lines("alpha_two") == [("src/a.py", 1, 0)]
    assert store.definition_lines("gamma") == []
    assert store.definition_lines("delta") == [("src/d.py", 1, 0)]
    store.close()


def test_unmoved_directories_tell_a_restart_which_files_to_read_again_without_a_listing(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    index = tmp_path / "index.sqlite"
    _build(root, index, (".env",), rebuild=False)
    store = _store(index, root)
    assert changed_since(root.resolve(), store) == []
    with (root / "src" / "a.py").open("a") as handle:  # an edit in place: the directory's stamp stays
        handle.write("# more\n")
    assert changed_since(root.resolve(), store) == ["src/a.py"]
    (root / "src" / "new.py").write_text("x = 1\n")  # a new file moves its directory
    assert changed_since(root.resolve(), store) is None
    store.close()


def test_files_that_may_have_changed_are_refreshed_alone(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    index = tmp_path / "index.sqlite"
    _build(root, index, (".env",), rebuild=False)
    store = _store(index, root)
    (root / "src" / "b.py").write_text("def beta_two():\n    pass\n")
    (root / "src" / "c.py").unlink()
    done = refresh(store, Jail(root, (".env",)), ["src/b.py", "src/c.py"], listed=False)
    assert (done.read, done.parsed, done.dropped, done.files) == (1, 1, 1, 3)
    assert store.definition_lines("beta_two") == [("src/b.py", 1, 0)]
    store.close()


def test_the_child_writes_the_index_and_prints_what_it_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _repo(tmp_path / "ws")
    assert main([str(root), str(tmp_path / "index.sqlite"), "--secret-glob", ".env"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["files"] == 4 and done["rebuilt"] is True
    assert (tmp_path / "index.sqlite").stat().st_mode & 0o077 == 0  # private, as the snapshots are


def test_the_child_says_why_it_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing"), str(tmp_path / "index.sqlite")]) == 1
    assert capsys.readouterr().err.strip()
    assert not (tmp_path / "index.sqlite").exists()
