"""A team's knowledge, shared through the team store, never on an answer's path.

What travels is a ledger fact with its grounds: the repository's identity (`repo_identity.py`), the paths it
rests on and each file's content hash when it was learned. A fact holds in any checkout where those files
have those bytes, and only there.

- **Pull** (`pull`): a workspace's first load and each compaction ask for the repository's facts (bounded by
  the store's timeout), keep those whose every file has the same bytes in this checkout, and hand them to the
  ledger, which takes them at its next freeze (`Ledger.merge_team`), never as a rewrite of a cached prefix.
- **Push** (`share`): the facts the local summarizer wrote go to a queue on local disk (`team_queue.py`)
  first; `run`, a background task the lifespan owns, connects, migrates and drains it, and retries while the
  store is down, so an outage of any length loses nothing and delays nothing.
- **Trust**: only facts from an allowed repository leave (`team_repositories`), never one resting on a secret
  file, naming one, or carrying text that looks like a credential; the store's URL is masked wherever it is
  shown. What the ledger dropped (`- n`) is never taken back for the same bytes.
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
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, TypeVar

from live_memory import constants as C
from live_memory.config import Settings
from live_memory.errors import TeamStoreError
from live_memory.jail import secret_matcher
from live_memory.ledger import LedgerFact
from live_memory.records import TeamAnswer, TeamFact
from live_memory.safe_files import atomic_write, ensure_private_dir, read_for_revalidation
from live_memory.team_queue import DiskQueue
from live_memory.team_store import TeamStore, mask_url

logger = logging.getLogger(__name__)

StoreState = Literal["off", "connecting", "up", "down"]
T = TypeVar("T")
Grounded = TypeVar("Grounded", TeamFact, TeamAnswer)
MACHINE_ID_FILE = "machine-id"

# Text that looks like a credential never leaves the machine: common key prefixes, private keys, and long runs
# of base64-like characters that mix upper and lower case with digits (a token pasted into a fact; a long
# identifier such as a test's name is not one).
_CREDENTIAL = re.compile(
    r"sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9+/_=-]{32,}")


def looks_like_credential(text: str) -> bool:
    if _CREDENTIAL.search(text):
        return True
    for run in _TOKEN_LIKE.findall(text):
        digits = sum(c.isdigit() for c in run)
        if digits >= 4 and any(c.isupper() for c in run) and any(c.islower() for c in run):
            return True
    return False


@dataclass(frozen=True)
class TeamPolicy:
    """The team store's settings, fixed per settings snapshot."""

    url: str
    timeout_s: float
    pool_size: int
    repositories: tuple[str, ...]  # allowed repository identities; empty: every repository
    secret_globs: tuple[str, ...]
    user: str
    machine: str
    pull_limit: int = C.TEAM_STORE_PULL_LIMIT
    share_answers: bool = C.TEAM_SHARE_ANSWERS

    def allows(self, repo: str | None) -> bool:
        return repo is not None and (not self.repositories or repo in self.repositories)

    def may_share(self, fact: LedgerFact) -> bool:
        """Only a fact learned here, grounded on files, none of them secret, naming no secret and carrying
        nothing that looks like a credential."""
        if fact.team or fact.stale:
            return False
        return self._plain(fact.sources, (fact.text,))

    def may_share_answer(self, question: str, answer: str, sources: Mapping[str, str]) -> bool:
        """Only with answers shared, and by the facts' rule: grounded on files, nothing secret, no credential."""
        return self.share_answers and self._plain(sources, (question, answer))

    def _plain(self, sources: Mapping[str, str], texts: Sequence[str]) -> bool:
        if not sources:
            return False
        secrets = secret_matcher(self.secret_globs)
        if any(secrets.matches(path) for path in sources):
            return False
        for text in texts:
            # A word as written (".env"), without a sentence's full stop, or without a leading "./".
            words = {form for word in re.findall(r"[\w./-]+", text) for form in (word.rstrip("."), word.strip("./"))}
            if any(secrets.matches(word) for word in words if word) or looks_like_credential(text):
                return False
        return True


@dataclass
class TeamFigures:
    """What /stats, /metrics and the status page show of the team store."""

    state: StoreState = "off"
    latency_s: float | None = None
    schema_version: int | None = None
    pushed: int = 0
    last_error: str = ""
    queue_dropped: int = 0
    answers_pushed: int = 0
    answers_reused: int = 0  # questions answered from a teammate's answer, without a model call

    def to_json(self, queued: int, pulled: int, url: str, answers: int = 0) -> dict[str, Any]:
        """`pulled`: team facts the ledgers took; `answers`: teammates' answers the workspaces hold."""
        return {
            "state": self.state,
            "store": mask_url(url),
            "latency_ms": None if self.latency_s is None else round(self.latency_s * 1000, 2),
            "schema_version": self.schema_version,
            "facts_pulled": pulled,  # facts of the team the ledgers took
            "facts_pushed": self.pushed,
            "facts_queued": queued,
            "facts_dropped_from_queue": self.queue_dropped,
            "answers_pulled": answers,
            "answers_pushed": self.answers_pushed,
            "answers_reused": self.answers_reused,
            "last_error": self.last_error,
        }


@dataclass
class TeamSync:
    policy: TeamPolicy
    queue: DiskQueue
    clock: Callable[[], float] = time.time
    retry_s: float = C.TEAM_RETRY_S  # the first retry's wait after a failure (it doubles, up to TEAM_RETRY_MAX_S)
    figures: TeamFigures = field(default_factory=TeamFigures)
    _store: TeamStore | None = None
    _queued: asyncio.Event = field(default_factory=asyncio.Event)
    _up: asyncio.Event = field(default_factory=asyncio.Event)  # connected and migrated

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
            except BaseException:
                await store.aclose()
                raise
            self._store = store
        self.figures.latency_s = await store.ping()
        if not self._up.is_set():
            logger.info("team store %s is up (schema %s)", store.masked_url, self.figures.schema_version)
        self._up.set()
        self.figures.state = "up"
        self.figures.last_error = ""
        return store

    async def _drain(self, store: TeamStore) -> None:
        while batch := await asyncio.to_thread(self.queue.head, C.TEAM_PUSH_BATCH):
            started = time.monotonic()
            facts = [_queued(TeamFact, item) for item in batch if item.get("kind", "fact") == "fact"]
            answers = [_queued(TeamAnswer, item) for item in batch if item.get("kind") == "answer"]
            if facts:
                await store.push(facts)
            if answers:
                await store.push_answers(answers)
            self.figures.latency_s = time.monotonic() - started
            await asyncio.to_thread(self.queue.remove_head, len(batch))
            self.figures.pushed += len(facts)
            self.figures.answers_pushed += len(answers)

    def _down(self, exc: TeamStoreError) -> None:
        if self.figures.state != "down":
            logger.warning("team store unavailable: %s (answers go on; facts wait in the local queue)", exc)
        self.figures.state = "down"
        self.figures.last_error = str(exc)
        self._up.clear()
        self._queued.set()  # wakes `run`, which reconnects with backoff

    async def aclose(self) -> None:
        if self._store is not None:
            await self._store.aclose()
            self._store = None

    # --- sharing -------------------------------------------------------------------------------
    async def share(self, repo: str | None, facts: Sequence[LedgerFact]) -> int:
        """Queue the facts this repository may share (durably, off the event loop); returns how many."""
        if not self.policy.allows(repo):
            return 0
        assert repo is not None
        now = self.clock()
        shared = [fact for fact in facts if self.policy.may_share(fact)]
        items = [_item(self.policy, now, repo=repo, text=f.text, sources=dict(f.sources)) for f in shared]
        await self._enqueue(items)
        return len(items)

    async def share_answer(self, repo: str | None, question: str, answer: str, sources: Mapping[str, str]) -> bool:
        """Queue an answer with its question and grounds, when answers are shared and it may leave."""
        if not self.policy.allows(repo) or not self.policy.may_share_answer(question, answer, sources):
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
        rows = await self._call(store.pull(repo or "", limit=self.policy.pull_limit))
        holding = await self._holding(rows or [], root, max_file_bytes)
        return [LedgerFact(row.text, dict(row.sources), team=f"{row.user}@{row.machine}") for row in holding]

    async def pull_answers(self, repo: str | None) -> list[TeamAnswer]:
        """The teammates' answers for this repository, newest first; none unless answers are shared, or when
        the store is down or slow. Whether an answer's files hold is checked when its question is asked: an
        answer about bytes this checkout has not reached yet may hold later."""
        if not self.policy.share_answers:
            return []
        store = await self._store_for(repo)
        if store is None:
            return []
        rows = await self._call(store.pull_answers(repo or "", limit=self.policy.pull_limit))
        return self._elsewhere(rows or [])

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

    async def _call(self, call: Coroutine[Any, Any, T]) -> T | None:
        """A store call timed for the figures; None when it failed (the store is then marked down)."""
        try:
            started = time.monotonic()
            result = await call
            self.figures.latency_s = time.monotonic() - started
            return result
        except TeamStoreError as exc:
            self._down(exc)
            return None

    async def _holding(self, rows: Sequence[TeamFact], root: Path, max_file_bytes: int) -> list[TeamFact]:
        """The rows learned elsewhere whose every file has the same bytes in the checkout at `root`."""
        rows = self._elsewhere(rows)
        paths = {path for row in rows for path in row.sources}
        found = await asyncio.to_thread(read_for_revalidation, root, paths, (), max_file_bytes)
        current = {path: disk.sha256 for path, disk in found.items()}
        return [row for row in rows if all(current.get(path) == digest for path, digest in row.sources.items())]

    def _elsewhere(self, rows: Sequence[Grounded]) -> list[Grounded]:
        """The rows another server contributed, resting only on paths inside a checkout (what the store says
        is not trusted to point a revalidation's reads anywhere else)."""
        policy = self.policy
        return [
            row
            for row in rows
            if all(_inside(path) for path in row.sources)
            and not (row.machine == policy.machine and row.user == policy.user)
        ]

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


_STAMPED = frozenset({"sources", "learned_at", "confirmed_at"})


def _inside(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith("/") and ".." not in parts and "\\" not in path


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
