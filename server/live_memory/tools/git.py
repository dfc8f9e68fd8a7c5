"""The git tools: get_changed_files (`git status`) and git_search (`git log`: message grep, path-scoped
history that follows renames, optional patches), rendered compactly for a model.

Git runs as a bounded child (subproc.py) in a hardened form: no pager, no optional index locks (status
never writes to the repository), no fsmonitor hook, no external diff or textconv programs, no lazy
fetches, no signature checks. Secret files' diffs are excluded by pathspec and, as a second line of
defence, every diff section naming a secret path is replaced by a notice (renames are followed, so a
pathspec alone cannot cover them).

Must never: run a git subcommand that writes (no fetch, gc, checkout, index refresh), pass an
unvalidated path to git, or return a secret file's diff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from live_memory.constants import (
    CHANGED_FILES_LIMIT,
    GIT_MAX_RAW_BYTES,
    GIT_MESSAGE_MAX_CHARS,
    GIT_PATCH_MAX_CHARS,
    GIT_SEARCH_DEFAULT_COUNT,
    GIT_SEARCH_MAX_COUNT,
)
from live_memory.core.errors import ArgumentError, GitFailure, JailRefusal
from live_memory.fs.jail import Jail
from live_memory.fs.subproc import ProcessResult, child_env, run_bounded
from live_memory.tools.args import Arguments
from live_memory.tools.context import ToolContext, ToolOutcome, bound_text, resolve_path
from live_memory.tools.search import WITHHELD

__all__ = ["run_get_changed_files", "run_git_search"]

_GIT_PREFIX = (
    "git",
    "--no-pager",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "color.ui=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "diff.external=",
)


async def _git(ctx: ToolContext, *args: str, max_bytes: int = GIT_MAX_RAW_BYTES) -> ProcessResult:
    env = child_env()
    env["GIT_NO_LAZY_FETCH"] = "1"  # a partial clone must not reach the network for a missing blob
    try:
        result = await run_bounded(
            [*_GIT_PREFIX, *args],
            cwd=ctx.root,
            timeout_s=ctx.limits.subprocess_timeout_s,
            max_bytes=max_bytes,
            env=env,
        )
    except FileNotFoundError:
        raise GitFailure("git is not installed on the server, so history and status are unavailable.") from None
    if result.timed_out:
        raise GitFailure(
            f"git timed out after {ctx.limits.subprocess_timeout_s:g} s; narrow the query (path, max_count)."
        )
    if result.returncode not in (0, None):
        detail = result.stderr_text()
        if "not a git repository" in detail:
            raise GitFailure("The workspace is not a git repository, so there is no history or status.")
        if "does not have any commits" in detail:
            raise GitFailure("The repository has no commits yet.")
        raise GitFailure(f"git failed: {detail or f'exit status {result.returncode}'}")
    return result


async def _workspace_prefix(ctx: ToolContext) -> str:
    """The workspace's path inside its repository ("" when it is the repository root)."""
    if await asyncio.to_thread((ctx.root / ".git").exists):
        return ""
    result = await _git(ctx, "rev-parse", "--show-prefix")
    return result.stdout.decode("utf-8", "surrogateescape").strip()


async def _path_spec(ctx: ToolContext, path: str | None) -> tuple[str, str]:
    """Jail a path argument; returns (workspace-relative path or "", its kind)."""
    if not path:
        return "", "dir"
    target = await resolve_path(ctx, path)
    return target.rel, target.kind


def _secret_pathspecs(jail: Jail) -> list[str]:
    specs: list[str] = []
    for glob in jail.secrets.globs:
        body = glob.rstrip("/") or glob
        base = body.lstrip("/") if body.startswith("/") else f"**/{body}"
        specs += [f":(exclude,icase,glob){base}", f":(exclude,icase,glob){base}/**"]
    return specs


# -- get_changed_files --------------------------------------------------------------------------------
async def run_get_changed_files(ctx: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
    try:
        args = Arguments("get_changed_files", arguments, known=("path",), aliases={"file_path": "path"})
        path = args.string("path")
        rel, _kind = await _path_spec(ctx, path)
        prefix = await _workspace_prefix(ctx)
        result = await _git(
            ctx, "status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all", "--", rel or "."
        )
    except (ArgumentError, JailRefusal, GitFailure) as exc:
        return ToolOutcome(str(exc), is_error=True)
    records = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    branch = ""
    entries: list[str] = []
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        if not record:
            continue
        if record.startswith("## "):
            branch = record[3:]
            continue
        code, name = record[:2], record[3:]
        origin = ""
        if "R" in code or "C" in code:
            origin = records[i] if i < len(records) else ""
            i += 1
        shown = _strip_prefix(name, prefix)
        if shown is None:
            continue  # outside the workspace (only possible when it is a repository subdirectory)
        tag = WITHHELD if ctx.jail.is_secret(shown) else ""
        if origin:
            entries.append(f"{code} {_strip_prefix(origin, prefix) or origin} -> {shown}{tag}")
        else:
            entries.append(f"{code} {shown}{tag}")
    lines = [f"Branch: {branch}" if branch else "Branch: (unknown)"]
    if not entries:
        lines.append("Working tree clean: no uncommitted changes" + (f" under '{rel}'." if rel else "."))
    else:
        lines.append(
            "Status codes as in `git status --short`: first column staged, second unstaged; "
            "M modified, A added, D deleted, R renamed, ?? untracked."
        )
        lines.extend(entries[:CHANGED_FILES_LIMIT])
        if len(entries) > CHANGED_FILES_LIMIT:
            lines.append(f"[Showing {CHANGED_FILES_LIMIT} of {len(entries)} changed paths; pass path to narrow.]")
    text = "\n".join(lines) + args.ignored_note()
    return ToolOutcome(bound_text(text, ctx.limits.max_output_bytes, "pass path to narrow"))


def _strip_prefix(name: str, prefix: str) -> str | None:
    if not prefix:
        return name
    return name[len(prefix) :] if name.startswith(prefix) else None


# -- git_search ---------------------------------------------------------------------------------------
async def run_git_search(ctx: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
    try:
        args = Arguments(
            "git_search",
            arguments,
            known=("query", "path", "include_patch", "max_count"),
            aliases={
                "grep": "query",
                "message": "query",
                "patch": "include_patch",
                "max_results": "max_count",
            },
        )
        query = args.string("query")
        path = args.string("path")
        include_patch = args.boolean("include_patch", default=False)
        max_count = args.integer("max_count", default=GIT_SEARCH_DEFAULT_COUNT, minimum=1, maximum=GIT_SEARCH_MAX_COUNT)
        if query is not None and "\x00" in query:
            raise ArgumentError("git_search: 'query' must not contain NUL bytes")
        rel, kind = await _path_spec(ctx, path)
        argv = [
            "log",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--relative",
            "--find-renames",
            f"--max-count={max_count}",
            "--date=short",
            "--format=%x1e%h%x1f%ad%x1f%an%x1f%B%x1f",
            "--patch" if include_patch else "--name-status",
        ]
        if query:
            argv += ["--regexp-ignore-case", "--extended-regexp", f"--grep={query}"]
        if rel and kind == "file":
            argv += ["--follow", "--", rel]  # --follow takes exactly one pathspec
        else:
            argv += ["--", rel or ".", *_secret_pathspecs(ctx.jail)]
        result = await _git(ctx, *argv)
    except (ArgumentError, JailRefusal, GitFailure) as exc:
        return ToolOutcome(str(exc), is_error=True)
    text = _render_log(ctx.jail, result, query=query, rel=rel, max_count=max_count) + args.ignored_note()
    return ToolOutcome(bound_text(text, ctx.limits.max_output_bytes, "lower max_count or narrow with query/path"))


def _render_log(jail: Jail, result: ProcessResult, *, query: str | None, rel: str, max_count: int) -> str:
    chunks = result.stdout.decode("utf-8", "replace").split("\x1e")[1:]
    if result.truncated and chunks:
        chunks = chunks[:-1]  # the last commit may be cut mid-way
    if not chunks:
        scope = (f" matching '{query}'" if query else "") + (f" touching '{rel}'" if rel else "")
        return f"No commits found{scope}."
    out: list[str] = []
    for chunk in chunks:
        fields = chunk.split("\x1f", 4)
        if len(fields) < 5:
            continue
        short, date, author, message, rest = fields
        out.append(f"commit {short}  {date}  {author}")
        message = message.strip()
        if len(message) > GIT_MESSAGE_MAX_CHARS:
            message = message[:GIT_MESSAGE_MAX_CHARS] + " … [message cut]"
        out.extend("    " + line if line else "" for line in message.splitlines())
        rest = rest.strip("\n")
        if rest.startswith("diff --git"):
            out.append(_filter_patch(jail, rest))
        elif rest:
            out.extend(_render_name_status(jail, rest))
        out.append("")
    if len(chunks) >= max_count:
        out.append(
            f"[Showing the {len(chunks)} most recent matching commits; narrow with query or path, "
            f"or raise max_count (up to {GIT_SEARCH_MAX_COUNT}) for older ones.]"
        )
    if result.truncated:
        out.append("[git output was cut at its size cap; lower max_count or drop include_patch.]")
    return "\n".join(out).rstrip("\n")


def _render_name_status(jail: Jail, text: str) -> list[str]:
    lines: list[str] = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 2:
            continue
        status = fields[0][:1]
        names = fields[1:]
        tag = WITHHELD if any(jail.is_secret(n) for n in names) else ""
        lines.append(f"  {status} {' -> '.join(names)}{tag}")
    return lines


def _filter_patch(jail: Jail, patch: str) -> str:
    """Cap a commit's patch, replacing every diff section that names a secret file with a notice."""
    sections = patch.split("\ndiff --git ")
    kept: list[str] = []
    for i, section in enumerate(sections):
        body = section if i == 0 else "diff --git " + section
        header, _, _ = body.partition("\n")
        if any(jail.is_secret(p) for p in _section_paths(body)):
            kept.append(f"{header}\n[diff withheld: secret file]")
        else:
            kept.append(body)
    text = "\n".join(kept)
    if len(text) > GIT_PATCH_MAX_CHARS:
        text = text[:GIT_PATCH_MAX_CHARS] + "\n[patch cut; use git_search with path to focus on one file]"
    return text


def _section_paths(section: str) -> set[str]:
    """Every path a diff section names (header candidates, ---/+++ lines, rename/copy lines)."""
    paths: set[str] = set()
    lines = section.split("\n")
    header = lines[0].removeprefix("diff --git ")
    # "a/X b/Y" with spaces allowed in names: try every " b/" split point.
    start = 0
    while (at := header.find(" b/", start)) != -1:
        paths.add(header[:at].removeprefix("a/"))
        paths.add(header[at + 3 :])
        start = at + 1
    for line in lines[1:12]:
        for marker in ("--- a/", "+++ b/", "rename from ", "rename to ", "copy from ", "copy to "):
            if line.startswith(marker):
                paths.add(line[len(marker) :])
    return {p.strip('"') for p in paths if p}
