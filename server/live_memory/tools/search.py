"""The Grep and Glob tools: argument handling and the text the model sees.

Grep runs ripgrep (grep_engines.py) on the start the jail opened. Glob matches a ripgrep-style glob
against the gitignore-aware file listing (listing.py). Every entry found by a walk is re-checked
through link-free descriptors before it is shown (recheck.py). Results are sorted by path, capped by
head_limit / limit and by max_output_bytes, and say when and how to narrow.

Must never: accept a pattern or path that reaches outside the workspace or into .git, print a
secret file's contents (Grep) or list .git (Glob), show an entry reached through a link, or block
the event loop.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from live_memory.constants import (
    GLOB_DEFAULT_LIMIT,
    GREP_DEFAULT_HEAD_LIMIT,
    GREP_MAX_HEAD_LIMIT,
    LISTING_MAX_LIMIT,
    MAX_PATH_CHARS,
)
from live_memory.core.errors import ArgumentError, GlobError, GrepError, JailRefusal
from live_memory.fs.globs import PathGlob, compile_path_glob, has_glob_magic
from live_memory.fs.jail import show_path
from live_memory.tools.args import Arguments
from live_memory.tools.context import (
    Resolved,
    ToolContext,
    ToolOutcome,
    bound_text,
    opened_off_loop,
    resolve_existing,
    resolve_path,
)
from live_memory.tools.grep_engines import GrepHits, GrepQuery, ripgrep_grep
from live_memory.tools.listing import FileListing, list_files, listing_text
from live_memory.tools.recheck import Recheck

__all__ = ["WITHHELD", "ShownCheck", "format_grep", "run_glob", "run_grep", "split_glob_pattern", "withheld_filter"]

WITHHELD = " [withheld: secret]"
_MODES = ("files_with_matches", "content", "count")
_DRIVE = re.compile(r"^[A-Za-z]:[/\\]")
_T = TypeVar("_T")
_NARROW_GREP = "narrow the search with path or glob, or lower head_limit"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# -- Grep ---------------------------------------------------------------------------------------------
async def run_grep(ctx: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
    try:
        args = Arguments(
            "Grep",
            arguments,
            known=("pattern", "path", "glob", "output_mode", "-i", "head_limit"),
            aliases={
                "regex": "pattern",
                "file_pattern": "glob",
                "include": "glob",
                "max_results": "head_limit",
                "ignore_case": "-i",
                "case_insensitive": "-i",
            },
        )
        pattern = args.string("pattern", required=True, example="'def main'")
        path = args.string("path")
        glob = args.string("glob")
        mode = args.choice("output_mode", _MODES, default="files_with_matches")
        ignore_case = args.boolean("-i", default=True)
        head_limit = args.integer("head_limit", default=GREP_DEFAULT_HEAD_LIMIT, minimum=1, maximum=GREP_MAX_HEAD_LIMIT)
    except ArgumentError as exc:
        return ToolOutcome(str(exc), is_error=True)
    assert pattern is not None
    if "\x00" in pattern or (glob is not None and "\x00" in glob):
        return ToolOutcome("Grep: pattern and glob must not contain NUL bytes.", is_error=True)
    if glob is not None:
        try:
            _check_glob_text(glob.removeprefix("!"), "glob")
        except JailRefusal as exc:
            return ToolOutcome(str(exc), is_error=True)
    target = await resolve_existing(ctx, path, "Path does not exist: '{path}'. Use Glob or find_paths to locate it.")
    if isinstance(target, ToolOutcome):
        return target
    if ctx.ripgrep is None:
        return ToolOutcome(
            "Grep is unavailable: the ripgrep binary (rg, from the 'ripgrep' package Live Memory depends on) "
            "was not found on the server. Use Glob or find_paths to locate files and Read to look inside them.",
            is_error=True,
        )
    is_file = target.kind != "dir"  # an explicit file is searched as given: it must be a text file
    query = GrepQuery(pattern, target.rel, is_file, glob, mode, ignore_case)
    try:
        start = await opened_off_loop(lambda: _open_start(ctx, target), os.close)
    except JailRefusal as exc:
        return ToolOutcome(str(exc), is_error=True)
    except OSError as exc:
        return ToolOutcome(f"Cannot search '{show_path(target.rel)}': {exc.strerror or exc}", is_error=True)
    try:
        hits = await ripgrep_grep(ctx, query, start_fd=start)
    except GrepError as exc:
        return ToolOutcome(str(exc), is_error=True)
    except OSError as exc:  # ripgrep vanished or cannot run
        return ToolOutcome(f"Grep failed: ripgrep could not run ({exc.strerror or exc}).", is_error=True)
    finally:
        os.close(start)
    text = await asyncio.to_thread(_render_grep, ctx, hits, mode, head_limit)
    return ToolOutcome(bound_text(text + args.ignored_note(), ctx.limits.max_output_bytes, _NARROW_GREP))


def _open_start(ctx: ToolContext, target: Resolved) -> int:
    """The jail's descriptor of the search start: the directory, or the checked text file."""
    if target.kind == "dir":
        return ctx.jail.open_dir(target.real)
    return ctx.jail.open_text_fd(target.real)


def _render_grep(ctx: ToolContext, hits: GrepHits, mode: str, head_limit: int) -> str:
    """Format hits (blocking: it re-checks walked entries on disk before they are shown)."""
    withheld = withheld_filter(ctx)
    if not hits.walked:
        return format_grep(hits.sort(), mode, head_limit, withheld)
    with Recheck(str(ctx.root)) as recheck:
        check = ShownCheck(recheck.is_file, lambda line: recheck.line_matches(*line))
        return format_grep(hits.sort(), mode, head_limit, withheld, check)


def withheld_filter(ctx: ToolContext) -> Callable[[str], bool]:
    """Defence in depth: whatever an engine returned, no secret or .git path goes out. Checked only
    for the entries actually shown (a common pattern can match tens of thousands of lines)."""
    verdicts: dict[str, bool] = {}

    def withheld(path: str) -> bool:
        verdict = verdicts.get(path)
        if verdict is None:
            verdict = verdicts[path] = ctx.jail.is_secret(path) or ".git" in path.split("/")
        return verdict

    return withheld


def _first(entries: Sequence[_T], head_limit: int, withheld: Callable[[_T], bool]) -> tuple[list[_T], int]:
    """The first head_limit entries that are not withheld, and the total less those found withheld."""
    shown: list[_T] = []
    dropped = 0
    for entry in entries:
        if withheld(entry):
            dropped += 1
        elif len(shown) < head_limit:
            shown.append(entry)
        else:
            break
    return shown, len(entries) - dropped


class ShownCheck(NamedTuple):
    """Last checks on entries about to be shown (re-checks of what ripgrep's walk reported)."""

    file: Callable[[str], bool]  # the path is still a file reached without links
    line: Callable[[tuple[str, int, str]], bool]  # that line is still on disk as reported


def format_grep(
    hits: GrepHits, mode: str, head_limit: int, withheld: Callable[[str], bool], shown: ShownCheck | None = None
) -> str:
    """Render sorted hits for the model. `withheld(path)` hides secret and .git paths; `shown`, when
    given, is asked about entries only as far as head_limit needs them (a failing one is dropped
    and the next taken). Counts of what is not shown are reported unchecked."""
    parts: list[str] = []
    if mode == "files_with_matches":
        file_ok = shown.file if shown is not None else None
        files, total = _first(hits.files, head_limit, lambda p: withheld(p) or (file_ok is not None and not file_ok(p)))
        if total == 0:
            parts.append("No files found")
        else:
            parts.append(f"Found {_plural(total, 'file')}")
            parts.extend(files)
            if total > head_limit:
                parts.append(
                    f"[Showing the first {head_limit} of {total} files (head_limit). "
                    "Narrow with path or glob, or raise head_limit.]"
                )
    elif mode == "content":
        line_ok = shown.line if shown is not None else None
        lines, total = _first(
            hits.lines, head_limit, lambda line: withheld(line[0]) or (line_ok is not None and not line_ok(line))
        )
        if total == 0:
            parts.append("No matches found")
        else:
            parts.extend(f"{p}:{n}:{t}" for p, n, t in lines)
            if total > head_limit:
                parts.append(
                    f"[Showing the first {head_limit} of {total} matching lines (head_limit). "
                    "Narrow with path or glob, or raise head_limit.]"
                )
    else:
        counts = [c for c in hits.counts if not withheld(c[0])]  # one entry per file: cheap enough
        file_ok = shown.file if shown is not None else None
        dropped: list[tuple[str, int]] = []

        def gone(count: tuple[str, int]) -> bool:
            if file_ok is None or file_ok(count[0]):
                return False
            dropped.append(count)
            return True

        listed, total = _first(counts, head_limit, gone)
        if total == 0:
            parts.append("No matches found")
        else:
            parts.extend(f"{p}:{n}" for p, n in listed)
            matching = sum(n for _p, n in counts) - sum(n for _p, n in dropped)
            parts.append(f"Found {_plural(matching, 'matching line')} in {_plural(total, 'file')}.")
            if total > head_limit:
                parts.append(f"[Showing the first {head_limit} of {total} files (head_limit).]")
    if not hits.complete:
        parts.append(f"[Search stopped early ({hits.stop_reason}); results are incomplete. Narrow with path or glob.]")
    return "\n".join(parts)


# -- Glob ---------------------------------------------------------------------------------------------
def _check_glob_text(pattern: str, what: str) -> None:
    """Refuse glob text that names a place outside the workspace or inside .git."""
    shown = show_path(pattern)
    if "\x00" in pattern:
        raise JailRefusal(f"{what} '{shown}' contains a NUL byte")
    if len(pattern) > MAX_PATH_CHARS:
        raise JailRefusal(f"{what} is {len(pattern)} characters long (the limit is {MAX_PATH_CHARS})")
    parts = re.split(r"[/\\]", pattern)
    if ".." in parts:
        raise JailRefusal(
            f"'..' is not allowed in the {what} '{shown}': tools only see the workspace; "
            "write it relative to the workspace root (or to path), e.g. 'src/**/*.py'"
        )
    if pattern.startswith("~") or _DRIVE.match(pattern):
        raise JailRefusal(f"the {what} '{shown}' points outside the workspace; write it relative to the workspace root")
    if any(p.casefold() == ".git" for p in parts):
        raise JailRefusal(
            f"the {what} '{shown}' reaches into .git (git's internal data), which the tools do not expose; "
            "use git_search for history and get_changed_files for status"
        )


def split_glob_pattern(ctx: ToolContext, pattern: str) -> tuple[str, str, bool]:
    """Split a Glob pattern into (literal leading directory, the rest, anchored).

    The directory prefix is listed instead of the whole workspace (fast), and an absolute pattern is
    accepted only when that prefix lies inside the workspace. Raises JailRefusal.
    """
    _check_glob_text(pattern, "pattern")
    text = pattern.strip()
    absolute = text.startswith("/")
    body = text.rstrip("/") or text
    anchored = "/" in body.lstrip("/") or absolute
    parts = [p for p in body.split("/") if p not in ("", ".")]
    literal: list[str] = []
    while len(parts) > 1 and not has_glob_magic(parts[0]):
        literal.append(parts.pop(0))
    prefix = "/".join(literal)
    if absolute:
        # Raises "outside the workspace" for "/etc/*"; turns "/<root>/src/*.py" into ("src", "*.py").
        prefix = ctx.jail.normalize("/" + prefix)
    return prefix, "/".join(parts), anchored


async def run_glob(ctx: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
    try:
        args = Arguments(
            "Glob",
            arguments,
            known=("pattern", "path", "limit"),
            aliases={
                "file_pattern": "pattern",
                "glob": "pattern",
                "max_results": "limit",
                "head_limit": "limit",
            },
        )
        pattern = args.string("pattern", required=True, example="'**/*.py'")
        path = args.string("path")
        limit = args.integer("limit", default=GLOB_DEFAULT_LIMIT, minimum=1, maximum=LISTING_MAX_LIMIT)
    except ArgumentError as exc:
        return ToolOutcome(str(exc), is_error=True)
    assert pattern is not None
    try:
        prefix, rest, anchored = split_glob_pattern(ctx, pattern)
        if pattern.strip().startswith("/"):
            path = None  # an absolute pattern names its own directory
        # With both, "/" as path keeps "/prefix" absolute (and so refused), as it should.
        base_arg = f"{path.rstrip('/')}/{prefix}" if prefix and path else prefix or path or ""
        target = await resolve_path(ctx, base_arg)
    except JailRefusal as exc:
        return ToolOutcome(str(exc), is_error=True)
    base = target.rel
    if target.kind == "missing":
        return ToolOutcome("No files found")
    if target.kind != "dir":
        return ToolOutcome(f"Glob: path '{show_path(base)}' is not a directory; use Read for a file.", is_error=True)
    try:
        matcher = compile_path_glob(rest or "**", anchored=anchored)
    except GlobError as exc:
        return ToolOutcome(f"Glob: {exc}", is_error=True)
    try:
        listing = await list_files(ctx, base)
    except (JailRefusal, OSError) as exc:
        return ToolOutcome(f"Glob: cannot list '{show_path(base)}': {_reason(exc)}", is_error=True)
    shown, total = await asyncio.to_thread(_select_glob, ctx, listing, matcher, base, limit)
    lines = [p + WITHHELD if ctx.jail.is_secret(p) else p for p in shown]
    narrow = "Use a more specific pattern or path"
    text = listing_text(lines, listing, limit=limit, total=total, noun="matches", narrow=narrow)
    text += args.ignored_note()
    return ToolOutcome(bound_text(text, ctx.limits.max_output_bytes, "use a more specific pattern or path"))


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, JailRefusal) else str(getattr(exc, "strerror", None) or exc)


def _select_glob(
    ctx: ToolContext, listing: FileListing, matcher: PathGlob, base: str, limit: int
) -> tuple[list[str], int]:
    """The first `limit` matches that are still regular files reached without links, and the number
    of matches (blocking: it re-checks the entries it shows)."""
    cut = len(base) + 1 if base else 0
    matched = [p for p in listing.paths if matcher.matches(p[cut:])]
    with Recheck(str(ctx.root)) as recheck:
        shown, total = _first(matched, limit, lambda p: not recheck.is_file(p))
    return shown, total
