"""Path-glob translation shared by Glob, find_paths, the Grep fallback, gitignore rules and secret matching.

Owns one glob dialect — the one ripgrep and gitignore speak — so the same pattern means the same thing
whether ripgrep or the pure-Python fallback evaluates it:

    *        any run of characters except "/"
    ?        one character except "/"
    [a-z]    a character class ([!...] or [^...] negates); never matches "/"
    **       as a whole path component: zero or more directories ("**/x", "a/**/b", "a/**")
    {a,b}    alternatives (ripgrep globs only; gitignore has no braces)
    \\x      the literal x

Never touches the filesystem; callers decide what a pattern is matched against (a base name or a path).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from live_memory.core.errors import GlobError

__all__ = ["GlobError", "PathGlob", "compile_path_glob", "glob_to_regex", "has_glob_magic"]


_MAGIC = frozenset("*?[{")


def has_glob_magic(pattern: str) -> bool:
    """Whether `pattern` contains any glob metacharacter (a literal name otherwise)."""
    return any(ch in _MAGIC for ch in pattern)


def glob_to_regex(pattern: str, *, braces: bool = True) -> str:
    """Translate a glob into an unanchored regular-expression source (callers add ^...$)."""
    source, end = _translate(pattern, 0, braces=braces, depth=0)
    if end != len(pattern):  # only reachable with an unbalanced "}" or "," at top level
        source += re.escape(pattern[end:])
    return source


def _at_component_start(pattern: str, i: int) -> bool:
    return i == 0 or pattern[i - 1] in "/{,"


def _at_component_end(pattern: str, i: int, depth: int) -> bool:
    return i >= len(pattern) or pattern[i] == "/" or (depth > 0 and pattern[i] in ",}")


def _translate(pattern: str, i: int, *, braces: bool, depth: int) -> tuple[str, int]:
    """Translate from index i until the end, or (inside braces) until the closing "," or "}"."""
    out: list[str] = []
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if depth > 0 and ch in ",}":
            break
        if ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif ch == "*":
            if pattern.startswith("**", i):
                j = i + 2
                while j < n and pattern[j] == "*":
                    j += 1
                if _at_component_start(pattern, i) and _at_component_end(pattern, j, depth):
                    if j < n and pattern[j] == "/":
                        out.append("(?:.*/)?")  # "**/": zero or more whole directories
                        i = j + 1
                    else:
                        out.append(".*")  # trailing "**": everything below
                        i = j
                    continue
                i = j
            else:
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            cls, i = _char_class(pattern, i)
            out.append(cls)
        elif ch == "{" and braces:
            alts, i = _brace_group(pattern, i, depth=depth)
            out.append(alts)
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out), i


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """Translate "[...]" starting at i; an unclosed "[" is a literal."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    if negate:
        j += 1
    if j < len(pattern) and pattern[j] == "]":  # a leading "]" is literal
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    if j >= len(pattern):
        return re.escape("["), i + 1
    body = pattern[i + 1 + (1 if negate else 0) : j]
    # Escape what Python's re treats specially (or warns about: "[[", "&&", "~~", "||", "--") in a set.
    escaped = "".join("\\" + c if c in "\\^[]&~|" else c for c in body).replace("--", "-\\-")
    # A class never matches "/" (gitignore's FNM_PATHNAME, ripgrep's literal_separator).
    return (f"(?!/)[^{escaped}]" if negate else f"(?!/)[{escaped}]"), j + 1


def _brace_group(pattern: str, i: int, *, depth: int) -> tuple[str, int]:
    """Translate "{a,b,...}" starting at i; an unclosed "{" is a literal."""
    alternatives: list[str] = []
    j = i + 1
    while True:
        source, j = _translate(pattern, j, braces=True, depth=depth + 1)
        alternatives.append(source)
        if j >= len(pattern):
            return re.escape("{"), i + 1
        if pattern[j] == "}":
            return "(?:" + "|".join(alternatives) + ")", j + 1
        j += 1  # skip ","


@dataclass(frozen=True)
class PathGlob:
    """A compiled glob in ripgrep's sense: a pattern without "/" matches a base name at any depth,
    one with "/" matches the whole path relative to the search base ("/" at its start is dropped)."""

    pattern: str
    anchored: bool
    regex: re.Pattern[str]

    def matches(self, rel_path: str) -> bool:
        """Match a base-relative POSIX path (files and directories alike)."""
        subject = rel_path if self.anchored else rel_path.rpartition("/")[2]
        return self.regex.fullmatch(subject) is not None


def compile_path_glob(pattern: str, *, case_insensitive: bool = False, anchored: bool | None = None) -> PathGlob:
    """Compile a user glob (Glob's pattern, Grep's glob filter, find_paths' name). `anchored`
    overrides the "contains a slash" rule (Glob keeps it when it moves a literal prefix into the base)."""
    body = pattern.rstrip("/") or pattern
    if anchored is None:
        anchored = "/" in body
    body = body.lstrip("/")
    flags = re.IGNORECASE if case_insensitive else 0
    try:
        regex = re.compile(glob_to_regex(body), flags | re.DOTALL)
    except re.error as exc:
        raise GlobError(f"invalid glob pattern {pattern!r}: {exc}") from None
    return PathGlob(pattern, anchored, regex)
