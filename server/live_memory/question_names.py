"""The names a question asks about, looked up before the model sees it.

A question such as "Where is `build_prompt` defined?" or "How does `ContextWindow.freeze` work?" names
code. Looking those names up first (with the `find_symbol` tool, from the symbol index or a workspace
scan of the current files) puts their definitions, as `path:first-last`, in the question's hint: the model
can answer a "where" question at once, and reads only the lines it needs for the others, instead of
spending a tool round to search. The hint is sent with this question only and never stored.
"""

from __future__ import annotations

import re

from live_memory.constants import QUESTION_NAMES_MAX

# A name in backticks (`Card.render`, `retry`), or an identifier whose shape says it is code: snake_case
# or camelCase/PascalCase with an inner capital.
_QUOTED = re.compile(r"`([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:\(\))?`")
_SHAPED = re.compile(r"(?<![\w.`/-])([A-Za-z_][A-Za-z0-9]*_[\w]*|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)(?![\w`/-])")
_NO_DEFINITION = "No definition of"
# A workspace-relative file path: directories, then a name with an extension (`src/app.py`, `app.py:40-58`).
_PATH = re.compile(r"(?<![\w./-])(?:\./)?((?:[\w-][\w.-]*/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]*)(?![\w/-])")


def names_in(question: str, limit: int = QUESTION_NAMES_MAX) -> list[str]:
    """The code names a question mentions, quoted ones first, each once, at most `limit`."""
    found = [m.group(1) for m in _QUOTED.finditer(question)]
    found += [m.group(1) for m in _SHAPED.finditer(_QUOTED.sub(" ", question))]
    return list(dict.fromkeys(n for n in found if len(n) > 2))[:limit]


def paths_in(question: str) -> list[str]:
    """The file paths a question mentions, each once, in order: the files it means a name in ("`Migration`
    in app/migrations/0002_auto.py"), whose definitions come first."""
    return list(dict.fromkeys(m.group(1) for m in _PATH.finditer(question)))


def found_definitions(tool_text: str, is_error: bool) -> str | None:
    """A `find_symbol` answer worth showing: one that found a definition."""
    if is_error or not tool_text.strip() or tool_text.startswith(_NO_DEFINITION):
        return None
    return tool_text.strip()
