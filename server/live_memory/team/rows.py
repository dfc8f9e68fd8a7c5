"""The team store's rows as they arrive: each checked on its own, at the edge, before anything uses it.

A row is whatever a teammate's login wrote, by a server or by hand with psql. It is refused, alone, when a
column is NULL or of another type, when it is larger than its cap (a fact TEAM_FACT_MAX_CHARS, an answer
this server's max_answer_tokens), when its grounds are empty, not an object of path -> SHA-256, or name a
path outside a checkout (absolute, `..`, a backslash), or when a field shown to a model or a person (the
author, the writer's names, a path) is not one line of printable text. A refused row becomes a `Refused`
(its key, `facts#12`, and why), which the caller counts and logs; the others become frozen records.

Pydantic is used here only, at the edge; nothing here does I/O. The SELECTs in team_store.py send every
text column cut one character past its cap, so an oversized row is refused for its size without being sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo

from live_memory import constants as C
from live_memory.core.records import TeamAnswer, TeamFact

Table = Literal["facts", "answers"]
_SHA256_HEX = frozenset("0123456789abcdef")
MAX_REASON_CHARS = 200


@dataclass(frozen=True)
class Refused:
    """A row refused at the edge: its key (`facts#12`), why, and its author as the database recorded it."""

    key: str
    reason: str
    author: str


def one_line(text: str) -> str:
    """Printable text only: no line break, tab or other control character (a field that is shown)."""
    if not text.isprintable():
        raise ValueError("must be one line of printable text")
    return text


def no_controls(text: str) -> str:
    """Text that may hold tabs and line breaks, but no other control character (a NUL, an escape)."""
    if any(not c.isprintable() and c not in "\t\n\r" for c in text):
        raise ValueError("holds a control character")
    return text


def inside_checkout(path: str) -> str:
    """A path relative to a checkout, spelled as a checkout's file is: never absolute, never `..`."""
    parts = PurePosixPath(path).parts
    plain = path.isprintable() and str(PurePosixPath(path)) == path and "\\" not in path
    if not parts or path.startswith("/") or ".." in parts or not plain:
        raise ValueError(f"path {path[:80]!r} is not a plain path inside a checkout")
    return path


def _sources(raw: object) -> dict[str, str]:
    """The grounds, sent as jsonb's text (cut one character past TEAM_SOURCES_MAX_CHARS): an object of at
    least one and at most TEAM_SOURCES_MAX_PATHS paths, each with a SHA-256 in lower-case hex."""
    if not isinstance(raw, str):
        raise ValueError("must be present")
    if len(raw) > C.TEAM_SOURCES_MAX_CHARS:
        raise ValueError(f"longer than {C.TEAM_SOURCES_MAX_CHARS} characters")
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise ValueError("is not JSON") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"must be an object of path -> SHA-256, not {type(parsed).__name__}")
    if not parsed:
        raise ValueError("is empty: the row rests on no file")
    if len(parsed) > C.TEAM_SOURCES_MAX_PATHS:
        raise ValueError(f"names more than {C.TEAM_SOURCES_MAX_PATHS} files")
    for path, digest in parsed.items():
        if len(path) > C.TEAM_PATH_MAX_CHARS:
            raise ValueError(f"a path is longer than {C.TEAM_PATH_MAX_CHARS} characters")
        inside_checkout(path)
        if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _SHA256_HEX:
            raise ValueError(f"the digest of {path[:80]!r} is not a SHA-256 in hex")
    return parsed


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number of seconds")
    return value


def _within_answer_cap(text: str, info: ValidationInfo) -> str:
    cap = int((info.context or {}).get("answer_max_chars", C.DEFAULT_MAX_ANSWER_TOKENS * C.TEAM_ANSWER_CHARS_PER_TOKEN))
    if len(text) > cap:
        raise ValueError(f"longer than {cap} characters (max_answer_tokens)")
    return text


Shown = Annotated[str, AfterValidator(one_line)]
Seconds = Annotated[float, AfterValidator(_finite)]
Sources = Annotated[dict[str, str], BeforeValidator(_sources)]


class _Row(BaseModel):
    """The columns every row has: its id, repository, grounds, the writer's own names, its author as the
    database recorded it, and when it was learned and last confirmed."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    row_id: int = Field(ge=1)
    repo: Annotated[str, Field(min_length=1, max_length=C.TEAM_REPO_MAX_CHARS), AfterValidator(one_line)]
    sources: Sources
    machine: Annotated[str, Field(max_length=C.TEAM_NAME_MAX_CHARS), AfterValidator(one_line)]
    user: Annotated[str, Field(max_length=C.TEAM_NAME_MAX_CHARS), AfterValidator(one_line)]
    author: Annotated[str, Field(min_length=1, max_length=C.TEAM_AUTHOR_MAX_CHARS), AfterValidator(one_line)]
    learned_at: Seconds
    confirmed_at: Seconds


class FactRow(_Row):
    # One line, as the ledger's own facts are (its render escapes what is left: headings, markup).
    text: Annotated[str, Field(min_length=1, max_length=C.TEAM_FACT_MAX_CHARS), AfterValidator(one_line)]


class AnswerRow(_Row):
    question: Annotated[str, Field(min_length=1, max_length=C.MAX_QUESTION_CHARS), AfterValidator(no_controls)]
    answer: Annotated[str, Field(min_length=1), AfterValidator(no_controls), AfterValidator(_within_answer_cap)]


# The columns each table's SELECT sends, in its order (team_store.py builds the SELECTs from these).
FACT_COLUMNS = ("row_id", "repo", "text", "sources", "machine", "user", "author", "learned_at", "confirmed_at")
ANSWER_COLUMNS = (
    "row_id", "repo", "question", "answer", "sources", "machine", "user", "author", "learned_at", "confirmed_at",
)  # fmt: skip


def check_fact(row: Sequence[Any]) -> TeamFact | Refused:
    """A fact row (FACT_COLUMNS) as a record, or why it is refused."""
    values = dict(zip(FACT_COLUMNS, row, strict=True))
    try:
        checked = FactRow.model_validate(values)
    except ValidationError as error:
        return _refused("facts", values, error)
    return TeamFact(**checked.model_dump())


def check_answer(row: Sequence[Any], answer_max_chars: int) -> TeamAnswer | Refused:
    """An answer row (ANSWER_COLUMNS) as a record, or why it is refused."""
    values = dict(zip(ANSWER_COLUMNS, row, strict=True))
    try:
        checked = AnswerRow.model_validate(values, context={"answer_max_chars": answer_max_chars})
    except ValidationError as error:
        return _refused("answers", values, error)
    return TeamAnswer(**checked.model_dump())


def _refused(table: Table, values: Mapping[str, Any], error: ValidationError) -> Refused:
    """The first thing wrong with the row, said in a line a log can hold (never the refused text itself)."""
    first = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "row"
    message = str(first["msg"]).removeprefix("Value error, ")
    author = values.get("author")
    shown = author if isinstance(author, str) and author.isprintable() else repr(author)
    return Refused(f"{table}#{values.get('row_id')}", f"{where}: {message}"[:MAX_REASON_CHARS], shown[:80])
