"""Workspaces: one memory per repository, found from any directory inside it.

`locate_workspace()` maps a caller's absolute `cwd` to its memory key and jail root (the enclosing
git root; a `.git` file counts, as for worktrees and submodules). It touches the filesystem, so the
service runs it in a thread. `WorkspaceState` is one memory's live state; it is mutated only on the
event loop. A change that arrives while questions run is applied to the committed window *and*
journaled, so a fork that commits later replays it instead of losing it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_memory.constants import MAX_PATH_CHARS, MAX_PATH_COMPONENT_BYTES
from live_memory.core.errors import InputError
from live_memory.core.records import TeamAnswer, Usage
from live_memory.engine.admission import Admission, AdmissionLimits, DistillGate
from live_memory.engine.answer_reuse import AnswerBook, Asked
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.history import EXCHANGE_KINDS, Turn
from live_memory.memory.ledger import LedgerFact
from live_memory.settings.config import Settings
from live_memory.settings.options import RepoRootMode

WindowChange = Callable[[ContextWindow], Any]


def validate_cwd(cwd: str) -> Path:
    """An absolute path to an existing directory, or an InputError that says how to fix it."""
    if not isinstance(cwd, str) or not cwd.strip():
        raise InputError("cwd is required: pass the absolute path of your repository root")
    if "\x00" in cwd:
        raise InputError("cwd contains a NUL byte")
    if not os.path.isabs(cwd):
        raise InputError(f"cwd must be an absolute path (your repository root), got {cwd!r}")
    if len(cwd) > MAX_PATH_CHARS:
        raise InputError(f"cwd is too long ({len(cwd)} characters; at most {MAX_PATH_CHARS})")
    for part in cwd.split("/"):
        if len(part.encode("utf-8", "surrogateescape")) > MAX_PATH_COMPONENT_BYTES:
            raise InputError(f"cwd has a path component longer than {MAX_PATH_COMPONENT_BYTES} bytes: {part[:40]!r}...")
    path = Path(cwd)
    try:
        if not path.is_dir():
            raise InputError(f"cwd is not an existing directory: {cwd!r}")
        return path.resolve()
    except OSError as exc:  # e.g. a loop of symlinks, or a path the OS refuses
        raise InputError(f"cwd cannot be used: {exc.strerror or exc}") from None


def allowed_roots(roots: tuple[str, ...], env: Mapping[str, str]) -> tuple[Path, ...]:
    """The directories workspaces may be under (`allowed_roots`), resolved; none given: the user's home."""
    if roots:
        return tuple(Path(r).expanduser().resolve() for r in roots)
    return (Path(env.get("HOME") or str(Path.home())).resolve(),)


@dataclass(frozen=True)
class Location:
    """Where a question lands: `key` names the memory, `root` is where its tools are jailed."""

    key: Path
    root: Path


def canonical_workspace(cwd: Path, *, canonicalize: bool = True, mode: RepoRootMode = "nearest") -> Path:
    """The enclosing git root (`nearest`) or outermost enclosing root (`outermost`); else cwd.

    A `.git` file counts (linked worktrees and submodules), as for `git rev-parse --show-toplevel`.
    """
    if not canonicalize:
        return cwd
    found: Path | None = None
    for candidate in (cwd, *cwd.parents):
        if (candidate / ".git").exists():
            found = candidate
            if mode == "nearest":
                break
    return found or cwd


def linked_git_dir(root: Path) -> Path | None:
    """Where a checkout's `.git` file points (a linked worktree's or a submodule's git directory); None when
    `.git` is not such a file."""
    dot_git = root / ".git"
    if not dot_git.is_file():
        return None
    try:
        line = dot_git.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = Path(line.removeprefix("gitdir:").strip())
    return gitdir if gitdir.is_absolute() else (root / gitdir)


def shared_repository(root: Path) -> Path | None:
    """For a linked worktree, the main checkout (or the common git dir of a bare repository).

    A linked worktree's `.git` file points at `<common>/worktrees/<name>`, which holds a `commondir`
    file; a submodule's points at `<super>/.git/modules/<name>`, which does not.
    """
    gitdir = linked_git_dir(root)
    if gitdir is None:
        return None
    try:
        common_rel = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    common = (gitdir / common_rel).resolve()
    if common.name == ".git" and common.parent.is_dir():
        return common.parent
    return common


def locate(cwd: Path, *, canonicalize: bool, mode: RepoRootMode, share_worktrees: bool) -> Location:
    root = canonical_workspace(cwd, canonicalize=canonicalize, mode=mode)
    if canonicalize and share_worktrees:
        shared = shared_repository(root)
        if shared is not None:
            return Location(key=shared, root=root)
    return Location(key=root, root=root)


def workspace_id(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


UNKNOWN_AGENT = "unknown"  # a client that names itself neither in its MCP handshake nor by the agent header


@dataclass
class WorkspaceStats:
    questions: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    last_question_at: float | None = None
    compactions: int = 0
    summaries_written: int = 0
    last_compaction_at: float | None = None
    background_usage: Usage = field(default_factory=Usage)  # summaries (and keep-warm pings)
    background_cost_usd: float = 0.0
    tokens_saved: int = 0  # estimated tokens the tools returned to the model; see stats.TOKENS_SAVED_METHOD
    rebased_commits: int = 0  # answers committed after a concurrent one, replayed onto it (never dropped)
    agents: dict[str, int] = field(default_factory=dict)  # questions answered, by asking agent (never what)

    def count_question(self, agent: str) -> None:
        """One more question answered, asked by `agent` (its MCP client's name; "unknown" when none was said)."""
        self.questions += 1
        name = agent or UNKNOWN_AGENT
        self.agents[name] = self.agents.get(name, 0) + 1

    def to_json(self) -> dict[str, Any]:
        # Flat values (asdict() would walk and deep-copy each one, once per answer): Usage holds only ints.
        data = dict(vars(self))
        data["usage"] = dict(vars(self.usage))
        data["background_usage"] = dict(vars(self.background_usage))
        data["agents"] = dict(self.agents)
        return data


@dataclass
class _ForkBase:
    """What the committed window was when a fork was taken."""

    seq: int  # journal position
    version: int
    epoch: int
    history: list[Turn]  # the committed turns then (held, so their identities stay unique)

    def new_turns(self, window: ContextWindow) -> list[Turn]:
        """The exchange turns `window` gained since then (deltas are re-derived, not replayed)."""
        known = {id(t) for t in self.history}
        return [t for t in window.history if id(t) not in known and t.kind in EXCHANGE_KINDS]


class WorkspaceState:
    def __init__(self, root: Path, window: ContextWindow, gate: DistillGate, admission: Admission) -> None:
        self.root = root  # the memory's key: a repository root (shared by its linked worktrees)
        self.tree_root = root  # the checkout whose tree is in the prompt (the first one asked about)
        self.id = workspace_id(root)
        self.window = window
        self.gate = gate
        self.admission = admission
        self.load_lock = asyncio.Lock()
        self.last_used = 0.0  # monotonic time of the last question (LRU unloading, keep-warm idleness)
        self.last_prompt_at: float | None = None  # monotonic time of the last request sent (keep-warm)
        self.stats = WorkspaceStats()
        self.restored = False  # its snapshot was read (file events and /stats work from here on)
        self.loaded = False  # restored, directory tree built, window frozen once: ready for questions
        self.dropped = False  # wiped by reset/empty: nothing of this object may be persisted again
        self.in_flight = 0
        self.tees: dict[str, tuple[float, str]] = {}  # path -> (when, sha256) of the last tee: echo checks
        # The team store (team_sync.py): the repository's identity, the team's facts pulled for this checkout
        # and not yet in the ledger (they join it at the next freeze), whether the first pull is done, and
        # how many team facts the ledger took; with answers shared, the teammates' answers by question
        # (folded), newest first (whether their files hold is checked when the question is asked).
        self.repo: str | None = None
        self.team_inbox: list[LedgerFact] = []
        self.team_answers: dict[str, list[TeamAnswer]] = {}
        self.team_pulled = asyncio.Event()
        self.team_merged = 0
        self.answers = AnswerBook()  # earlier answers to give again (answer_reuse.py)
        self.team_asked: dict[str, Asked | None] = {}  # a teammate's question (folded) -> what it asks about
        self._journal: list[tuple[int, WindowChange]] = []
        self._seq = 0
        self._forks: dict[int, _ForkBase] = {}
        self._next_fork = 0
        self.changes = 0  # every change to what is remembered: a snapshot is written when this moved

    @property
    def busy(self) -> bool:
        """A question is admitted or running here (it must not be unloaded or pinged)."""
        return self.in_flight > 0 or self.admission.running > 0

    def adopt(self, policy: WorkspacePolicy) -> None:
        """A new settings snapshot: new budget and limits; waiters a raised limit admits start now."""
        self.window.budget_tokens = policy.budget_tokens
        self.gate.min_interval_s = policy.distill_min_interval_s
        self.admission.reconfigure(policy.admission)

    def remember_tee(self, path: str, when: float, sha256: str, grace_s: float) -> None:
        if len(self.tees) > 4096:  # keep the echo table small: only recent tees matter
            self.tees = {p: t for p, t in self.tees.items() if when - t[0] <= grace_s}
        self.tees[path] = (when, sha256)

    # --- changes that must survive concurrent forks ---------------------------------------------
    def apply(self, change: WindowChange) -> Any:
        self.changes += 1
        result = change(self.window)
        if self._forks:
            self._seq += 1
            self._journal.append((self._seq, change))
        return result

    def fork(self) -> tuple[int, ContextWindow]:
        self._next_fork += 1
        fork_id = self._next_fork
        window = self.window
        self._forks[fork_id] = _ForkBase(self._seq, window.version, window.epoch, list(window.history))
        return fork_id, window.clone()

    def commit(self, fork_id: int, fork: ContextWindow) -> bool:
        """Adopt what a fork learned; True when it was rebased onto a concurrent commit.

        Linear (nothing committed since the fork was taken): the fork becomes the window, and the
        changes that reached the committed window meanwhile are replayed onto it. A race: the fork's
        new exchange is replayed after what is committed, as git rebases a branch, so no answered
        exchange is ever dropped and the committed history stays append-only. A compaction is never
        discarded: when only the fork compacted, the fork is adopted and the exchanges committed
        meanwhile are appended to it.
        """
        base = self._forks.pop(fork_id)
        committed = self.window
        self.changes += 1
        if committed.version == base.version:
            self._replay_journal(fork, base.seq)
            fork.version = committed.version + 1
            self.window = fork
            self._trim_journal()
            return False
        if fork.epoch != base.epoch and committed.epoch == base.epoch:
            self._replay_journal(fork, base.seq)
            fork.append_exchanges(base.new_turns(committed), committed.files)
            target = fork
        else:
            committed.append_exchanges(base.new_turns(fork), fork.files)
            target = committed
        target.version = committed.version + 1
        self.window = target
        self.stats.rebased_commits += 1
        self._trim_journal()
        return True

    def _replay_journal(self, fork: ContextWindow, since: int) -> None:
        for seq, change in self._journal:
            if seq > since:
                change(fork)

    def abandon(self, fork_id: int) -> None:
        self._forks.pop(fork_id, None)
        self._trim_journal()

    def _trim_journal(self) -> None:
        oldest = min((base.seq for base in self._forks.values()), default=self._seq)
        self._journal = [(s, c) for s, c in self._journal if s > oldest]


@dataclass(frozen=True)
class WorkspacePolicy:
    """The settings a workspace is created and located with (rebuilt from each settings snapshot)."""

    budget_tokens: int
    distill_min_interval_s: float
    admission: AdmissionLimits
    canonicalize: bool = True
    repo_root_mode: RepoRootMode = "nearest"
    share_worktrees: bool = True
    allowed_roots: tuple[Path, ...] = ()  # empty: anywhere


def workspace_policy(settings: Settings) -> WorkspacePolicy:
    """The policy of a settings snapshot (blocking: it resolves the allowed roots)."""
    return WorkspacePolicy(
        budget_tokens=settings.context_tokens,
        distill_min_interval_s=settings.distill_min_interval_s,
        admission=AdmissionLimits.from_settings(settings),
        canonicalize=settings.canonicalize_workspace,
        repo_root_mode=settings.repo_root_mode,
        share_worktrees=settings.share_worktrees,
        allowed_roots=allowed_roots(settings.allowed_roots, settings.env),
    )


def locate_workspace(cwd: str, policy: WorkspacePolicy) -> Location:
    """Validate `cwd`, check the allowed roots, find its memory key and jail root. Blocking."""
    path = validate_cwd(cwd)
    roots = policy.allowed_roots
    if roots and not any(path == root or root in path.parents for root in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise InputError(
            f"cwd {str(path)!r} is outside the allowed roots ({allowed}); set LIVE_MEMORY_ALLOWED_ROOTS "
            "on the server to allow it"
        )
    return locate(
        path, canonicalize=policy.canonicalize, mode=policy.repo_root_mode, share_worktrees=policy.share_worktrees
    )


def new_state(location: Location, policy: WorkspacePolicy) -> WorkspaceState:
    state = WorkspaceState(
        location.key,
        ContextWindow(budget_tokens=policy.budget_tokens),
        DistillGate(policy.distill_min_interval_s),
        Admission(policy.admission),
    )
    state.tree_root = location.root
    return state
