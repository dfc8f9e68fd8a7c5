"""The JSON-with-comments editor the installers use: an edit keeps every other byte, and undoing it gives the
text back byte for byte, whatever the layout (comments, trailing commas, compact objects, tabs, an empty file);
a text that is not JSON is refused with the line and column an editor shows."""

from __future__ import annotations

from typing import Any

import pytest

from live_memory.cli.agents.jsonc import Document, has_comments
from live_memory.core.errors import JsoncError

ENTRY: dict[str, Any] = {"url": "http://127.0.0.1:7711/mcp", "headers": {"X-Live-Memory-Agent": "opencode"}}
OURS = ["mcp", "live_memory"]
LAYOUTS = [
    ('{\n  "mcp": {\n    "docs": {"type": "local"}\n  }\n}\n', OURS),
    ('{\n  "mcp": {\n    "docs": {"type": "local"}, // mine\n  },\n}\n', OURS),  # trailing commas, a comment
    ('{"theme": "dark", "mcp": {"docs": {"type": "local"}}}', OURS),  # all on one line
    ('{\n\t"mcp": {\n\t\t"docs": {"type": "local"} /* kept */\n\t}\n}\n', OURS),  # tabs, a block comment
    ('{\n  "theme": "dark"\n}\n', ["mcp"]),  # no "mcp" yet: created, then removed whole
    ('{\n  "mcp": {}\n}\n', OURS),
]


@pytest.mark.parametrize(("text", "undo"), LAYOUTS)
def test_adding_a_member_and_removing_it_again_gives_back_every_byte(text: str, undo: list[str]) -> None:
    document = Document(text)
    document.set(OURS, ENTRY)
    assert document.value["mcp"]["live_memory"] == ENTRY
    document.delete(undo)
    assert document.text == text


def test_a_new_member_is_indented_as_its_neighbours_and_a_value_is_replaced_in_place() -> None:
    document = Document('{\n    "a": 1,\n    "b": [1, 2]\n}\n')
    document.set(["c"], {"d": True})
    assert document.text == '{\n    "a": 1,\n    "b": [1, 2],\n    "c": {\n        "d": true\n    }\n}\n'
    document.set(["a"], 2)
    assert document.text.startswith('{\n    "a": 2,\n')


def test_an_item_appended_to_an_array_and_removed_leaves_the_array_as_it_was() -> None:
    text = '{"hooks": {"AfterTool": [\n  {"matcher": "x"}\n]}}\n'
    document = Document(text)
    document.append(["hooks", "AfterTool"], {"matcher": "ours"})
    assert document.value["hooks"]["AfterTool"][-1] == {"matcher": "ours"}
    document.delete(["hooks", "AfterTool", 1])
    assert document.text == text


def test_an_empty_text_gets_a_new_object_and_means_nothing_before() -> None:
    document = Document("")
    assert document.value is None
    document.set(["mcp", "live_memory"], {"a": 1})
    assert document.text == '{\n  "mcp": {\n    "live_memory": {\n      "a": 1\n    }\n  }\n}\n'


def test_text_that_is_not_json_is_refused_with_its_line_and_column() -> None:
    with pytest.raises(JsoncError, match=r"line 3, column 1: Expecting ',' delimiter"):
        Document('{\n  "a": 1 // a comment keeps the count\n"b": 2}\n')
    assert has_comments('{"a": 1,}') and not has_comments('{"a": "//not a comment"}')
