"""Grep's engine: ripgrep as a bounded subprocess, run so that it cannot be pointed outside the workspace.

- .gitignore/.ignore/.rgignore honoured, hidden files searched, .git never, symlinks not followed;
- secret files and directories excluded (ripgrep `--iglob` negations; the formatter withholds them too);
- the user glob: a whitelist matches files only, a "!" negation also prunes directories; a glob
  with a "/" is matched against the workspace-relative path (re-anchored, or applied in Python,
  when ripgrep starts in a subdirectory);
- binary files (a NUL byte) skipped; a matching line longer than GREP_MAX_COLUMNS bytes (terminator
  included) becomes "[Omitted long matching line]" (--max-columns); count mode counts matching lines.

Swap safety: ripgrep follows a link named on its command line, so it is never handed a path. A
directory is searched by starting ripgrep *in* it, through the descriptor the jail opened (see
subproc.run_bounded's cwd_fd), and an explicit file is fed on standard input from the descriptor the
jail checked. What ripgrep finds while walking is re-checked before it is shown (recheck.py).

There is no pure-Python search any more: the `ripgrep` wheel (a declared dependency) ships the binary
for every platform the server supports — Linux x86_64/aarch64/ppc64le/armv7 (glibc and musl), macOS
x86_64/arm64, Windows x86_64 — so a second engine with its own regex dialect is not worth keeping.
Without the binary, Grep answers with a clear error; Glob and find_paths use the walker.

Must never: search a path the jail has not resolved, hand ripgrep a path it could follow, return
content of a secret or .git file, or leave a ripgrep child running after cancellation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter

from live_memory.constants import GREP_MAX_COLUMNS, GREP_MAX_RAW_BYTES
from live_memory.core.errors import GlobError, GrepError
from live_memory.fs.globs import compile_path_glob
from live_memory.fs.subproc import run_bounded
from live_memory.tools.context import ToolContext
from live_memory.tools.listing import GIT_EXCLUDE, ripgrep_base_args
from live_memory.tools.recheck import OMITTED_LINE

__all__ = [
    "OMITTED_LINE",
    "GrepError",
    "GrepHits",
    "GrepQuery",
    "ripgrep_argv",
    "ripgrep_grep",
]


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
    counts: list[tuple[str, int]] = field(default_factory=list)  # count: (path, matching lines)
    complete: bool = True
    stop_reason: str = ""
    # Found by ripgrep's own walk: re-check each entry before showing it (an explicit file was read
    # from the jail's descriptor and needs none).
    walked: bool = True

    def sort(self) -> GrepHits:
        """Order by path (ripgrep's threads interleave files). ripgrep emits a file's lines
        contiguously and in order, so a stable sort on the path alone suffices, and stays in C."""
        self.lines.sort(key=_FIRST)
        self.files.sort()
        self.counts.sort(key=_FIRST)
        return self


_FIRST = itemgetter(0)
# ripgrep --null output records: "path\0line:text\n" (content) and "path\0count\n" (count).
_CONTENT_RECORD = re.compile(r"([^\n\x00]*)\x00(\d+):([^\n]*)\n")
_COUNT_RECORD = re.compile(r"([^\n\x00]*)\x00(\d+)\n")
_STDIN = "<stdin>"  # ripgrep's name for standard input


def _has_slash(glob: str) -> bool:
    """Whether a ripgrep glob is matched against the whole relative path (it has a "/" before its end)."""
    body = glob.removeprefix("!")
    return "/" in (body.rstrip("/") or body)


def _magic(part: str) -> bool:
    return any(ch in part for ch in "*?[{\\")


def relative_glob(glob: str, start_rel: str) -> str | None:
    """The user glob as ripgrep must see it when started in `start_rel` rather than the root.

    A glob without "/" (a base-name glob), or "**/" followed by one, means the same from anywhere.
    A "/" glob is matched against the path below where ripgrep started, so one whose leading
    components are literally the start's is re-anchored below it ("src/**/*.py" from "src" is
    "/**/*.py"). None: no such form (a wildcard among those leading components, or another
    directory); `glob_filter` then applies it in Python."""
    if not start_rel or not _has_slash(glob):
        return glob
    negated = glob.startswith("!")
    body = glob[1:] if negated else glob
    dir_only = "/" if body.endswith("/") else ""
    parts = body.strip("/").split("/")
    if parts[0] == "**" and len(parts) == 2 and parts[1] != "**":
        return glob
    start = start_rel.split("/")
    lead = parts[: len(start)]
    if len(parts) <= len(start) or lead != start or any(map(_magic, lead)):
        return None
    return ("!" if negated else "") + "/" + "/".join(parts[len(start) :]) + dir_only


def glob_filter(query: GrepQuery) -> Callable[[str], bool] | None:
    """A "/" glob that ripgrep, started in a subdirectory, cannot apply (see `relative_glob`) is
    applied here to workspace-relative paths: a whitelist keeps matching files; a negation drops
    files it matches or that lie in a directory it matches below the start (the start and its
    parents were named, not walked). One difference from ripgrep: there, a whitelist glob also
    brings back a file a .gitignore excludes; here ripgrep never returned it. None: nothing to do."""
    glob = query.glob
    if not glob or query.start_is_file or relative_glob(glob, query.start_rel) is not None:
        return None
    negated = glob.startswith("!")
    try:
        matcher = compile_path_glob(glob[1:] if negated else glob)
    except GlobError as exc:
        raise GrepError(f"Invalid glob: {exc}") from None
    if not negated:
        return matcher.matches
    skip = len(query.start_rel.split("/"))

    def keep(rel: str) -> bool:
        parts = rel.split("/")
        return not any(matcher.matches("/".join(parts[: i + 1])) for i in range(skip, len(parts)))

    return keep


# -- ripgrep ------------------------------------------------------------------------------------------
def ripgrep_argv(ctx: ToolContext, query: GrepQuery) -> list[str]:
    """The exact ripgrep command line for a query (also used by the benchmark as its baseline).

    It names no path: ripgrep runs in the start directory, or reads the start file on stdin."""
    assert ctx.ripgrep is not None
    mode_flag = {"content": "--line-number", "files_with_matches": "--files-with-matches", "count": "--count"}
    argv = [
        *ripgrep_base_args(ctx.ripgrep, at_root=not query.start_rel, in_git=ctx.in_git),
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
    if query.start_is_file:
        return [*argv, "--regexp", query.pattern, "-"]
    translated = relative_glob(query.glob, query.start_rel) if query.glob else None
    if translated is not None:
        argv += ["--glob", translated]
    argv += GIT_EXCLUDE  # after the user's glob: the later glob wins in ripgrep
    for exclude in ctx.jail.secrets.ripgrep_excludes(query.start_rel):
        argv += ["--iglob", exclude]
    return [*argv, "--regexp", query.pattern]


async def ripgrep_grep(ctx: ToolContext, query: GrepQuery, *, start_fd: int) -> GrepHits:
    """Run the query. `start_fd` is the jail's descriptor of the start: a directory ripgrep starts
    in, or (start_is_file) the text file it reads on stdin. Paths come back workspace-relative."""
    argv = ripgrep_argv(ctx, query)
    keep = glob_filter(query)
    result = await run_bounded(
        argv,
        # The path is used only where a directory cannot be pinned by its descriptor.
        cwd=ctx.root if query.start_is_file else ctx.root / query.start_rel,
        cwd_fd=None if query.start_is_file else start_fd,
        stdin_fd=start_fd if query.start_is_file else None,
        timeout_s=ctx.limits.subprocess_timeout_s,
        max_bytes=GREP_MAX_RAW_BYTES,
    )
    if result.returncode == 2 and not result.stdout and result.stderr.strip():
        detail = result.stderr_text()
        if "regex" in detail:
            raise GrepError(f"Invalid regular expression (ripgrep/Rust syntax): {detail}")
        raise GrepError(f"Search failed: {detail}")
    # Exit 2 without a message (--no-messages): nothing was left to search, or a file was unreadable.
    hits = GrepHits(complete=not (result.truncated or result.timed_out))
    if result.timed_out:
        hits.stop_reason = f"timed out after {ctx.limits.subprocess_timeout_s:g} s"
    elif result.truncated:
        hits.stop_reason = f"more than {GREP_MAX_RAW_BYTES // (1024 * 1024)} MiB of results"
    hits.walked = not query.start_is_file
    # One decode for the whole output; undecodable bytes survive as surrogate escapes and are shown
    # as "?" by bound_text.
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
        if "\r" in text:  # CRLF files: drop the carriage return
            hits.lines = [(path, int(number), line.removesuffix("\r")) for path, number, line in records]
        else:
            hits.lines = [(path, int(number), line) for path, number, line in records]
    _rebase(hits, query, keep)
    return hits


def _rebase(hits: GrepHits, query: GrepQuery, keep: Callable[[str], bool] | None) -> None:
    """Turn ripgrep's paths (relative to where it started, or "<stdin>") into workspace-relative
    ones, and apply the part of the glob left to Python."""
    if query.start_is_file:
        rename: Callable[[str], str] = lambda _path: query.start_rel  # noqa: E731
    elif query.start_rel:
        prefix = query.start_rel + "/"
        rename = prefix.__add__
    else:
        if keep is None:
            return
        rename = str
    wanted = keep or (lambda _path: True)
    hits.files = [p for p in map(rename, hits.files) if wanted(p)]
    hits.counts = [(q, n) for q, n in ((rename(p), n) for p, n in hits.counts) if wanted(q)]
    hits.lines = [(q, n, t) for q, n, t in ((rename(p), n, t) for p, n, t in hits.lines) if wanted(q)]
