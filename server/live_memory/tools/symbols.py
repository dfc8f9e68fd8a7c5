"""The find_symbol tool: where a name is defined (path:start-end and signature) and which files use it.

It scans the workspace: ripgrep (the Grep engine, with its ignore rules and secret excludes) finds lines that
look like a definition of the name and files that mention it; up to SYMBOL_SCAN_MAX_FILES of them are outlined
(cards.py), so definitions come with line ranges and "uses" means a reference in code, not a word in a comment.
A definition line in a file too large to outline is shown as ripgrep reported it, after the same re-check Grep
makes. Once the checkout's symbol index is ready (ToolContext.index, tools/index_keeper.py), the scan reads what
those passes would find from it instead (`_from_store`: the recorded definition lines, mentions and cards, each
file's stamp checked first), so the answer is the same, byte for byte, without a pass over the workspace.
With `code`, the lines of a name's few, short definitions come with the answer (numbered as Read shows
them, under a `### path:start-end` heading), read through the jail now: the model need not Read them.
`prefer` (paths; the memory passes the files the question names, then those it used most recently) puts the
definitions in those files first (a scan outlines them first, past its file limit), and gives a name defined in
many places the code of its definitions there. `held` (`path:first-last` ranges the caller's prompt already shows
as they are now) leaves out the code of a definition inside one.

Must never: show a path outside the workspace, under .git or withheld as secret (index entries
included), read a file but through the jail, or block the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from live_memory.constants import (
    CARD_PARSE_MAX_BYTES,
    SHOWN_PATHS_KEPT,
    SYMBOL_CODE_MAX_DEFINITIONS,
    SYMBOL_CODE_MAX_LINES,
    SYMBOL_MAX_DEFINITIONS,
    SYMBOL_MAX_USE_FILES,
    SYMBOL_NAME_MAX_CHARS,
    SYMBOL_SCAN_MAX_FILES,
)
from live_memory.core.errors import ArgumentError, GrepError, JailRefusal
from live_memory.fs.jail import show_path
from live_memory.fs.safe_files import read_prefix
from live_memory.outline.cards import IDENTIFIER_PATTERN, FileCard, definition_regex, language_for, read_card
from live_memory.outline.symbol_index import SymbolHit, SymbolIndex
from live_memory.outline.symbol_lines import COMMENT
from live_memory.outline.symbol_store import SymbolStore
from live_memory.tools.args import Arguments
from live_memory.tools.context import FileRead, ToolContext, ToolOutcome, bound_text, opened_off_loop
from live_memory.tools.grep_engines import GrepHits, GrepQuery, ripgrep_grep
from live_memory.tools.index_keeper import Check
from live_memory.tools.recheck import Recheck

__all__ = ["files_mentioning", "run_find_symbol"]

_KINDS = ("definition", "uses", "both")
_ARGUMENTS = ("name", "kind", "code", "prefer", "held")
_RANGE = re.compile(r"(.+):(\d+)-(\d+)")
_ALIASES = {"symbol": "name", "query": "name"}
_DOTTED = re.compile(rf"{IDENTIFIER_PATTERN}(?:\.{IDENTIFIER_PATTERN})*")
_NOT_AFTER_NAME = r"(?:[^\w$]|$)"  # ripgrep has no look-ahead: the name ends at a non-word character


@dataclass
class _Found:
    """What one call found, before it is rendered."""

    source: str  # "symbol index" | "workspace scan"
    definitions: list[SymbolHit] = field(default_factory=list)
    lines: list[tuple[str, int, str]] = field(default_factory=list)  # definition lines without a range
    users: list[str] = field(default_factory=list)
    unexamined: int = 0  # files that mention the name but were not read (the scan's cap)
    notes: list[str] = field(default_factory=list)
    code: dict[tuple[str, int, int], str] = field(default_factory=dict)  # (path, start, end) -> numbered lines
    held: set[tuple[str, int, int]] = field(default_factory=set)  # definitions whose lines the caller holds
    # The files outlined whole, as read: what the answer's definitions rest on (ledger facts are grounded on them).
    outlined: dict[str, FileRead] = field(default_factory=dict)

    def grounds(self) -> tuple[FileRead, ...]:
        """The files the definitions shown come from, fingerprinted when they were outlined."""
        paths = dict.fromkeys(hit.path for hit in self.definitions)
        return tuple(self.outlined[path] for path in paths if path in self.outlined)


async def run_find_symbol(ctx: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
    try:
        args = Arguments("find_symbol", arguments, known=_ARGUMENTS, aliases=_ALIASES)
        raw = args.string("name", required=True, example="'FileCard' or 'FileCard.render'")
        kind = args.choice("kind", _KINDS, default="both")
        code = args.boolean("code", default=False)
        prefer = args.strings("prefer")
        held = _held_ranges(args.strings("held"))
    except ArgumentError as exc:
        return ToolOutcome(str(exc), is_error=True)
    assert raw is not None
    name = raw.strip()
    if not name or len(name) > SYMBOL_NAME_MAX_CHARS or any(c in name for c in "\x00\n\r"):
        return ToolOutcome(
            f"find_symbol: 'name' must be one line of 1 to {SYMBOL_NAME_MAX_CHARS} characters, "
            "e.g. 'FileCard' or 'FileCard.render'",
            is_error=True,
        )
    found = await _scan(ctx, name, kind, prefer)
    found.definitions = _preferring(found.definitions, prefer)
    shown = _with_code(found.definitions, set(prefer)) if code and kind != "uses" else []
    found.held = {_at(h) for h in shown if any(_within(h, r) for r in held.get(h.path, ()))}
    shown = [hit for hit in shown if _at(hit) not in found.held]
    if shown:
        found.code = await asyncio.to_thread(_definition_code, ctx, shown)
    text = _render(name, kind, found) + args.ignored_note()
    limited = bound_text(text, ctx.limits.max_output_bytes, "ask for a more specific name")
    return ToolOutcome(limited, files_read=found.grounds())


def _preferring(definitions: list[SymbolHit], prefer: list[str]) -> list[SymbolHit]:
    """The definitions in the preferred files first, in the order of `prefer`; the others as they were."""
    rank: dict[str, int] = {}
    for at, path in enumerate(prefer):
        rank.setdefault(path, at)
    return sorted(definitions, key=lambda hit: rank.get(hit.path, len(rank)))


def _with_code(definitions: list[SymbolHit], prefer: set[str]) -> list[SymbolHit]:
    """The definitions whose code comes with the answer: every one when they are few, else those in the first
    few preferred files that define the name (defined in many places: the ones the memory worked with; a file
    may define it twice, as a decorator's wrappers do)."""
    if len(definitions) <= SYMBOL_CODE_MAX_DEFINITIONS:
        return definitions
    files = list(dict.fromkeys(hit.path for hit in definitions if hit.path in prefer))[:SYMBOL_CODE_MAX_DEFINITIONS]
    return [hit for hit in definitions if hit.path in files][: 2 * SYMBOL_CODE_MAX_DEFINITIONS]


def _shown(ctx: ToolContext, path: str) -> bool:
    """Whether a path may be shown: a clean workspace-relative path, not under .git, not secret (remembered)."""
    known = ctx.shown_paths.get(path)
    if known is None:
        try:
            known = ctx.jail.normalize(path) == path and path != ""
        except JailRefusal:
            known = False
        if len(ctx.shown_paths) >= SHOWN_PATHS_KEPT:
            ctx.shown_paths.clear()
        ctx.shown_paths[path] = known
    return known


async def _scan(ctx: ToolContext, name: str, kind: str, prefer: list[str]) -> _Found:
    found = _Found("workspace scan")
    if not _DOTTED.fullmatch(name):
        found.notes.append("The workspace scan looks for identifiers only (e.g. 'retry' or 'RateLimiter.allow').")
        return found
    if ctx.ripgrep is None:
        found.notes.append("The workspace scan is unavailable (ripgrep was not found); Glob and Read still work.")
        return found
    if ctx.index is not None:  # what the scan would find, read from the symbol index when it is ready
        indexed = await ctx.index.read(functools.partial(_from_store, ctx, name, kind, prefer))
        if indexed is not None:
            return indexed
    bare = name.rsplit(".", 1)[-1]
    word = bare.replace("$", r"\$")
    assignment = rf"^{word}[ \t]*(?::[^=\n]*)?=(?:[^=]|$)"  # a top-level NAME = ... or NAME: T = ...
    heading = rf"^ {{0,3}}#{{1,6}}[ \t]+(?:.*[^\w$])?{word}{_NOT_AFTER_NAME}"  # a Markdown heading naming it
    definition = f"{definition_regex(word, variables=True)}{_NOT_AFTER_NAME}|{assignment}|{heading}"
    mention = _mention(word)
    lines: list[tuple[str, int, str]] = []
    mentions: list[str] = []
    try:
        if kind != "uses":
            lines = (await _ripgrep(ctx, definition, "content", found)).lines
        if kind != "definition":
            mentions = (await _ripgrep(ctx, mention, "files_with_matches", found)).files
    except (GrepError, JailRefusal, OSError) as exc:
        found.notes.append(f"The workspace scan failed: {exc}")
        return found
    stop = threading.Event()
    scanned = [_Line(path, number, text, text.lstrip().startswith("#")) for path, number, text in lines]
    try:
        return await asyncio.to_thread(_examine_scan, ctx, name, scanned, mentions, prefer, found, stop)
    finally:
        stop.set()  # on cancellation the thread stops at its next file


def _mention(word: str) -> str:
    """A ripgrep pattern for the (escaped) name as a word."""
    return rf"(?:^|[^\w$]){word}{_NOT_AFTER_NAME}"


async def files_mentioning(ctx: ToolContext, names: list[str], max_files: int) -> tuple[str, ...] | None:
    """Every file of the workspace that mentions one of `names` as a word (Grep's ignore rules and secret
    excludes), sorted; None when that cannot be told in full: a name that is not an identifier, no ripgrep, a
    search cut short, a path that may not be shown, or more than `max_files` files."""
    if not names or ctx.ripgrep is None or not all(_DOTTED.fullmatch(name) for name in names):
        return None
    words = sorted({name.rsplit(".", 1)[-1].replace("$", r"\$") for name in names})
    found = _Found("workspace scan")
    try:
        hits = await _ripgrep(ctx, _mention(f"(?:{'|'.join(words)})"), "files_with_matches", found)
    except (GrepError, JailRefusal, OSError):
        return None
    if not hits.complete or len(hits.files) > max_files or not all(_shown(ctx, path) for path in hits.files):
        return None
    return tuple(hits.files)


async def _ripgrep(ctx: ToolContext, pattern: str, mode: str, found: _Found) -> GrepHits:
    """Grep's engine over the whole workspace, case-sensitive; a search cut short is noted in `found`."""
    start = await opened_off_loop(lambda: ctx.jail.open_dir(ctx.root), os.close)
    try:
        query = GrepQuery(pattern, "", False, None, mode, ignore_case=False)
        hits = (await ripgrep_grep(ctx, query, start_fd=start)).sort()
    finally:
        os.close(start)
    if not hits.complete:
        found.notes.append(f"[The scan stopped early ({hits.stop_reason}); results may be incomplete.]")
    return hits


def _read_card(ctx: ToolContext, rel: str) -> tuple[FileCard, FileRead] | None:
    """The card of a file read through the jail, and the file as read (cards.read_card), or None."""
    found = read_card(ctx.jail, rel)
    if found is None:
        return None
    card, data = found
    return card, FileRead(rel, hashlib.sha256(data).hexdigest(), len(data))


def _held_ranges(ranges: list[str]) -> dict[str, list[tuple[int, int]]]:
    """`held`: the `path:first-last` line ranges the caller's prompt shows as they are now (the memory's held
    files and cited lines): a definition inside one comes without its code, which the caller would pay for twice."""
    out: dict[str, list[tuple[int, int]]] = {}
    for text in ranges:
        match = _RANGE.fullmatch(text)
        if match is None:
            raise ArgumentError(f"find_symbol: 'held' takes path:first-last line ranges, got {text[:80]!r}")
        out.setdefault(match.group(1), []).append((int(match.group(2)), int(match.group(3))))
    return out


def _within(hit: SymbolHit, lines: tuple[int, int]) -> bool:
    return lines[0] <= hit.start and hit.end <= lines[1]


def _at(hit: SymbolHit) -> tuple[str, int, int]:
    """Where a definition is: the key of its code and of its held lines."""
    return hit.path, hit.start, hit.end


def _definition_code(ctx: ToolContext, hits: list[SymbolHit]) -> dict[tuple[str, int, int], str]:
    """The numbered lines of each short definition, read through the jail now (a file that changed since
    its card was made shows what it holds now at those lines). Blocking: runs in a worker thread."""
    out: dict[tuple[str, int, int], str] = {}
    for hit in hits:
        if hit.end - hit.start >= SYMBOL_CODE_MAX_LINES:
            continue
        try:
            real = ctx.jail.resolve(hit.path)
            fd = ctx.jail.open_text_fd(real)
        except (JailRefusal, OSError):
            continue
        try:
            data = read_prefix(fd, CARD_PARSE_MAX_BYTES + 1)
        except OSError:
            continue
        finally:
            os.close(fd)
        lines = data.decode("utf-8", "replace").split("\n")
        if hit.end <= len(lines):
            numbered = (f"{n}\t{lines[n - 1][: ctx.limits.max_line_chars]}" for n in range(hit.start, hit.end + 1))
            out[_at(hit)] = "\n".join(numbered)
    return out


class _Line(NamedTuple):
    """A line that looks like a definition of the name: as ripgrep printed it (`text`), or as the index recorded
    it (its text read when shown); `comment`: it starts with "#" as printed."""

    path: str
    number: int
    text: str
    comment: bool


def _examine_scan(
    ctx: ToolContext,
    name: str,
    lines: list[_Line],
    mentions: list[str],
    prefer: list[str],
    found: _Found,
    stop: threading.Event,
) -> _Found:
    """Outline the files ripgrep found, read from the disk now, and keep the unparsed lines that are still
    there (recheck.py). Blocking: runs in a worker thread."""

    def outline(path: str) -> tuple[FileCard, FileRead] | None:
        return None if stop.is_set() else _read_card(ctx, path)

    unparsed = _examine(ctx, name, lines, mentions, prefer, found, outline)
    if unparsed:
        with Recheck(str(ctx.root)) as recheck:
            found.lines = [(p, n, t) for p, n, t, _ in unparsed if recheck.line_matches(p, n, t)]
    return found


def _from_store(
    ctx: ToolContext, name: str, kind: str, prefer: list[str], store: SymbolStore, check: Check
) -> _Found | None:
    """What the scan would find, read from the symbol index: its recorded definition lines and mentions instead of
    the two ripgrep passes, its cards instead of outlining the files again. The files whose entries are shown (the
    outlined ones, those of the lines shown) have their stamps checked first; a file that moved is read again and
    the index read once more; None when too many moved (the scan answers). In the index's thread."""
    bare = name.rsplit(".", 1)[-1]
    for _attempt in range(2):  # a file re-indexed by a check may change what is found: read once more
        rows = store.definition_lines(bare) if kind != "uses" else []
        lines = [_Line(path, number, "", flags == COMMENT) for path, number, flags in rows]
        mentions = store.mentioning(bare) if kind != "definition" else []
        candidates = _candidates(ctx, lines, mentions, prefer)
        verdict = check(candidates[:SYMBOL_SCAN_MAX_FILES])
        if verdict != "current":
            if verdict == "stale":
                return None
            continue
        found = _Found("workspace scan")
        outline = functools.partial(_outline, store)
        unparsed = _examine(ctx, name, lines, mentions, prefer, found, outline, candidates)
        shown = unparsed[: max(SYMBOL_MAX_DEFINITIONS - len(found.definitions), 0)]  # the others are counted
        verdict = check(dict.fromkeys(line.path for line in shown))
        if verdict != "current":
            if verdict == "stale":
                return None
            continue
        with Recheck(str(ctx.root)) as recheck:
            texts = [recheck.line(line.path, line.number) or "" for line in shown]
        found.lines = [(line.path, line.number, text) for line, text in zip(shown, texts, strict=True)]
        found.lines += [(line.path, line.number, "") for line in unparsed[len(shown) :]]
        return found
    return None  # files kept moving while they were read: the scan decides


def _outline(store: SymbolStore, path: str) -> tuple[FileCard, FileRead] | None:
    """A file's card and its fingerprint as the index recorded them (stamps checked by the caller)."""
    recorded = store.record(path)
    if recorded is None:
        return None
    stamp, sha256, card = recorded
    return None if card is None else (card, FileRead(path, sha256, stamp.size))


def _candidates(ctx: ToolContext, lines: list[_Line], mentions: list[str], prefer: list[str]) -> list[str]:
    """The files to outline, in order: the preferred ones among those found, then those with a definition line,
    then those that mention the name."""
    found_paths = [line.path for line in lines] + mentions
    listed = set(found_paths)
    first = [path for path in prefer if path in listed]
    return [path for path in dict.fromkeys(first + found_paths) if _shown(ctx, path)]


def _examine(
    ctx: ToolContext,
    name: str,
    lines: list[_Line],
    mentions: list[str],
    prefer: list[str],
    found: _Found,
    outline: Callable[[str], tuple[FileCard, FileRead] | None],
    candidates: list[str] | None = None,
) -> list[_Line]:
    """Outline the first SYMBOL_SCAN_MAX_FILES candidates and look the name up in their cards (into `found`);
    returns the definition lines no card covers (a file too large to outline, or one outlined by pattern that
    missed it), Markdown headings among them but not comments. `candidates`: `_candidates` of the same, when the
    caller has them. Blocking."""
    if candidates is None:
        candidates = _candidates(ctx, lines, mentions, prefer)
    cards: dict[str, FileCard] = {}
    for path in candidates[:SYMBOL_SCAN_MAX_FILES]:
        read = outline(path)
        if read is not None:
            cards[path], found.outlined[path] = read
    found.unexamined = max(len(candidates) - SYMBOL_SCAN_MAX_FILES, 0)
    index = SymbolIndex(cards.values())
    found.definitions = index.lookup(name)
    found.users = index.uses(name)
    if "." in name:
        return []  # a bare definition line cannot confirm the qualifier
    # A parsed card is the authority on its file; a line found elsewhere is shown as it is on disk now.
    covered = {(hit.path, line) for hit in found.definitions for line in range(hit.start, hit.end + 1)}
    shown = set(candidates)  # every path found that may be shown (each checked once: thousands for `main`)
    return [
        line
        for line in lines
        if line.path in shown
        and (line.path not in cards or (cards[line.path].approximate and (line.path, line.number) not in covered))
        and (not line.comment or language_for(line.path) == "markdown")  # a comment, not a heading
    ]


def _definition(hit: SymbolHit, code: str | None, code_shown: bool, held: bool) -> str:
    """One definition: its code under a `### path:start-end` heading (the first line shows the signature), or
    its location line; beside shown code, the others are alternatives, listed without their signatures."""
    if code is not None:
        return f"### {hit.path}:{hit.start}-{hit.end}  {hit.qualified} ({hit.kind})\n```\n{code}\n```"
    span = str(hit.start) if hit.start == hit.end else f"{hit.start}-{hit.end}"
    if held:
        return f"{hit.path}:{span}  {hit.qualified} ({hit.kind})  [its lines are held in your context, as they are now]"
    if code_shown:
        return f"{hit.path}:{span}  {hit.qualified}"
    return f"{hit.path}:{span}  {hit.qualified} ({hit.kind})  {hit.signature}"


def _render(name: str, kind: str, found: _Found) -> str:
    shown = show_path(name, SYMBOL_NAME_MAX_CHARS)
    out: list[str] = []
    if kind != "uses":
        count = len(found.definitions) + len(found.lines)
        listed = found.definitions[:SYMBOL_MAX_DEFINITIONS]
        if count == 0:
            out.append(f"No definition of '{shown}' found ({found.source}).")
        elif count > 1 or not found.code:  # (one shown definition's heading names it and says where it is)
            # Advice only where no code is shown and some lines are not held either (shown code says it already).
            unseen = bool(found.lines) or any(_at(hit) not in found.held for hit in listed)
            advice = "; Read a range to see the code" if unseen and not found.code else ""
            out.append(f"Definitions of '{shown}' ({found.source}{advice}):")
        if count:
            for hit in listed:
                out.append(_definition(hit, found.code.get(_at(hit)), bool(found.code), _at(hit) in found.held))
            room = max(SYMBOL_MAX_DEFINITIONS - len(found.definitions), 0)
            for path, number, text in found.lines[:room]:
                out.append(f"{path}:{number}  {text.strip()[:SYMBOL_NAME_MAX_CHARS]}")
            if count > SYMBOL_MAX_DEFINITIONS:
                out.append(f"[{count - SYMBOL_MAX_DEFINITIONS} more definitions not shown; ask for a qualified name]")
    if kind != "definition":
        users = found.users
        if not users:
            out.append(f"No file uses '{shown}' ({found.source}).")
        else:
            out.append(f"Used in {len(users)} file{'' if len(users) == 1 else 's'}:")
            out.extend(users[:SYMBOL_MAX_USE_FILES])
            if len(users) > SYMBOL_MAX_USE_FILES:
                out.append(f"[{len(users) - SYMBOL_MAX_USE_FILES} more files not shown; Grep with a path narrows it]")
        if found.unexamined:
            out.append(f"[{found.unexamined} more files mention '{shown}' but were not examined; Grep lists them all]")
    out.extend(found.notes)
    return "\n".join(out)
