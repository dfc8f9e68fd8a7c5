"""The names a question asks about, looked up before the model sees it.

A question such as "Where is `build_prompt` defined?" or "How does `ContextWindow.freeze` work?" names
code. Looking those names up first (with the `find_symbol` tool, from the symbol index or a workspace
scan of the current files) puts their definitions, as `path:first-last`, in the question's hint: the model
can answer a "where" question at once, and reads only the lines it needs for the others, instead of
spending a tool round to search. A question that asks only where a name is (defined, or used) gets the
locations with each definition's first line and no code: its answer is a location, and code it does not
need would be paid for as uncached input. The hint is sent with this question only and never stored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from live_memory.constants import QUESTION_NAMES_MAX

# A name in backticks (`Card.render`, `retry`), or an identifier whose shape says it is code: snake_case
# or camelCase/PascalCase with an inner capital.
_QUOTED = re.compile(r"`([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:\(\))?`")
_SHAPED = re.compile(r"(?<![\w.`/-])([A-Za-z_][A-Za-z0-9]*_[\w]*|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)(?![\w`/-])")
_NO_DEFINITION = "No definition of"
_USED_IN = "\nUsed in "
# A workspace-relative file path: directories, then a name with an extension (`src/app.py`, `app.py:40-58`).
_PATH = re.compile(r"(?<![\w./-])(?:\./)?((?:[\w-][\w.-]*/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]*)(?![\w/-])")


# What a location question asks about: a name, maybe backticked, called, or placed in a file
# ("`Migration` (in app/migrations/0002_auto.py)", "the function retry in net/retry.py").
_SUBJECT = (
    r"(?:the\s+(?:function|class|method|type|constant|variable|module)\s+)?`?[\w$.]+(?:\(\))?`?"
    r"(?:\s+\((?:in|from)\s+[^()\n]+\)|\s+(?:in|from)\s+`?[\w./-]+`?)?"
)
_SUBJECTS = rf"{_SUBJECT}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+){_SUBJECT})*"  # "`a`, `b` and `c`"
_WHERE_DEFINED = re.compile(
    rf"""where\s+(?:is|are)\s+{_SUBJECTS}\s+(?:defined|declared|implemented|located|set)
    |(?:in\s+)?(?:which|what)\s+files?(?:\s+and\s+lines?)?\s+(?:defines?|declares?|implements?)\s+{_SUBJECTS}
    |(?:in\s+)?which\s+file\s+(?:is|are)\s+{_SUBJECTS}\s+(?:defined|declared|implemented)
    |(?:find|locate|show(?:\s+me)?)\s+(?:the\s+)?(?:definitions?|declarations?)\s+of\s+{_SUBJECTS}
    |where\s+(?:does|do)\s+{_SUBJECTS}\s+live""",
    re.I | re.X,
)
_WHO_USES = re.compile(
    rf"""(?:who|what|which\s+(?:code|functions?|files?|modules?))\s+(?:calls?|uses?|imports?|references?)\s+{_SUBJECTS}
    |where\s+(?:is|are)\s+{_SUBJECTS}\s+(?:used|called|imported|referenced)
    |(?:find|list|show(?:\s+me)?)\s+(?:all\s+)?(?:the\s+)?(?:callers|uses|usages|references|call\s+sites)\s+of\s+{_SUBJECTS}""",
    re.I | re.X,
)


# A directory as a question names it: in backticks with a final "/" (`tools/`), or a bare path ending in "/".
_DIRECTORY = re.compile(r"`\.?/?((?:[\w.-]+/)*[\w.-]+)/`|(?<![\w./`-])((?:[\w.-]+/)+)(?=[\s,;:?!)]|\.?$|\.\s)")
_QUOTED_SPAN = re.compile(r"`[^`\n]*`")
_WORD = re.compile(r"[A-Za-z]+|\d+")  # numbers count: "line 10" and "line 20" are two questions
# Words that ask for a review: the same files asked about for critique are another need than a walkthrough.
_REVIEW_LIST = "review reviews audit check checks recheck problem problems issue issues bug bugs flaw flaws"
REVIEW_WORDS = frozenset(_REVIEW_LIST.split())
# The scaffolding of a question: words that do not change what is asked (question words, pronouns, "walk me
# through", "how is it organised", "again", how parts "fit" or "work together"), and the words every question about
# code uses ("file", "handle").
_SCAFFOLDING_WORDS = """
    a about again all also an and any anything are as at be been being between briefly but by can code connected
    could deal deals dealing describe detail details did directory directories do does doing done each explain file
    files fit fits folder folders for from give handle handled handles handling has have having here how i in inside
    into is it its just laid layout look looks me module modules more my of on once or organisation organised
    organization organized our out overview package packages part parts please quick remind show so some structure
    structured summarise summarize summary tell than that the their them then there these they this those through to
    together too under us walk was we were what whats when where which who whole will with within work works would
    you your
"""
_SCAFFOLDING = frozenset(_SCAFFOLDING_WORDS.split())


def location_kind(question: str) -> str | None:
    """The `find_symbol` kind for a question that asks only where a name is: "definition" (where is it
    defined) or "both" (who calls or uses it, and where it is defined); None for any other question (how it
    works, what to change before an edit), whose lookups come with the definitions' code."""
    text = question.strip().rstrip("?.! \t")
    if _WHERE_DEFINED.fullmatch(text):
        return "definition"
    if _WHO_USES.fullmatch(text):
        return "both"
    return None


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
    """A `find_symbol` answer worth showing: one that found a definition, or files that use the name."""
    if is_error or not tool_text.strip():
        return None
    if tool_text.startswith(_NO_DEFINITION) and _USED_IN not in tool_text:
        return None
    return tool_text.strip()


def directories_in(question: str) -> list[str]:
    """The directories a question names (`tools/`, `src/auth/`), each once, in order, without the final "/"."""
    return list(dict.fromkeys((m.group(1) or m.group(2)).rstrip("/") for m in _DIRECTORY.finditer(question)))


def question_words(question: str, named: Sequence[str] = ()) -> list[str]:
    """The words of a question that say what it asks about, lowercased, in order: what is left once the files
    (`named`) and directories it names, the text in backticks and the scaffolding of a question are taken out
    ("How is session expiry handled in `auth/`?" -> ["session", "expiry"]); numbers count ("line 10")."""
    for name in named:
        question = question.replace(name, " ")
    text = _QUOTED_SPAN.sub(" ", _DIRECTORY.sub(" ", question))
    words = [w.lower() for w in _WORD.findall(text)]
    return [w for w in words if (len(w) > 2 or w.isdigit()) and w not in _SCAFFOLDING]
