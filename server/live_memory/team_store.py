"""The team store: ledger facts, with their grounds, shared between developers' servers through PostgreSQL.

This module owns the conversation with the store and nothing else: a bounded connection pool, the versioned
schema (migrations in data/team_schema/, applied under an advisory lock so that servers starting together
take turns), and its calls: push and pull for facts (and for answers, shared only when the user allows it),
ping, schema_version and counts. It knows nothing of workspaces,
ledgers or queues; the engine decides what to push and which pulled facts still hold.

It must never let the store hold up its caller: every call is bounded by the timeout it was built with, even
when the network swallows packets (the abandoned call's clean-up then finishes in the background, held by
the store until aclose). And it must never leak a credential: driver and OS errors become TeamStoreError
with the URL masked and any password scrubbed from the driver's text.

TLS, passwords and the rest come from the URL or libpq's own environment variables (PGPASSWORD,
PGSSLMODE, PGSERVICE...), which the driver honours as it would for any libpq program.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import math
import os
import re
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal, TypeVar
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import TupleRow
from psycopg_pool import AsyncNullConnectionPool

from live_memory.constants import (
    TEAM_STORE_CLOSE_S,
    TEAM_STORE_MIGRATE_TIMEOUT_S,
    TEAM_STORE_PUSH_BATCH,
)
from live_memory.errors import TeamStoreError
from live_memory.records import TeamAnswer, TeamFact

T = TypeVar("T")
R = TypeVar("R", TeamFact, TeamAnswer)
Connection = psycopg.AsyncConnection[TupleRow]

SCHEMA = "live_memory"  # every table lives in this schema: the database may be shared with other programs
# pg_advisory_xact_lock key serializing migrations across servers ("lm_team" in ASCII).
MIGRATION_LOCK_KEY = 0x6C6D5F7465616D
MIGRATIONS_PACKAGE = ("data", "team_schema")
_MIGRATION_NAME = re.compile(r"(\d{3})_[\w-]+\.sql")
# Secrets a URL or conninfo string may carry (libpq's parameter names).
_SECRET_PARAMS = frozenset({"password", "sslpassword"})
_CONNINFO_SECRET = re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:\\.|[^'\\])*'|\S+)", re.IGNORECASE)
MASK = "***"
MIN_SCRUBBED_SECRET = 4  # shorter "passwords" would scrub ordinary words out of messages


@dataclass(frozen=True)
class Migration:
    """One step of the store's schema: version N is applied once, after N-1, inside one transaction."""

    version: int
    name: str
    sql: str


@functools.cache
def bundled_migrations() -> tuple[Migration, ...]:
    """The migrations shipped with this version, in order (reads package data: call it off the event loop)."""
    folder = resources.files("live_memory").joinpath(*MIGRATIONS_PACKAGE)
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.fullmatch(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda migration: migration.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"team store migrations must be numbered 1..n without gaps: {[m.name for m in found]}")
    return tuple(found)


def mask_url(url: str) -> str:
    """The store's URL fit for a message or a log: any password (user info, ?password=, ?sslpassword=, or
    password= in a key=value string) replaced by ***."""
    return _scrub(_mask_fields(url), _secrets(url))


def _mask_fields(url: str) -> str:
    if "://" not in url:
        return _CONNINFO_SECRET.sub(lambda match: match.group(1) + MASK, url)
    scheme, rest = url.split("://", 1)
    before_query, mark, query = rest.partition("?")
    head, hash_mark, fragment = (before_query, "", "") if mark else before_query.partition("#")
    # The last "@" before the query ends the user info (an unencoded "@" or "/" in a password stays masked;
    # an unencoded "?" is caught by the scrub of what libpq itself reads as the password).
    user_info, at, hosts = head.rpartition("@")
    if at and ":" in user_info:
        head = f"{user_info.split(':', 1)[0]}:{MASK}@{hosts}"
    masked = f"{scheme}://{head}{hash_mark}{fragment}"
    if mark:
        masked += "?" + _mask_query(query)
    return masked


def _mask_query(query: str) -> str:
    params = query.split("&")
    for index, param in enumerate(params):
        name, equals, _value = param.partition("=")
        if equals and unquote(name).strip().lower() in _SECRET_PARAMS:
            params[index] = f"{name}={MASK}"
    return "&".join(params)


def _secrets(url: str) -> set[str]:
    """Every password the URL (or the environment) could hand the driver, raw and percent-decoded."""
    found = {os.environ.get("PGPASSWORD", "")}
    if "://" in url:
        rest = url.split("://", 1)[1]
        before_query, _, query = rest.partition("?")
        user_info, at, _hosts = before_query.rpartition("@")
        if at and ":" in user_info:
            found.add(user_info.split(":", 1)[1])
        for param in query.split("&"):
            name, _, value = param.partition("=")
            if unquote(name).strip().lower() in _SECRET_PARAMS:
                found.add(value)
    else:
        found.update(match.group(2).strip("'") for match in _CONNINFO_SECRET.finditer(url))
    try:  # what libpq reads as the passwords, however the URL spells them
        parsed = conninfo_to_dict(url)
    except psycopg.Error:
        parsed = {}
    found.update(str(parsed.get(name, "")) for name in _SECRET_PARAMS)
    found |= {unquote(secret) for secret in found}
    return {secret for secret in found if len(secret) >= MIN_SCRUBBED_SECRET}


def _scrub(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def _conninfo(url: str, timeout_s: float) -> str:
    """The URL, plus what it leaves unsaid: a connect timeout (libpq counts whole seconds, at least 2) and an
    application name the store's operators see in pg_stat_activity. Anything the URL says wins."""
    given = conninfo_to_dict(url)
    extra: dict[str, Any] = {}
    if "connect_timeout" not in given:
        extra["connect_timeout"] = max(2, math.ceil(timeout_s))
    if "application_name" not in given:
        extra["application_name"] = "live-memory"
    return make_conninfo(url, **extra)


class TeamStore:
    """The client of one team store: at most pool_max connections at once, every call bounded by timeout_s.
    Build with `await TeamStore.connect(...)`, migrate() before the other calls, close with aclose()."""

    def __init__(self, pool: AsyncNullConnectionPool[Connection], *, url: str, timeout_s: float) -> None:
        self._pool = pool
        self._timeout_s = timeout_s
        self.masked_url = mask_url(url)
        self._secrets = _secrets(url)
        # Calls abandoned at their deadline, finishing their clean-up (a query cancel) in the background.
        self._calls: set[asyncio.Task[Any]] = set()

    @classmethod
    async def connect(cls, url: str, *, pool_max: int, timeout_s: float) -> TeamStore:
        """A store whose first connection succeeded within timeout_s; TeamStoreError (saying why) otherwise."""
        secrets = _secrets(url)
        try:
            conninfo = _conninfo(url, timeout_s)
        except psycopg.Error as error:
            raise TeamStoreError(f"invalid team store URL {mask_url(url)}: {_scrub(str(error), secrets)}") from None
        statement_ms = str(math.ceil(timeout_s * 1000))

        async def configure(connection: Connection) -> None:
            # The server gives up on a statement at our deadline too, rather than work for a caller long gone.
            await connection.execute("SELECT set_config('statement_timeout', %s, false)", [statement_ms])

        # No connection is kept between calls: a team's servers call rarely (at load and compaction) and share
        # one PostgreSQL, and a kept connection would go stale when the store restarts. Each call connects
        # afresh, in its own time (a pool that keeps connections retries failed ones on a backoff timer of
        # seconds, which would outlast the call); max_size bounds the connections open at once.
        pool: AsyncNullConnectionPool[Connection] = AsyncNullConnectionPool(
            conninfo,
            kwargs={"autocommit": True},
            max_size=pool_max,
            timeout=timeout_s,
            configure=configure,
            name="live-memory-team-store",
            open=False,
        )
        store = cls(pool, url=url, timeout_s=timeout_s)
        try:
            await pool.open()
            await store._bounded("connecting", store._round_trip)  # the caller learns now, and why, if it fails
        except BaseException:
            await store.aclose()
            raise
        return store

    # --- the calls -------------------------------------------------------------------------------

    async def migrate(self, *, migrations: Sequence[Migration] | None = None) -> int:
        """Bring the schema up to the newest version this code knows (bundled_migrations() unless given) and
        return it. Servers migrating at once take turns; a store already newer is refused, never touched."""
        steps = migrations if migrations is not None else await asyncio.to_thread(bundled_migrations)
        known = len(steps)
        limit_ms = str(math.ceil(TEAM_STORE_MIGRATE_TIMEOUT_S * 1000))

        async def run() -> int:
            async with self._pool.connection() as connection, connection.transaction():
                # A migration may rewrite the table, or wait for another server's: a longer bound than a call's.
                await connection.execute("SELECT set_config('statement_timeout', %s, true)", [limit_ms])
                await connection.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK_KEY])
                current = await _current_version(connection)
                if current is None:
                    await _create_version_table(connection)
                    current = 0
                if current > known:
                    raise TeamStoreError(
                        f"the team store at {self.masked_url} has schema version {current}, made by a newer version "
                        f"of Live Memory (this one knows versions up to {known}): upgrade Live Memory here, or "
                        "turn team_store off"
                    )
                for step in steps[current:]:
                    await connection.execute(step.sql.encode())
                    await connection.execute(
                        f"INSERT INTO {SCHEMA}.schema_version (version, name) VALUES (%s, %s)",
                        [step.version, step.name],
                    )
                return known

        return await self._bounded("migrating the schema", run, TEAM_STORE_MIGRATE_TIMEOUT_S)

    async def push(self, facts: Sequence[TeamFact]) -> int:
        """Upsert facts; return the rows written. The same repo + text + sources is one row: it keeps its first
        learned_at (and who learned it) while confirmed_at moves forward. Rows unchanged are not rewritten."""
        return await self._upsert("pushing facts", _UPSERT, _merge_duplicates(facts), _FACT_COLUMNS)

    async def pull(self, repo: str, *, since: float | None = None, limit: int) -> list[TeamFact]:
        """The repo's facts, newest confirmation first; only those confirmed after `since` when given.
        Whether a fact's files still hold is for the caller to check (it knows the current hashes)."""

        async def run() -> list[TeamFact]:
            async with self._pool.connection() as connection:
                if since is None:
                    cursor = await connection.execute(_PULL.format(since=""), [repo, limit])
                else:
                    cursor = await connection.execute(_PULL.format(since=_SINCE), [repo, since, limit])
                rows = await cursor.fetchall()
            return [_from_row(TeamFact, row) for row in rows]

        return await self._bounded("pulling facts", run)

    async def push_answers(self, answers: Sequence[TeamAnswer]) -> int:
        """Upsert answers; return the rows written. The same repo + question + sources is one row, which keeps
        the latest answer given and moves confirmed_at forward."""
        latest: dict[tuple[str, str, frozenset[tuple[str, str]]], TeamAnswer] = {}
        for answer in sorted(answers, key=lambda a: a.confirmed_at):
            latest[(answer.repo, answer.key, frozenset(answer.sources.items()))] = answer
        return await self._upsert("pushing answers", _UPSERT_ANSWERS, list(latest.values()), _ANSWER_COLUMNS)

    async def pull_answers(self, repo: str, *, limit: int) -> list[TeamAnswer]:
        """The repo's answers, newest confirmation first (whether their files still hold is for the caller)."""

        async def run() -> list[TeamAnswer]:
            async with self._pool.connection() as connection:
                cursor = await connection.execute(_PULL_ANSWERS, [repo, limit])
                rows = await cursor.fetchall()
            return [_from_row(TeamAnswer, row) for row in rows]

        return await self._bounded("pulling answers", run)

    async def ping(self) -> float:
        """Seconds for one round trip to the store, once connected."""
        return await self._bounded("pinging", self._round_trip)

    async def schema_version(self) -> int | None:
        """The store's schema version; None when it has never been migrated."""

        async def run() -> int | None:
            async with self._pool.connection() as connection:
                return await _current_version(connection)

        return await self._bounded("reading the schema version", run)

    async def counts(self, repo: str | None = None, *, table: Literal["facts", "answers"] = "facts") -> int:
        """Facts (or answers) stored: for one repository, or in all."""

        async def run() -> int:
            async with self._pool.connection() as connection:
                if repo is None:
                    cursor = await connection.execute(f"SELECT count(*) FROM {SCHEMA}.{table}")
                else:
                    cursor = await connection.execute(f"SELECT count(*) FROM {SCHEMA}.{table} WHERE repo = %s", [repo])
                row = await cursor.fetchone()
            return int(row[0]) if row else 0

        return await self._bounded("counting facts", run)

    async def aclose(self) -> None:
        """Close the pool. Calls abandoned at their deadline are cancelled and given a moment to hang up."""
        abandoned = set(self._calls)
        for call in abandoned:
            call.cancel()
        if abandoned:
            await asyncio.wait(abandoned, timeout=TEAM_STORE_CLOSE_S)
        await self._pool.close(timeout=TEAM_STORE_CLOSE_S)

    async def _upsert(
        self, what: str, statement: str, rows: Sequence[TeamFact | TeamAnswer], fields: Sequence[str]
    ) -> int:
        """`statement` over `rows` (their `fields` as columns) in batches, in one transaction; the rows written."""
        if not rows:
            return 0

        async def run() -> int:
            written = 0
            async with self._pool.connection() as connection, connection.transaction():
                for start in range(0, len(rows), TEAM_STORE_PUSH_BATCH):
                    batch = _columns(rows[start : start + TEAM_STORE_PUSH_BATCH], fields)
                    cursor = await connection.execute(statement, batch)
                    written += max(cursor.rowcount, 0)
            return written

        return await self._bounded(what, run)

    async def _round_trip(self) -> float:
        async with self._pool.connection() as connection:
            started = time.monotonic()
            await connection.execute("SELECT 1")
            return time.monotonic() - started

    # --- one boundary for time and errors ----------------------------------------------------------

    async def _bounded(
        self, what: str, call: Callable[[], Coroutine[Any, Any, T]], timeout_s: float | None = None
    ) -> T:
        """Run `call` within the deadline, its failures as TeamStoreError. Past the deadline the caller gets
        its error at once; the call, cancelled, finishes hanging up in the background (held in _calls): the
        driver's query cancel would otherwise wait seconds on a store that swallows packets."""
        limit = self._timeout_s if timeout_s is None else timeout_s
        task = asyncio.create_task(call())
        self._calls.add(task)
        task.add_done_callback(self._forget)
        try:
            done, _ = await asyncio.wait({task}, timeout=limit)
        except asyncio.CancelledError:  # our caller gave up: so does the call
            task.cancel()
            raise
        if not done:
            task.cancel()
            raise TeamStoreError(f"{what}: the team store at {self.masked_url} did not answer within {limit:g} s")
        try:
            return task.result()
        except TeamStoreError:
            raise
        except (psycopg.Error, OSError) as error:
            # No chained cause: the driver's own text could quote a malformed URL, password and all.
            raise TeamStoreError(self._describe(what, error)) from None

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._calls.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: an abandoned call's late failure is not an unhandled one

    def _describe(self, what: str, error: BaseException) -> str:
        detail = " ".join(str(error).split()) or type(error).__name__
        return f"{what}: the team store at {self.masked_url} failed: {_scrub(detail, self._secrets)}"


async def _current_version(connection: Connection) -> int | None:
    cursor = await connection.execute(f"SELECT to_regclass('{SCHEMA}.schema_version') IS NOT NULL")
    exists = await cursor.fetchone()
    if not exists or not exists[0]:
        return None
    cursor = await connection.execute(f"SELECT coalesce(max(version), 0) FROM {SCHEMA}.schema_version")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def _create_version_table(connection: Connection) -> None:
    # CREATE SCHEMA needs the CREATE right on the database even when the schema exists: look first, so a
    # role given only a schema its administrator made can still migrate.
    cursor = await connection.execute(f"SELECT to_regnamespace('{SCHEMA}') IS NOT NULL")
    row = await cursor.fetchone()
    if not row or not row[0]:
        await connection.execute(f"CREATE SCHEMA {SCHEMA}")
    await connection.execute(
        f"CREATE TABLE {SCHEMA}.schema_version ("
        " version integer PRIMARY KEY,"
        " name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )


def _merge_duplicates(facts: Sequence[TeamFact]) -> list[TeamFact]:
    """One fact per row key (an upsert may not touch a row twice in one statement): earliest learned_at and
    its learner, latest confirmed_at."""
    merged: dict[tuple[str, str, frozenset[tuple[str, str]]], TeamFact] = {}
    for fact in facts:
        key = (fact.repo, fact.text, frozenset(fact.sources.items()))
        seen = merged.get(key)
        if seen is None:
            merged[key] = fact
            continue
        first = fact if fact.learned_at < seen.learned_at else seen  # the same fact: only who and when differ
        merged[key] = dataclasses.replace(first, confirmed_at=max(fact.confirmed_at, seen.confirmed_at))
    return list(merged.values())


# The columns an upsert sends, in its statement's order (one array per column; sources as canonical JSON).
_FACT_COLUMNS = ("repo", "text", "sources", "machine", "user", "learned_at", "confirmed_at")
_ANSWER_COLUMNS = ("repo", "question", "key", "answer", "sources", "machine", "user", "learned_at", "confirmed_at")


def _columns(rows: Sequence[TeamFact | TeamAnswer], fields: Sequence[str]) -> list[list[Any]]:
    return [[_column_value(getattr(row, field)) for row in rows] for field in fields]


def _column_value(value: Any) -> Any:
    return json.dumps(dict(value), sort_keys=True) if isinstance(value, Mapping) else value


def _from_row(kind: type[R], row: TupleRow) -> R:
    """A pulled row as a record: its own leading columns, then the grounds, who, and when (the shared tail)."""
    *leading, sources, machine, user, learned_at, confirmed_at = row
    values: dict[str, Any] = dict(zip([field.name for field in dataclasses.fields(kind)], leading, strict=False))
    values["sources"] = {str(path): str(digest) for path, digest in sources.items()}
    values |= {"machine": machine, "user": user, "learned_at": float(learned_at), "confirmed_at": float(confirmed_at)}
    return kind(**values)


# The row key hashes what the server stores (the text as UTF-8, the sources as jsonb's canonical text), so
# it does not depend on how a client spells its JSON. An update happens only when it changes something.
_UPSERT = f"""
INSERT INTO {SCHEMA}.facts AS f
    (repo, text, sources, text_sha256, sources_sha256, machine, user_name, learned_at, confirmed_at)
SELECT r, t, s::jsonb, sha256(convert_to(t, 'UTF8')), sha256(convert_to(s::jsonb::text, 'UTF8')),
       m, u, to_timestamp(l), to_timestamp(c)
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::float8[], %s::float8[])
    AS x(r, t, s, m, u, l, c)
ON CONFLICT (repo, text_sha256, sources_sha256) DO UPDATE SET
    confirmed_at = greatest(f.confirmed_at, excluded.confirmed_at),
    learned_at = least(f.learned_at, excluded.learned_at),
    machine = CASE WHEN excluded.learned_at < f.learned_at THEN excluded.machine ELSE f.machine END,
    user_name = CASE WHEN excluded.learned_at < f.learned_at THEN excluded.user_name ELSE f.user_name END
WHERE excluded.confirmed_at > f.confirmed_at OR excluded.learned_at < f.learned_at
"""

# Two statements rather than one with "since IS NULL OR": each gets a plan that walks the (repo, confirmed_at)
# index, also once the driver prepares them.
_PULL = (
    "SELECT repo, text, sources, machine, user_name,"
    " extract(epoch FROM learned_at)::float8, extract(epoch FROM confirmed_at)::float8"
    f" FROM {SCHEMA}.facts WHERE repo = %s{{since}} ORDER BY confirmed_at DESC, id DESC LIMIT %s"
)
_SINCE = " AND confirmed_at > to_timestamp(%s)"

# An answer given again on the same bytes replaces the row's answer (the newest wording), unless it is older.
_UPSERT_ANSWERS = f"""
INSERT INTO {SCHEMA}.answers AS a
    (repo, question, answer, sources, question_sha256, sources_sha256, machine, user_name, learned_at, confirmed_at)
SELECT r, q, t, s::jsonb, sha256(convert_to(k, 'UTF8')), sha256(convert_to(s::jsonb::text, 'UTF8')),
       m, u, to_timestamp(l), to_timestamp(c)
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::float8[],
            %s::float8[])
    AS x(r, q, k, t, s, m, u, l, c)
ON CONFLICT (repo, question_sha256, sources_sha256) DO UPDATE SET
    answer = excluded.answer,
    question = excluded.question,
    machine = excluded.machine,
    user_name = excluded.user_name,
    confirmed_at = excluded.confirmed_at,
    learned_at = least(a.learned_at, excluded.learned_at)
WHERE excluded.confirmed_at > a.confirmed_at
"""

_PULL_ANSWERS = (
    "SELECT repo, question, answer, sources, machine, user_name,"
    " extract(epoch FROM learned_at)::float8, extract(epoch FROM confirmed_at)::float8"
    f" FROM {SCHEMA}.answers WHERE repo = %s ORDER BY confirmed_at DESC, id DESC LIMIT %s"
)
