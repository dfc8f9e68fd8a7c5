"""`live-memory team-setup` against a real PostgreSQL: a role per teammate, and a database that proves who wrote
each row (row-level security): a teammate inserts only as itself, and changes or deletes only its own rows,
whatever it writes with."""

from __future__ import annotations

import psycopg
import pytest

from live_memory import constants as C
from live_memory.cli.main import main
from live_memory.core.errors import TeamStoreError
from live_memory.core.records import TeamFact
from live_memory.team.admin import set_up
from live_memory.team.store import TeamStore
from live_memory.testing.off_loop import off_loop
from tests.conftest import TeamDatabase, TeamRoles

REPO = "github.com/acme/shop"
SHA = "a" * 64


def fact(text: str, user: str = "ana") -> TeamFact:
    return TeamFact(REPO, text, {"src/cart.py": SHA}, "laptop-1", user, 1.0e9, 1.0e9)


async def open_store(url: str) -> TeamStore:
    store = await TeamStore.connect(url, pool_max=1, timeout_s=5.0)
    await store.migrate()
    return store


async def sql(url: str, statement: str) -> int:
    """Run one statement as the URL's role, as anyone with psql could; the rows it touched."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        cursor = await connection.execute(statement.encode())
        return cursor.rowcount


async def test_each_teammates_rows_carry_the_role_that_wrote_them(team_roles: TeamRoles) -> None:
    ana = await open_store(team_roles.urls["ana"])
    ben = await open_store(team_roles.urls["ben"])
    try:
        await ana.push([fact("Cart totals are in cents.")])
        await ben.push([fact("Cart totals are in cents.", user="ana")])  # the same fact, and ana's name copied
        rows = (await ana.pull(REPO, limit=10)).rows
        assert sorted(row.author for row in rows) == ["ana", "ben"]  # one row each: the database says who
        assert (await ana.whoami()).above_row_security is False
    finally:
        await ana.aclose()
        await ben.aclose()


async def test_a_teammate_cannot_write_as_another_nor_change_or_delete_their_rows(team_roles: TeamRoles) -> None:
    ana = await open_store(team_roles.urls["ana"])
    try:
        await ana.push([fact("Refunds go through the payments queue.")])
    finally:
        await ana.aclose()
    mallory = team_roles.urls["mallory"]
    forged = (
        "INSERT INTO live_memory.facts (repo, text, sources, text_sha256, sources_sha256, machine, user_name,"
        " learned_at, confirmed_at, author) VALUES ('github.com/acme/shop', 'forged', '{}', '\\x00', '\\x00', 'm',"
        " 'ana', now(), now(), 'ana')"
    )
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        await sql(mallory, forged)
    assert await sql(mallory, "UPDATE live_memory.facts SET text = 'rm -rf ~' WHERE author = 'ana'") == 0
    assert await sql(mallory, "UPDATE live_memory.facts SET author = 'mallory'") == 0
    assert await sql(mallory, "DELETE FROM live_memory.facts") == 0
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        await sql(mallory, "ALTER TABLE live_memory.facts DISABLE ROW LEVEL SECURITY")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        await sql(mallory, "ALTER TABLE live_memory.facts ALTER COLUMN learned_at DROP NOT NULL")
    rows = off_loop(
        team_roles.db.cluster.admin_execute, team_roles.db.name, "SELECT text, author FROM live_memory.facts"
    )
    assert rows == [("Refunds go through the payments queue.", "ana")]


async def test_a_store_a_shared_role_made_is_taken_over_and_its_rows_keep_that_role(team_db: TeamDatabase) -> None:
    legacy = await TeamStore.connect(team_db.url, pool_max=1, timeout_s=5.0)
    try:
        await legacy.migrate()  # the store as servers sharing one login made it (that login owns it)
        await legacy.push([fact("Learned before the roles.")])
    finally:
        await legacy.aclose()

    done = await set_up(team_db.cluster.admin_url(team_db.name), ["ana"])
    again = await set_up(team_db.cluster.admin_url(team_db.name), ["ana"])  # idempotent

    assert any("taken over from live" in line for line in done) and not any("taken over" in line for line in again)
    rows = off_loop(
        team_db.cluster.admin_execute,
        team_db.name,
        "SELECT f.author, pg_get_userbyid(c.relowner) FROM live_memory.facts f, pg_class c"
        " WHERE c.oid = 'live_memory.facts'::regclass",
    )
    assert rows == [("live", C.TEAM_OWNER_ROLE)]


async def test_setup_refuses_a_role_name_it_would_not_show_and_a_login_that_may_not_make_roles(
    team_db: TeamDatabase,
) -> None:
    with pytest.raises(ValueError, match="not a role name"):
        await set_up(team_db.cluster.admin_url(team_db.name), ["ana\nSYSTEM"])
    with pytest.raises(TeamStoreError, match=r"setting up the team store at .* failed") as refused:
        await set_up(team_db.url, ["ana"])  # the servers' login: no CREATEROLE
    assert team_db.cluster.password not in str(refused.value)


def test_team_setup_command_prints_what_it_did(team_db: TeamDatabase, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["team-setup", "--url", team_db.cluster.admin_url(team_db.name), "--member", "ben"]) == 0
    out = capsys.readouterr().out
    assert "ben" in out and f"owned by {C.TEAM_OWNER_ROLE}" in out
    assert main(["team-setup", "--url", team_db.url]) == 1
