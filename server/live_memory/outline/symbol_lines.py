"""What a file says about names, as the workspace scan's ripgrep patterns would find them in it.

    text = searchable(data)               # the part ripgrep searches (None: a binary file it skips)
    mentioned(text)                        # {"FileCard", "render", ...}: the identifiers it mentions as words
    definition_lines(text)                 # [("render", 12, flags), ...]: the lines that look like a definition

`find_symbol`'s scan (tools/symbols.py) runs two ripgrep passes over the workspace for a name: lines that look
like a definition of it (a def/class-like line, a top-level assignment, a heading naming it) and the files that
mention it as a word. The symbol index (symbol_store.py) keeps, per file, what those passes would find for every
name at once, so a lookup reads them instead of scanning: `mentioned` is the second pass for all names, and
`definition_lines` the first, each line with the names it would match for (a line can match for several: a
heading names every word in it; `static const X` is both a definition of `X` and, to the pattern, of `const`).
The patterns are the scan's own (cards.definition_regex and the scan's assignment and heading patterns), so the
index answers exactly as the scan would; a test checks them against each other line by line.

Pure functions; no I/O.
"""

from __future__ import annotations

import re

from live_memory.constants import GREP_MAX_COLUMNS
from live_memory.outline.cards import ALL_KEYWORDS, MODIFIERS

__all__ = ["COMMENT", "LONG", "definition_lines", "mentioned", "searchable"]

# A definition line's flags: it starts with "#" (a comment, unless in Markdown), or it is longer than ripgrep
# prints (shown as its "[Omitted long matching line]", which no comment check sees).
COMMENT = 1
LONG = 2
# ripgrep gives up on a file with a NUL byte in its first buffer, and stops at the first NUL in a later one.
_BINARY_SNIFF = 64 * 1024

# A maximal run of word characters that starts as an identifier does: a name the scan can ask for as a word.
_WORD = re.compile(r"(?<![\w$])[A-Za-z_$][\w$]*")
_RUN = re.compile(r"[\w$]+")
# The lines worth a closer look: a heading (or a "#" comment), a top-level assignment, a def/class-like line.
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*)", re.M)
_ASSIGNMENT = re.compile(r"^([\w$]+)[ \t]*(?::[^=\n]*)?=(?:[^=\n]|$)", re.M)
_DEFINITION_START = re.compile(rf"^[ \t]*(?:(?:{MODIFIERS})[ \t]+)*(?:{ALL_KEYWORDS})\b", re.M)
# From one position of a def/class-like line: a modifier, or a keyword and the name it defines.
_MODIFIER = re.compile(rf"(?:{MODIFIERS})[ \t]+")
_KEYWORD_NAME = re.compile(
    rf"(?:{ALL_KEYWORDS})\b!?[ \t]*\*?[ \t]*(?:<[^>\n]*>[ \t]*)?"
    r"(?:\([^)\n]*\)[ \t]*)?([\w$]+)"
)


def searchable(data: bytes) -> str | None:
    """The text ripgrep searches in a file's bytes: None for a binary file (a NUL byte in its first buffer),
    else the text before its first NUL byte, undecodable bytes kept as surrogate escapes (never word
    characters, as for ripgrep)."""
    nul = data.find(b"\x00")
    if 0 <= nul < _BINARY_SNIFF:
        return None
    if nul >= 0:
        data = data[: data.rfind(b"\n", 0, nul) + 1]
    return data.decode("utf-8", "surrogateescape")


def mentioned(text: str) -> set[str]:
    """The identifiers `text` mentions as words (what `(^|[^\\w$])NAME([^\\w$]|$)` matches)."""
    return set(_WORD.findall(text))


def definition_lines(text: str, *, markdown: bool = True) -> list[tuple[str, int, int]]:
    """(name, line number, flags) for every line that looks like a definition of `name` to the scan's pattern,
    in line order; flags are COMMENT and LONG. Outside Markdown (`markdown` False) a "#" line the scan never
    shows or counts (a comment, printed in full) only makes its file a candidate for its words: those come once
    per file, as line 0, after the others."""
    starts: dict[int, set[str]] = {}
    comments: list[str] = []  # outside Markdown: what follows the "#" of each comment line, for its words
    for match in _HEADING.finditer(text):
        if markdown or _long(text, match.start(), match.end()):
            names = {run for run in _RUN.findall(match.group(1)) if _starts_name(run)}
            if names:
                starts.setdefault(match.start(), set()).update(names)
        else:
            comments.append(match.group(1))
    for match in _ASSIGNMENT.finditer(text):
        if _starts_name(match.group(1)):
            starts.setdefault(match.start(), set()).add(match.group(1))
    for match in _DEFINITION_START.finditer(text):
        names = _defined_names(text, match.start())
        if names:
            starts.setdefault(match.start(), set()).update(names)
    out: list[tuple[str, int, int]] = []
    number, counted = 1, 0
    for start in sorted(starts):
        number += text.count("\n", counted, start)
        counted = start
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        flags = COMMENT if line.lstrip().startswith("#") else 0
        if _long(text, start, len(text) if end < 0 else end):
            flags |= LONG
        out.extend((name, number, flags) for name in sorted(starts[start]))
    words = {run for run in _RUN.findall("\n".join(comments)) if _starts_name(run)}
    out.extend((name, 0, COMMENT) for name in sorted(words))
    return out


def _long(text: str, start: int, end: int) -> bool:
    """Whether the line from `start` to `end` (its newline, or the end of the text) is longer than ripgrep prints
    (counted in bytes, its newline included): a line of at most a quarter as many characters never is."""
    if end - start < GREP_MAX_COLUMNS // 4:
        return False
    ended = end < len(text)
    return len(text[start:end].encode("utf-8", "surrogateescape")) + ended > GREP_MAX_COLUMNS


def _starts_name(run: str) -> bool:
    first = run[0]
    return first in {"_", "$"} or "a" <= first <= "z" or "A" <= first <= "Z"


def _defined_names(text: str, start: int) -> set[str]:
    """The names a def/class-like line starting at `start` defines to the pattern: after the indent, each way
    of reading the leading words as modifiers and then a keyword (`static` is both) gives one name (the whole
    run of word characters after the keyword's decorations: the pattern wants a non-word character after it)."""
    names: set[str] = set()
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    at: int | None = start + len(text[start:end]) - len(text[start:end].lstrip(" \t"))
    while at is not None:
        found = _KEYWORD_NAME.match(text, at, end)
        if found is not None and _starts_name(found.group(1)):
            names.add(found.group(1))
        modifier = _MODIFIER.match(text, at, end)
        at = modifier.end() if modifier is not None else None
    return names
