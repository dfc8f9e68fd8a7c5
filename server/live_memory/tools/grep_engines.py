"""The two Grep engines behind one result type: ripgrep (a bounded subprocess) and a pure-Python
search (a thread) for hosts without the binary. Both apply the same rules so the Grep tool formats
identical output from either:

- .gitignore/.ignore/.rgignore honoured, hidden files searched, .git never, symlinks not followed;
- secret files and directories excluded (ripgrep `--iglob` negations; `SecretMatcher` in Python);
- the user glob: a whitelist matches files only, a "!" negation also prunes directories;
- binary files (a NUL byte) skipped;
- a matching line longer than GREP_MAX_COLUMNS bytes (terminator included) becomes
  "[Omitted long matching line]" (ripgrep's --max-columns);
- count mode counts matching lines per file.

One deliberate difference: ripgrep streams files of any size, while the Python engine (which reads a
file whole) skips files over GREP_MAX_FILE_BYTES to bound its memory.

Must never: search a path the jail has not resolved, return content of a secret or .git file, run
the Python search on the event loop, or leave a ripgrep child running after cancellation.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter

from live_memory.constants import GREP_MAX_COLUMNS, GREP_MAX_FILE_BYTES, GREP_MAX_RAW_BYTES
from live_memory.tools.context import ToolContext
from live_memory.tools.globs import GlobError, PathGlob, compile_path_glob
from live_memory.tools.listing import GIT_EXCLUDE, ripgrep_base_args
from live_memory.tools.subproc import run_bounded
from live_memory.tools.walk import walk_paths

__all__ = [
    "OMITTED_LINE",
    "GrepError",
    "GrepHits",
    "GrepQuery",
    "python_grep",
    "ripgrep_argv",
    "ripgrep_grep",
]

OMITTED_LINE = "[Omitted long matching line]"


class GrepError(Exception):
    """The search could not run as asked (a bad regex); the message is for the model."""


@dataclass(frozen=True)
class GrepQuery:
    pattern: str
    start_rel: str  # "" for the workspace root
    start_is_file: bool
    glob: str | None
    mode: str  # "content" | "files_with_matches" | "count"
    ignore_case: bool


@dataclass
class GrepHits:
    lines: list[tuple[str, int, str]] = field(default_factory=list)  # content: (path, line, text)
    files: list[str] = field(default_factory=list)  # files_with_matches
    counts: list[tuple[str, int]] = field(default_factory=list)  # count
    complete: bool = True
    stop_reason: str = ""

    def sort(self) -> GrepHits:
        """Order by path (ripgrep's threads interleave files). Both engines emit a file's lines
        contiguously and in order, so a stable sort on the path alone suffices, and stays in C."""
        self.lines.sort(key=_FIRST)
        self.files.sort()
        self.counts.sort(key=_FIRST)
        return self


_FIRST = itemgetter(0)
# ripgrep --null output records: "path\0line:text\n" (content) and "path\0count\n" (count).
_CONTENT_RECORD = re.compile(r"([^\n\x00]*)\x00(\d+):([^\n]*)\n")
_COUNT_RECORD = re.compile(r"([^\n\x00]*)\x00(\d+)\n")


# -- ripgrep ------------------------------------------------------------------------------------------
def ripgrep_argv(ctx: ToolContext, query: GrepQuery) -> list[str]:
    """The exact ripgrep command line for a query (also used by the benchmark as its baseline)."""
    assert ctx.ripgrep is not None
    mode_flag = {"content": "--line-number", "files_with_matches": "--files-with-matches", "count": "--count"}
    argv = [
        *ripgrep_base_args(ctx.ripgrep),
        "--null",
        "--with-filename",
        "--no-heading",
        "--color=never",
        f"--max-columns={GREP_MAX_COLUMNS}",
        # No --max-filesize: it costs ripgrep a stat() per file (~30% on a 100k-file tree) and
        # ripgrep streams big files anyway; the output cap and the timeout bound the call.
        "--ignore-case" if query.ignore_case else "--case-sensitive",
        mode_flag[query.mode],
    ]
    if query.glob:
        argv += ["--glob", query.glob]
    argv += GIT_EXCLUDE  # after the user's glob: the later glob wins in ripgrep
    for exclude in ctx.jail.secrets.ripgrep_excludes():
        argv += ["--iglob", exclude]
    argv += ["--regexp", query.pattern]
    if query.start_rel:
        argv += ["--", query.start_rel]
    return argv


async def ripgrep_grep(ctx: ToolContext, query: GrepQuery) -> GrepHits:
    argv = ripgrep_argv(ctx, query)
    result = await run_bounded(
        argv, cwd=ctx.root, timeout_s=ctx.limits.subprocess_timeout_s, max_bytes=GREP_MAX_RAW_BYTES
    )
    if result.returncode == 2 and not result.stdout:
        detail = result.stderr_text()
        if "regex" in detail:
            raise GrepError(f"Invalid regular expression (ripgrep/Rust syntax): {detail}")
        raise GrepError(f"Search failed: {detail or 'ripgrep exited with status 2'}")
    hits = GrepHits(complete=not (result.truncated or result.timed_out))
    if result.timed_out:
        hits.stop_reason = f"timed out after {ctx.limits.subprocess_timeout_s:g} s"
    elif result.truncated:
        hits.stop_reason = f"more than {GREP_MAX_RAW_BYTES // (1024 * 1024)} MiB of results"
    # One decode for the whole output; undecodable bytes survive as surrogate escapes (as in the
    # Python engine) and are shown as "?" by bound_text.
    text = result.stdout.decode("utf-8", "surrogateescape")
    if query.mode == "files_with_matches":
        names = text.split("\0")
        if not hits.complete:
            names = names[:-1]  # the last name may be cut
        hits.files = [n for n in names if n]
    elif query.mode == "count":
        hits.counts = [(path, int(count)) for path, count in _COUNT_RECORD.findall(text)]
    else:  # a record cut by the cap has no final newline, so the pattern skips it
        records = _CONTENT_RECORD.findall(text)
        if "\r" in text:  # CRLF files: drop the carriage return, as the Python engine does
            hits.lines = [(path, int(number), line.removesuffix("\r")) for path, number, line in records]
        else:
            hits.lines = [(path, int(number), line) for path, number, line in records]
    return hits


# -- pure Python --------------------------------------------------------------------------------------
async def python_grep(ctx: ToolContext, query: GrepQuery) -> GrepHits:
    """The same search without ripgrep, in a worker thread (bounded in time and output)."""
    flags = re.IGNORECASE if query.ignore_case else 0
    try:
        keep_glob = _user_glob_filter(query.glob)
    except GlobError as exc:
        raise GrepError(f"Invalid glob: {exc}") from None
    try:
        regex = re.compile(query.pattern, flags)
        whole = None if re.search(r"\\[AZ]", query.pattern) else re.compile(query.pattern, flags | re.MULTILINE)
    except re.error as exc:
        raise GrepError(f"Invalid regular expression: {exc}") from None
    stop = threading.Event()
    deadline = time.monotonic() + ctx.limits.subprocess_timeout_s
    try:
        return await asyncio.to_thread(
            lambda: _search(ctx, query, regex=regex, whole=whole, keep_glob=keep_glob, stop=stop, deadline=deadline)
        )
    finally:
        stop.set()  # on cancellation the thread stops at its next file


def _user_glob_filter(glob: str | None) -> Callable[[str], bool]:
    if not glob:
        return lambda _rel: True
    negated = glob.startswith("!")
    matcher: PathGlob = compile_path_glob(glob[1:] if negated else glob)
    if not negated:
        return matcher.matches  # a whitelist glob selects files; directories are still walked

    def keep(rel: str) -> bool:  # a negation prunes any directory it matches, as ripgrep does
        parts = rel.split("/")
        return not any(matcher.matches("/".join(parts[: i + 1])) for i in range(len(parts)))

    return keep


def _search(
    ctx: ToolContext,
    query: GrepQuery,
    *,
    regex: re.Pattern[str],
    whole: re.Pattern[str] | None,
    keep_glob: Callable[[str], bool],
    stop: threading.Event,
    deadline: float,
) -> GrepHits:
    root = str(ctx.root)
    hits = GrepHits()
    budget = GREP_MAX_RAW_BYTES

    def should_stop() -> bool:
        return stop.is_set() or time.monotonic() > deadline

    explicit = query.start_is_file  # an explicit file bypasses globs and ignore rules, as in ripgrep
    secrets = ctx.jail.secrets
    walker = (
        iter([(query.start_rel, False)]) if explicit else walk_paths(root, query.start_rel, should_stop=should_stop)
    )
    for rel, _is_dir in walker:
        if should_stop():
            hits.complete = False
            hits.stop_reason = f"timed out after {ctx.limits.subprocess_timeout_s:g} s"
            break
        if not explicit and (secrets.matches(rel) or not keep_glob(rel)):
            continue
        data = _read_candidate(os.path.join(root, rel))
        if data is None:
            continue
        text = data.decode("utf-8", "surrogateescape")
        if whole is not None and whole.search(text) is None:
            continue  # cheap whole-file prefilter: no line can match if the file does not
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        matched = 0
        last = len(lines)
        for number, line in enumerate(lines, start=1):
            if regex.search(line) is None:
                continue
            matched += 1
            if query.mode == "files_with_matches":
                break
            if query.mode == "content":
                terminated = number < last or text.endswith("\n")
                width = len(line.encode("utf-8", "surrogateescape")) + (1 if terminated else 0)
                shown = OMITTED_LINE if width > GREP_MAX_COLUMNS else line.rstrip("\r")
                hits.lines.append((rel, number, shown))
                budget -= len(rel) + len(shown) + 12
        if matched:
            if query.mode == "files_with_matches":
                hits.files.append(rel)
            elif query.mode == "count":
                hits.counts.append((rel, matched))
            budget -= len(rel) + 12
        if budget <= 0:
            hits.complete = False
            hits.stop_reason = f"more than {GREP_MAX_RAW_BYTES // (1024 * 1024)} MiB of results"
            break
    else:
        if should_stop():  # the walker itself gave up at the deadline
            hits.complete = False
            hits.stop_reason = f"timed out after {ctx.limits.subprocess_timeout_s:g} s"
    return hits


def _read_candidate(path: str) -> bytes | None:
    """A walked file's bytes, or None if it is too large, binary, unreadable or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > GREP_MAX_FILE_BYTES:
            return None
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1024 * 1024):
            chunks.append(chunk)
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if b"\x00" in data else data
