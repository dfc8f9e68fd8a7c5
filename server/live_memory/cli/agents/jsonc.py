"""Edit a JSON file (comments and trailing commas allowed: JSONC) in place, keeping every byte not edited.

OpenCode reads its config as JSONC and Gemini CLI accepts comments in settings.json, so an installer must keep
a user's comments, their compact one-line objects and their indentation, and an uninstall must give the file
back byte for byte. Python's JSON-with-comments libraries either drop the comments when they write
(commentjson, json-with-comments), or keep them through a JSON5 model whose new nodes come out in JSON5 syntax
(single quotes) that a strict reader refuses (json-five); none splices. So this module is a small editor:

- reading: comments and trailing commas are blanked (replaced by spaces of the same length, newlines kept, so
  every offset and every error's line and column stay true); the standard library's `json` then reads the rest
  strictly (the dialect OpenCode's and Gemini's readers take), and a scanner records where each object's
  members and each array's items start and end;
- writing: each edit is one or two splices of the original text. A new member or item goes on lines of its
  own after the last one, indented as its siblings are, with a comma after the previous one (or a trailing
  comma of its own, when the container already ends with one); in a one-line container it goes inline.
  Removing it takes exactly those bytes back out.

Never rewrites what it was not asked to change; never reorders keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from live_memory.core.errors import JsoncError

# A string (kept), a line comment, a block comment.
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)
# A string (kept), or a comma followed only by blanks up to a closing bracket (a trailing comma).
_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|,(?=\s*[}\]])')
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|NaN|-?Infinity")
_BLANKS = " \t\r\n"

Path = Sequence[str | int]  # keys of objects and indexes of arrays, from the top


@dataclass
class Node:
    start: int
    end: int
    keys: list[str] = field(default_factory=list)  # an object's, in order
    key_starts: list[int] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)  # an object's values or an array's items
    kind: str = "scalar"  # "object", "array" or "scalar"


def _blank(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text.startswith('"') else re.sub(r"[^\n]", " ", text)


def has_comments(text: str) -> bool:
    """Whether `text` holds a comment or a trailing comma (what strict JSON refuses)."""
    return strip(text) != text


def strip(text: str) -> str:
    """`text` with comments and trailing commas blanked: strict JSON when `text` is JSONC, offsets unchanged."""
    return _TRAILING_COMMA.sub(_blank, _COMMENT.sub(_blank, text))


class _Scanner:
    """Where things are in strict JSON text (already known to be valid)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _BLANKS:
            i += 1
        return i

    def node(self, i: int) -> Node:
        i = self.skip(i)
        char = self.text[i]
        if char == "{":
            return self._container(i, "}", keyed=True)
        if char == "[":
            return self._container(i, "]", keyed=False)
        if char == '"':
            _, end = json.decoder.scanstring(self.text, i + 1)  # type: ignore[attr-defined]
            return Node(i, end)
        match = _SCALAR.match(self.text, i)
        assert match is not None, f"not a JSON value at {i}"
        return Node(i, match.end())

    def _container(self, start: int, close: str, *, keyed: bool) -> Node:
        node = Node(start, start, kind="object" if keyed else "array")
        i = self.skip(start + 1)
        while self.text[i] != close:
            if keyed:
                key, after = json.decoder.scanstring(self.text, i + 1)  # type: ignore[attr-defined]
                node.keys.append(key)
                node.key_starts.append(i)
                i = self.skip(after) + 1  # past the colon
            child = self.node(i)
            node.children.append(child)
            i = self.skip(child.end)
            if self.text[i] == ",":
                i = self.skip(i + 1)
        node.end = i + 1
        return node


class Document:
    """A JSON(C) text and edits to it; `value` is what the text means now."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._read()

    def _read(self) -> None:
        strict = strip(self.text)
        if not strict.strip():
            self.value: Any = None
            self.root: Node | None = None
            return
        try:
            self.value = json.loads(strict)
        except json.JSONDecodeError as exc:
            raise JsoncError(exc.msg, exc.lineno, exc.colno) from None
        self.root = _Scanner(strict).node(0)

    # -- reading --------------------------------------------------------------------------------------------
    def get(self, path: Path) -> Any:
        value = self.value
        for step in path:
            in_object = isinstance(step, str) and isinstance(value, dict) and step in value
            if in_object or (isinstance(step, int) and isinstance(value, list) and 0 <= step < len(value)):
                value = value[step]
            else:
                return None
        return value

    def _node(self, path: Path) -> Node:
        node = self.root
        assert node is not None
        for step in path:
            index = node.keys.index(step) if isinstance(step, str) else step
            node = node.children[index]
        return node

    # -- editing --------------------------------------------------------------------------------------------
    def set(self, path: Path, value: Any) -> None:
        """Give the member at `path` (a key under objects) `value`: its value replaced in place when it exists,
        else added last in its object, the objects on the way created as needed."""
        if self.root is None:
            self.text = json.dumps(_nest(path, value), indent=2, ensure_ascii=False) + "\n"
            self._read()
            return
        depth = 0
        parent = self.root
        while depth < len(path) - 1 and path[depth] in parent.keys:
            parent = parent.children[parent.keys.index(str(path[depth]))]
            depth += 1
        key = str(path[depth])
        if parent.kind != "object":
            raise ValueError(f"{'.'.join(map(str, path[:depth])) or 'the top'} is not an object")
        if depth == len(path) - 1 and key in parent.keys:
            node = parent.children[parent.keys.index(key)]
            self._splice(node.start, node.end, self._render(value, self._line_indent(node.start), parent))
        else:
            self._insert(parent, json.dumps(key, ensure_ascii=False) + ": ", _nest(path[depth + 1 :], value))
        self._read()

    def append(self, path: Path, value: Any) -> None:
        """Add `value` as the last item of the array at `path`."""
        self._insert(self._node(path), "", value)
        self._read()

    def replace_item(self, path: Path, index: int, value: Any) -> None:
        array = self._node(path)
        node = array.children[index]
        self._splice(node.start, node.end, self._render(value, self._line_indent(node.start), array))
        self._read()

    def delete(self, path: Path) -> None:
        """Remove the member or item at `path`, and the bytes an insertion of it would have added."""
        parent = self._node(path[:-1])
        step = path[-1]
        index = parent.keys.index(step) if isinstance(step, str) else step
        self._remove(parent, index)
        self._read()

    # -- the splices ----------------------------------------------------------------------------------------
    def _splice(self, start: int, end: int, text: str) -> None:
        self.text = self.text[:start] + text + self.text[end:]

    def _item_start(self, parent: Node, index: int) -> int:
        return parent.key_starts[index] if parent.keys else parent.children[index].start

    def _line_indent(self, offset: int) -> str:
        line_start = self.text.rfind("\n", 0, offset) + 1
        line = self.text[line_start:offset]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def _unit(self) -> str:
        """The document's indentation step: that of the first indented line (two spaces when none is)."""
        for line in self.text.splitlines():
            body = line.lstrip(" \t")
            if body and len(body) < len(line):
                return line[: len(line) - len(body)]
        return "  "

    def _multiline(self, node: Node) -> bool:
        if "\n" in self.text[node.start : node.end]:
            return True
        return not node.children and node is self.root

    def _render(self, value: Any, indent: str, container: Node) -> str:
        if not self._multiline(container):
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self._unit(), ensure_ascii=False).replace("\n", "\n" + indent)

    def _after(self, offset: int) -> tuple[bool, int]:
        """(a comma follows, the end of the line after that comma and any comment, or -1 when something else
        follows on the line) for the value ending at `offset`."""
        i, comma = offset, False
        while i < len(self.text):
            if self.text.startswith("//", i):
                newline = self.text.find("\n", i)
                return comma, len(self.text) if newline < 0 else newline + 1
            if self.text.startswith("/*", i):  # a comment that ends on this line is skipped
                close = self.text.find("*/", i + 2)
                if close < 0 or "\n" in self.text[i:close]:
                    return comma, -1
                i = close + 2
                continue
            char = self.text[i]
            if char == "\n":
                return comma, i + 1
            if char == "," and not comma:
                comma = True
            elif char not in " \t\r":
                return comma, -1
            i += 1
        return comma, -1

    def _insert(self, parent: Node, prefix: str, value: Any) -> None:
        """`prefix` + `value` as the last member or item of `parent`."""
        open_indent = self._line_indent(parent.start)
        if not parent.children:
            if not self._multiline(parent):
                self._splice(parent.start + 1, parent.end - 1, prefix + json.dumps(value, ensure_ascii=False))
                return
            indent = open_indent + self._unit()
            entry = prefix + self._render(value, indent, parent)
            self._splice(parent.start + 1, parent.end - 1, f"\n{indent}{entry}\n{open_indent}")
            return
        last = parent.children[-1]
        if not self._multiline(parent):
            self._splice(last.end, last.end, ", " + prefix + json.dumps(value, ensure_ascii=False))
            return
        first = self._item_start(parent, len(parent.children) - 1)
        indent = self._line_indent(first)
        own_line = not self.text[self.text.rfind("\n", 0, first) + 1 : first].strip()
        comma, line_end = self._after(last.end)
        entry = prefix + self._render(value, indent, parent)
        if not own_line or line_end < 0:
            self._splice(last.end, last.end, f",\n{indent}{entry}")
        elif comma:  # the container ends with a trailing comma: so does the new entry
            self._splice(line_end, line_end, f"{indent}{entry},\n")
        else:
            self._splice(line_end, line_end, f"{indent}{entry}\n")
            self._splice(last.end, last.end, ",")

    def _remove(self, parent: Node, index: int) -> None:
        node = parent.children[index]
        start = self._item_start(parent, index)
        count = len(parent.children)
        if count == 1:
            self._splice(parent.start + 1, parent.end - 1, "")
            return
        line_start = self.text.rfind("\n", 0, start) + 1
        own_line = not self.text[line_start:start].strip()
        comma, line_end = self._after(node.end)
        if own_line and line_end >= 0 and self._multiline(parent):
            self._splice(line_start, line_end, "")
            previous = parent.children[index - 1].end
            if index == count - 1 and not comma and self.text[previous] == ",":
                self._splice(previous, previous + 1, "")  # the comma its insertion put after the one before
            return
        if index > 0:
            self._splice(parent.children[index - 1].end, node.end, "")
        else:
            self._splice(start, self._item_start(parent, 1), "")


def _nest(path: Path, value: Any) -> Any:
    for step in reversed(path):
        value = {str(step): value}
    return value
