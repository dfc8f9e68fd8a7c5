"""What every tool handler receives and returns: ToolLimits, ToolContext, ToolOutcome, FileRead,
output bounding.

Owns the limits (all defaults from constants.py), the ripgrep discovery rule (cached process-wide),
the jail call every path argument goes through, and the one function that caps a result's size and
says so. Must never do blocking I/O on the event loop (path resolution runs in a thread; discovery
runs in `Toolbox.create`'s thread or once, cached).
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from live_memory.constants import (
    DEFAULT_SECRET_GLOBS,
    MAX_TOOL_OUTPUT_BYTES,
    READ_DEFAULT_LINES,
    READ_MAX_LINE_CHARS,
    TOOL_HASH_MAX_BYTES,
    TOOL_SUBPROCESS_TIMEOUT_S,
)
from live_memory.core.errors import JailRefusal
from live_memory.fs.jail import Jail, show_path

if TYPE_CHECKING:  # the keeper reads contexts too
    from live_memory.tools.index_keeper import IndexKeeper

__all__ = [
    "FileRead",
    "Resolved",
    "ToolContext",
    "ToolLimits",
    "ToolOutcome",
    "bound_text",
    "find_ripgrep",
    "opened_off_loop",
    "resolve_existing",
    "resolve_path",
]

_T = TypeVar("_T")


@dataclass(frozen=True)
class FileRead:
    """A file whose content a tool call returned, fingerprinted from the very descriptor it was read
    from (the whole file, even when only a window of it was shown)."""

    path: str  # workspace-relative POSIX path of the real file (links resolved)
    sha256: str  # hex SHA-256 of the whole file
    size: int  # bytes hashed


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call's result as the model sees it."""

    text: str  # bounded by ToolLimits.max_output_bytes
    is_error: bool = False  # the model can correct it: bad regex, missing file, refusal, bad arguments
    # Files whose content this call returned. A file over ToolLimits.hash_max_bytes is not listed.
    files_read: tuple[FileRead, ...] = ()


@dataclass(frozen=True)
class ToolLimits:
    """Per-toolbox limits. Per-tool entry caps (head_limit, limit, max_count) live in constants.py."""

    max_output_bytes: int = MAX_TOOL_OUTPUT_BYTES
    secret_globs: tuple[str, ...] = DEFAULT_SECRET_GLOBS
    subprocess_timeout_s: float = TOOL_SUBPROCESS_TIMEOUT_S
    max_read_lines: int = READ_DEFAULT_LINES  # Read's default window, like Claude Code's 2000 lines
    max_line_chars: int = READ_MAX_LINE_CHARS  # Read cuts longer lines
    use_ripgrep: bool = True  # False: no ripgrep (Grep is unavailable; Glob/find_paths use the walker)
    ripgrep_path: str | None = None  # None: the venv's bin dir next to sys.executable, then PATH
    hash_max_bytes: int = TOOL_HASH_MAX_BYTES  # a larger file read by a tool gets no FileRead


def find_ripgrep(limits: ToolLimits) -> str | None:
    """Locate the rg binary: an explicit path, the running interpreter's bin dir (the `ripgrep`
    wheel installs there), then PATH. None: Grep is unavailable and listings use the walker.
    Blocking (stat/access calls) the first time for a given setting; cached for the process."""
    if not limits.use_ripgrep:
        return None
    return _discover_ripgrep(limits.ripgrep_path, sys.executable, os.environ.get("PATH", ""))


@functools.lru_cache(maxsize=16)
def _discover_ripgrep(explicit: str | None, executable: str, search_path: str) -> str | None:
    if explicit is not None:
        return explicit if os.access(explicit, os.X_OK) else None
    beside = Path(executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg", path=search_path)


@dataclass(frozen=True)
class ToolContext:
    """Everything a handler may use: the workspace's jail, the limits and the symbol index."""

    jail: Jail
    limits: ToolLimits = field(default_factory=ToolLimits)
    ripgrep: str | None = None
    in_git: bool = False  # the root is a git repository's (a .git directory or file): see ripgrep_base_args
    # The checkout's symbol index (tools/index_keeper.py): find_symbol reads what the scan would find from it once
    # it is ready; None: no index (the scan answers).
    index: IndexKeeper | None = None
    # Whether a path found by a search may be shown (find_symbol's _shown: a lexical check of the jail's fixed
    # policy), remembered: a name defined or mentioned in thousands of files is checked once per file, not per
    # question. Bounded by SHOWN_PATHS_KEPT (then started afresh); read and written by the tools' threads.
    shown_paths: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @property
    def root(self) -> Path:
        return self.jail.root


def bound_text(text: str, max_bytes: int, hint: str) -> str:
    """Cap `text` at `max_bytes` UTF-8 bytes, cutting at a line boundary and saying how to narrow.

    Also makes the text valid UTF-8: a file name that is not (kept as surrogate escapes by the
    listing) shows "?" where its undecodable bytes were.
    """
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return data.decode("utf-8")
    note = f"\n[output truncated at {max_bytes} bytes; {hint}]"
    room = max(max_bytes - len(note.encode("utf-8")), 0)
    head = data[:room]
    cut = head.rfind(b"\n")
    if cut > 0:
        head = head[:cut]
    return head.decode("utf-8", "ignore") + note


@dataclass(frozen=True)
class Resolved:
    """A path argument after the jail: real path, workspace-relative form ("" for the root), kind."""

    real: Path
    rel: str
    kind: str  # "file" | "dir" | "missing" | "other" (FIFO, device, socket)


def _resolve(jail: Jail, path: str, allow_dir: bool) -> Resolved:
    real = jail.resolve(path, allow_dir=allow_dir)
    rel = jail.relative(real)
    try:
        mode = real.stat().st_mode
    except OSError:
        kind = "missing"
    else:
        kind = "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"
    return Resolved(real, "" if rel == "." else rel, kind)


async def resolve_path(ctx: ToolContext, path: str | None, *, allow_dir: bool = True) -> Resolved:
    """Resolve a tool's path argument through the jail, in a thread (it stats the filesystem).
    Raises JailRefusal."""
    return await asyncio.to_thread(_resolve, ctx.jail, path or "", allow_dir)


async def resolve_existing(ctx: ToolContext, path: str | None, missing: str) -> Resolved | ToolOutcome:
    """`resolve_path` for a path that must exist: a refusal, or `missing` (its `{path}` filled in) when
    nothing is there, comes back as the tool's error."""
    try:
        target = await resolve_path(ctx, path)
    except JailRefusal as exc:
        return ToolOutcome(str(exc), is_error=True)
    if target.kind == "missing":
        return ToolOutcome(missing.format(path=show_path(path or "")), is_error=True)
    return target


async def opened_off_loop(open_: Callable[[], _T], close: Callable[[_T], object]) -> _T:
    """Open something (a descriptor, a handle) in a worker thread. If the caller is cancelled while
    the thread runs, what it opened is closed when it finishes instead of leaking."""
    future = asyncio.ensure_future(asyncio.to_thread(open_))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        future.add_done_callback(lambda done: _close_result(done, close))
        raise


def _close_result(done: asyncio.Future[_T], close: Callable[[_T], object]) -> None:
    if not done.cancelled() and done.exception() is None:
        close(done.result())
