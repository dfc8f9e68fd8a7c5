"""Re-checking what ripgrep reported before any of it is shown, through descriptors that follow no link.

ripgrep walks without following links, but it opens each directory and file by path after reading
its parent directory, so an entry swapped for a link in that instant is followed, and an outside
file's name or content comes back under a workspace path. Every reported entry that is about to be
shown is therefore looked up again from the workspace root, one component at a time with O_NOFOLLOW
(a link anywhere on the way fails the lookup): a listed path must still be a regular file (or a
directory), and a content line must be, byte for byte, that line of the file reached this way. What
fails is dropped, so no outside name or content can be shown, nor a secret read through a link.

Blocking (worker threads only). Holds at most one directory descriptor per path component and one
file open at a time; `close()` (or the context manager) releases them.
"""

from __future__ import annotations

import os
import stat
from types import TracebackType
from typing import BinaryIO

from live_memory.constants import GREP_MAX_COLUMNS
from live_memory.fs.safe_files import DIR_FLAGS, ROOT_FLAGS, open_regular

__all__ = ["OMITTED_LINE", "Recheck"]

OMITTED_LINE = "[Omitted long matching line]"  # what ripgrep's --max-columns prints instead of a line
_SKIP_CHUNK = 1024 * 1024


class Recheck:
    """Looks entries up again beneath `root` (a real, absolute directory path)."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._stack: list[tuple[str, int]] = []  # (relative directory, its descriptor), root first
        self._file: tuple[str, BinaryIO] | None = None
        self._line = 0  # lines consumed from the open file

    def __enter__(self) -> Recheck:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._close_file()
        while self._stack:
            os.close(self._stack.pop()[1])

    # -- directories ------------------------------------------------------------------------------------
    def _dir(self, rel_dir: str) -> int | None:
        """The descriptor of a directory reached from the root without links, or None. Entries come
        sorted by path, so the directories of the previous lookup are kept while they are a prefix."""
        parts = rel_dir.split("/") if rel_dir else []
        if not self._stack:
            try:
                self._stack.append(("", os.open(self._root, ROOT_FLAGS)))
            except OSError:
                return None
        keep = 1
        while keep < len(self._stack) and keep <= len(parts) and self._stack[keep][0] == "/".join(parts[:keep]):
            keep += 1
        while len(self._stack) > keep:
            os.close(self._stack.pop()[1])
        for depth in range(len(self._stack), len(parts) + 1):
            try:
                fd = os.open(parts[depth - 1], DIR_FLAGS, dir_fd=self._stack[-1][1])
            except OSError:
                return None  # missing, not a directory, or a link
            self._stack.append(("/".join(parts[:depth]), fd))
        return self._stack[-1][1]

    def mode(self, rel: str) -> int | None:
        """The st_mode of `rel` itself (not followed), reached without links; None if unreachable."""
        parent, _, name = rel.rpartition("/")
        dir_fd = self._dir(parent)
        if dir_fd is None or not name:
            return None
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except OSError:
            return None

    def is_file(self, rel: str) -> bool:
        mode = self.mode(rel)
        return mode is not None and stat.S_ISREG(mode)

    def is_dir(self, rel: str) -> bool:
        mode = self.mode(rel)
        return mode is not None and stat.S_ISDIR(mode)

    # -- content lines ----------------------------------------------------------------------------------
    def line_matches(self, rel: str, number: int, text: str) -> bool:
        """Whether line `number` (1-based) of `rel` is `text`, as ripgrep prints it (see `line`). Calls for one
        file should come in ascending line order (ripgrep's), or the file is read again from the start."""
        return self.line(rel, number) == text

    def line(self, rel: str, number: int) -> str | None:
        """Line `number` (1-based) of `rel` as ripgrep prints it (CR dropped; a line over GREP_MAX_COLUMNS bytes
        printed as OMITTED_LINE), or None when the file or the line is not there."""
        handle = self._open_at(rel, number)
        if handle is None:
            return None
        while self._line < number - 1:
            if not _skip_line(handle):
                return None
            self._line += 1
        raw = handle.readline(GREP_MAX_COLUMNS + 1)
        if not raw:
            return None
        self._line += 1
        ended = raw.endswith(b"\n")
        if not ended and len(raw) > GREP_MAX_COLUMNS:  # an overlong line: finish skipping it
            while (rest := handle.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
                pass
            return OMITTED_LINE
        if len(raw) > GREP_MAX_COLUMNS:
            return OMITTED_LINE
        line = raw[:-1] if ended else raw
        return line.decode("utf-8", "surrogateescape").removesuffix("\r")

    def _open_at(self, rel: str, number: int) -> BinaryIO | None:
        if self._file is not None and self._file[0] == rel and self._line < number:
            return self._file[1]
        self._close_file()
        parent, _, name = rel.rpartition("/")
        dir_fd = self._dir(parent)
        if dir_fd is None or not name:
            return None
        try:
            fd = open_regular(name, dir_fd=dir_fd)
        except OSError:
            return None
        handle = open(fd, "rb")  # noqa: SIM115 - kept open across calls, closed by _close_file
        self._file = (rel, handle)
        self._line = 0
        return handle

    def _close_file(self) -> None:
        if self._file is not None:
            self._file[1].close()
            self._file = None


def _skip_line(handle: BinaryIO) -> bool:
    """Consume one line (of any length); False at the end of the file."""
    chunk = handle.readline(_SKIP_CHUNK)
    if not chunk:
        return False
    while not chunk.endswith(b"\n"):
        chunk = handle.readline(_SKIP_CHUNK)
        if not chunk:
            return True  # the last line, without a terminator
    return True
