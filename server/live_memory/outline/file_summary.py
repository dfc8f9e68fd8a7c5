"""What a file does, in a few lines and without a model call: the first paragraph of its module docstring (of a
Markdown file, the text under its title), the modules it imports, and its classes and functions with their
lines and the first line of their docs. Deterministic, from the file's text and its card (cards.py).

For what a question names but that is too long to read ahead (pre_read.py): the model sees what the file holds
and reads the lines it needs. Never reads a file itself.
"""

from __future__ import annotations

import re

from live_memory.constants import SUMMARY_DEFINITIONS_MAX, SUMMARY_DOC_CHARS, SUMMARY_IMPORTS_MAX
from live_memory.outline.cards import build_card

_MODULE_DOC = re.compile(r'\A(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*[rRbBuU]?("""|\'\'\')(.*?)\1', re.S)
_PY_IMPORT = re.compile(r"^(?:from\s+([.\w]+)\s+import\b|import\s+([\w.]+))", re.M)
_JS_IMPORT = re.compile(r"""^\s*import\b[^'"\n]*['"]([^'"\n]+)['"]""", re.M)
_DOC_LINE = re.compile(r"""^\s*[rRbBuU]?(?:\"\"\"|'''|"|')\s*(.*?)\s*(?:\"\"\"|'''|"|')?\s*$""")


def summary(path: str, text: str) -> str:
    """The file's summary as the hint shows it (see the module docstring)."""
    card = build_card(path, text)
    lines = [f"### {path} ({card.lines} lines): what it holds"]
    doc = module_doc(path, text)
    if doc:
        lines.append(doc)
    imports = _imports(path, text)
    if imports:
        more = f" (+{len(imports) - SUMMARY_IMPORTS_MAX} more)" if len(imports) > SUMMARY_IMPORTS_MAX else ""
        lines.append(f"Imports: {', '.join(imports[:SUMMARY_IMPORTS_MAX])}{more}")
    source = text.splitlines()
    listed = [d for d in card.definitions if d.depth <= 1 and d.kind != "variable"]
    shown = listed[:SUMMARY_DEFINITIONS_MAX]
    for d in shown:
        span = str(d.start) if d.start == d.end else f"{d.start}-{d.end}"
        about = _doc_after(source, d.start, d.end)
        lines.append(f"{'  ' * d.depth}- {d.signature or d.name}  {span}{f': {about}' if about else ''}")
    if len(listed) > len(shown):
        lines.append(f"(+{len(listed) - len(shown)} more definitions: find_symbol or Read for them)")
    return "\n".join(lines)


def module_doc(path: str, text: str) -> str:
    """The first paragraph of the file's own description, on one line, cut at SUMMARY_DOC_CHARS ("" without)."""
    if path.endswith(".md"):
        body = re.sub(r"\A\s*#[^\n]*\n", "", text)
        paragraph = body.strip().split("\n\n", 1)[0]
    else:
        found = _MODULE_DOC.match(text)
        paragraph = found.group(2).strip().split("\n\n", 1)[0] if found else ""
    flat = " ".join(paragraph.split())
    return flat if len(flat) <= SUMMARY_DOC_CHARS else flat[: SUMMARY_DOC_CHARS - 1].rstrip() + "…"


def _imports(path: str, text: str) -> list[str]:
    if path.endswith((".py", ".pyi")):
        found = [m.group(1) or m.group(2) for m in _PY_IMPORT.finditer(text)]
    elif path.endswith((".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")):
        found = _JS_IMPORT.findall(text)
    else:
        return []
    return [name for name in dict.fromkeys(found) if name != "__future__"]


def _doc_after(source: list[str], start: int, end: int) -> str:
    """The first line of a definition's docstring: the first string line right after its header."""
    for number in range(start, min(end, start + 12)):
        line = source[number - 1] if number <= len(source) else ""
        if line.rstrip().endswith(":") and number < len(source):
            following = source[number].strip()
            match = _DOC_LINE.match(following) if following[:1] in "\"'rRbBuU" else None
            text = match.group(1) if match else ""
            return text if len(text) <= SUMMARY_DOC_CHARS else text[: SUMMARY_DOC_CHARS - 1] + "…"
    return ""
