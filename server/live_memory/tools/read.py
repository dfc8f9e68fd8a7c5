"""The Read tool: a window of a text file, each line after its number and a tab, as Claude Code's Read returns it.

Owns line windowing (offset/limit), the per-line cap, the byte cap and the "how to continue" footer.
Reads incrementally, so a multi-gigabyte file or a one-line minified bundle costs only the window.

The whole file's SHA-256 is streamed from the same descriptor the window was read from, so the
FileRead it reports is the fingerprint of exactly what was read (files over `hash_max_bytes` get none).

Must never: open a path the jail has not resolved and validated, read on the event loop, or return
content from a binary, device, FIFO, secret or .git file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

from live_memory.constants import READ_COUNT_LINES_MAX_BYTES
from live_memory.core.errors import ArgumentError, JailRefusal
from live_memory.fs.jail import show_path
from live_memory.fs.safe_files import sha256_fd
from live_memory.tools.args import Arguments
from live_memory.tools.context import FileRead, ToolContext, ToolOutcome

__all__ = ["run_read"]

# Room kept under the byte cap for the footer.
_FOOTER_RESERVE = 400
_COUNT_CHUNK = 1024 * 1024


async def run_read(ctx: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
    try:
        args = Arguments("Read", arguments, known=("file_path", "offset", "limit"), aliases={"path": "file_path"})
        file_path = args.string("file_path", required=True, example="'src/app.py'")
        offset = args.integer("offset", default=1, minimum=0)
        limit = args.integer("limit", default=ctx.limits.max_read_lines, minimum=1)
    except ArgumentError as exc:
        return ToolOutcome(str(exc), is_error=True)
    assert file_path is not None
    outcome = await asyncio.to_thread(_read, ctx, file_path, max(offset, 1), limit)
    note = args.ignored_note()
    return ToolOutcome(outcome.text + note, outcome.is_error, outcome.files_read) if note else outcome


def _read(ctx: ToolContext, file_path: str, start: int, limit: int) -> ToolOutcome:
    shown = show_path(file_path)
    try:
        real = ctx.jail.resolve(file_path)
        rel = ctx.jail.relative(real)
        with ctx.jail.open_text(real) as handle:
            outcome = _window(ctx, handle, rel, start, limit)
            if outcome.is_error:
                return outcome
            digest = sha256_fd(handle.fileno(), max_bytes=ctx.limits.hash_max_bytes)
        if digest is None:  # too large to fingerprint on every Read: shown, but not recorded as read
            return outcome
        return dataclasses.replace(outcome, files_read=(FileRead(rel, digest.sha256, digest.size),))
    except JailRefusal as exc:
        return ToolOutcome(str(exc), is_error=True)
    except FileNotFoundError:
        return ToolOutcome(
            f"File does not exist: '{shown}'. Paths are relative to the workspace root; "
            "use Glob or find_paths to locate it.",
            is_error=True,
        )
    except PermissionError:
        return ToolOutcome(f"Permission denied reading '{shown}'.", is_error=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return ToolOutcome(f"'{shown}' is a symbolic link loop; it cannot be read.", is_error=True)
        return ToolOutcome(f"Cannot read '{shown}': {exc.strerror or exc}.", is_error=True)


def _lines(handle: BinaryIO, cap: int) -> Iterator[tuple[bytes, bool]]:
    """Yield (line without its terminator, was_cut). A line longer than `cap` bytes is cut and the
    rest skipped without being held in memory."""
    while True:
        line = handle.readline(cap)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1], False
            continue
        if len(line) < cap:  # last line, no terminator
            yield line, False
            return
        while True:  # skip the rest of an overlong line
            rest = handle.readline(_COUNT_CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        yield line, True


def _count_lines(handle: BinaryIO) -> int | None:
    """Total lines of the file, or None when it is too large to count cheaply."""
    fd = handle.fileno()
    size = os.fstat(fd).st_size
    if size > READ_COUNT_LINES_MAX_BYTES:
        return None
    count = 0
    last = b""
    offset = 0
    while chunk := os.pread(fd, _COUNT_CHUNK, offset):
        count += chunk.count(b"\n")
        last = chunk[-1:]
        offset += len(chunk)
    return count + (1 if last not in (b"", b"\n") else 0)


def _window(ctx: ToolContext, handle: BinaryIO, rel: str, start: int, limit: int) -> ToolOutcome:
    max_chars = ctx.limits.max_line_chars
    budget = max(ctx.limits.max_output_bytes - _FOOTER_RESERVE, 1)
    out: list[str] = []
    used = 0
    more = False
    byte_capped = False
    seen = 0
    for seen, (raw, cut) in enumerate(_lines(handle, max_chars * 4 + 4), start=1):
        if seen < start:
            continue
        if len(out) >= limit:
            more = True
            break
        text = raw.rstrip(b"\r").decode("utf-8", "replace")
        if cut or len(text) > max_chars:
            text = text[:max_chars] + f" … [line cut at {max_chars} characters]"
        entry = f"{seen}\t{text}"  # unpadded, as Claude Code numbers them: padding costs tokens
        size = len(entry.encode("utf-8")) + 1
        if used + size > budget:
            more = byte_capped = True
            break
        out.append(entry)
        used += size
    if not out:
        if seen == 0 and start == 1:
            return ToolOutcome(f"(the file '{rel}' is empty)")
        return ToolOutcome(
            f"offset {start} is past the end of '{rel}' ({seen} lines); use an offset between 1 and {max(seen, 1)}.",
            is_error=True,
        )
    body = "\n".join(out)
    if not more:
        return ToolOutcome(body)
    last = start + len(out) - 1
    total = _count_lines(handle)
    of = f" of {total}" if total is not None else " (the file continues)"
    cap = f"; output capped at {ctx.limits.max_output_bytes} bytes" if byte_capped else ""
    footer = f"[Showing lines {start}-{last}{of}{cap}. Call Read with offset={last + 1} to continue.]"
    return ToolOutcome(f"{body}\n\n{footer}")
