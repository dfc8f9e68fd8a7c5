"""safe_files: only regular files are read (never a hang on a FIFO), no link is followed beneath a
root, hashing streams in flat memory, and writes are atomic and private."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from live_memory.core.errors import NotRegularFileError
from live_memory.fs.safe_files import (
    atomic_write,
    clean_stale_temp_files,
    disk_hashes,
    ensure_private_dir,
    open_beneath,
    read_prefix,
    read_text_bounded,
    regular_file,
    sha256_fd,
    sha256_file,
)
from tests.tools.blocking import call_within


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "c.txt").write_text("hello\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "c.txt").write_text("OUTSIDE\n")
    return root


# -- only regular files ---------------------------------------------------------------------------
def test_a_regular_file_is_read_and_hashed(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"abc" * 1000)
    with regular_file(path) as fd:
        assert read_prefix(fd, 5) == b"abcab"
    digest = sha256_file(path)
    assert digest == (hashlib.sha256(b"abc" * 1000).hexdigest(), 3000)


def test_a_fifo_is_refused_at_once_never_opened_for_a_blocking_read(tmp_path: Path) -> None:
    readers: list[Callable[[Path], object]] = [sha256_file, lambda fifo: read_text_bounded(fifo, 10), _open_and_close]
    for index, read in enumerate(readers):
        fifo = tmp_path / f"pipe{index}"
        os.mkfifo(fifo)
        with pytest.raises(NotRegularFileError, match="FIFO") as refused:
            call_within(lambda: read(fifo), fifo)  # noqa: B023 - called before the loop moves on
        assert stat.S_ISFIFO(refused.value.mode)


def _open_and_close(path: Path) -> None:
    with regular_file(path):
        pass


def test_directories_sockets_devices_and_links_are_refused_with_what_they_are(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    link = tmp_path / "link"
    (tmp_path / "target.txt").write_text("x")
    link.symlink_to(tmp_path / "target.txt")
    try:
        cases = {tmp_path: "a directory", sock_path: "a socket", Path("/dev/null"): "a device file", link: "link"}
        for path, kind in cases.items():
            with pytest.raises(NotRegularFileError, match=kind):
                sha256_file(path)
    finally:
        server.close()
    assert sha256_file(link, follow_symlinks=True) == sha256_file(tmp_path / "target.txt")


# -- beneath a root -------------------------------------------------------------------------------
def test_open_beneath_reads_a_nested_file_and_opens_directories(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    fd = open_beneath(root, "a/b/c.txt")
    try:
        assert read_prefix(fd, 100) == b"hello\n"
    finally:
        os.close(fd)
    for rel in ("a/b", ""):
        fd = open_beneath(root, rel, directory=True)
        try:
            assert stat.S_ISDIR(os.fstat(fd).st_mode)
        finally:
            os.close(fd)


@pytest.mark.parametrize(("swap", "component"), [("a", "a"), ("a/b", "a/b"), ("a/b/c.txt", "a/b/c.txt")])
def test_open_beneath_follows_no_link_in_any_component(tmp_path: Path, swap: str, component: str) -> None:
    root = _tree(tmp_path)
    outside = tmp_path / "outside"
    (outside / "b").mkdir()
    (outside / "b" / "c.txt").write_text("OUTSIDE\n")
    victim = root / swap
    victim.rename(tmp_path / "away")
    target = outside / ("c.txt" if swap.endswith(".txt") else "b" if swap == "a/b" else "")
    victim.symlink_to(target if swap != "a" else outside)
    with pytest.raises(NotRegularFileError) as refused:
        os.close(open_beneath(root, "a/b/c.txt"))
    assert refused.value.is_link and refused.value.path == component


def test_open_beneath_refuses_dotdot_and_a_file_used_as_a_directory(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    with pytest.raises(ValueError, match=r"'\.\.'"):
        open_beneath(root, "a/../../outside/c.txt")
    with pytest.raises(NotRegularFileError, match="not a directory"):
        open_beneath(root, "a/b/c.txt/d")


# -- streaming hashes -----------------------------------------------------------------------------
def test_hashing_respects_the_size_cap_and_leaves_the_position_alone(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(3 * 1024 * 1024 + 17)  # several chunks and a partial one
    path.write_bytes(data)
    with regular_file(path) as fd:
        os.lseek(fd, 10, os.SEEK_SET)
        assert sha256_fd(fd) == (hashlib.sha256(data).hexdigest(), len(data))
        assert os.lseek(fd, 0, os.SEEK_CUR) == 10
        assert sha256_fd(fd, max_bytes=len(data)) is not None
        assert sha256_fd(fd, max_bytes=len(data) - 1) is None


_RSS_PROBE = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from pathlib import Path
    from live_memory.fs.safe_files import disk_hashes
    from live_memory.tools import Toolbox

    def peak_kib():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

    root = Path(sys.argv[1])
    big = root / "big.log"
    big.write_text("".join(f"line {i}\\n" for i in range(2000)))
    os.truncate(big, 1 << 30)  # sparse: no real disk use
    box = Toolbox(root)
    asyncio.run(box.run("Read", {"file_path": "README.md"}))  # warm up the loop and its threads
    base = peak_kib()
    hashed = disk_hashes(root, ["big.log"])["big.log"]
    after_hash = peak_kib()
    read = asyncio.run(box.run("Read", {"file_path": "big.log", "limit": 3}))
    after_read = peak_kib()
    print(json.dumps({
        "hash_growth_kib": after_hash - base,
        "read_growth_kib": after_read - base,
        "hashed": hashed is not None,
        "files_read": len(read.files_read),
        "text": read.text,
    }))
    """
)


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory on tmpfs when there is one (reading a sparse file's holes is cheapest there)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="live-memory-test-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from /proc")
def test_hashing_and_reading_a_sparse_gibibyte_file_keeps_memory_flat(scratch: Path) -> None:
    (scratch / "README.md").write_text("hello\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    probe = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, str(scratch)], capture_output=True, text=True, timeout=120, env=env
    )
    assert probe.returncode == 0, probe.stderr
    figures = json.loads(probe.stdout)
    assert figures["hashed"], "the gibibyte file was not hashed"
    assert figures["text"].startswith("1\tline 0\n2\tline 1\n3\tline 2\n")
    assert figures["files_read"] == 0  # over the tools' hash cap: shown, not fingerprinted
    assert figures["hash_growth_kib"] < 16 * 1024, figures
    assert figures["read_growth_kib"] < 16 * 1024, figures


def test_disk_hashes_never_blocks_on_a_fifo_or_hashes_a_directory(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    (tmp_path / "ok.txt").write_text("ok\n")
    hashes = call_within(lambda: disk_hashes(tmp_path, ["pipe", "dir", "ok.txt", "gone.txt"]), tmp_path / "pipe")
    assert hashes == {"pipe": None, "dir": None, "ok.txt": hashlib.sha256(b"ok\n").hexdigest(), "gone.txt": None}


# -- writing --------------------------------------------------------------------------------------
def test_atomic_write_replaces_the_file_privately_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "snap.json"
    target.write_text("old")
    previous = os.umask(0)
    try:
        atomic_write(target, b"new")
    finally:
        os.umask(previous)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json"]
    atomic_write(target, b"shared", mode=0o640)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_failed_atomic_write_keeps_the_old_file_and_removes_its_temp(tmp_path: Path) -> None:
    blocker = tmp_path / "in-the-way"
    (blocker / "child").mkdir(parents=True)  # a non-empty directory cannot be replaced by a file
    with pytest.raises(OSError):
        atomic_write(blocker, b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in-the-way"]


def test_ensure_private_dir_creates_every_missing_level_0700_whatever_the_umask(
    tmp_path: Path, umask_022: None
) -> None:
    target = tmp_path / "a" / "b" / "data"
    parent_mode = stat.S_IMODE(tmp_path.stat().st_mode)
    ensure_private_dir(target)
    assert stat.S_IMODE(tmp_path.stat().st_mode) == parent_mode  # an existing parent is not touched
    for level in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700, level


def test_ensure_private_dir_tightens_an_existing_dir_and_refuses_a_file(tmp_path: Path) -> None:
    loose = tmp_path / "data"
    loose.mkdir()
    loose.chmod(0o755)
    parent_mode = stat.S_IMODE(tmp_path.stat().st_mode)
    ensure_private_dir(loose)
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700
    assert stat.S_IMODE(tmp_path.stat().st_mode) == parent_mode
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        ensure_private_dir(tmp_path / "file")


def test_stale_temp_files_older_than_the_limit_are_removed_and_nothing_else(tmp_path: Path) -> None:
    now = 1_000_000.0
    names = {".ws1.json.abc.tmp": now - 7200, ".ws1.json.new.tmp": now - 10, "ws1.json": now - 7200}
    for name, mtime in names.items():
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (mtime, mtime))
    (tmp_path / ".dir.tmp").mkdir()
    (tmp_path / ".link.tmp").symlink_to(tmp_path / "ws1.json")
    os.utime(tmp_path / ".link.tmp", (now - 7200, now - 7200), follow_symlinks=False)
    removed = clean_stale_temp_files(tmp_path, ".*.tmp", older_than_s=3600, clock=lambda: now)
    assert removed == [tmp_path / ".ws1.json.abc.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dir.tmp", ".link.tmp", ".ws1.json.new.tmp", "ws1.json"]
    assert clean_stale_temp_files(tmp_path / "missing", ".*.tmp", older_than_s=0, clock=lambda: now) == []
