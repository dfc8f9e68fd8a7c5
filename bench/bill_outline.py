"""The bench's own outline of a file: the names an explorer could grep for, and the lines that define one.

Used by the workload (which names to ask about, the lines an answer cites) and by the scripted memory model (the
lines a question needs); nothing here imports the service, so the outline is the same for any checkout.
"""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections.abc import Sequence

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w{3,})", re.M)
_HEADING_WORD = re.compile(r"^#+[ \t]+.*?\b([A-Za-z][A-Za-z_]{6,})\b", re.M)


def _code_definitions(path: str, text: str) -> list[re.Match[str]]:
    """The `def`/`class` lines of `text`, leaving out those inside a string that spans lines in a Python file
    (a docstring's example is not a definition, and no outline of the file shows it)."""
    found = list(_DEF.finditer(text))
    if not path.endswith(".py") or not found:
        return found
    quoted = _lines_in_strings(text)
    return [m for m in found if text.count("\n", 0, m.start()) + 1 not in quoted]


@functools.lru_cache(maxsize=256)
def _lines_in_strings(text: str) -> frozenset[int]:
    """1-based lines of Python source past the first line of a string literal that spans lines."""
    lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                lines.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return frozenset()
    return frozenset(lines)


def symbols_in(path: str, text: str) -> list[str]:
    """Names an explorer could grep for: defined functions/classes (code) or heading words (docs)."""
    names = [m.group(2) for m in _code_definitions(path, text)]
    if not names and path.endswith(".md"):
        names = _HEADING_WORD.findall(text)
    return [n for n in dict.fromkeys(names) if not n.startswith("__")]


def definition_range(path: str, text: str, symbol: str) -> tuple[int, int]:
    """1-based (first, last) lines of the definition of `symbol` in the file `path` holding `text`: a function
    or class, in a Markdown file the section of the first heading naming it, or else its first mention +-10
    lines. (Only a Markdown file has headings: in code, `# name: ...` is a comment, such as an edit leaves.)"""
    lines = text.splitlines()
    section = _heading_section(lines, symbol) if path.endswith(".md") else None
    if section is not None:
        return section
    for m in _code_definitions(path, text):
        if m.group(2) == symbol:
            start = text.count("\n", 0, m.start()) + 1
            indent = len(m.group(1).expandtabs())
            end = start
            for number in range(start + 1, len(lines) + 1):
                line = lines[number - 1]
                if line.strip() and len(line) - len(line.lstrip()) <= indent and not line.lstrip().startswith(")"):
                    break
                end = number
            while end > start and not lines[end - 1].strip():
                end -= 1
            return start, end
    for number, line in enumerate(lines, 1):
        if symbol in line:
            return max(1, number - 10), min(len(lines), number + 10)
    return 1, max(1, min(len(lines), 20))


_HEADING = re.compile(r"^(#{1,6})[ \t]")


def _heading_section(lines: Sequence[str], symbol: str) -> tuple[int, int] | None:
    """The first Markdown heading naming `symbol` (as a word), through the line before the next heading of
    the same or a higher level (trailing blank lines left out)."""
    word = re.compile(rf"\b{re.escape(symbol)}\b")
    for number, line in enumerate(lines, 1):
        heading = _HEADING.match(line)
        if heading is None or not word.search(line):
            continue
        level = len(heading.group(1))
        end = len(lines)
        for later in range(number + 1, len(lines) + 1):
            other = _HEADING.match(lines[later - 1])
            if other is not None and len(other.group(1)) <= level:
                end = later - 1
                break
        while end > number and not lines[end - 1].strip():
            end -= 1
        return number, end
    return None
