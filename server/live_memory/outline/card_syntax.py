"""Definitions and identifiers read from a syntax tree (tree-sitter), for file cards (cards.py).

One row per language: the grammar wheel that provides it, a query naming its definitions, and the node
types that count as identifiers. Every grammar is a wheel declared in pyproject.toml and loaded on first
use; nothing is fetched at run time. A grammar that is missing or does not load (an ABI mismatch), or a
query it rejects, makes the functions here answer None: the caller then outlines the file by pattern.

Thread-safe: each call makes its own parser and query cursor; the languages and compiled queries shared
between threads are never changed after they are built.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from live_memory.constants import CARD_MAX_REFERENCES, CARD_SIGNATURE_MAX_CHARS, CARD_SIGNATURE_MAX_LINES

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Query

__all__ = [
    "Found",
    "Heading",
    "SyntaxOutline",
    "code_outline",
    "grammar_available",
    "markdown_headings",
    "parser_version",
]


class Found(NamedTuple):
    """A definition as the tree shows it; `span` is in bytes (for nesting), lines are 1-based."""

    kind: str
    name: str
    span: tuple[int, int]
    start: int
    end: int
    signature: str
    owner: str  # the receiver type of a Go method ("" otherwise): it qualifies the name


class Heading(NamedTuple):
    level: int  # 1-6
    title: str
    line: int  # 1-based


@dataclass(frozen=True)
class SyntaxOutline:
    definitions: list[Found]
    references: frozenset[str]  # identifiers used in the file, its definitions' own names left out


@dataclass(frozen=True)
class _Grammar:
    module: str
    function: str  # the module's function returning the language capsule
    definitions: str  # a query: each pattern captures the definition node (named by its kind) and @name
    identifiers: tuple[str, ...]


_JS_DEFINITIONS = """
(class_declaration name: (_) @name) @class
(function_declaration name: (identifier) @name) @function
(generator_function_declaration name: (identifier) @name) @function
(method_definition name: (_) @name) @method
(variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @function
(program (lexical_declaration (variable_declarator name: (identifier) @name) @variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @variable))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @variable)))
(program (export_statement (variable_declaration (variable_declarator name: (identifier) @name) @variable)))
"""
_TS_DEFINITIONS = (
    _JS_DEFINITIONS
    + """
(abstract_class_declaration name: (_) @name) @class
(interface_declaration name: (_) @name) @interface
(type_alias_declaration name: (_) @name) @type
(enum_declaration name: (_) @name) @enum
(internal_module name: (_) @name) @module
(function_signature name: (_) @name) @function
(method_signature name: (_) @name) @method
(abstract_method_signature name: (_) @name) @method
"""
)
_JS_IDENTIFIERS = ("identifier", "property_identifier", "shorthand_property_identifier")
_TS_IDENTIFIERS = (*_JS_IDENTIFIERS, "type_identifier")

_GRAMMARS: dict[str, _Grammar] = {
    "python": _Grammar(
        "tree_sitter_python",
        "language",
        """
(class_definition name: (identifier) @name) @class
(function_definition name: (identifier) @name) @function
(module (expression_statement (assignment left: (identifier) @name) @variable))
""",
        ("identifier",),
    ),
    "javascript": _Grammar("tree_sitter_javascript", "language", _JS_DEFINITIONS, _JS_IDENTIFIERS),
    "typescript": _Grammar("tree_sitter_typescript", "language_typescript", _TS_DEFINITIONS, _TS_IDENTIFIERS),
    "tsx": _Grammar("tree_sitter_typescript", "language_tsx", _TS_DEFINITIONS, _TS_IDENTIFIERS),
    "go": _Grammar(
        "tree_sitter_go",
        "language",
        """
(function_declaration name: (identifier) @name) @function
(method_declaration name: (field_identifier) @name) @method
(type_spec name: (type_identifier) @name) @type
(type_alias name: (type_identifier) @name) @type
(source_file (const_declaration (const_spec name: (identifier) @name) @constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @variable))
""",
        ("identifier", "field_identifier", "type_identifier", "package_identifier"),
    ),
    "rust": _Grammar(
        "tree_sitter_rust",
        "language",
        """
(struct_item name: (_) @name) @struct
(enum_item name: (_) @name) @enum
(union_item name: (_) @name) @struct
(trait_item name: (_) @name) @trait
(type_item name: (_) @name) @type
(function_item name: (_) @name) @function
(function_signature_item name: (_) @name) @function
(mod_item name: (_) @name) @module
(macro_definition name: (_) @name) @macro
(const_item name: (_) @name) @constant
(static_item name: (_) @name) @static
(impl_item type: (_) @name) @impl
""",
        ("identifier", "field_identifier", "type_identifier"),
    ),
}
_WHEELS = (
    "tree-sitter",
    "tree-sitter-python",
    "tree-sitter-javascript",
    "tree-sitter-typescript",
    "tree-sitter-go",
    "tree-sitter-rust",
    "tree-sitter-markdown",
)
_MARKDOWN = _Grammar("tree_sitter_markdown", "language", "[(atx_heading) (setext_heading)] @heading", ())

# A definition's range starts at these wrappers (decorators above a def, an exported class's decorators).
_WRAPPERS = frozenset({"decorated_definition", "export_statement"})
# Kinds whose header is shown as written (an assignment's first line), not cut before a body.
_AS_WRITTEN = frozenset({"variable", "constant", "static"})
# Kinds whose name is a use of another definition (Rust's `impl Foo` names Foo), not a definition of it.
_NAME_IS_A_USE = frozenset({"impl"})
_SPACE = re.compile(r"\s+")
_AFTER_OPENING = re.compile(r"([(\[]) ")  # "( a" -> "(a": a parameter list that was split over lines
_BEFORE_CLOSING = re.compile(r" ?,? ([)\]])")  # "a, )" -> "a)"


@dataclass(frozen=True)
class _Loaded:
    language: Language
    definitions: Query
    identifiers: Query | None


@functools.cache
def _load(key: str) -> _Loaded | None:
    """The grammar and its compiled queries, or None when this installation cannot parse `key`."""
    grammar = _MARKDOWN if key == "markdown" else _GRAMMARS.get(key)
    if grammar is None:
        return None
    try:
        import tree_sitter

        module = importlib.import_module(grammar.module)
        language = tree_sitter.Language(getattr(module, grammar.function)())
        definitions = tree_sitter.Query(language, grammar.definitions)
        identifiers = None
        if grammar.identifiers:
            source = "[" + " ".join(f"({kind})" for kind in grammar.identifiers) + "] @id"
            identifiers = tree_sitter.Query(language, source)
    except (ImportError, AttributeError, TypeError, ValueError, RuntimeError):
        # A query the grammar rejects (tree_sitter.QueryError) and an ABI mismatch are ValueErrors.
        return None
    return _Loaded(language, definitions, identifiers)


@functools.cache
def parser_version() -> str:
    """The versions of the parser and its grammar wheels: what is made from them on disk (the symbol index, a
    saved tree's outline) is made again when they change."""
    found = []
    for name in _WHEELS:
        try:
            found.append(f"{name}={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name}=-")
    return ",".join(found)


def grammar_available(key: str) -> bool:
    """Whether `key` ("python", "markdown", ...) is parsed with its grammar here."""
    return _load(key) is not None


def _root(loaded: _Loaded, data: bytes) -> Node:
    import tree_sitter

    parser = tree_sitter.Parser(loaded.language)
    return parser.parse(data).root_node


def _last_line(node: Node) -> int:
    """1-based last line of a node: one ending at column 0 ends on the line before."""
    row, column = node.end_point
    return max(row if column == 0 else row + 1, node.start_point[0] + 1)


def _text(data: bytes, node: Node) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _first_type_name(node: Node, data: bytes) -> str:
    """The first type identifier in a type expression (`Foo` in `Foo<T>`, `a::Foo`, `*Foo`)."""
    if node.type == "type_identifier":
        return _text(data, node)
    for child in node.named_children:
        found = _first_type_name(child, data)
        if found:
            return found
    return ""


def _body(node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is None and node.type == "variable_declarator":
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
    return body


def _signature(data: bytes, node: Node, name: Node, kind: str) -> str:
    """The definition's header on one line: from the start of its name's line to its body (over a few
    lines at most), else that line alone; whitespace collapsed, cut to CARD_SIGNATURE_MAX_CHARS."""
    start = data.rfind(b"\n", 0, name.start_byte) + 1
    if node.start_byte > start and any(c in data[start : node.start_byte] for c in b"{};"):
        start = node.start_byte  # one of several definitions on the line: from its own start
    line_end = data.find(b"\n", name.start_byte)
    end = len(data) if line_end < 0 else line_end
    body = None if kind in _AS_WRITTEN else _body(node)
    if body is None:  # the definition itself: a comment or another statement after it is left out
        end = min(end, node.end_byte)
    elif body.start_byte > start and body.start_point[0] - name.start_point[0] < CARD_SIGNATURE_MAX_LINES:
        end = body.start_byte
    return clean_signature(data[start:end].decode("utf-8", "replace"), strip_opener=kind not in _AS_WRITTEN)


def clean_signature(text: str, *, strip_opener: bool = True) -> str:
    """One line of header text: whitespace collapsed, brackets tidied, a trailing ":", "{" or ";" dropped."""
    text = _SPACE.sub(" ", text).strip()
    text = _AFTER_OPENING.sub(r"\1", text)
    text = _BEFORE_CLOSING.sub(r"\1", text)
    if strip_opener:
        text = text.rstrip(" {:;").rstrip()
    if len(text) > CARD_SIGNATURE_MAX_CHARS:
        text = text[: CARD_SIGNATURE_MAX_CHARS - 1].rstrip() + "…"
    return text


def code_outline(key: str, data: bytes) -> SyntaxOutline | None:
    """The definitions and identifiers of source `data` in language `key`; None without its grammar."""
    loaded = _load(key)
    if loaded is None or key == "markdown":
        return None
    import tree_sitter

    root = _root(loaded, data)
    found: dict[tuple[int, int, str], Found] = {}
    names: set[int] = set()  # start bytes of the definitions' own name nodes
    for _pattern, captures in tree_sitter.QueryCursor(loaded.definitions).matches(root):
        name_nodes = captures.get("name")
        kinds = [(kind, nodes) for kind, nodes in captures.items() if kind != "name"]
        if not name_nodes or not kinds:
            continue
        kind, nodes = kinds[0]
        node, name_node = nodes[0], name_nodes[0]
        definition = _found(data, kind, node, name_node)
        if definition is None:
            continue
        slot = (node.start_byte, node.end_byte, definition.name)
        if slot not in found or found[slot].kind == "variable":  # a function beats the plain variable
            found[slot] = definition
        if kind not in _NAME_IS_A_USE:
            names.add(name_node.start_byte)
    references: set[str] = set()
    if loaded.identifiers is not None:
        for node in tree_sitter.QueryCursor(loaded.identifiers).captures(root).get("id", ()):
            if node.start_byte not in names:
                references.add(_text(data, node))
                if len(references) >= CARD_MAX_REFERENCES:
                    break
    return SyntaxOutline(list(found.values()), frozenset(references))


def _found(data: bytes, kind: str, node: Node, name_node: Node) -> Found | None:
    owner = ""
    name = _first_type_name(name_node, data) if kind == "impl" else _text(data, name_node).strip()
    if kind == "type":  # Go: say what the type is
        shape = node.child_by_field_name("type")
        kind = {"struct_type": "struct", "interface_type": "interface"}.get(shape.type if shape else "", "type")
    if kind == "method" and node.type == "method_declaration":  # Go: qualify by the receiver's type
        receiver = node.child_by_field_name("receiver")
        owner = _first_type_name(receiver, data) if receiver is not None else ""
    if not name or (kind in _AS_WRITTEN and name.startswith("__") and name.endswith("__")):
        return None  # a module's __all__ or __version__ is not worth a card line
    outer = node
    while outer.parent is not None and outer.parent.type in _WRAPPERS:
        outer = outer.parent
    start = outer.start_point[0] + 1
    return Found(
        kind,
        name,
        (node.start_byte, node.end_byte),
        start,
        max(_last_line(node), start),
        _signature(data, node, name_node, kind),
        owner,
    )


def markdown_headings(data: bytes) -> list[Heading] | None:
    """The headings of a Markdown document (not the `#` lines of its code blocks); None without the grammar."""
    loaded = _load("markdown")
    if loaded is None:
        return None
    import tree_sitter

    root = _root(loaded, data)
    headings: list[Heading] = []
    for node in tree_sitter.QueryCursor(loaded.definitions).captures(root).get("heading", ()):
        level = 0
        for child in node.children:
            marker = child.type
            if marker.startswith("atx_h") and marker.endswith("_marker"):
                level = int(marker[5])
            elif marker == "setext_h1_underline":
                level = 1
            elif marker == "setext_h2_underline":
                level = 2
        content = node.child_by_field_name("heading_content")
        title = _SPACE.sub(" ", _text(data, content)).strip().rstrip("#").strip() if content is not None else ""
        if level and title:
            headings.append(Heading(level, title, node.start_point[0] + 1))
    headings.sort(key=lambda h: h.line)
    return headings
