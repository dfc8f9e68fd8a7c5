"""The team store: ledger facts, with their grounds, shared between developers' servers through PostgreSQL.

This module owns the conversation with the store and nothing else: a bounded connection pool, the versioned
schema (migrations in data/team_schema/, applied under an advisory lock so that servers starting together
take turns), and its calls: push and pull for facts (and for answers, shared only when the user allows it),
fetch (the rows an announcement named: team_listen.py holds the LISTEN connection), whoami, ping,
schema_version and counts. It knows nothing of workspaces, ledgers or queues; the engine decides what to push
and which pulled facts still hold.

Every row pulled is checked on its own (team_rows.py) and comes back as a record or as a `Refused`: one bad row
never fails a pull. Who wrote a row is the database's word (the `author` column, row-level security: see
data/team_schema/003_authors.sql), and a pull may take only the rows of the authors it trusts.

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
import math
import re
import time
from collections.abc import Callable, Collection, Coroutine, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Generic, TypeVar

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import AsyncNullConnectionPool

from live_memory import constants as C
from live_memory.core.errors import TeamStoreError
from live_memory.core.records import TeamAnswer, TeamFact
from live_memory.team.rows import Refused, Table, check_answer, check_fact
from live_memory.team.sql import (
    ANSWER_COLUMNS,
    FACT_COLUMNS,
    SCHEMA,
    UPSERT_ANSWERS,
    UPSERT_FACTS,
    WHOAMI,
    columns,
    select_statement,
)
from live_memory.team.url import conninfo, mask_url, scrub, secrets_of

T = TypeVar("T")
R = TypeVar("R", TeamFact, TeamAnswer)
Connection = psycopg.AsyncConnection[TupleRow]

# pg_advisory_xact_lock key serializing migrations across servers ("lm_team" in ASCII).
MIGRATION_LOCK_KEY = 0x6C6D5F7465616D
MIGRATIONS_PACKAGE = ("data", "team_schema")
_MIGRATION_NAME = re.compile(r"(\d{3})_[\w-]+\.sql")
CHANGES_CHANNEL = "live_memory_changes"  # where the store announces each row written (003_authors.sql)


@dataclass(frozen=True)
class Pulled(Generic[R]):
    """What a pull brought: the rows that passed the edge's checks, and those refused (each alone)."""

    rows: list[R] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)


@dataclass(frozen=True)
class Identity:
    """Who this server is to the store: the role its rows are written as, and whether that role escapes the
    row-level security that proves authors (it owns the tables, is a superuser or may bypass RLS)."""

    author: str
    above_row_security: bool


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


class TeamStore:
    """The client of one team store: at most pool_max connections at once, every call bounded by timeout_s.
    Build with `await TeamStore.connect(...)`, migrate() before the other calls, close with aclose()."""

    def __init__(
        self, pool: AsyncNullConnectionPool[Connection], *, url: str, timeout_s: float, info: str = ""
    ) -> None:
        self._pool = pool
        self._timeout_s = timeout_s
        self.timeout_s = timeout_s
        self.conninfo = info  # for a connection of its own (the listener's)
        self.masked_url = mask_url(url)
        self._secrets = secrets_of(url)
        # Calls abandoned at their deadline, finishing their clean-up (a query cancel) in the background.
        self._calls: set[asyncio.Task[Any]] = set()

    @classmethod
    async def connect(cls, url: str, *, pool_max: int, timeout_s: float) -> TeamStore:
        """A store whose first connection succeeded within timeout_s; TeamStoreError (saying why) otherwise."""
        secrets = secrets_of(url)
        try:
            info = conninfo(url, timeout_s)
        except psycopg.Error as error:
            raise TeamStoreError(f"invalid team store URL {mask_url(url)}: {scrub(str(error), secrets)}") from None
        statement_ms = str(math.ceil(timeout_s * 1000))

        async def configure(connection: Connection) -> None:
            # The server gives up on a statement at our deadline too, rather than work for a caller long gone.
            await connection.execute("SELECT set_config('statement_timeout', %s, false)", [statement_ms])

        # No connection is kept between calls: a team's servers call rarely (at load and compaction) and share
        # one PostgreSQL, and a kept connection would go stale when the store restarts. Each call connects
        # afresh, in its own time (a pool that keeps connections retries failed ones on a backoff timer of
        # seconds, which would outlast the call); max_size bounds the connections open at once.
        pool: AsyncNullConnectionPool[Connection] = AsyncNullConnectionPool(
            info,
            kwargs={"autocommit": True},
            max_size=pool_max,
            timeout=timeout_s,
            configure=configure,
            name="live-memory-team-store",
            open=False,
        )
        store = cls(pool, url=url, timeout_s=timeout_s, info=info)
        try:
            await pool.open()
            await store.bounded("connecting", store._round_trip)  # the caller learns now, and why, if it fails
        except BaseException:
            await store.aclose()
            raise
        return store

    # --- the calls -------------------------------------------------------------------------------

    async def migrate(self, *, migrations: Sequence[Migration] | None = None) -> int:
        """Bring the schema up to the newest version this code knows (bundled_migrations() unless given) and
        return it. Servers migrating at once take turns; a store already newer is refused, never touched."""
        steps = migrations if migrations is not None else await asyncio.to_thread(bundled_migrations)
        limit_ms = str(math.ceil(C.TEAM_STORE_MIGRATE_TIMEOUT_S * 1000))

        async def run() -> int:
            async with self._pool.connection() as connection, connection.transaction():
                # A migration may rewrite the table, or wait for another server's: a longer bound than a call's.
                await connection.execute("SELECT set_config('statement_timeout', %s, true)", [limit_ms])
                return await migrate_on(connection, steps, self.masked_url)

        return await self.bounded("migrating the schema", run, C.TEAM_STORE_MIGRATE_TIMEOUT_S)

    async def push(self, facts: Sequence[TeamFact]) -> int:
        """Upsert facts; return the rows written. The same repo + text + sources is one row: it keeps its first
        learned_at (and who learned it) while confirmed_at moves forward. Rows unchanged are not rewritten."""
        return await self._upsert("pushing facts", UPSERT_FACTS, _merge_duplicates(facts), FACT_COLUMNS)

    async def pull(self, repo: str, *, limit: int, trusted: Collection[str] = ()) -> Pulled[TeamFact]:
        """The repo's facts, newest confirmation first, each checked (team_rows.py); only `trusted` authors'
        when given. Whether a fact's files still hold is for the caller to check (it knows the current hashes)."""
        return await self._select("pulling facts", "facts", repo, limit=limit, trusted=trusted)

    async def push_answers(self, answers: Sequence[TeamAnswer]) -> int:
        """Upsert answers; return the rows written. The same repo + question + sources is one row, which keeps
        the latest answer given and moves confirmed_at forward."""
        latest: dict[tuple[str, str, frozenset[tuple[str, str]]], TeamAnswer] = {}
        for answer in sorted(answers, key=lambda a: a.confirmed_at):
            latest[(answer.repo, answer.key, frozenset(answer.sources.items()))] = answer
        return await self._upsert("pushing answers", UPSERT_ANSWERS, list(latest.values()), ANSWER_COLUMNS)

    async def pull_answers(
        self, repo: str, *, limit: int, answer_max_chars: int, trusted: Collection[str] = ()
    ) -> Pulled[TeamAnswer]:
        """The repo's answers, newest confirmation first, each checked (an answer longer than
        `answer_max_chars` is refused); whether their files still hold is for the caller."""
        return await self._select(
            "pulling answers", "answers", repo, limit=limit, trusted=trusted, answer_max_chars=answer_max_chars
        )

    async def fetch(
        self, table: Table, repo: str, ids: Collection[int], *, answer_max_chars: int, trusted: Collection[str] = ()
    ) -> Pulled[TeamFact] | Pulled[TeamAnswer]:
        """The rows of `table` with these ids (the ones an announcement named), checked like a pull's."""
        return await self._select(
            f"fetching {table}",
            table,
            repo,
            limit=len(ids),
            trusted=trusted,
            ids=ids,
            answer_max_chars=answer_max_chars,
        )

    async def whoami(self) -> Identity:
        """The role this server writes as, and whether it stands above the row-level security (migrated)."""

        async def run() -> Identity:
            async with self._pool.connection() as connection:
                cursor = await connection.execute(WHOAMI)
                row = await cursor.fetchone()
            assert row is not None
            return Identity(str(row[0]), bool(row[1]))

        return await self.bounded("reading this server's role", run)

    async def ping(self) -> float:
        """Seconds for one round trip to the store, once connected."""
        return await self.bounded("pinging", self._round_trip)

    async def schema_version(self) -> int | None:
        """The store's schema version; None when it has never been migrated."""

        async def run() -> int | None:
            async with self._pool.connection() as connection:
                return await _current_version(connection)

        return await self.bounded("reading the schema version", run)

    async def counts(self, repo: str | None = None, *, table: Table = "facts") -> int:
        """Facts (or answers) stored: for one repository, or in all."""

        async def run() -> int:
            async with self._pool.connection() as connection:
                if repo is None:
                    cursor = await connection.execute(f"SELECT count(*) FROM {SCHEMA}.{table}")
                else:
                    cursor = await connection.execute(f"SELECT count(*) FROM {SCHEMA}.{table} WHERE repo = %s", [repo])
                row = await cursor.fetchone()
            return int(row[0]) if row else 0

        return await self.bounded("counting facts", run)

    async def aclose(self) -> None:
        """Close the pool. Calls abandoned at their deadline are cancelled and given a moment to hang up."""
        abandoned = set(self._calls)
        for call in abandoned:
            call.cancel()
        if abandoned:
            await asyncio.wait(abandoned, timeout=C.TEAM_STORE_CLOSE_S)
        await self._pool.close(timeout=C.TEAM_STORE_CLOSE_S)

    async def _upsert(
        self, what: str, statement: str, rows: Sequence[TeamFact | TeamAnswer], fields: Sequence[str]
    ) -> int:
        """`statement` over `rows` (their `fields` as columns) in batches, in one transaction; the rows written."""
        if not rows:
            return 0

        async def run() -> int:
            written = 0
            async with self._pool.connection() as connection, connection.transaction():
                for start in range(0, len(rows), C.TEAM_STORE_PUSH_BATCH):
                    batch = columns(rows[start : start + C.TEAM_STORE_PUSH_BATCH], fields)
                    cursor = await connection.execute(statement, batch)
                    written += max(cursor.rowcount, 0)
            return written

        return await self.bounded(what, run)

    async def _select(
        self,
        what: str,
        table: Table,
        repo: str,
        *,
        limit: int,
        trusted: Collection[str],
        ids: Collection[int] = (),
        answer_max_chars: int = 0,
    ) -> Pulled[Any]:
        """One SELECT of rows (a repository's newest, or those with `ids`), each checked at the edge."""
        statement, params = select_statement(table, repo, limit, trusted, ids, answer_max_chars)

        async def run() -> Pulled[Any]:
            async with self._pool.connection() as connection:
                cursor = await connection.execute(statement, params)
                rows = await cursor.fetchall()
            checked = [check_fact(row) if table == "facts" else check_answer(row, answer_max_chars) for row in rows]
            return Pulled(
                [row for row in checked if not isinstance(row, Refused)],
                [row for row in checked if isinstance(row, Refused)],
            )

        return await self.bounded(what, run)

    async def _round_trip(self) -> float:
        async with self._pool.connection() as connection:
            started = time.monotonic()
            await connection.execute("SELECT 1")
            return time.monotonic() - started

    # --- one boundary for time and errors ----------------------------------------------------------

    async def bounded(self, what: str, call: Callable[[], Coroutine[Any, Any, T]], timeout_s: float | None = None) -> T:
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
            raise TeamStoreError(self.describe(what, error)) from None

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._calls.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: an abandoned call's late failure is not an unhandled one

    def describe(self, what: str, error: BaseException) -> str:
        """A driver's or the OS's error, said without the password."""
        detail = " ".join(str(error).split()) or type(error).__name__
        return f"{what}: the team store at {self.masked_url} failed: {scrub(detail, self._secrets)}"


async def migrate_on(connection: Connection, steps: Sequence[Migration], masked_url: str) -> int:
    """Apply the `steps` this store has not had, inside the connection's transaction and under the migration
    lock (servers migrating at once take turns); the newest version. A store already newer is refused, and so
    is a role that may not change the schema (its administrator's setup does: team_admin.py)."""
    known = len(steps)
    await connection.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK_KEY])
    current = await _current_version(connection)
    if current is not None and current > known:
        raise TeamStoreError(
            f"the team store at {masked_url} has schema version {current}, made by a newer version of Live Memory "
            f"(this one knows versions up to {known}): upgrade Live Memory here, or turn team_store off"
        )
    try:
        if current is None:
            await _create_version_table(connection)
        for step in steps[current or 0 :]:
            await connection.execute(step.sql.encode())
            await connection.execute(
                f"INSERT INTO {SCHEMA}.schema_version (version, name) VALUES (%s, %s)", [step.version, step.name]
            )
    except psycopg.errors.InsufficientPrivilege:
        raise TeamStoreError(
            f"the team store at {masked_url} has schema version {current or 0} and this version of Live Memory needs "
            f"{known}, which this server's role may not make: ask the store's administrator to run "
            "`live-memory team-setup` (docs/team-store.md)"
        ) from None
    return known


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
