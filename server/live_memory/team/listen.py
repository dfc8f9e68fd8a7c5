"""Fresh within seconds: one connection that LISTENs to the store's announcements of the rows written.

The store announces each row written (its table, repository and id) on CHANGES_CHANNEL once the write commits
(data/team_schema/003_authors.sql), whoever wrote it. `listen` holds a connection of its own on that channel
and hands each announcement to its caller, who fetches the rows named (through the pool, checked like any
pull). Every `ping_s` it asks the connection for a round trip, bounded by the store's timeout, so a network
that swallows packets is found out; any failure ends it with TeamStoreError, and the caller reconnects and
pulls everything (what was announced while it was away is not announced again).

An announcement is a payload anyone with a login can send (NOTIFY): it is checked like a row, and names
rows only; what they hold comes from the table. PostgreSQL only, like team_store.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated

import psycopg
from psycopg.rows import TupleRow
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from live_memory import constants as C
from live_memory.core.errors import TeamStoreError
from live_memory.team.figures import TeamFigures
from live_memory.team.rows import Table
from live_memory.team.store import CHANGES_CHANNEL, TeamStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Announced:
    """A row the store says was written: in which table, for which repository, and its id."""

    table: Table
    repo: str
    row_id: int


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    table: Table
    repo: Annotated[str, Field(min_length=1, max_length=C.TEAM_REPO_MAX_CHARS)]
    id: int = Field(ge=1)


def announced(payload: str) -> Announced | None:
    """The row an announcement names; None for a payload that is not one (anyone may NOTIFY anything)."""
    try:
        checked = _Payload.model_validate_json(payload)
    except ValidationError:
        return None
    return Announced(checked.table, checked.repo, checked.id)


async def listen(
    store: TeamStore, on_row: Callable[[Announced], None], on_ready: Callable[[], None], *, ping_s: float
) -> None:
    """Listen until cancelled: `on_ready()` once the LISTEN took (what was written before it is the caller's to
    pull), then `on_row` for each announcement. Raises TeamStoreError when the connection fails or stops
    answering."""

    async def connect() -> psycopg.AsyncConnection[TupleRow]:
        return await psycopg.AsyncConnection.connect(store.conninfo, autocommit=True)

    connection = await store.bounded("listening for changes", connect)
    try:
        await store.bounded("listening for changes", lambda: connection.execute(f"LISTEN {CHANGES_CHANNEL}"))
        on_ready()
        while True:
            try:
                async for notice in connection.notifies(timeout=ping_s):
                    row = announced(notice.payload)
                    if row is None:
                        logger.debug("ignored an announcement that names no row: %.80r", notice.payload)
                    else:
                        on_row(row)
            except psycopg.Error as error:
                raise TeamStoreError(store.describe("listening for changes", error)) from None
            await store.bounded("listening for changes", lambda: connection.execute("SELECT 1"))
    finally:
        with contextlib.suppress(TeamStoreError):  # a dead connection closes without a round trip
            await store.bounded("closing the listener", connection.close, C.TEAM_STORE_CLOSE_S)


@dataclass(frozen=True)
class Changes:
    """What the store announced since the last batch: the rows by table and repository, or `everything` (the
    periodic pull, a listener back after an absence, or more rows than a fetch takes)."""

    everything: bool
    rows: Mapping[tuple[Table, str], frozenset[int]] = field(default_factory=dict)


class News:
    """The announcements gathered between two batches, and the two loops that follow them: one keeps a
    listener up (reconnecting with backoff), the other hands each batch on as `Changes`."""

    def __init__(self, allows: Callable[[str], bool]) -> None:
        self._allows = allows  # the repositories this server shares
        self._rows: dict[tuple[Table, str], set[int]] = {}
        self._everything = False
        self._waiting = asyncio.Event()
        self._arrival = asyncio.Event()  # set (and replaced) once each batch was handed on

    def next_arrival(self) -> asyncio.Event:
        """Set once the next batch of changes has been handed on (tests and benchmarks wait on it)."""
        return self._arrival

    def announce(self, row: Announced) -> None:
        if self._allows(row.repo):
            self._rows.setdefault((row.table, row.repo), set()).add(row.row_id)
            self._waiting.set()

    def everything(self) -> None:
        """The next batch is a pull of everything (what a listener that was away missed)."""
        self._everything = True
        self._waiting.set()

    async def follow(
        self,
        store: Callable[[], Awaitable[TeamStore]],
        on_change: Callable[[Changes], Awaitable[None]],
        figures: TeamFigures,
        *,
        retry_s: float,
        ping_s: float,
        every_s: float,
    ) -> None:
        """Until cancelled: listen on the store `store()` gives once it is up, and hand `on_change` each batch,
        or everything every `every_s`."""
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._keep_listening(store, figures, retry_s, ping_s, every_s))
            tasks.create_task(self._hand_on(on_change, every_s))

    async def _keep_listening(
        self,
        store: Callable[[], Awaitable[TeamStore]],
        figures: TeamFigures,
        retry_s: float,
        ping_s: float,
        every_s: float,
    ) -> None:
        delay = retry_s

        def ready() -> None:
            figures.listening = True
            self.everything()

        while True:
            try:
                await listen(await store(), self.announce, ready, ping_s=ping_s)
            except TeamStoreError as exc:
                if figures.listening:
                    logger.warning("the team store's announcements stopped: %s (pulling every %g s until they are "
                                   "back)", exc, every_s)  # fmt: skip
            except Exception:
                logger.exception("listening to the team store failed")
            if figures.listening:
                delay = retry_s  # it was up: the backoff starts over
            figures.listening = False
            await asyncio.sleep(delay)
            delay = min(delay * 2, C.TEAM_RETRY_MAX_S)

    async def _hand_on(self, on_change: Callable[[Changes], Awaitable[None]], every_s: float) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(every_s):
                    await self._waiting.wait()
            rows, self._rows = self._rows, {}
            # The periodic pull (the wait ran out), a listener back, or more rows than a fetch takes: everything.
            everything = self._everything or not self._waiting.is_set()
            everything = everything or any(len(ids) > C.TEAM_FETCH_MAX_IDS for ids in rows.values())
            self._waiting.clear()
            self._everything = False
            try:
                await on_change(Changes(everything, {} if everything else {k: frozenset(v) for k, v in rows.items()}))
            except Exception:  # one bad batch must not end freshness
                logger.exception("taking the team store's changes failed")
            arrived, self._arrival = self._arrival, asyncio.Event()
            arrived.set()
