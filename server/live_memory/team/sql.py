"""The team store's SQL: the upserts that push, the SELECTs that pull (each column capped), and who-am-I.

Text only (and the functions that lay rows out as the upserts' columns): team_store.py runs them. Every table
lives in the schema SCHEMA, so the database may be shared with other programs.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from live_memory import constants as C
from live_memory.core.records import TeamAnswer, TeamFact
from live_memory.team.rows import Table

SCHEMA = "live_memory"

# The columns an upsert sends, in its statement's order (one array per column; sources as canonical JSON).
FACT_COLUMNS = ("repo", "text", "sources", "machine", "user", "learned_at", "confirmed_at")
ANSWER_COLUMNS = ("repo", "question", "key", "answer", "sources", "machine", "user", "learned_at", "confirmed_at")


def columns(rows: Sequence[TeamFact | TeamAnswer], fields: Sequence[str]) -> list[list[Any]]:
    return [[_column_value(getattr(row, field)) for row in rows] for field in fields]


def _column_value(value: Any) -> Any:
    return json.dumps(dict(value), sort_keys=True) if isinstance(value, Mapping) else value


# The row key hashes what the server stores (the text as UTF-8, the sources as jsonb's canonical text), so
# it does not depend on how a client spells its JSON. An update happens only when it changes something.
UPSERT_FACTS = f"""
INSERT INTO {SCHEMA}.facts AS f
    (repo, text, sources, text_sha256, sources_sha256, machine, user_name, learned_at, confirmed_at)
SELECT r, t, s::jsonb, sha256(convert_to(t, 'UTF8')), sha256(convert_to(s::jsonb::text, 'UTF8')),
       m, u, to_timestamp(l), to_timestamp(c)
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::float8[], %s::float8[])
    AS x(r, t, s, m, u, l, c)
ON CONFLICT (repo, author, text_sha256, sources_sha256) DO UPDATE SET
    confirmed_at = greatest(f.confirmed_at, excluded.confirmed_at),
    learned_at = least(f.learned_at, excluded.learned_at),
    machine = CASE WHEN excluded.learned_at < f.learned_at THEN excluded.machine ELSE f.machine END,
    user_name = CASE WHEN excluded.learned_at < f.learned_at THEN excluded.user_name ELSE f.user_name END
WHERE excluded.confirmed_at > f.confirmed_at OR excluded.learned_at < f.learned_at
"""

# An answer given again on the same bytes replaces the row's answer (the newest wording), unless it is older.
UPSERT_ANSWERS = f"""
INSERT INTO {SCHEMA}.answers AS a
    (repo, question, answer, sources, question_sha256, sources_sha256, machine, user_name, learned_at, confirmed_at)
SELECT r, q, t, s::jsonb, sha256(convert_to(k, 'UTF8')), sha256(convert_to(s::jsonb::text, 'UTF8')),
       m, u, to_timestamp(l), to_timestamp(c)
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::float8[],
            %s::float8[])
    AS x(r, q, k, t, s, m, u, l, c)
ON CONFLICT (repo, author, question_sha256, sources_sha256) DO UPDATE SET
    answer = excluded.answer,
    question = excluded.question,
    machine = excluded.machine,
    user_name = excluded.user_name,
    confirmed_at = excluded.confirmed_at,
    learned_at = least(a.learned_at, excluded.learned_at)
WHERE excluded.confirmed_at > a.confirmed_at
"""

# Every text column is cut one character past its cap (team_rows.py refuses it then): an oversized row is
# refused for its size without being sent. NULLs come through as they are, and are refused too.
_SHARED_TAIL = (
    f"left(sources::text, {C.TEAM_SOURCES_MAX_CHARS + 1}), left(machine, {C.TEAM_NAME_MAX_CHARS + 1}),"
    f" left(user_name, {C.TEAM_NAME_MAX_CHARS + 1}), left(author, {C.TEAM_AUTHOR_MAX_CHARS + 1}),"
    " extract(epoch FROM learned_at)::float8, extract(epoch FROM confirmed_at)::float8"
)
_REPO = f"left(repo, {C.TEAM_REPO_MAX_CHARS + 1})"
_SELECTED = {
    "facts": f"id, {_REPO}, left(text, {C.TEAM_FACT_MAX_CHARS + 1}), {_SHARED_TAIL}",
    "answers": f"id, {_REPO}, left(question, {C.MAX_QUESTION_CHARS + 1}), left(answer, %s), {_SHARED_TAIL}",
}


def select_statement(
    table: Table, repo: str, limit: int, trusted: Collection[str], ids: Collection[int], answer_max_chars: int
) -> tuple[str, list[Any]]:
    """The SELECT and its parameters: one statement per shape (no "x IS NULL OR" that would spoil its plan),
    each walking the (repo, confirmed_at) index."""
    params: list[Any] = [answer_max_chars + 1] if table == "answers" else []
    where = ["repo = %s"]
    params.append(repo)
    if trusted:
        where.append("author = ANY(%s)")
        params.append(sorted(trusted))
    if ids:
        where.append("id = ANY(%s)")
        params.append(sorted(ids))
    params.append(limit)
    statement = (
        f"SELECT {_SELECTED[table]} FROM {SCHEMA}.{table} WHERE {' AND '.join(where)}"
        " ORDER BY confirmed_at DESC, id DESC LIMIT %s"
    )
    return statement, params


# Who this role is, and whether it stands above the policies: a superuser, a role that may bypass row-level
# security, or one that is (or may become) the tables' owner.
WHOAMI = f"""
SELECT current_user, r.rolsuper OR r.rolbypassrls
       OR pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = '{SCHEMA}.facts'::regclass), 'MEMBER')
FROM pg_roles r WHERE r.rolname = current_user
"""
