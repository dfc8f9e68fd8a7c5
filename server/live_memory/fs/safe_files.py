"""Safe file access for everything that reads, hashes or writes files: the tools, ingestion, snapshots.

Reading: only regular files are ever read. A path is opened with O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC
(a FIFO cannot block the open, a final symbolic link is not followed), after an lstat that refuses
FIFOs, devices, sockets and directories without opening them, and the descriptor is fstat-ed again, so
what is read is what was checked. `open_beneath` walks a relative path from a root directory one
component at a time, each opened with O_NOFOLLOW relative to its parent's descriptor, so no symbolic
link anywhere in the path is followed (a path swapped for a link after a check is refused, not read).

Hashing streams the file in chunks from the descriptor (memory stays flat for any size). Reading a
prefix (`read_prefix`, `read_text_bounded`) never reads past its bound. `read_for_revalidation` hashes
(and reads, when small) the files a restored snapshot names, to tell which changed while it was stopped.

Writing: `atomic_write` (temp file 0600 in the same directory, fsync, rename, fsync of the directory;
either fsync may be left to `dir_sync.DirectorySyncer`), `fsync_file`/`fsync_dir`,
`ensure_private_dir` (0700 whatever the umask) and `clean_stale_temp_files` (leftovers of a kill).

Must never: block on a FIFO or device, follow a symbolic link it was told not to, hold a whole file in
memory to hash it, or leave a torn or world-readable file behind a write.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from live_memory.constants import HASH_CHUNK_BYTES
from live_memory.core.errors import NotRegularFileError

__all__ = [
    "DIR_FLAGS",
    "FILE_FLAGS",
    "ROOT_FLAGS",
    "FileDigest",
    "atomic_write",
    "clean_stale_temp_files",
    "ensure_private_dir",
    "fsync_dir",
    "fsync_file",
    "open_beneath",
    "open_regular",
    "read_prefix",
    "read_text_bounded",
    "regular_file",
    "sha256_fd",
    "sha256_file",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW | _CLOEXEC
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC  # the root itself may be reached via links
_HAS_PREADV = hasattr(os, "preadv")


class FileDigest(NamedTuple):
    sha256: str  # hex digest of exactly `size` bytes
    size: int


def _shown(path: str | os.PathLike[str]) -> str:
    return os.fspath(path)


def open_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> int:
    """Open a regular file for reading (name relative to `dir_fd` when given); returns the descriptor.

    The final component is not followed. Raises NotRegularFileError for anything but a regular file
    (nothing else is even opened, barring a swap between the lstat and the open, which the fstat
    catches), FileNotFoundError/PermissionError/... as usual.
    """
    shown = _shown(path)
    before = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFileError(shown, before.st_mode)
    try:
        fd = os.open(path, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # swapped for a link since the lstat
            raise NotRegularFileError(shown, stat.S_IFLNK) from None
        raise
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode):
            raise NotRegularFileError(shown, after.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def regular_file(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> Iterator[int]:
    """`open_regular` as a context manager that closes the descriptor."""
    fd = open_regular(path, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _components(rel: str) -> list[str]:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValueError(f"'..' in a path opened beneath a root: {rel!r}")
    return parts


def open_beneath(root: str | os.PathLike[str] | int, rel: str, *, directory: bool = False) -> int:
    """Open `rel` (a "/"-separated relative path) beneath `root` without following any link in it.

    `root` is a directory path (opened following links: it is the trusted starting point) or an open
    directory descriptor (not closed). Every component of `rel` is opened with O_NOFOLLOW relative to
    its parent's descriptor. Returns a regular file's descriptor, or a directory's when `directory`
    ("" then means the root itself). Raises NotRegularFileError when a component is a symbolic link
    or the final one is of the wrong type, ValueError for ".." components, other OSErrors as usual.
    """
    parts = _components(rel)
    if not parts and not directory:
        raise NotRegularFileError(".", stat.S_IFDIR)
    fd = root if isinstance(root, int) else os.open(root, ROOT_FLAGS)
    owned = not isinstance(root, int)
    try:
        last = len(parts) - 1
        for index, part in enumerate(parts):
            shown = "/".join(parts[: index + 1])
            if index == last and not directory:
                child = _open_file_component(part, fd, shown)
            else:
                child = _open_dir_component(part, fd, shown)
            if owned:
                os.close(fd)
            fd, owned = child, True
        if not owned:  # rel named the caller's own root descriptor: hand back a descriptor of its own
            fd, owned = os.dup(fd), True
        return fd
    except BaseException:
        if owned:
            os.close(fd)
        raise


def _open_file_component(name: str, dir_fd: int, shown: str) -> int:
    try:
        return open_regular(name, dir_fd=dir_fd)
    except NotRegularFileError as exc:
        raise NotRegularFileError(shown, exc.mode) from None


def _open_dir_component(name: str, dir_fd: int, shown: str) -> int:
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
            raise
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except OSError:
            raise exc from None
        raise NotRegularFileError(shown, mode, expected="a directory") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISDIR(mode):  # O_DIRECTORY is missing on a few systems
        os.close(fd)
        raise NotRegularFileError(shown, mode, expected="a directory")
    return fd


def sha256_fd(fd: int, *, max_bytes: int | None = None) -> FileDigest | None:
    """SHA-256 and size of the whole file behind `fd`, streamed in chunks with pread (the descriptor's
    position is left alone, so a reader sharing it is not disturbed).

    Size cap: with `max_bytes`, a file larger than that is not hashed and None is returned (checked
    against fstat before reading, and again while reading in case it grows); without it, any size is
    hashed. Memory stays at one chunk either way.
    """
    if max_bytes is not None and os.fstat(fd).st_size > max_bytes:
        return None
    digest = hashlib.sha256()
    buffer = bytearray(HASH_CHUNK_BYTES)
    view = memoryview(buffer)
    offset = 0
    while True:
        if _HAS_PREADV:
            count = os.preadv(fd, [buffer], offset)  # into one reused buffer: no allocation per chunk
            chunk: bytes | memoryview = view[:count]
        else:
            chunk = os.pread(fd, HASH_CHUNK_BYTES, offset)
            count = len(chunk)
        if count <= 0:
            break
        digest.update(chunk)
        offset += count
        if max_bytes is not None and offset > max_bytes:
            return None
    return FileDigest(digest.hexdigest(), offset)


def sha256_file(
    path: str | os.PathLike[str],
    *,
    dir_fd: int | None = None,
    follow_symlinks: bool = False,
    max_bytes: int | None = None,
) -> FileDigest | None:
    """`sha256_fd` of a regular file opened by path (see `open_regular`; None: over `max_bytes`).

    `follow_symlinks` resolves the path first (realpath) and then opens the result without following,
    for callers that name files the way a user did, links included; only regular files are hashed.
    """
    if follow_symlinks and dir_fd is None:
        path = os.path.realpath(path)
    with regular_file(path, dir_fd=dir_fd) as fd:
        return sha256_fd(fd, max_bytes=max_bytes)


def read_prefix(fd: int, max_bytes: int) -> bytes:
    """At most `max_bytes` bytes from the start of the file behind `fd` (pread: the position is kept)."""
    chunks: list[bytes] = []
    offset = 0
    while offset < max_bytes:
        chunk = os.pread(fd, min(max_bytes - offset, HASH_CHUNK_BYTES), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def read_text_bounded(path: str | os.PathLike[str], max_bytes: int, *, dir_fd: int | None = None) -> str:
    """The first `max_bytes` bytes of a regular file as text (undecodable bytes replaced). Raises
    NotRegularFileError / OSError like `open_regular`."""
    with regular_file(path, dir_fd=dir_fd) as fd:
        return read_prefix(fd, max_bytes).decode("utf-8", "replace")


# -- writing ------------------------------------------------------------------------------------------
def atomic_write(
    path: str | os.PathLike[str], data: bytes, mode: int = 0o600, *, sync_file: bool = True, sync_dir: bool = True
) -> None:
    """Replace `path` with `data` atomically: a reader (or a crash) sees the old file or the new one.

    A temp file `.<name>.<random>.tmp` is created 0600 in the same directory, written, fsync-ed, given
    `mode`, renamed over `path`, and the directory is fsync-ed. On any failure the temp file is removed
    and the error propagates. Blocking: call it from a worker thread.

    `sync_dir=False` leaves the directory fsync to the caller (`dir_sync.DirectorySyncer` does it later,
    coalesced): until then a power loss may bring back the old file, never a torn one. `sync_file=False`
    skips the file's own fsync too (the syncer can do it later): a power loss before that may leave the
    new name empty, so only for a cache of another file or data whose loss is acceptable (an advisory
    tally), never for a snapshot. A kill of the process leaves the old file or the new one either way.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync_file:
                os.fsync(fd)
            if mode != 0o600:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(target.parent)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush a file's data to disk (one written without its own fsync); a link is not followed."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make a rename or unlink in `directory` durable."""
    fd = os.open(directory, ROOT_FLAGS)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_private_dir(path: str | os.PathLike[str]) -> Path:
    """Make sure `path` is a directory only its owner can enter.

    Missing directories (parents included) are created 0700 whatever the umask. An existing directory
    we own that others can access is tightened to 0700; one owned by someone else is left as it is
    (it is not ours to change). Raises NotADirectoryError when something else is in the way.
    """
    target = Path(path)
    make_private_dirs(target)
    info = os.stat(target)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, f"'{target}' exists and is not a directory")
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(target, 0o700)
    return target


def make_private_dirs(path: str | os.PathLike[str]) -> list[Path]:
    """Create `path` and its missing parents 0700 (whatever the umask); returns the ones created, outermost
    first (a caller running as root may hand them to the account that will use them)."""
    missing: list[Path] = []
    probe = Path(path)
    while not probe.exists() and not probe.is_symlink():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    created: list[Path] = []
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            continue  # created meanwhile by someone else: the caller checks it like any existing directory
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask
        created.append(directory)
    return created


def clean_stale_temp_files(
    directory: str | os.PathLike[str],
    pattern: str = ".*.tmp",
    older_than_s: float = 3600.0,
    clock: Callable[[], float] = time.time,
) -> list[Path]:
    """Remove regular files in `directory` whose name matches `pattern` (fnmatch, e.g. ".<id>.*.tmp")
    and whose modification time is at least `older_than_s` seconds before `clock()` (wall-clock
    seconds, like st_mtime): the leftovers of writes killed before their rename. Links and
    directories are never touched; a missing directory is fine. Returns what was removed.
    """
    removed: list[Path] = []
    now = clock()
    try:
        with os.scandir(directory) as scan:
            entries = list(scan)
    except FileNotFoundError:
        return removed
    for entry in entries:
        if not fnmatch.fnmatchcase(entry.name, pattern):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or now - info.st_mtime < older_than_s:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue  # removed meanwhile
        removed.append(Path(entry.path))
    return removed


# --- re-validation ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiskFile:
    sha256: str | None  # None: missing, unreadable, or not a regular file
    text: str | None = None  # the content, for files asked to be read that are small UTF-8 text


def read_for_revalidation(
    root: Path, paths: Iterable[str], read_text: Iterable[str] = (), max_text_bytes: int = 0
) -> dict[str, DiskFile]:
    """Current SHA-256 of each workspace-relative path (streamed, regular files only: a FIFO or device
    is never opened for reading), and the text of those in `read_text` that fit `max_text_bytes`.
    Blocking (worker threads only)."""
    wanted = set(read_text)
    found: dict[str, DiskFile] = {}
    for rel in paths:
        try:
            with regular_file(os.path.realpath(root / rel)) as fd:
                size = os.fstat(fd).st_size
                if rel in wanted and size <= max_text_bytes:
                    data = read_prefix(fd, size + 1)
                    found[rel] = DiskFile(hashlib.sha256(data).hexdigest(), _text(data))
                    continue
                digest = sha256_fd(fd)
        except OSError:
            digest = None
        found[rel] = DiskFile(digest.sha256 if digest is not None else None)
    return found


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def disk_hashes(root: Path, paths: Iterable[str]) -> dict[str, str | None]:
    """Current SHA-256 of each workspace-relative path (None: missing, unreadable, not regular). Blocking."""
    return {rel: disk.sha256 for rel, disk in read_for_revalidation(root, paths).items()}
