"""Setting a team store up so that every row proves its author: `live-memory team-setup`.

Run by the store's administrator, as a role that may create roles (a superuser, or one with CREATEROLE), once
and again after each upgrade of Live Memory (it is idempotent). In one transaction it:
1. makes two roles that cannot log in: TEAM_OWNER_ROLE, which owns the schema and its tables (the owner is
   above row-level security: no teammate logs in as it), and TEAM_MEMBER_ROLE, the team;
2. gives the schema `live_memory` and everything in it to the owner (a store made before, by the one role
   every server shared, is taken over: its rows keep that role as their author);
3. applies the migrations as the owner (data/team_schema/: the author column, the policies, the trigger);
4. lets the team read every row and write facts and answers (row-level security keeps each member to rows
   of its own);
5. makes each member named a login role in the team (or adds an existing role to it). No password is set or
   shown here: set one with psql's \\password, or use the authentication the cluster has (certificates...).

PostgreSQL only, like team_store.py; docs/team-store.md is the administrator's page.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from live_memory import constants as C
from live_memory.core.errors import TeamStoreError
from live_memory.team.sql import SCHEMA
from live_memory.team.store import Migration, bundled_migrations, migrate_on
from live_memory.team.url import conninfo, mask_url, scrub, secrets_of

# A member's role name: one printable word (it is shown as the author of every row the member writes).
ROLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.@-]{0,62}")
_OWNED_KINDS = {"r": "TABLE", "S": "SEQUENCE"}


def check_member(name: str) -> str:
    if not ROLE_NAME.fullmatch(name):
        raise ValueError(
            f"{name[:80]!r} is not a role name this setup makes: 1 to 63 letters, digits, '_', '.', '@' or '-', "
            "starting with a letter or '_'"
        )
    if name in (C.TEAM_OWNER_ROLE, C.TEAM_MEMBER_ROLE):
        raise ValueError(f"{name!r} is one of the setup's own roles, not a teammate's")
    return name


async def set_up(url: str, members: Sequence[str], *, timeout_s: float = C.TEAM_STORE_MIGRATE_TIMEOUT_S) -> list[str]:
    """Set the store at `url` (an administrator's login) up, with `members` in the team; what was done, a line
    each. TeamStoreError (the password masked) when it could not be."""
    names = [check_member(name) for name in members]
    secrets = secrets_of(url)
    try:
        info = conninfo(url, timeout_s)
    except psycopg.Error as error:
        raise TeamStoreError(f"invalid team store URL {mask_url(url)}: {scrub(str(error), secrets)}") from None
    steps = await asyncio.to_thread(bundled_migrations)
    try:
        async with asyncio.timeout(timeout_s):
            connection = await psycopg.AsyncConnection.connect(info)
            try:
                async with connection.transaction():
                    limit_ms = str(math.ceil(timeout_s * 1000))
                    await connection.execute("SELECT set_config('statement_timeout', %s, true)", [limit_ms])
                    return await _set_up(connection, names, steps, mask_url(url))
            finally:
                await connection.close()
    except TimeoutError:
        raise TeamStoreError(f"setting up the team store at {mask_url(url)} took longer than {timeout_s:g} s") from None
    except psycopg.Error as error:
        detail = scrub(" ".join(str(error).split()), secrets)
        raise TeamStoreError(f"setting up the team store at {mask_url(url)} failed: {detail}") from None


async def _set_up(
    connection: psycopg.AsyncConnection[TupleRow], members: Sequence[str], steps: Sequence[Migration], masked: str
) -> list[str]:
    done: list[str] = []
    owner, team = sql.Identifier(C.TEAM_OWNER_ROLE), sql.Identifier(C.TEAM_MEMBER_ROLE)
    for role in (C.TEAM_OWNER_ROLE, C.TEAM_MEMBER_ROLE):
        if not await _role_exists(connection, role):
            await connection.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
            done.append(f"created role {role} (no login)")
    # The administrator acts as the owner below (a superuser may anyway; a CREATEROLE role needs membership).
    await connection.execute(sql.SQL("GRANT {} TO current_user").format(owner))
    previous = await _schema_owner(connection)
    if previous is None:
        await connection.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(sql.Identifier(SCHEMA), owner))
    # A store made before is migrated as the role that made it (its rows were that role's: 003_authors.sql
    # names it their author), then taken over.
    await connection.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(previous or C.TEAM_OWNER_ROLE)))
    version = await migrate_on(connection, steps, masked)
    await connection.execute("RESET ROLE")
    if previous not in (None, C.TEAM_OWNER_ROLE):
        await _take_over(connection)
        done.append(f"schema {SCHEMA} taken over from {previous} (its rows keep {previous} as their author)")
    done.append(f"schema {SCHEMA} at version {version}, owned by {C.TEAM_OWNER_ROLE}")
    schema = sql.Identifier(SCHEMA)
    await connection.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, team))
    await connection.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(schema, team))
    await connection.execute(
        sql.SQL("GRANT INSERT, UPDATE, DELETE ON {}.facts, {}.answers TO {}").format(schema, schema, team)
    )
    done.append(f"{C.TEAM_MEMBER_ROLE} may read every row and write rows of its own (row-level security)")
    for member in members:
        name = sql.Identifier(member)
        if await _role_exists(connection, member):
            await connection.execute(sql.SQL("GRANT {} TO {}").format(team, name))
            done.append(f"{member}: an existing role, now in {C.TEAM_MEMBER_ROLE}")
        else:
            await connection.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(name, team))
            done.append(f"{member}: created (login, in {C.TEAM_MEMBER_ROLE}); give it a password: \\password {member}")
    return done


async def _role_exists(connection: psycopg.AsyncConnection[TupleRow], role: str) -> bool:
    cursor = await connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
    return await cursor.fetchone() is not None


async def _schema_owner(connection: psycopg.AsyncConnection[TupleRow]) -> str | None:
    cursor = await connection.execute("SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s", [SCHEMA])
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def _take_over(connection: psycopg.AsyncConnection[TupleRow]) -> None:
    """The schema, and every table, sequence and function in it, given to the owner role."""
    owner, schema = sql.Identifier(C.TEAM_OWNER_ROLE), sql.Identifier(SCHEMA)
    await connection.execute(sql.SQL("ALTER SCHEMA {} OWNER TO {}").format(schema, owner))
    cursor = await connection.execute(
        "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'S') AND NOT EXISTS"
        " (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i'))",  # a table's own
        [SCHEMA],
    )
    for name, kind in await cursor.fetchall():
        what = sql.SQL(_OWNED_KINDS[str(kind)])
        await connection.execute(
            sql.SQL("ALTER {} {}.{} OWNER TO {}").format(what, schema, sql.Identifier(str(name)), owner)
        )
    cursor = await connection.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = %s",
        [SCHEMA],
    )
    for (signature,) in await cursor.fetchall():  # regprocedure's text: a qualified, quoted signature
        await connection.execute(sql.SQL("ALTER FUNCTION {} OWNER TO {}").format(sql.SQL(str(signature)), owner))
