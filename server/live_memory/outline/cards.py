"""File cards: a file's outline in a few lines, built without a model call.

    card = build_card("src/app.py", text)   # pure, deterministic; never raises for odd content
    card.render()                           # "src/app.py (312 lines, sha 1a2b3c4d)\n  class Foo 10-80\n ..."
    card.to_record() / FileCard.from_record(record)   # plain JSON-able dicts, for snapshots
    read_card(jail, "src/app.py")           # the card of the file on disk, read through the jail (or None)

A card lists the file's definitions (classes, functions, methods, types, module-level names; Markdown
headings) with their qualified names, 1-based inclusive line ranges and one-line signatures, plus the
set of identifiers the file references (for "where is X used"). Code in a language with a grammar
(card_syntax.py) is parsed; anything else, a file too large to parse, or an installation without the
grammar gets a pattern outline (def/class-like lines, ranges by indentation), marked approximate.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from live_memory.constants import CARD_MAX_DEFINITIONS, CARD_MAX_REFERENCES, CARD_PARSE_MAX_BYTES
from live_memory.core.errors import JailRefusal
from live_memory.fs.jail import Jail
from live_memory.fs.safe_files import read_prefix
from live_memory.outline.card_syntax import Found, Heading, clean_signature, code_outline, markdown_headings

__all__ = [
    "ALL_KEYWORDS",
    "HEADING_SEPARATOR",
    "IDENTIFIER_PATTERN",
    "MODIFIERS",
    "Definition",
    "FileCard",
    "build_card",
    "definition_regex",
    "language_for",
    "open_text",
    "read_card",
]

_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".md": "markdown",
    ".markdown": "markdown",
}
# Data and prose: no pattern outline (a line starting with "type" or "class" there is not a definition).
_PLAIN = frozenset(
    [
        ".txt",
        ".json",
        ".jsonl",
        ".csv",
        ".tsv",
        ".lock",
        ".svg",
        ".xml",
        ".html",
        ".htm",
        ".css",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".log",
        ".rst",
    ]
)
_CONTAINERS = frozenset({"class", "struct", "interface", "trait", "impl", "enum", "module"})
HEADING_SEPARATOR = " > "  # joins Markdown headings into a qualified name ("Setup > Linux")

MODIFIERS = (
    r"export|default|pub(?:\([^)\n]*\))?|public|private|protected|internal|static|abstract|final|async|unsafe"
    r"|extern|inline|override|virtual|sealed|open|data|suspend|declare|readonly"
)
_KEYWORDS = r"def|class|function|func|fun|fn|struct|enum|trait|interface|type|impl|mod|module|namespace|object|record"
_VARIABLE_KEYWORDS = "|const|let|var|static"
ALL_KEYWORDS = _KEYWORDS + _VARIABLE_KEYWORDS + "|macro_rules"  # every keyword `definition_regex` may use
IDENTIFIER_PATTERN = r"[A-Za-z_$][\w$]*"


def definition_regex(name: str = IDENTIFIER_PATTERN, *, variables: bool = False) -> str:
    """The source of a regex for a def/class-like line defining `name` (itself a regex), in a syntax both
    Python's `re` and ripgrep read. `variables` adds const/let/var/static declarations."""
    keywords = _KEYWORDS + (_VARIABLE_KEYWORDS if variables else "") + "|macro_rules"
    return (
        rf"^(?P<indent>[ \t]*)(?:(?:{MODIFIERS})[ \t]+)*(?P<kw>{keywords})\b!?[ \t]*\*?[ \t]*"
        rf"(?:<[^>\n]*>[ \t]*)?(?:\([^)\n]*\)[ \t]*)?(?P<name>{name})"
    )


# A def/class-like line in most languages (for files without a grammar).
_DEF_LINE = re.compile(definition_regex())
_KEYWORD_KINDS = {
    "def": "function",
    "function": "function",
    "func": "function",
    "fun": "function",
    "fn": "function",
    "object": "class",
    "record": "class",
    "mod": "module",
    "namespace": "module",
    "macro_rules": "macro",
}
_CLOSERS = re.compile(r"[}\])]|end\b")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


@dataclass(frozen=True, slots=True)
class Definition:
    kind: str  # class, function, method, struct, interface, type, variable, heading, ...
    name: str  # as written: "bar", or a heading's title
    qualified: str  # "Foo.bar"; headings joined by HEADING_SEPARATOR
    start: int  # 1-based first line (decorators included)
    end: int  # 1-based last line, inclusive
    signature: str  # the header on one line, e.g. "def bar(self, x) -> int"
    depth: int  # 0 at top level

    def to_record(self) -> list[Any]:
        return [self.kind, self.name, self.qualified, self.start, self.end, self.signature, self.depth]

    @classmethod
    def from_record(cls, record: Any) -> Definition:
        if not isinstance(record, list) or len(record) != 7:
            raise ValueError(f"a definition record is a list of 7 fields, got {record!r:.80}")
        kind, name, qualified, start, end, signature, depth = record
        if not all(isinstance(v, str) for v in (kind, name, qualified, signature)) or not all(
            type(v) is int for v in (start, end, depth)
        ):
            raise ValueError(f"malformed definition record {record!r:.80}")
        return cls(kind, name, qualified, start, end, signature, depth)


@dataclass(frozen=True)
class FileCard:
    path: str  # workspace-relative POSIX path
    sha: str  # first 16 hex digits of the SHA-256 of the file's bytes
    lines: int
    language: str  # "python", "markdown", ... or "text" (no grammar)
    approximate: bool  # outlined by pattern, not parsed: ranges are estimates
    definitions: tuple[Definition, ...]
    references: frozenset[str]  # identifiers the file uses (its definitions' own names left out)

    def render(self) -> str:
        """The card as a model reads it: a header line, then one indented line per definition."""
        note = ", approximate" if self.approximate and self.definitions else ""
        out = [f"{self.path} ({self.lines} line{'' if self.lines == 1 else 's'}, sha {self.sha[:8]}{note})"]
        for d in self.definitions:
            span = str(d.start) if d.start == d.end else f"{d.start}-{d.end}"
            out.append(f"{'  ' * (d.depth + 1)}{d.signature or d.name} {span}")
        return "\n".join(out)

    def to_record(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sha": self.sha,
            "lines": self.lines,
            "language": self.language,
            "approximate": self.approximate,
            "definitions": [d.to_record() for d in self.definitions],
            "references": sorted(self.references),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FileCard:
        """Rebuild a card from `to_record`'s dict. Raises ValueError for anything malformed."""
        try:
            path, sha, lines, language = record["path"], record["sha"], record["lines"], record["language"]
            approximate, definitions, references = record["approximate"], record["definitions"], record["references"]
        except (KeyError, TypeError):
            fields = "path, sha, lines, language, approximate, definitions, references"
            raise ValueError(f"a card record is a mapping with {fields}") from None
        if not (isinstance(path, str) and isinstance(sha, str) and isinstance(language, str)):
            raise ValueError("a card record's path, sha and language are strings")
        if type(lines) is not int or type(approximate) is not bool:
            raise ValueError("a card record's lines is an integer and approximate a boolean")
        if not isinstance(definitions, list) or not isinstance(references, list):
            raise ValueError("a card record's definitions and references are lists")
        if not all(isinstance(r, str) for r in references):
            raise ValueError("a card record's references are strings")
        return cls(
            path,
            sha,
            lines,
            language,
            approximate,
            tuple(Definition.from_record(d) for d in definitions),
            frozenset(references),
        )


# Extensions of code without an outline here, known only so that `main.c` is taken for a file, not a name.
_OTHER_CODE_EXTENSIONS = ".c .h .cc .cpp .hpp .cs .java .kt .scala .swift .rb .php .sh .bash .sql .lua .r .vue .ex"
_OTHER_CODE = frozenset(_OTHER_CODE_EXTENSIONS.split())


def looks_like_file(name: str) -> bool:
    """Whether a name ends in an extension files of code, prose or data have (`main.py`, not `Store.load`)."""
    suffix = PurePosixPath(name).suffix.lower()
    return suffix in _LANGUAGES or suffix in _PLAIN or suffix in _OTHER_CODE


def language_for(path: str) -> str:
    """The language a path's extension names ("text" when none is known)."""
    return _LANGUAGES.get(posixpath.splitext(path)[1].lower(), "text")  # PurePosixPath(path).suffix, cheaper


def _as_bytes(text: str | bytes) -> bytes:
    if isinstance(text, bytes):
        return text
    try:
        return text.encode("utf-8", "surrogateescape")  # text decoded with surrogateescape hashes as on disk
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def build_card(path: str, text: str | bytes) -> FileCard:
    """The card of one file's content. Pure and deterministic: the same input gives the same card."""
    data = _as_bytes(text)
    sha = hashlib.sha256(data).hexdigest()[:16]
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    language = language_for(path)
    parse = len(data) <= CARD_PARSE_MAX_BYTES
    definitions: list[Definition] | None = None
    references: frozenset[str] = frozenset()
    if language == "markdown":
        headings = markdown_headings(data) if parse else None
        approximate = headings is None
        source = data.decode("utf-8", "replace").splitlines()
        definitions = _heading_definitions(headings if headings is not None else _pattern_headings(source), source)
    else:
        outline = code_outline(language, data) if parse else None
        approximate = outline is None
        if outline is not None:
            definitions = _nest(outline.definitions)
            references = outline.references
        elif PurePosixPath(path).suffix.lower() in _PLAIN:
            definitions = []
        else:
            definitions, references = _pattern_outline(data.decode("utf-8", "replace"))
    return FileCard(path, sha, lines, language, approximate, tuple(definitions[:CARD_MAX_DEFINITIONS]), references)


def open_text(jail: Jail, rel: str) -> int | None:
    """A descriptor of the workspace's text file `rel`, opened through the jail with no link on the way (the
    caller closes it), or None: withheld, gone, binary, or reached through a link. Blocking."""
    try:
        real = jail.resolve(rel)
        return jail.open_text_fd(real) if jail.relative(real) == rel else None
    except (JailRefusal, OSError):
        return None


def read_card(jail: Jail, rel: str) -> tuple[FileCard, bytes] | None:
    """The card of a workspace file read through the jail (no link followed) and the bytes read, or None:
    withheld, gone, binary, reached through a link, or too large to outline. Blocking (a worker thread)."""
    fd = open_text(jail, rel)
    if fd is None:
        return None
    try:
        data = read_prefix(fd, CARD_PARSE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > CARD_PARSE_MAX_BYTES:
        return None
    return build_card(rel, data), data


def _nest(found: Iterable[Found]) -> list[Definition]:
    """Qualify each definition by those that contain it, in file order; a function inside a class-like
    definition is a method."""
    ordered = sorted(found, key=lambda f: (f.span[0], -f.span[1], f.name))
    out: list[Definition] = []
    stack: list[tuple[int, Found, Definition]] = []  # (span end, found, its definition)
    for f in ordered:
        while stack and f.span[1] > stack[-1][0]:
            stack.pop()
        parent = stack[-1][2] if stack else None
        kind = "method" if f.kind == "function" and parent is not None and parent.kind in _CONTAINERS else f.kind
        if parent is not None:
            qualified = f"{parent.qualified}.{f.name}"
        else:
            qualified = f"{f.owner}.{f.name}" if f.owner else f.name
        depth = parent.depth + 1 if parent is not None else 0
        definition = Definition(kind, f.name, qualified, f.start, f.end, f.signature, depth)
        out.append(definition)
        stack.append((f.span[1], f, definition))
    return out


def _last_content_line(source: list[str], start: int, end: int) -> int:
    """`end` (1-based) moved up past blank lines, never above `start`."""
    while end > start and not source[end - 1].strip():
        end -= 1
    return end


def _heading_definitions(headings: list[Heading], source: list[str]) -> list[Definition]:
    """Each heading's section runs to the line before the next heading of the same or a higher level."""
    out: list[Definition] = []
    stack: list[tuple[int, Definition]] = []  # (level, definition) of the open sections
    for i, h in enumerate(headings):
        nxt = next((later.line for later in headings[i + 1 :] if later.level <= h.level), len(source) + 1)
        end = _last_content_line(source, h.line, max(nxt - 1, h.line))
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        parent = stack[-1][1] if stack else None
        qualified = f"{parent.qualified}{HEADING_SEPARATOR}{h.title}" if parent else h.title
        signature = clean_signature(f"{'#' * h.level} {h.title}", strip_opener=False)
        definition = Definition("heading", h.title, qualified, h.line, end, signature, len(stack))
        out.append(definition)
        stack.append((h.level, definition))
    return out


def _pattern_headings(source: list[str]) -> list[Heading]:
    """ATX and setext headings outside fenced code blocks."""
    headings: list[Heading] = []
    fence = ""
    for number, line in enumerate(source, start=1):
        opener = _FENCE.match(line)
        if fence:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = ""
            continue
        if opener:
            fence = opener.group(1)
            continue
        atx = _ATX.match(line)
        if atx and atx.group(2):
            headings.append(Heading(len(atx.group(1)), atx.group(2).strip(), number))
            continue
        setext = _SETEXT.match(line)
        previous = source[number - 2] if number > 1 else ""
        taken = bool(headings) and headings[-1].line == number - 1
        if setext and previous.strip() and not taken and not (_ATX.match(previous) or _FENCE.match(previous)):
            headings.append(Heading(1 if setext.group(1)[0] == "=" else 2, previous.strip(), number - 1))
    return headings


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _pattern_outline(text: str) -> tuple[list[Definition], frozenset[str]]:
    """def/class-like lines, each running until the next line indented no deeper (a closing bracket or
    `end` there included), nested by those ranges; identifiers are every word-like token."""
    source = text.splitlines()
    found: list[Found] = []
    own_names: dict[int, str] = {}
    for number, line in enumerate(source, start=1):
        match = _DEF_LINE.match(line)
        if match is None:
            continue
        kw, name = match.group("kw"), match.group("name")
        kind = _KEYWORD_KINDS.get(kw, kw)
        end = _block_end(source, number)
        found.append(Found(kind, name, (number, end), number, end, clean_signature(line), ""))
        own_names[number] = name
        if len(found) >= CARD_MAX_DEFINITIONS:
            break
    references: set[str] = set()
    for number, line in enumerate(source, start=1):
        tokens = set(_IDENTIFIER.findall(line))
        if number in own_names and line.count(own_names[number]) == 1:
            tokens.discard(own_names[number])
        references |= tokens
        if len(references) >= CARD_MAX_REFERENCES:
            break
    return _nest(found), frozenset(references)


def _block_end(source: list[str], number: int) -> int:
    width = _indent(source[number - 1])
    for j in range(number, len(source)):  # source[j] is line j + 1: the lines after `number`
        line = source[j]
        if not line.strip() or _indent(line) > width:
            continue
        if _CLOSERS.match(line.lstrip(" \t")):
            return j + 1
        return _last_content_line(source, number, j)
    return _last_content_line(source, number, len(source))
