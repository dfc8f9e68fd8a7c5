"""Workspace file enumeration for Glob and find_paths: `rg --files` when ripgrep is available (parallel,
gitignore-aware), else the pure-Python walker in a thread. Both honour .gitignore/.ignore/.rgignore,
include hidden files, skip .git and do not follow symbolic links, so they list the same files.

ripgrep is started *in* the listed directory through the jail's descriptor of it (never handed a path
it would follow); callers re-check the entries they show (recheck.py), since ripgrep's own walk opens
directories by path.

Must never: list anything under .git, follow a symlink out of the workspace, or run the walker on the
event loop. Secret files *are* listed (callers mark them withheld).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass

from live_memory.constants import LISTING_MAX_RAW_BYTES
from live_memory.fs.subproc import run_bounded
from live_memory.fs.walk import walk_paths
from live_memory.tools.context import ToolContext, opened_off_loop

__all__ = ["GIT_EXCLUDE", "FileListing", "list_files", "listing_text", "ripgrep_base_args", "walk_listing"]

# Each listed path costs at least this many bytes of output; the walker stops at the same budget.
_MIN_ENTRY_BYTES = 2


@dataclass(frozen=True)
class FileListing:
    paths: list[str]  # workspace-relative, sorted
    complete: bool  # False when the cap or the timeout cut the listing short


def listing_text(lines: list[str], listing: FileListing, *, limit: int, total: int, noun: str, narrow: str) -> str:
    """A listing tool's answer: its lines (or that nothing was found), then what was left out and how to
    narrow it down."""
    shown = lines or ["No files found" if noun == "matches" else f"No {noun} found"]
    if total > limit:
        shown.append(f"[Showing the first {limit} of {total} {noun}, sorted by path. {narrow}, or raise limit.]")
    if not listing.complete:
        shown.append("[The listing stopped early (time or size cap); results are incomplete. Narrow the path.]")
    return "\n".join(shown)


def ripgrep_base_args(ripgrep: str, *, at_root: bool = False, in_git: bool = False) -> list[str]:
    """Flags every ripgrep call shares: no user config, gitignore (even outside a repo), hidden files
    included. Callers append GIT_EXCLUDE *after* any glob of their own: ripgrep lets a later glob win.
    Ignore files above the workspace root (another repository's, which may ignore this whole checkout) must
    not apply, as git does not apply them either: `at_root` (the search starts at the root) drops every
    parent's; `in_git` (the root is a repository) lets ripgrep stop at the repository's own root, as git does,
    where `--no-require-git` would read the ignore files of the directories above it too."""
    base = [ripgrep, "--no-config", "--hidden", "--no-messages", *(() if in_git else ("--no-require-git",))]
    return [*base, "--no-ignore-parent"] if at_root else base


GIT_EXCLUDE = ("--glob", "!.git")


async def list_files(
    ctx: ToolContext, start_rel: str, *, max_depth: int | None = None, max_bytes: int = LISTING_MAX_RAW_BYTES
) -> FileListing:
    """All non-ignored regular files under `start_rel` ("" is the root), sorted by path; `max_depth` 1: only
    those directly in it; past `max_bytes` of names the listing is cut short (complete False). Raises JailRefusal
    or OSError when the start directory cannot be opened safely."""
    if ctx.ripgrep is not None:
        base = ripgrep_base_args(ctx.ripgrep, at_root=not start_rel, in_git=ctx.in_git)
        depth = ("--max-depth", str(max_depth)) if max_depth is not None else ()
        argv = [*base, "--files", "--null", *depth, *GIT_EXCLUDE]
        start_fd = await opened_off_loop(lambda: ctx.jail.open_dir(ctx.root / start_rel), os.close)
        try:
            result = await run_bounded(
                argv,
                cwd=ctx.root / start_rel,  # used only where the descriptor cannot pin the directory
                cwd_fd=start_fd,
                timeout_s=ctx.limits.subprocess_timeout_s,
                max_bytes=max_bytes,
            )
        except OSError:
            pass  # ripgrep vanished or cannot run: fall through to the walker
        else:
            # Exit 1 is "no files"; 2 is "some directory was unreadable" with the rest still listed.
            raw = result.stdout.decode("utf-8", "surrogateescape").split("\0")
            complete = not (result.truncated or result.timed_out)
            if not complete:
                raw = raw[:-1]  # the last entry may be cut mid-name
            prefix = start_rel + "/" if start_rel else ""
            return FileListing(sorted(prefix + p for p in raw if p), complete)
        finally:
            os.close(start_fd)
    listing = await walk_listing(ctx, start_rel)
    if max_depth is None:
        return listing
    deepest = start_rel.count("/") + (1 if start_rel else 0) + max_depth
    return FileListing([p for p in listing.paths if p.count("/") < deepest], listing.complete)


async def walk_listing(ctx: ToolContext, start_rel: str) -> FileListing:
    """The pure-Python listing (same rules as `rg --files`), bounded in time and size."""
    stop = threading.Event()
    deadline = time.monotonic() + ctx.limits.subprocess_timeout_s
    max_entries = LISTING_MAX_RAW_BYTES // _MIN_ENTRY_BYTES

    def should_stop() -> bool:
        return stop.is_set() or time.monotonic() > deadline

    def collect() -> FileListing:
        paths: list[str] = []
        for rel, _is_dir in walk_paths(str(ctx.root), start_rel, should_stop=should_stop):
            paths.append(rel)
            if len(paths) >= max_entries:
                return FileListing(sorted(paths), False)
        return FileListing(sorted(paths), not should_stop())

    try:
        return await asyncio.to_thread(collect)
    finally:
        stop.set()  # on cancellation the thread notices at its next directory
