"""The find_paths tool: `find`-style enumeration (name glob, type f/d, max_depth) over the same
gitignore-aware listing Glob uses. Directories are derived from the files under them, shown with a
trailing "/" and their file count, so directories holding only ignored files do not appear.

Must never: list .git, list ignored files, show a secret file as anything but withheld, or show an
entry that is no longer reachable without following a link (recheck.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from live_memory.constants import FIND_PATHS_DEFAULT_LIMIT, LISTING_MAX_LIMIT
from live_memory.core.errors import ArgumentError, GlobError, JailRefusal
from live_memory.fs.globs import PathGlob, compile_path_glob
from live_memory.fs.jail import show_path
from live_memory.tools.args import Arguments
from live_memory.tools.context import ToolContext, ToolOutcome, bound_text, resolve_existing
from live_memory.tools.listing import FileListing, list_files, listing_text
from live_memory.tools.recheck import Recheck
from live_memory.tools.search import WITHHELD

__all__ = ["run_find_paths"]

_TYPES = {"f": "f", "file": "f", "files": "f", "d": "d", "dir": "d", "directory": "d", "directories": "d"}


async def run_find_paths(ctx: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
    try:
        args = Arguments(
            "find_paths",
            arguments,
            known=("name", "type", "max_depth", "path", "limit"),
            aliases={"pattern": "name", "name_pattern": "name", "max_results": "limit", "depth": "max_depth"},
        )
        name = args.string("name")
        kind_raw = args.string("type")
        max_depth = args.integer("max_depth", default=0, minimum=1) if args.has("max_depth") else None
        path = args.string("path")
        limit = args.integer("limit", default=FIND_PATHS_DEFAULT_LIMIT, minimum=1, maximum=LISTING_MAX_LIMIT)
        kind = _TYPES.get((kind_raw or "").strip().lower()) if kind_raw else None
        if kind_raw and kind is None:
            raise ArgumentError(f"find_paths: 'type' must be 'f' (files) or 'd' (directories), got {kind_raw!r}")
        if name is not None and "/" in name.strip("/"):
            raise ArgumentError(
                "find_paths: 'name' matches a base name only (e.g. '*.py' or 'test_*'); use Glob for path patterns"
            )
    except ArgumentError as exc:
        return ToolOutcome(str(exc), is_error=True)
    target = await resolve_existing(
        ctx, path, "Directory does not exist: '{path}'. Paths are relative to the workspace root."
    )
    if isinstance(target, ToolOutcome):
        return target
    if target.kind != "dir":
        return ToolOutcome(f"find_paths: '{show_path(target.rel)}' is a file, not a directory.", is_error=True)
    base = target.rel
    try:
        matcher = compile_path_glob(name.strip("/"), case_insensitive=True) if name else None
    except GlobError as exc:
        return ToolOutcome(f"find_paths: {exc}", is_error=True)
    try:
        listing = await list_files(ctx, base)
    except (JailRefusal, OSError) as exc:
        reason = str(exc) if isinstance(exc, JailRefusal) else (exc.strerror or str(exc))
        return ToolOutcome(f"find_paths: cannot list '{show_path(base)}': {reason}", is_error=True)
    query = _Query(base, matcher, kind, max_depth, limit)
    shown, total, dir_counts = await asyncio.to_thread(_select, ctx, listing, query)
    lines: list[str] = []
    for rel, is_dir in shown:
        tag = WITHHELD if ctx.jail.is_secret(rel) else ""
        if is_dir:
            count = dir_counts[rel]
            lines.append(f"{rel}/ ({count} file{'' if count == 1 else 's'}){tag}")
        else:
            lines.append(rel + tag)
    narrow = "Narrow with name, type, max_depth or path"
    text = listing_text(lines, listing, limit=limit, total=total, noun="paths", narrow=narrow)
    text += args.ignored_note()
    return ToolOutcome(bound_text(text, ctx.limits.max_output_bytes, "narrow with name, type, max_depth or path"))


@dataclass(frozen=True)
class _Query:
    base: str
    matcher: PathGlob | None
    kind: str | None  # "f", "d" or None for both
    max_depth: int | None
    limit: int


def _select(
    ctx: ToolContext, listing: FileListing, query: _Query
) -> tuple[list[tuple[str, bool]], int, dict[str, int]]:
    """The first `limit` entries (path, is_dir) still reachable without links, the number of
    entries, and each directory's file count (blocking: it re-checks the entries it shows)."""
    base, matcher, kind, max_depth = query.base, query.matcher, query.kind, query.max_depth
    cut = len(base) + 1 if base else 0
    files: list[str] = []
    dir_counts: dict[str, int] = {}
    for path_rel in listing.paths:
        parts = path_rel[cut:].split("/")
        depth = len(parts)
        wanted = kind != "d" and (max_depth is None or depth <= max_depth)
        if wanted and (matcher is None or matcher.matches(parts[-1])):
            files.append(path_rel)
        if kind != "f":
            prefix = base
            for i, part in enumerate(parts[:-1], start=1):
                prefix = f"{prefix}/{part}" if prefix else part
                if max_depth is not None and i > max_depth:
                    break
                dir_counts[prefix] = dir_counts.get(prefix, 0) + 1
    dirs = [d for d in dir_counts if matcher is None or matcher.matches(d.rpartition("/")[2])]
    entries = sorted([(f, False) for f in files] + [(d, True) for d in dirs])
    shown: list[tuple[str, bool]] = []
    dropped = 0
    with Recheck(str(ctx.root)) as recheck:
        for rel, is_dir in entries:
            if len(shown) >= query.limit:
                break
            if (recheck.is_dir if is_dir else recheck.is_file)(rel):
                shown.append((rel, is_dir))
            else:
                dropped += 1
    return shown, len(entries) - dropped, dir_counts
