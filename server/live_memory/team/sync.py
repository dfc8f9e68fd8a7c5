"""A team's knowledge, shared through the team store, never on an answer's path.

What travels is a ledger fact with its grounds: the repository's identity (`repo_identity.py`), the paths it
rests on and each file's content hash when it was learned. A fact holds in any checkout where those files
have those bytes, and only there.

- **Pull** (`pull`): a workspace's first load and each compaction ask for the repository's facts (bounded by
  the store's timeout), keep those whose every file has the same bytes in this checkout, and hand them to the
  ledger, which takes them at its next freeze (`Ledger.merge_team`), never as a rewrite of a cached prefix.
  Each row is checked on its own as it arrives (team_rows.py): a refused row is skipped, counted
  (`rows_rejected`) and logged once with its key; it never stops the pull.
- **Fresh** (`watch`): the store announces every row written (LISTEN/NOTIFY, team_listen.py); the rows
  announced are fetched at once and handed to the workspaces of their repository, so a teammate's answer is
  usable here a moment after it was written. Every TEAM_PULL_INTERVAL_S, and whenever the listener comes
  back, every loaded workspace pulls everything (what an absent listener missed).
- **Push** (`share`): the facts the local summarizer wrote go to a queue on local disk (`team_queue.py`)
  first; `run`, a background task the lifespan owns, connects, migrates and drains it, and retries while the
  store is down, so an outage of any length loses nothing and delays nothing.
- **Trust**: what leaves is checked by `team_policy.py` (allowed repositories, grounds, secret files, sizes,
  credentials: detect-secrets and our own rules), when it is queued and again when it is pushed; the store's
  URL is masked wherever it is shown. Who wrote a row is the database's word (its role, under row-level
  security); `team_trust` names the authors whose rows are taken. What the ledger dropped (`- n`) is never
  taken back for the same bytes.
- **Answers** (only with `team_share_answers` on): a complete answer grounded on files travels with its
  question, through the same queue and the same trust rules; pulled beside the facts, one whose files have
  the same bytes here when the same question is asked answers it again without a model call
  (`WorkspaceService.open`, given the question).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import getpass
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from live_memory import constants as C
from live_memory.core.errors import TeamStoreError
from live_memory.core.records import TeamAnswer, TeamFact
from live_memory.fs.safe_files import atomic_write, ensure_private_dir, read_for_revalidation
from live_memory.memory.ledger import LedgerFact
from live_memory.settings.config import Settings
from live_memory.team.figures import TeamFigures
from live_memory.team.listen import Changes, News
from live_memory.team.policy import TeamPolicy
from live_memory.team.queue import DiskQueue
from live_memory.team.rows import Table
from live_memory.team.store import Pulled, TeamStore

logger = logging.getLogger(__name__)

T = TypeVar("T")
Grounded = TypeVar("Grounded", TeamFact, TeamAnswer)
MACHINE_ID_FILE = "machine-id"


@dataclass
class TeamSync:
    policy: TeamPolicy
    queue: DiskQueue
    clock: Callable[[], float] = time.time
    retry_s: float = C.TEAM_RETRY_S  # the first retry's wait after a failure (it doubles, up to TEAM_RETRY_MAX_S)
    pull_interval_s: float = C.TEAM_PULL_INTERVAL_S  # every workspace pulls everything this often
    ping_s: float = C.TEAM_LISTEN_PING_S  # an idle listener's round trip, to find a dead network out
    figures: TeamFigures = field(default_factory=TeamFigures)
    _store: TeamStore | None = None
    _queued: asyncio.Event = field(default_factory=asyncio.Event)
    _up: asyncio.Event = field(default_factory=asyncio.Event)  # connected and migrated
    _refused: set[str] = field(default_factory=set)  # the keys of refused rows already logged
    _pull_error: str = ""  # why the last pull failed ("" once one succeeds)
    news: News = field(init=False)  # the store's announcements, as `watch` follows them

    def __post_init__(self) -> None:
        self.news = News(self.policy.allows)

    # --- the background task -------------------------------------------------------------------
    async def run(self) -> None:
        """Connect (retrying with backoff while the store is down), migrate, then push what is queued,
        whenever something is; the lifespan cancels it at shutdown."""
        delay = self.retry_s
        while True:
            try:
                store = await self._connected()
                await self._drain(store)
                delay = self.retry_s
                self._queued.clear()
                if not len(self.queue):
                    await self._queued.wait()
                continue
            except TeamStoreError as exc:
                self._down(exc)
            except Exception as exc:  # a bug here must not end the service: logged, retried like an outage
                logger.exception("the team store's background task failed")
                self._down(TeamStoreError(f"unexpected failure: {type(exc).__name__}"))
            await asyncio.sleep(delay)
            delay = min(delay * 2, C.TEAM_RETRY_MAX_S)

    async def _connected(self) -> TeamStore:
        """The store, connected and migrated once; after a failure, pinged until it answers again."""
        store = self._store
        if store is None:
            self.figures.state = "connecting"
            policy = self.policy
            store = await TeamStore.connect(policy.url, pool_max=policy.pool_size, timeout_s=policy.timeout_s)
            try:
                self.figures.schema_version = await store.migrate()
                identity = await store.whoami()
            except BaseException:
                await store.aclose()
                raise
            self.figures.author, self.figures.above_row_security = identity.author, identity.above_row_security
            if identity.above_row_security:
                logger.warning(
                    "the team store role %r owns the tables or bypasses row-level security: the authors of rows "
                    "are not proven (give each teammate a role of their own: live-memory team-setup)",
                    identity.author,
                )
            self._store = store
        self.figures.latency_s = await store.ping()
        if not self._up.is_set():
            logger.info("team store %s is up (schema %s)", store.masked_url, self.figures.schema_version)
        self._up.set()
        # Answering again is not enough: a pull's failure stays shown until a pull succeeds.
        self.figures.state = "failing" if self._pull_error else "up"
        self.figures.last_error = self._pull_error
        return store

    async def _drain(self, store: TeamStore) -> None:
        while batch := await asyncio.to_thread(self.queue.head, C.TEAM_PUSH_BATCH):
            started = time.monotonic()
            # Checked again: a line queued by an earlier version, under older rules, leaves only if it may now.
            kept = await asyncio.to_thread(self._still_shareable, batch)
            facts = [_queued(TeamFact, item) for item in kept if item.get("kind", "fact") == "fact"]
            answers = [_queued(TeamAnswer, item) for item in kept if item.get("kind") == "answer"]
            if facts:
                await store.push(facts)
            if answers:
                await store.push_answers(answers)
            self.figures.latency_s = time.monotonic() - started
            await asyncio.to_thread(self.queue.remove_head, len(batch))
            self.figures.pushed += len(facts)
            self.figures.answers_pushed += len(answers)
            self.figures.withheld += len(batch) - len(kept)

    def _still_shareable(self, batch: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The queue lines the policy lets leave now (blocking: the credential scan)."""
        policy = self.policy
        kept: list[Mapping[str, Any]] = []
        for item in batch:
            try:
                sources = {str(k): str(v) for k, v in dict(item["sources"]).items()}
                if item.get("kind") == "answer":
                    ok = policy.may_share_answer(str(item["question"]), str(item["answer"]), sources)
                else:
                    ok = policy.may_share(LedgerFact(str(item["text"]), sources))
            except (KeyError, TypeError, ValueError):
                ok = False  # a line this version cannot read
            if ok:
                kept.append(item)
        return kept

    def _down(self, exc: TeamStoreError) -> None:
        if self.figures.state != "down":
            logger.warning("team store unavailable: %s (answers go on; facts wait in the local queue)", exc)
        self.figures.state = "down"
        self.figures.last_error = str(exc)
        self._up.clear()
        self._queued.set()  # wakes `run`, which reconnects with backoff

    async def aclose(self) -> None:
        self._up.clear()
        if self._store is not None:
            await self._store.aclose()
            self._store = None

    # --- sharing -------------------------------------------------------------------------------
    async def share(self, repo: str | None, facts: Sequence[LedgerFact]) -> int:
        """Queue the facts this repository may share (checked and written off the event loop); how many."""
        if not self.policy.allows(repo):
            return 0
        assert repo is not None
        now = self.clock()
        shared = await asyncio.to_thread(lambda: [fact for fact in facts if self.policy.may_share(fact)])
        items = [_item(self.policy, now, repo=repo, text=f.text, sources=dict(f.sources)) for f in shared]
        await self._enqueue(items)
        return len(items)

    async def share_answer(self, repo: str | None, question: str, answer: str, sources: Mapping[str, str]) -> bool:
        """Queue an answer with its question and grounds, when answers are shared and it may leave."""
        if not self.policy.allows(repo):
            return False
        if not await asyncio.to_thread(self.policy.may_share_answer, question, answer, sources):
            return False
        assert repo is not None
        fields = {"repo": repo, "question": question, "answer": answer, "sources": dict(sources)}
        await self._enqueue([_item(self.policy, self.clock(), kind="answer", **fields)])
        return True

    async def _enqueue(self, items: Sequence[Mapping[str, Any]]) -> None:
        if items:
            await asyncio.to_thread(self.queue.append, items)
            self.figures.queue_dropped = self.queue.dropped
            self._queued.set()

    # --- pulling -------------------------------------------------------------------------------
    async def pull(self, repo: str | None, root: Path, max_file_bytes: int) -> list[LedgerFact]:
        """The repository's facts whose every file has the same bytes in the checkout at `root`, newest
        confirmation first; none when the store is down or slow (within its timeout) or the repository is
        not allowed."""
        store = await self._store_for(repo)
        if store is None:
            return []
        pulled = await self._call("pulling facts", store.pull(repo or "", **self._pull_args()))
        return await self._as_ledger_facts(pulled, root, max_file_bytes)

    async def pull_answers(self, repo: str | None) -> list[TeamAnswer] | None:
        """The teammates' answers for this repository, newest first; none unless answers are shared; None when
        the store is down or slow (what is held is kept then). Whether an answer's files hold is checked when
        its question is asked: an answer about bytes this checkout has not reached yet may hold later."""
        if not self.policy.share_answers:
            return []
        store = await self._store_for(repo)
        if store is None:
            return None
        call = store.pull_answers(repo or "", answer_max_chars=self.policy.answer_max_chars, **self._pull_args())
        pulled = await self._call("pulling answers", call)
        return None if pulled is None else self._accepted(pulled)

    async def fetch_facts(self, repo: str, ids: Collection[int], root: Path, max_file_bytes: int) -> list[LedgerFact]:
        """The announced facts with these ids that hold in the checkout at `root` (as `pull`)."""
        store = await self._store_for(repo)
        if store is None:
            return []
        pulled = await self._call("fetching facts", self._fetch(store, "facts", repo, ids))
        return await self._as_ledger_facts(pulled, root, max_file_bytes)

    async def fetch_answers(self, repo: str, ids: Collection[int]) -> list[TeamAnswer]:
        """The announced answers with these ids (as `pull_answers`)."""
        store = await self._store_for(repo) if self.policy.share_answers else None
        if store is None:
            return []
        return self._accepted(await self._call("fetching answers", self._fetch(store, "answers", repo, ids)))

    def _fetch(self, store: TeamStore, table: Table, repo: str, ids: Collection[int]) -> Coroutine[Any, Any, Any]:
        return store.fetch(table, repo, ids, answer_max_chars=self.policy.answer_max_chars, trusted=self.policy.trusted)

    def _pull_args(self) -> dict[str, Any]:
        return {"limit": self.policy.pull_limit, "trusted": self.policy.trusted}

    async def _as_ledger_facts(
        self, pulled: Pulled[TeamFact] | None, root: Path, max_file_bytes: int
    ) -> list[LedgerFact]:
        holding = await self._holding(self._accepted(pulled), root, max_file_bytes)
        # Marked with their author as the database recorded it: never a name the writer chose.
        return [LedgerFact(row.text, dict(row.sources), team=row.author) for row in holding]

    async def _store_for(self, repo: str | None) -> TeamStore | None:
        """The store, when this repository is shared and the store is up (a server just started gives the
        connection its timeout to come up)."""
        if not self.policy.allows(repo):
            return None
        if not self._up.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.policy.timeout_s):
                    await self._up.wait()
        return self._store

    async def _call(self, what: str, call: Coroutine[Any, Any, T]) -> T | None:
        """A store call timed for the figures; None when it failed: the store is then marked down (it did
        not answer) or failing (it did, and something else went wrong), the error shown in /stats."""
        try:
            started = time.monotonic()
            result = await call
        except TeamStoreError as exc:
            self.figures.pull_errors += 1
            self._pull_error = str(exc)
            self._down(exc)  # shown "down" until the store answers again, then "failing" until a pull works
            return None
        except Exception as exc:
            logger.exception("%s from the team store failed", what)
            self.figures.pull_errors += 1
            self._pull_error = f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            self.figures.state, self.figures.last_error = "failing", self._pull_error
            return None
        self.figures.latency_s = time.monotonic() - started
        if self._pull_error:
            self._pull_error = ""
            if self.figures.state == "failing":
                self.figures.state, self.figures.last_error = "up", ""
        return result

    def _accepted(self, pulled: Pulled[Grounded] | None) -> list[Grounded]:
        """The rows that passed the edge's checks and came from elsewhere; each refused one is counted and
        logged the first time it is seen."""
        if pulled is None:
            return []
        for refused in pulled.refused:
            if refused.key in self._refused:
                continue
            if len(self._refused) < C.TEAM_REFUSED_KEYS_MAX:
                self._refused.add(refused.key)
            self.figures.rows_rejected += 1
            logger.warning("team store row %s (author %s) refused: %s", refused.key, refused.author, refused.reason)
        return self._elsewhere(pulled.rows)

    async def _holding(self, rows: Sequence[TeamFact], root: Path, max_file_bytes: int) -> list[TeamFact]:
        """The rows whose every file has the same bytes in the checkout at `root`."""
        paths = {path for row in rows for path in row.sources}
        found = await asyncio.to_thread(read_for_revalidation, root, paths, (), max_file_bytes)
        current = {path: disk.sha256 for path, disk in found.items()}
        return [row for row in rows if all(current.get(path) == digest for path, digest in row.sources.items())]

    def _elsewhere(self, rows: Sequence[Grounded]) -> list[Grounded]:
        """The rows another server contributed (this one's are those its role wrote from this machine)."""
        me = self.figures.author or None
        return [row for row in rows if not (row.machine == self.policy.machine and row.author == me)]

    # --- fresh within seconds ----------------------------------------------------------------------
    async def watch(self, on_change: Callable[[Changes], Awaitable[None]]) -> None:
        """Background task: keep a listener on the store's announcements and hand `on_change` what they name,
        or everything every pull_interval_s and whenever the listener comes back (team_listen.py)."""

        async def connected() -> TeamStore:
            while self._store is None or not self._up.is_set():
                await self._up.wait()
            return self._store

        await self.news.follow(
            connected, on_change, self.figures, retry_s=self.retry_s, ping_s=self.ping_s, every_s=self.pull_interval_s
        )

    @property
    def queued(self) -> int:
        return len(self.queue)


def _item(policy: TeamPolicy, now: float, **fields: Any) -> dict[str, Any]:
    """A queue line: what is shared, who learned it, and when."""
    return {**fields, "machine": policy.machine, "user": policy.user, "learned_at": now}


def _queued(kind: type[Grounded], item: Mapping[str, Any]) -> Grounded:
    """A queue line as the record the store takes: first learned, and so far confirmed, when it was queued."""
    learned = float(item["learned_at"])
    values: dict[str, Any] = {f.name: str(item[f.name]) for f in dataclasses.fields(kind) if f.name not in _STAMPED}
    values |= {"sources": {str(k): str(v) for k, v in dict(item["sources"]).items()}}
    return kind(**values | {"learned_at": learned, "confirmed_at": learned})


_STAMPED = frozenset({"sources", "learned_at", "confirmed_at", "author", "row_id"})  # not read from the line


def team_sync_for(settings: Settings) -> TeamSync:
    """The team store's sync for `settings` (whose `team_store` is set): its queue in the data dir, and who
    this server's facts are credited to (a random id of this machine, kept in the data dir, and a user)."""
    data_dir = settings.data_dir
    policy = TeamPolicy(
        url=settings.team_store,
        timeout_s=settings.team_timeout_s,
        pool_size=settings.team_pool_size,
        repositories=settings.team_repositories,
        secret_globs=settings.secret_globs,
        user=settings.team_user or _login_name(settings),
        machine=machine_id(data_dir),
        share_answers=settings.team_share_answers,
        trusted=settings.team_trust,
        answer_max_chars=settings.max_answer_tokens * C.TEAM_ANSWER_CHARS_PER_TOKEN,
    )
    return TeamSync(policy, DiskQueue(data_dir, C.TEAM_QUEUE_MAX_FACTS))


def machine_id(data_dir: Path) -> str:
    """This machine's id in the team store: random, made once, kept in the data dir (no host name leaves)."""
    path = data_dir / MACHINE_ID_FILE
    with contextlib.suppress(OSError, UnicodeDecodeError):
        known = path.read_text(encoding="utf-8").strip()
        if re.fullmatch(r"[0-9a-f]{16}", known):
            return known
    made = secrets.token_hex(8)
    ensure_private_dir(data_dir)
    atomic_write(path, (made + "\n").encode("utf-8"), mode=0o600)
    return made


def _login_name(settings: Settings) -> str:
    return settings.env.get("USER") or settings.env.get("LOGNAME") or getpass.getuser()
