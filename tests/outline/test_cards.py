"""File cards: a deterministic outline of a file (definitions with qualified names, line ranges and
signatures; Markdown sections; the identifiers it uses), far smaller than the file, for any content."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from live_memory.constants import CARD_PARSE_MAX_BYTES, CARD_SIGNATURE_MAX_CHARS
from live_memory.outline.card_syntax import grammar_available
from live_memory.outline.cards import Definition, FileCard, build_card, language_for

REPO = Path(__file__).resolve().parents[2]

_PYTHON = '''\
"""A module."""

import os

LIMIT: int = 5  # how many


@decorator
def top(a: int,
        b: str = "x") -> bool:
    return os.path.exists(b)


class Outer(Base):
    """Doc."""

    class Inner:
        def deep(self) -> None:
            pass

    def method(self, x):
        def helper():
            return x

        return helper


async def later():
    return Outer().method(LIMIT)
'''


def _table(card: FileCard) -> list[tuple[str, str, int, int, int]]:
    return [(d.kind, d.qualified, d.start, d.end, d.depth) for d in card.definitions]


def test_a_python_card_nests_classes_methods_and_functions_with_exact_ranges() -> None:
    card = build_card("pkg/mod.py", _PYTHON)
    assert card.language == "python" and not card.approximate
    assert _table(card) == [
        ("variable", "LIMIT", 5, 5, 0),
        ("function", "top", 8, 11, 0),  # the decorator line is part of it
        ("class", "Outer", 14, 25, 0),
        ("class", "Outer.Inner", 17, 19, 1),
        ("method", "Outer.Inner.deep", 18, 19, 2),
        ("method", "Outer.method", 21, 25, 1),
        ("function", "Outer.method.helper", 22, 23, 2),
        ("function", "later", 28, 29, 0),
    ]


def test_signatures_are_one_line_headers_without_the_body() -> None:
    signatures = {d.qualified: d.signature for d in build_card("m.py", _PYTHON).definitions}
    assert signatures["top"] == 'def top(a: int, b: str = "x") -> bool'  # two lines joined
    assert signatures["Outer"] == "class Outer(Base)"
    assert signatures["Outer.method"] == "def method(self, x)"
    assert signatures["later"] == "async def later()"
    assert signatures["LIMIT"] == "LIMIT: int = 5"  # the trailing comment is left out


def test_a_long_signature_is_cut_to_the_limit() -> None:
    params = ", ".join(f"parameter_{i}: int" for i in range(30))
    card = build_card("m.py", f"def wide({params}):\n    pass\n")
    signature = card.definitions[0].signature
    assert len(signature) <= CARD_SIGNATURE_MAX_CHARS and signature.endswith("…")
    assert signature.startswith("def wide(parameter_0: int, parameter_1: int")


def test_the_render_is_a_header_and_an_indented_line_per_definition() -> None:
    text = build_card("pkg/mod.py", _PYTHON).render()
    lines = text.splitlines()
    sha = hashlib.sha256(_PYTHON.encode()).hexdigest()[:8]
    assert lines[0] == f"pkg/mod.py (29 lines, sha {sha})"
    assert "  class Outer(Base) 14-25" in lines
    assert "    def method(self, x) 21-25" in lines
    assert "      def deep(self) -> None 18-19" in lines
    assert "  LIMIT: int = 5 5" in lines  # a one-line definition shows one number


def test_the_card_carries_a_short_content_hash_and_the_line_count() -> None:
    card = build_card("a.py", "x = 1\ny = 2")  # no final newline: still two lines
    assert card.sha == hashlib.sha256(b"x = 1\ny = 2").hexdigest()[:16]
    assert card.lines == 2
    assert build_card("a.py", "x = 1\n").lines == 1
    assert build_card("a.py", "").lines == 0 and build_card("a.py", "").definitions == ()


def test_references_are_the_identifiers_used_not_the_names_defined() -> None:
    card = build_card("m.py", _PYTHON)
    assert {"os", "exists", "Base", "decorator", "LIMIT", "Outer", "method", "helper"} <= card.references
    assert "top" not in card.references and "later" not in card.references  # defined, never used


_TYPESCRIPT = """\
import { thing } from "./thing";

export interface Shape {
  area(): number;
}

export type Id = string;

enum Color { Red, Green }

@Component({ selector: "x" })
export class Circle implements Shape {
  constructor(private r: number) {}

  area(): number {
    return Math.PI * this.r ** 2;
  }
}

export const makeCircle = (r: number): Circle => {
  return new Circle(r);
};

function helper(a, b) {
  return thing(a, b);
}
"""


def test_a_typescript_card_has_interfaces_types_enums_classes_and_arrow_functions() -> None:
    card = build_card("src/shapes.ts", _TYPESCRIPT)
    assert card.language == "typescript" and not card.approximate
    assert _table(card) == [
        ("interface", "Shape", 3, 5, 0),
        ("method", "Shape.area", 4, 4, 1),
        ("type", "Id", 7, 7, 0),
        ("enum", "Color", 9, 9, 0),
        ("class", "Circle", 11, 18, 0),  # from its decorator
        ("method", "Circle.constructor", 13, 13, 1),
        ("method", "Circle.area", 15, 17, 1),
        ("function", "makeCircle", 20, 22, 0),
        ("function", "helper", 24, 26, 0),
    ]
    signatures = {d.qualified: d.signature for d in card.definitions}
    assert signatures["Shape.area"] == "area(): number"
    assert signatures["Circle"] == "export class Circle implements Shape"
    assert signatures["makeCircle"] == "export const makeCircle = (r: number): Circle =>"
    assert {"thing", "Circle", "PI"} <= card.references


_JAVASCRIPT = """\
const MAX = 3;
class Queue {
  push(item) { this.items.push(item); }
}
function* ids() { yield 1; }
module.exports = { Queue, MAX };
"""

_GO = """\
package server

type Server struct {
\tname string
}

type Runner interface {
\tRun() error
}

func (s *Server) Run() error {
\treturn nil
}

func New() *Server { return &Server{} }
"""

_RUST = """\
pub struct Point { x: i32 }
impl Point {
    pub fn new(x: i32) -> Self { Point { x } }
}
pub trait Shape { fn area(&self) -> f64; }
"""


def _outline(card: FileCard) -> str:
    """`_table` as text: a line per definition, indented two spaces per level of nesting."""
    return "".join(f"{'  ' * depth}{kind} {name} {start}-{end}\n" for kind, name, start, end, depth in _table(card))


@pytest.mark.parametrize(
    ("path", "source", "outline", "references", "signatures"),
    [
        pytest.param(
            "lib/queue.js",
            _JAVASCRIPT,
            """\
variable MAX 1-1
class Queue 2-4
  method Queue.push 3-3
function ids 5-5
""",
            {"Queue", "MAX", "items"},
            {},
            id="javascript-functions-classes-methods-and-top-level-constants",
        ),
        pytest.param(
            "server.go",
            _GO,
            """\
struct Server 3-5
interface Runner 7-9
method Server.Run 11-13
function New 15-15
""",
            set(),
            {"Server.Run": "func (s *Server) Run() error"},  # qualified by its receiver
            id="go-methods-qualified-by-receiver-and-types-say-what-they-are",
        ),
        pytest.param(
            "src/lib.rs",
            _RUST,
            """\
struct Point 1-1
impl Point 2-4
  method Point.new 3-3
trait Shape 5-5
  method Shape.area 5-5
""",
            {"Point"},  # `impl Point` and `Point { x }` use the struct
            {"Shape.area": "fn area(&self) -> f64"},  # not the rest of the line
            id="rust-impl-blocks-hold-their-methods",
        ),
    ],
)
def test_a_card_outlines_each_language_with_qualified_names(
    path: str, source: str, outline: str, references: set[str], signatures: dict[str, str]
) -> None:
    card = build_card(path, source)
    assert _outline(card) == outline
    assert references <= card.references
    assert {d.qualified: d.signature for d in card.definitions if d.qualified in signatures} == signatures


_MARKDOWN = """\
# Guide

Intro.

```sh
# a comment in a code block, not a heading
```

## Install

Steps.

### On Linux

apt.

## Use

Setext heading
==============

text
"""


def test_markdown_cards_list_headings_with_their_section_ranges() -> None:
    card = build_card("docs/guide.md", _MARKDOWN)
    assert card.language == "markdown" and not card.approximate
    assert _table(card) == [
        ("heading", "Guide", 1, 17, 0),  # to the line before the next level-1 heading, blank lines left out
        ("heading", "Guide > Install", 9, 15, 1),
        ("heading", "Guide > Install > On Linux", 13, 15, 2),
        ("heading", "Guide > Use", 17, 17, 1),
        ("heading", "Setext heading", 19, 22, 0),  # underlined with "=": level 1
    ]
    assert card.definitions[1].signature == "## Install"
    assert card.references == frozenset()


def test_a_file_with_syntax_errors_still_gets_a_card() -> None:
    source = "def good():\n    return 1\n\ndef broken(:\n    pass\n\nclass Fine:\n    def m(self): ...\n"
    card = build_card("bad.py", source)
    names = [d.qualified for d in card.definitions]
    assert {"good", "Fine", "Fine.m"} <= set(names)
    assert card.render().startswith("bad.py (8 lines")
    assert build_card("cut.py", "class Half:\n    def m(self, x=[\n").render().startswith("cut.py (2 lines")


@pytest.mark.parametrize("data", [b"\xff\xfe\x00def x():\n", b"def ok():\n    return '\xe9'\n", b"\x00" * 64])
def test_undecodable_or_binary_bytes_never_raise(data: bytes) -> None:
    card = build_card("weird.py", data)
    assert card.sha == hashlib.sha256(data).hexdigest()[:16]


def test_a_language_without_a_grammar_gets_an_approximate_pattern_outline() -> None:
    source = (
        "package demo;\n\n"
        "public class Greeter {\n"
        "    public interface Hook {\n"
        "        void call();\n"
        "    }\n"
        "}\n\n"
        "fun greet(name: String) {\n"
        "    println(name)\n"
        "}\n"
    )
    card = build_card("src/Greeter.kt", source)
    assert card.language == "text" and card.approximate
    assert _table(card) == [
        ("class", "Greeter", 3, 7, 0),
        ("interface", "Greeter.Hook", 4, 6, 1),
        ("function", "greet", 9, 11, 0),
    ]
    assert "approximate" in card.render().splitlines()[0]
    assert "println" in card.references


def test_data_and_prose_files_get_an_empty_card() -> None:
    card = build_card("notes/todo.txt", "class of 2024\ntype the words\n")
    assert card.definitions == () and card.references == frozenset()
    assert card.render() == f"notes/todo.txt (2 lines, sha {card.sha[:8]})"


def test_a_file_too_large_to_parse_is_outlined_by_pattern() -> None:
    source = "# " + "x" * CARD_PARSE_MAX_BYTES + "\n\ndef late():\n    return 1\n\nclass After:\n    pass\n"
    card = build_card("big.py", source)
    assert card.approximate
    assert _table(card) == [("function", "late", 3, 4, 0), ("class", "After", 6, 7, 0)]


def test_large_markdown_falls_back_to_pattern_headings_that_skip_code_blocks() -> None:
    source = _MARKDOWN + "\n" + "y" * CARD_PARSE_MAX_BYTES + "\n"
    card = build_card("big.md", source)
    assert card.approximate
    parsed = build_card("small.md", _MARKDOWN)
    assert _table(card)[:-1] == _table(parsed)[:-1]  # the same sections as the parse gives...
    assert _table(card)[-1] == ("heading", "Setext heading", 19, 24, 0)  # ...the last one runs to the end


def test_cards_are_deterministic_and_survive_a_json_round_trip() -> None:
    first, second = build_card("pkg/mod.py", _PYTHON), build_card("pkg/mod.py", _PYTHON)
    assert first == second and first.render() == second.render()
    record = json.loads(json.dumps(first.to_record()))
    assert record == first.to_record()
    assert FileCard.from_record(record) == first


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"path": "a.py"},
        {"path": 1, "sha": "", "lines": 0, "language": "", "approximate": False, "definitions": [], "references": []},
        {"path": "a", "sha": "", "lines": 0, "language": "", "approximate": 0, "definitions": [], "references": []},
        {
            "path": "a",
            "sha": "",
            "lines": 0,
            "language": "",
            "approximate": False,
            "definitions": [[1]],
            "references": [],
        },
        {
            "path": "a",
            "sha": "",
            "lines": 0,
            "language": "",
            "approximate": False,
            "definitions": [],
            "references": [3],
        },
    ],
)
def test_a_malformed_record_is_refused_with_a_value_error(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        FileCard.from_record(bad)


def test_a_definition_record_is_a_compact_list() -> None:
    definition = Definition("method", "bar", "Foo.bar", 12, 30, "def bar(self, x)", 1)
    assert definition.to_record() == ["method", "bar", "Foo.bar", 12, 30, "def bar(self, x)", 1]
    assert Definition.from_record(definition.to_record()) == definition


def test_languages_are_chosen_by_extension() -> None:
    assert [language_for(p) for p in ("a.py", "b.TSX", "c.mjs", "d.go", "e.rs", "README.md", "f.java")] == [
        "python",
        "tsx",
        "javascript",
        "go",
        "rust",
        "markdown",
        "text",
    ]


@pytest.mark.parametrize(
    "rel",
    ["server/live_memory/memory/context_window.py", "server/live_memory/fs/jail.py", "docs/architecture.md"],
)
def test_a_card_is_a_small_fraction_of_a_real_file(rel: str) -> None:
    text = (REPO / rel).read_text(encoding="utf-8")
    card = build_card(rel, text)
    assert len(card.definitions) >= 3
    assert len(card.render()) < 0.2 * len(text)


@pytest.mark.parametrize("language", ["python", "javascript", "typescript", "tsx", "go", "rust", "markdown"])
def test_every_declared_grammar_loads_from_its_wheel(language: str) -> None:
    """The pattern outline would hide a broken install: the grammars pyproject.toml declares must load."""
    assert grammar_available(language)
    assert not grammar_available("cobol")
