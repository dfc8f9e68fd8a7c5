"""The team store against a real PostgreSQL (live_memory/testing/postgres.py): round trips, upserts, contradictions,
schema migrations (concurrent, older, newer), and the faults a shared server brings: down, slow, swallowing
packets, restarted. Every call must end within its timeout, as TeamStoreError, without the password."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable
from fnmatch import fnmatch
from pathlib import Path

import psycopg
import pytest

from live_memory import constants as C
from live_memory.core.errors import LiveMemoryError, TeamStoreError
from live_memory.core.records import TeamFact
from live_memory.team.sql import SCHEMA
from live_memory.team.store import Migration, TeamStore, bundled_migrations
from live_memory.testing.off_loop import off_loop
from live_memory.testing.ports import free_port
from live_memory.testing.postgres import PostgresCluster
from tests.conftest import TeamDatabase
from tests.fakes.tcp_proxy import TcpProxy

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO = "github.com/acme/shop"
SHA_A = "a" * 64
SHA_B = "b" * 64
T0 = 1_750_000_000.25  # unix seconds (exact in microseconds, as the store keeps them)
FAST = 0.5  # the timeout of the fault tests: short, so that they are quick
SLACK = 1.5  # what a loaded test machine may add to a deadline
# The timeout of the tests that wait it out (a slow store, one that swallows packets): shorter still, as a
# local connection (which opening the store needs first) takes milliseconds.
WAITED = 0.25
# Read here, not in a test: listing the package's files is blocking I/O, which the event loop must not do.
MIGRATIONS = bundled_migrations()


def fact(text: str, *, sources: dict[str, str] | None = None, at: float = T0, learned: float | None = None,
         repo: str = REPO, machine: str = "laptop-1", user: str = "ana") -> TeamFact:  # fmt: skip
    return TeamFact(
        repo=repo,
        text=text,
        sources={"src/cart.py": SHA_A} if sources is None else sources,
        machine=machine,
        user=user,
        learned_at=at if learned is None else learned,
        confirmed_at=at,
    )


async def pulled(store: TeamStore, limit: int = 10) -> list[TeamFact]:
    """The repository's facts as pushed: none refused, and without what the store adds (author, row id)."""
    got = await store.pull(REPO, limit=limit)
    assert got.refused == []
    return [dataclasses.replace(row, author="", row_id=0) for row in got.rows]


async def open_store(url: str, *, timeout_s: float = C.TEAM_STORE_TIMEOUT_S) -> TeamStore:
    return await TeamStore.connect(url, pool_max=C.TEAM_STORE_POOL_MAX, timeout_s=timeout_s)


@pytest.fixture
async def store(team_db: TeamDatabase) -> AsyncIterator[TeamStore]:
    opened = await open_store(team_db.url)
    await opened.migrate()
    yield opened
    await opened.aclose()


# --- facts -----------------------------------------------------------------------------------------------


async def test_pushed_facts_come_back_with_their_sources_newest_confirmation_first(store: TeamStore) -> None:
    older = fact("Cart totals are computed in cents.", at=T0)
    newer = fact("Checkout calls tax.apply.", sources={"src/checkout.py": SHA_B, "src/tax.py": SHA_A}, at=T0 + 5)
    elsewhere = fact("Another repository's fact.", repo="github.com/acme/blog")

    assert await store.push([older, newer, elsewhere]) == 3

    assert await pulled(store, C.TEAM_STORE_PULL_LIMIT) == [newer, older]
    assert await store.counts(REPO) == 2 and await store.counts() == 3
    assert await pulled(store, 1) == [newer]


async def test_the_same_fact_on_the_same_bytes_is_one_row_whose_confirmation_moves_forward(store: TeamStore) -> None:
    first = fact("Orders are immutable once paid.", at=T0, machine="laptop-1", user="ana")
    assert await store.push([first]) == 1

    again = fact("Orders are immutable once paid.", at=T0 + 60, machine="desktop-7", user="ben")
    assert await store.push([again]) == 1
    assert await store.push([again]) == 0  # nothing new: the row is not rewritten
    assert await store.push([first]) == 0  # an older confirmation does not move it back

    [row] = await pulled(store)
    assert row.confirmed_at == T0 + 60
    assert (row.learned_at, row.machine, row.user) == (T0, "laptop-1", "ana")  # who learned it first, and when


async def test_duplicates_within_one_push_become_one_row(store: TeamStore) -> None:
    text = "Refunds go through the payments queue."
    written = await store.push([fact(text, at=T0 + 1), fact(text, at=T0 + 9, learned=T0 - 3, user="ben")])

    assert written == 1
    [row] = await pulled(store)
    assert (row.learned_at, row.confirmed_at, row.user) == (T0 - 3, T0 + 9, "ben")


async def test_contradicting_facts_on_the_same_bytes_are_both_kept_newest_first(store: TeamStore) -> None:
    says_yes = fact("Discounts stack with coupons.", at=T0)
    says_no = fact("Discounts never stack with coupons.", at=T0 + 30)
    same_text_other_bytes = fact("Discounts stack with coupons.", sources={"src/cart.py": SHA_B}, at=T0 + 10)

    assert await store.push([says_yes, says_no, same_text_other_bytes]) == 3

    assert await pulled(store) == [says_no, same_text_other_bytes, says_yes]


async def test_fetch_returns_only_the_rows_named_by_id(store: TeamStore) -> None:
    await store.push([fact(f"Fact number {n}.", at=T0 + n) for n in range(5)])
    ids = {row.text: row.row_id for row in (await store.pull(REPO, limit=10)).rows}

    got = await store.fetch("facts", REPO, [ids["Fact number 1."], ids["Fact number 3."]], answer_max_chars=100)

    assert [row.text for row in got.rows if isinstance(row, TeamFact)] == ["Fact number 3.", "Fact number 1."]
    assert (
        await store.fetch("facts", "github.com/acme/blog", [ids["Fact number 1."]], answer_max_chars=100)
    ).rows == []


async def test_text_and_paths_of_any_kind_round_trip(store: TeamStore) -> None:
    odd = fact("Ünïcode, 'quotes', \"doubles\", back\\slash; emoji 🧪.", sources={"dir with space/ß.py": SHA_A})

    await store.push([odd])

    assert await pulled(store) == [odd]


# --- schema ----------------------------------------------------------------------------------------------


async def test_a_fresh_store_is_migrated_to_the_newest_schema_once(team_db: TeamDatabase) -> None:
    store = await open_store(team_db.url)
    try:
        assert await store.schema_version() is None
        newest = len(MIGRATIONS)
        assert await store.migrate() == newest
        assert await store.migrate() == newest
        assert await store.schema_version() == newest
    finally:
        await store.aclose()


async def test_an_emptied_database_is_what_a_fresh_one_is_to_a_store(team_db: TeamDatabase) -> None:
    """What lets the tests of a process take turns on one database (tests/conftest.py's team_db): the store's
    schema, its rows and a connection left inside a transaction on them are gone."""
    used = await open_store(team_db.url)
    holder = await psycopg.AsyncConnection.connect(team_db.url)
    try:
        await used.migrate()
        await used.push([fact("Left by an earlier test.")])
        await holder.execute("SELECT count(*) FROM live_memory.facts")  # idle in a transaction, holding a lock
        team_db.cluster.empty_database(team_db.name, SCHEMA)
        fresh = await open_store(team_db.url)
        try:
            assert await fresh.schema_version() is None
            await fresh.migrate()
            assert await pulled(fresh) == []
        finally:
            await fresh.aclose()
    finally:
        await used.aclose()
        await holder.close()


async def test_servers_migrating_at_once_take_turns_and_agree_on_the_version(team_db: TeamDatabase) -> None:
    stores = [await open_store(team_db.url) for _ in range(4)]
    try:
        versions = await asyncio.gather(*(store.migrate() for store in stores))
        assert set(versions) == {len(MIGRATIONS)}
        rows = team_db.cluster.admin_execute(team_db.name, "SELECT version FROM live_memory.schema_version")
        assert sorted(rows) == [(v,) for v in range(1, len(MIGRATIONS) + 1)]  # each step applied once
    finally:
        for store in stores:
            await store.aclose()


def test_the_migrations_ship_in_the_wheel_as_package_data() -> None:
    """Setuptools puts only .py files into a wheel unless package-data names the rest."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["live_memory"]
    for migration in MIGRATIONS:
        assert any(fnmatch(f"data/team_schema/{migration.name}", pattern) for pattern in patterns), migration.name


def next_version() -> list[Migration]:
    """This version's migrations, plus a next one as a later release would ship it."""
    known = list(MIGRATIONS)
    later = Migration(len(known) + 1, "999_later.sql", "ALTER TABLE live_memory.facts ADD COLUMN later text;")
    return [*known, later]


async def test_a_store_made_by_an_older_version_is_upgraded_and_keeps_its_facts(team_db: TeamDatabase) -> None:
    store = await open_store(team_db.url)
    try:
        await store.migrate()  # the older version: this release's schema
        await store.push([fact("Kept across the upgrade.")])

        assert await store.migrate(migrations=next_version()) == len(next_version())

        assert await store.schema_version() == len(next_version())
        assert [f.text for f in await pulled(store)] == ["Kept across the upgrade."]
        assert team_db.cluster.admin_execute(
            team_db.name, "SELECT column_name FROM information_schema.columns WHERE column_name = 'later'"
        ) == [("later",)]
    finally:
        await store.aclose()


async def test_a_version_2_store_gains_authors_its_rows_credited_to_the_role_that_owned_it(
    team_db: TeamDatabase,
) -> None:
    store = await open_store(team_db.url)
    try:
        await store.migrate(migrations=MIGRATIONS[:2])  # as the release before authors left it
        off_loop(
            team_db.cluster.admin_execute,
            team_db.name,
            "INSERT INTO live_memory.facts (repo, text, sources, text_sha256, sources_sha256, machine, user_name,"
            f" learned_at, confirmed_at) VALUES ('{REPO}', 'Learned before authors.',"
            f" '{{\"src/cart.py\": \"{SHA_A}\"}}', '\\x01', '\\x02', 'laptop-1', 'ana', now(), now())",
        )

        assert await store.migrate() == len(MIGRATIONS)

        [row] = (await store.pull(REPO, limit=10)).rows
        assert (row.text, row.author) == ("Learned before authors.", "live")  # the role every server shared
        assert await store.push([fact("Learned after.")]) == 1
        assert (await store.whoami()).above_row_security  # that role owns the tables: it is told so
    finally:
        await store.aclose()


async def test_a_store_made_by_a_newer_version_is_refused_and_left_alone(team_db: TeamDatabase) -> None:
    store = await open_store(team_db.url)
    try:
        await store.migrate(migrations=next_version())

        with pytest.raises(TeamStoreError, match="made by a newer version") as refused:
            await store.migrate()

        assert "upgrade Live Memory" in str(refused.value)
        assert team_db.cluster.password not in str(refused.value)
        assert await store.schema_version() == len(next_version())
    finally:
        await store.aclose()


# --- faults ----------------------------------------------------------------------------------------------


async def test_a_store_that_is_down_fails_fast_with_a_masked_url(postgres: PostgresCluster) -> None:
    url = postgres.url("team", port=free_port())  # nothing listens there
    started = time.monotonic()

    with pytest.raises(TeamStoreError) as failed:
        await open_store(url, timeout_s=FAST)

    assert time.monotonic() - started < FAST + SLACK
    message = str(failed.value)
    assert "postgresql://live:***@127.0.0.1" in message and postgres.password not in message
    assert isinstance(failed.value, LiveMemoryError) and failed.value.__cause__ is None


async def test_a_wrong_password_is_refused_without_quoting_either_password(postgres: PostgresCluster) -> None:
    wrong = "wrong-" + postgres.password[::-1]

    with pytest.raises(TeamStoreError, match="password authentication failed") as failed:
        await open_store(postgres.url("postgres", password=wrong), timeout_s=FAST)

    assert wrong not in str(failed.value) and postgres.password not in str(failed.value)


async def test_a_store_that_swallows_packets_fails_within_the_timeout(team_db: TeamDatabase) -> None:
    async with TcpProxy("127.0.0.1", team_db.cluster.port) as proxy:
        url = team_db.cluster.url(team_db.name, port=proxy.port)
        store = await open_store(url, timeout_s=WAITED)
        try:
            await store.migrate()
            proxy.black_hole()
            calls: list[Callable[[], Awaitable[object]]] = [
                store.ping,
                lambda: store.pull(REPO, limit=10),
                lambda: store.push([fact("Lost in transit.")]),
            ]
            for call in calls:
                started = time.monotonic()
                with pytest.raises(TeamStoreError, match=r"did not answer within 0\.25 s") as failed:
                    await call()
                assert time.monotonic() - started < WAITED + SLACK
                assert proxy.port and team_db.cluster.password not in str(failed.value)

            started = time.monotonic()
            with pytest.raises(TeamStoreError, match=r"connecting: .* did not answer"):
                await open_store(url, timeout_s=WAITED)
            assert time.monotonic() - started < WAITED + SLACK
        finally:
            started = time.monotonic()
            await store.aclose()  # calls left hanging up on the black hole are cut short
            assert time.monotonic() - started < 2 * C.TEAM_STORE_CLOSE_S + SLACK


async def test_a_slow_store_fails_within_the_timeout_and_works_again_once_fast(team_db: TeamDatabase) -> None:
    async with TcpProxy("127.0.0.1", team_db.cluster.port) as proxy:
        store = await open_store(team_db.cluster.url(team_db.name, port=proxy.port), timeout_s=WAITED)
        try:
            await store.migrate()
            proxy.delay_s = WAITED * 2

            started = time.monotonic()
            with pytest.raises(TeamStoreError, match="did not answer"):
                await store.pull(REPO, limit=10)
            assert time.monotonic() - started < WAITED + SLACK

            proxy.delay_s = 0.0
            assert await store.push([fact("Back to speed.")]) == 1
        finally:
            await store.aclose()


async def test_after_the_server_restarts_the_same_store_works_again(team_db: TeamDatabase) -> None:
    store = await open_store(team_db.url, timeout_s=FAST)
    try:
        await store.migrate()
        await store.push([fact("Survives a restart.")])
        assert await store.ping() < FAST

        await team_db.cluster.stop()
        started = time.monotonic()
        with pytest.raises(TeamStoreError) as failed:
            await store.pull(REPO, limit=10)
        assert time.monotonic() - started < FAST + SLACK
        assert team_db.cluster.password not in str(failed.value)
        with pytest.raises(TeamStoreError, match=r"connecting: .*postgresql://live:\*\*\*@"):
            await open_store(team_db.url, timeout_s=FAST)

        await team_db.cluster.start()
        assert [f.text for f in await pulled(store)] == ["Survives a restart."]
    finally:
        await store.aclose()


async def test_a_malformed_url_is_refused_without_echoing_it() -> None:
    with pytest.raises(TeamStoreError, match="invalid team store URL") as failed:
        await open_store("postgresql://live:hunter2-secret@127.0.0.1:notaport/x?bogus_option=1", timeout_s=FAST)

    assert "hunter2-secret" not in str(failed.value)
