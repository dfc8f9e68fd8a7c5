"""Workspaces: one memory per repository, found from any directory inside it.

`canonical_workspace()` maps a caller's absolute `cwd` to its enclosing git root (a `.git` file
counts, as for worktrees and submodules). `WorkspaceRegistry` lazily creates one
`WorkspaceState` per canonical root. State is mutated only on the event loop; a change that
arrives while questions run is applied to the committed window *and* journaled, so a fork that
commits later replays it instead of losing it.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from live_memory.compaction import DistillGate
from live_memory.context_window import ContextWindow
from live_memory.errors import InputError
from live_memory.records import Usage

WindowChange = Callable[[ContextWindow], Any]


def validate_cwd(cwd: str) -> Path:
    """An absolute path to an existing directory, or an InputError that says how to fix it."""
    if not isinstance(cwd, str) or not cwd.strip():
        raise InputError("cwd is required: pass the absolute path of your repository root")
    if "\x00" in cwd:
        raise InputError("cwd contains a NUL byte")
    if not os.path.isabs(cwd):
        raise InputError(f"cwd must be an absolute path (your repository root), got {cwd!r}")
    path = Path(cwd)
    if not path.is_dir():
        raise InputError(f"cwd is not an existing directory: {cwd!r}")
    return path.resolve()


def canonical_workspace(cwd: Path, *, canonicalize: bool = True, mode: str = "nearest") -> Path:
    """The enclosing git root (`nearest`) or outermost enclosing root (`outermost`); else cwd."""
    if not canonicalize:
        return cwd
    found: Path | None = None
    for candidate in (cwd, *cwd.parents):
        if (candidate / ".git").exists():
            found = candidate
            if mode == "nearest":
                break
    return found or cwd


def workspace_id(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


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

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return data

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> WorkspaceStats:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in raw.items() if k in known}
        for key in ("usage", "background_usage"):
            if isinstance(values.get(key), dict):
                values[key] = Usage(**{k: int(v) for k, v in values[key].items() if k in Usage.__dataclass_fields__})
        return cls(**values)


class WorkspaceState:
    def __init__(self, root: Path, window: ContextWindow, gate: DistillGate) -> None:
        self.root = root
        self.id = workspace_id(root)
        self.window = window
        self.gate = gate
        self.stats = WorkspaceStats()
        self.loaded = False  # restored from its snapshot, directory tree built, window frozen once
        self.dropped = False  # wiped by reset/empty: nothing of this object may be persisted again
        self.in_flight = 0
        self.tees: dict[str, tuple[float, str]] = {}  # path -> (when, sha256) of the last tee: echo checks
        self._journal: list[tuple[int, WindowChange]] = []
        self._seq = 0
        self._forks: dict[int, int] = {}  # fork id -> journal seq when taken
        self._next_fork = 0

    def remember_tee(self, path: str, when: float, sha256: str, grace_s: float) -> None:
        if len(self.tees) > 4096:  # keep the echo table small: only recent tees matter
            self.tees = {p: t for p, t in self.tees.items() if when - t[0] <= grace_s}
        self.tees[path] = (when, sha256)

    # --- changes that must survive concurrent forks ---------------------------------------------
    def apply(self, change: WindowChange) -> Any:
        result = change(self.window)
        if self._forks:
            self._seq += 1
            self._journal.append((self._seq, change))
        return result

    def fork(self) -> tuple[int, ContextWindow]:
        self._next_fork += 1
        fork_id = self._next_fork
        self._forks[fork_id] = self._seq
        return fork_id, self.window.clone()

    def commit(self, fork_id: int, fork: ContextWindow) -> None:
        """Adopt the fork and replay changes that reached the committed window meanwhile."""
        taken = self._forks.pop(fork_id)
        for seq, change in self._journal:
            if seq > taken:
                change(fork)
        fork.version = self.window.version + 1
        self.window = fork
        self._trim_journal()

    def abandon(self, fork_id: int) -> None:
        self._forks.pop(fork_id, None)
        self._trim_journal()

    def _trim_journal(self) -> None:
        oldest = min(self._forks.values(), default=self._seq)
        self._journal = [(s, c) for s, c in self._journal if s > oldest]


class WorkspaceRegistry:
    """Canonical root -> state; created lazily on first use."""

    def __init__(
        self,
        *,
        budget_tokens: int,
        distill_min_interval_s: float,
        canonicalize: bool = True,
        repo_root_mode: str = "nearest",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.budget_tokens = budget_tokens
        self.distill_min_interval_s = distill_min_interval_s
        self.canonicalize = canonicalize
        self.repo_root_mode = repo_root_mode
        self.clock = clock
        self._states: dict[Path, WorkspaceState] = {}

    def root_for(self, cwd: str) -> Path:
        return canonical_workspace(validate_cwd(cwd), canonicalize=self.canonicalize, mode=self.repo_root_mode)

    def get_or_create(self, cwd: str) -> WorkspaceState:
        root = self.root_for(cwd)
        state = self._states.get(root)
        if state is None:
            window = ContextWindow(budget_tokens=self.budget_tokens)
            state = WorkspaceState(root, window, DistillGate(self.distill_min_interval_s))
            self._states[root] = state
        return state

    def loaded(self, cwd: str) -> WorkspaceState | None:
        """The state for `cwd` if that workspace is already in memory (never creates one)."""
        return self._states.get(self.root_for(cwd))

    def all(self) -> list[WorkspaceState]:
        return list(self._states.values())

    def drop(self, root: Path) -> WorkspaceState | None:
        return self._states.pop(root, None)
