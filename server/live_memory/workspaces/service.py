"""The workspace service: the one way in to every workspace (open, notify, wipe, forget, persist, unload,
the views /stats shows) and the holder of the current settings snapshot.

Routes, the MCP tools, the answerer and the background loops all come through here; nothing else
holds workspace states. Locating a `cwd` (it stats the filesystem) and building a checkout's toolbox
happen once, in a thread, and are cached. A reload swaps the `Runtime` and hands each workspace its
new limits (waking admission waiters a raised limit now lets in).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.abc

if TYPE_CHECKING:  # the team store's driver loads only when `team_store` is set
    from live_memory.team.listen import Changes
    from live_memory.team.sync import TeamSync

from live_memory import constants as C
from live_memory.core.errors import ReportedError, SnapshotNotSaved, WorkspaceLoadError
from live_memory.core.records import FileEvent, IngestResult, TeamAnswer
from live_memory.engine.agent_loop import LoopOutcome
from live_memory.engine.answer_reuse import Asked, KeptAnswer, answer_grounds, asked_about, earlier_answer, rests_on
from live_memory.engine.compaction import CompactionReport
from live_memory.engine.tool_runner import CheckoutTools
from live_memory.fs.dir_sync import DirectorySyncer
from live_memory.fs.subproc import reaped
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.hot_set import used_directories
from live_memory.providers.base import ChatProvider
from live_memory.settings.config import Settings
from live_memory.settings.options import changed_options
from live_memory.settings.runtime import Runtime
from live_memory.workspaces import team_work
from live_memory.workspaces.ingest import Ingestor, IngestPolicy, shed_observed_bytes
from live_memory.workspaces.loading import keep_tree, load_workspace, restore_workspace
from live_memory.workspaces.snapshot import HistoryEncoder, SnapshotMeta, snapshot_meta, snapshot_payload
from live_memory.workspaces.spend import Caps, SpendTracker
from live_memory.workspaces.store import SnapshotStore
from live_memory.workspaces.telemetry import Telemetry
from live_memory.workspaces.watcher import WorkspaceWatcher
from live_memory.workspaces.workspace import (
    Location,
    WorkspaceState,
    locate_workspace,
    new_state,
    workspace_id,
    workspace_policy,
)

logger = logging.getLogger(__name__)

# Builds the read-only tools for one checkout (blocking: it resolves paths and finds ripgrep).
ToolFactory = Callable[[Path, Settings], CheckoutTools]

LOCATION_CACHE_SIZE = 1024


@dataclass(frozen=True)
class Settled:
    """What an answer cost (None: unpriced), and why its state is not durable yet (None: it is)."""

    cost_usd: float | None
    unsaved: str | None


@dataclass(frozen=True)
class OpenWorkspace:
    """A loaded workspace, the checkout a question came from, and that checkout's tools."""

    state: WorkspaceState
    root: Path
    tools: CheckoutTools
    may_distill: bool = True  # background summaries allowed (off near a spend cap, or with `background` off)
    team_answer: TeamAnswer | None = None  # a teammate's answer to the question, its files unchanged here
    asked: Asked | None = None  # what the question asks about (answer_reuse.py), when it can be matched
    earlier: KeptAnswer | None = None  # this memory's earlier answer to the same need, its files unchanged


class WorkspaceService:
    def __init__(
        self,
        runtime: Runtime,
        *,
        tool_factory: ToolFactory,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        write_behind_s: float = C.SNAPSHOT_WRITE_BEHIND_S,
        team: TeamSync | None = None,
    ) -> None:
        self.runtime = runtime
        self.team = team  # the team store's sync (None: off)
        self.team_work = team_work.TeamWork(team)  # what of it runs in the background, for the workspaces
        self._tasks: anyio.abc.TaskGroup | None = None
        self.tool_factory = tool_factory
        self.clock = clock
        self.wall_clock = wall_clock
        self.policy = workspace_policy(runtime.settings)
        self.syncer = DirectorySyncer()  # the data dir's fsyncs, off the answer path
        self.store = SnapshotStore(runtime.settings.data_dir, clock=wall_clock, syncer=self.syncer)
        self.spend = SpendTracker(runtime.settings.data_dir, wall_clock, syncer=self.syncer)
        self.telemetry = Telemetry()  # recent questions, latencies, provider errors (in memory only)
        self.watcher = WorkspaceWatcher(
            debounce_ms=C.WATCH_DEBOUNCE_MS, max_directories=runtime.settings.watch_max_directories
        )
        self.stopping = False
        self._states: dict[Path, WorkspaceState] = {}
        self._locations: OrderedDict[str, Location] = OrderedDict()
        self._toolboxes: dict[tuple[Path, tuple[str, ...]], CheckoutTools] = {}
        self._answered: dict[Path, asyncio.Event] = {}  # checkout -> a first answer was given (its index starts)
        self._retired: list[ChatProvider] = []
        self._encoders: dict[str, HistoryEncoder] = {}  # workspace id -> its turns' JSON, encoded once
        self.write_behind_s = write_behind_s
        self._unsaved: dict[str, WorkspaceState] = {}  # journaled, their snapshot not yet written
        self._deferred: Callable[[], None] | None = None  # the newest write put off to the write-behind
        self._staged = asyncio.Event()

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    # --- background tasks ----------------------------------------------------------------------
    def start(self, tasks: anyio.abc.TaskGroup) -> None:
        """Background work (file watchers, the snapshots' write-behind) runs in the lifespan's task group."""
        self.watcher.attach(tasks)
        tasks.start_soon(self._write_behind, name="live-memory snapshot write-behind")
        self._tasks = tasks
        self.team_work.tasks = tasks
        if self.team is not None:
            tasks.start_soon(self.team.run, name="live-memory team store")
            tasks.start_soon(self.team.watch, self._team_changed, name="live-memory team store announcements")

    async def _write_behind(self) -> None:
        """Write the snapshots of journaled workspaces, `write_behind_s` after the first journaled one (so one
        write covers every answer of a burst); a failed write is retried on the next round."""
        while True:
            await self._staged.wait()
            await anyio.sleep(self.write_behind_s)
            self._staged.clear()
            await self._run_deferred()
            pending, self._unsaved = self._unsaved, {}
            for state in pending.values():
                if await self.persist(state) is not None and not state.dropped:
                    self._unsaved.setdefault(state.id, state)  # retried next round (and at shutdown)
            if self._unsaved:
                self._staged.set()

    # --- finding workspaces --------------------------------------------------------------------
    async def locate(self, cwd: str) -> Location:
        """Where `cwd`'s memory lives; resolved once per distinct cwd, off the event loop."""
        cached = self._locations.get(cwd)
        if cached is not None:
            self._locations.move_to_end(cwd)
            return cached
        location = await asyncio.to_thread(locate_workspace, cwd, self.policy)
        self._locations[cwd] = location
        if len(self._locations) > LOCATION_CACHE_SIZE:
            self._locations.popitem(last=False)
        return location

    async def _state(self, location: Location) -> WorkspaceState:
        """The in-memory state for `location`, created (and the LRU idle ones unloaded) if need be."""
        state = self._states.get(location.key)
        if state is None:
            state = self._states[location.key] = new_state(location, self.policy)
            self.team_work.pull(state, self.settings.passive_max_file_bytes)
            await self._enforce_capacity(keep=state)
        state.last_used = self.clock()
        return state

    async def open(self, cwd: str, *, caps: Caps | None = None, question: str = "") -> OpenWorkspace:
        """The loaded workspace for `cwd` (created, restored and frozen on first use) and its tools.
        `caps`: a question's spend caps, checked before anything loads (BudgetExceededError). `question`: the
        question about to be asked, looked up among the team's answers (`team_share_answers`)."""
        location = await self.locate(cwd)
        if caps is not None:
            self.spend.check_question(workspace_id(location.key), caps)
        state = await self._state(location)
        settings = self.settings
        try:
            tools = await self._toolbox(location.root, settings)
            if not state.loaded:
                team_wait_s = C.TEAM_LOAD_WAIT_S if self.team is not None else 0.0
                scanned = await load_workspace(state, self.store, settings, team_wait_s=team_wait_s)
                if scanned is not None and self._tasks is not None:  # kept for the next start, in the background
                    answered = self._answered.setdefault(tools.root, asyncio.Event())
                    self._tasks.start_soon(keep_tree, scanned, answered, name=f"live-memory tree of {state.tree_root}")
                self.team_work.share_facts(state)  # what it learned before the store was on
                if settings.watch:
                    self._watch(state, tools)
        except ReportedError:
            raise
        except Exception as exc:  # one broken workspace must not take the others down
            logger.exception("loading workspace %s failed", state.root)
            self._states.pop(location.key, None)  # the next question retries from scratch
            raise WorkspaceLoadError(f"the workspace {state.root} could not be loaded: {exc}") from None
        may_distill = settings.background and (caps is None or self.spend.background_allowed(state.id, caps))
        team = self.team
        asked = await asyncio.to_thread(asked_about, question, state.window.paths) if question else None
        shared = await team_work.teammates_answer(team, state, question, tools, asked) if team and question else None
        earlier = None
        if asked is not None and shared is None and settings.reuse_answers:
            earlier = await earlier_answer(state.answers, state.tree_root, asked)
        return OpenWorkspace(state, location.root, tools, may_distill, shared, asked, earlier)

    def fork(self, state: WorkspaceState) -> tuple[int, ContextWindow]:
        """A question's own copy of the workspace's window (committed by `settle`, dropped by `discard`)."""
        return state.fork()

    @contextlib.contextmanager
    def in_flight(self, state: WorkspaceState) -> Iterator[None]:
        """A question's loop is running on the workspace (shown in /stats; a busy workspace is not unloaded)."""
        state.in_flight += 1
        try:
            yield
        finally:
            state.in_flight -= 1

    def count_given(self, state: WorkspaceState, agent: str) -> None:
        """An answer given with no model call (an earlier one, or a teammate's) is a question answered."""
        state.stats.count_question(agent)

    async def settle(
        self,
        state: WorkspaceState,
        fork_id: int,
        window: ContextWindow,
        runtime: Runtime,
        out: LoopOutcome,
        compactions: Sequence[CompactionReport],
        question: str,
        tools: CheckoutTools,
        asked: Asked | None = None,
        agent: str = "",
    ) -> Settled:
        """After an answer: commit its fork, count what it and its compactions cost, and journal the state
        (it survives a kill from now on; the snapshot and the day's spend are written behind, a moment
        later, once for every answer meanwhile). A complete answer is kept to be given again to the same need
        (`asked`), and queued for the team when answers are shared. `compactions`: those the question made."""
        # The first request's size, estimated and as billed, corrects the window's token estimate.
        window.calibrate(
            out.first_prompt_estimate,
            out.first_prompt_actual,
            C.CALIBRATION_EMA_ALPHA,
            C.CALIBRATION_MIN_RATIO,
            C.CALIBRATION_MAX_RATIO,
        )
        state.commit(fork_id, window)
        self._answered.setdefault(tools.root, asyncio.Event()).set()
        complete = out.answer and not out.partial and not out.timed_out
        grounds = answer_grounds(window, out.answer, out.files_read) if complete else {}
        if complete and asked is not None and runtime.settings.reuse_answers and rests_on(asked, grounds):
            state.answers.keep(asked, KeptAnswer(question, out.answer, grounds, self.wall_clock()))
        shared = team_work.Shared(question, out.answer if complete else "", grounds, tools)
        self.team_work.settled(state, shared, compactions, self.settings.passive_max_file_bytes)
        spent = self.spend.count_compactions(state, runtime, compactions, self.wall_clock())
        cost = self.spend.count(state, runtime, out.model, out.usage, background=False)
        stats = state.stats
        # What the tools returned (not whole files: a partial Read counts its lines only); stats.py nets
        # Live Memory's own token spend out of it.
        stats.tokens_saved += int(out.tool_output_chars / window.chars_per_token)
        stats.count_question(agent)
        stats.last_question_at = self.wall_clock()
        state.last_prompt_at = self.clock()
        unsaved = await self.persist(state, also=self.spend.pending_save((cost or 0.0) + spent), write_behind=True)
        return Settled(cost, unsaved)

    def discard(
        self, state: WorkspaceState, fork_id: int, runtime: Runtime, compactions: Sequence[CompactionReport]
    ) -> None:
        """A question that failed or was cancelled: its fork is dropped, but what its compactions cost was
        spent (the day's tally is saved by the write-behind)."""
        state.abandon(fork_id)
        spent = self.spend.count_compactions(state, runtime, compactions, self.wall_clock())
        if spent:
            self._deferred = self.spend.pending_save(spent) or self._deferred
            self._staged.set()

    async def find(self, cwd: str) -> WorkspaceState | None:
        """The workspace for `cwd`: in memory, or restored from its snapshot (no tree scan); None when
        it has never been asked or taught anything."""
        location = await self.locate(cwd)
        if location.key not in self._states and not await asyncio.to_thread(
            self.store.exists, workspace_id(location.key)
        ):
            return None
        state = await self._state(location)
        await restore_workspace(state, self.store, self.settings)
        return state

    def on_disk(self) -> list[SnapshotMeta]:
        """Workspaces with a snapshot that are not in memory (after a restart, until first used)."""
        loaded = {state.id for state in self._states.values()}
        return [meta for meta in self.store.list_meta() if meta.workspace_id not in loaded]

    def states(self) -> list[WorkspaceState]:
        return list(self._states.values())

    async def _toolbox(self, root: Path, settings: Settings) -> CheckoutTools:
        """The checkout's tools, built once; its symbol index is kept in the lifespan's task group from then on
        (without one, as in unit tests, lookups scan)."""
        key = (root, settings.secret_globs)
        tools = self._toolboxes.get(key)
        if tools is None:
            tools = self._toolboxes[key] = await asyncio.to_thread(self.tool_factory, root, settings)
            if self._tasks is not None:  # built once the first answer is out: it never competes with it for CPU
                answered = self._answered.setdefault(tools.root, asyncio.Event())
                self._tasks.start_soon(tools.keep_index, answered, name=f"live-memory symbol index {root}")
        return tools

    def index_statuses(self) -> dict[str, dict[str, Any]]:
        """Each checkout's symbol index, for /stats: its state ("building", "ready", "failed"), how long it
        took to be ready, and what its build or refresh did."""
        found = {str(root): tools.index_status() for (root, _), tools in self._toolboxes.items()}
        return {root: status for root, status in found.items() if status is not None}

    def _files_changed(self, root: Path, paths: Sequence[str]) -> None:
        """Tell the checkout's symbol index which files changed (its toolbox, if built: else it has none yet)."""
        tools = self._toolboxes.get((root, self.settings.secret_globs))
        if tools is not None and paths:
            tools.files_changed(paths)

    # --- the team store (team_work.py) ---------------------------------------------------------
    async def _team_changed(self, changes: Changes) -> None:
        """What the store announced, taken by each loaded workspace of its repository (team_work.py)."""
        await self.team_work.changed(self._states.values(), self.settings.passive_max_file_bytes, changes)

    # --- file events ---------------------------------------------------------------------------
    def _watch(self, state: WorkspaceState, tools: CheckoutTools) -> None:
        async def sink(root: Path, events: Sequence[FileEvent]) -> None:
            tools.files_changed([event.path for event in events])  # every file counts for the index
            ingested = [e for e in events if state.window.knows(e.path)]  # only files the memory knows go stale
            if ingested and not state.dropped:
                await Ingestor(IngestPolicy.of(self.settings)).apply(state, root, ingested)

        # Watched first: where the files the memory used most recently are.
        self.watcher.watch(state.tree_root, sink, lambda: used_directories(state.window.file_uses))

    async def notify(self, cwd: str, events: Sequence[FileEvent]) -> tuple[IngestResult, bool]:
        """Apply file events, restoring (or creating) the workspace first: the memory learns from the
        first read, also after a restart. Returns the result and whether the workspace was already
        in memory."""
        location = await self.locate(cwd)
        was_loaded = location.key in self._states
        state = await self._state(location)
        await restore_workspace(state, self.store, self.settings)
        result = await Ingestor(IngestPolicy.of(self.settings)).apply(state, location.root, events)
        self._files_changed(location.root, result.paths)
        shed_observed_bytes(list(self._states.values()), state)
        return result, was_loaded

    async def forget(self, cwd: str, substring: str) -> tuple[WorkspaceState, int] | None:
        """Retract ledger facts containing `substring`; None when the workspace is not loaded."""
        state = await self.find(cwd)
        if state is None:
            return None
        removed: int = state.apply(lambda w: w.forget_facts(substring))
        await self.persist(state)
        return state, removed

    # --- persistence, wipes, unloading ---------------------------------------------------------
    async def persist(
        self, state: WorkspaceState, also: Callable[[], None] | None = None, *, write_behind: bool = False
    ) -> str | None:
        """Write the state's snapshot. None when written (or nothing new); else why it is not on disk yet
        (the state stays in memory; the next persist and the flush at shutdown retry). `also` (a blocking
        write that never raises) runs in the same worker-thread hop.

        `write_behind`: only journal the state (it survives a kill from now on; see `store`) and let the
        background writer write the snapshot a moment later, once for every answer meanwhile; `also` is
        put off to it too (the newest replaces an older one not yet run: it holds an advisory tally)."""

        def meta() -> SnapshotMeta:
            return snapshot_meta(state)

        def snapshot() -> tuple[int, dict[str, Any]]:
            encoder = self._encoders.setdefault(state.id, HistoryEncoder())
            return state.changes, snapshot_payload(str(state.root), state.window, state.stats, encoder)

        if write_behind:
            self._deferred = also or self._deferred
            also = None
        try:
            await self.store.save(
                state.id, snapshot, still_wanted=lambda: not state.dropped, meta=meta, also=also, journal=write_behind
            )
        except SnapshotNotSaved as exc:
            return exc.reason
        if write_behind:
            self._unsaved.setdefault(state.id, state)
            self._staged.set()
        else:
            self._unsaved.pop(state.id, None)
        return None

    async def wipe(self, cwd: str, *, reload_now: bool) -> dict[str, Any]:
        """Drop history, ledger, files and the snapshot. Reset reloads (and preloads) at once."""
        key = (await self.locate(cwd)).key
        state = await self._unload(key)
        dropped = {"qa_pairs": 0, "ledger_facts": 0, "file_contexts": 0}
        if state is not None:
            state.dropped = True
            dropped = {
                "qa_pairs": state.window.qa_count(),
                "ledger_facts": len(state.window.ledger.facts),
                "file_contexts": len(state.window.files),
            }
        snapshot_deleted = await self.store.delete(workspace_id(key))
        if reload_now:
            await self.open(cwd)
        return {"workspace": str(key), "dropped": dropped, "snapshot_deleted": snapshot_deleted, "reloaded": reload_now}

    async def _unload(self, key: Path) -> WorkspaceState | None:
        state = self._states.pop(key, None)
        if state is not None:
            self._encoders.pop(state.id, None)
            self._unsaved.pop(state.id, None)
            await self.watcher.unwatch(state.tree_root)
        return state

    async def _enforce_capacity(self, keep: WorkspaceState) -> None:
        """Unload least-recently-used idle workspaces past the cap, flushing their snapshots first."""
        limit = self.settings.max_loaded_workspaces
        excess = len(self._states) - limit
        if excess <= 0:
            return
        idle = sorted((s for s in self._states.values() if s is not keep and not s.busy), key=lambda s: s.last_used)
        for state in idle[:excess]:
            if await self.persist(state) is not None:
                continue  # not on disk yet: unloading would lose it
            await self._unload(state.root)
            logger.info("unloaded idle workspace %s (more than %d loaded)", state.root, limit)

    # --- configuration and shutdown ------------------------------------------------------------
    async def reload(self, runtime: Runtime) -> list[str]:
        """Swap the settings snapshot and provider; workspaces stay. Returns the changed option keys."""
        policy = await asyncio.to_thread(workspace_policy, runtime.settings)  # resolves the allowed roots
        old = self.runtime
        changed = [option.key for option in changed_options(old.settings, runtime.settings)]
        self.runtime = runtime
        self.policy = policy
        self._locations.clear()  # allowed roots or canonicalization may have changed
        for state in self._states.values():
            state.adopt(self.policy)
        if old.provider is not None and old.provider is not runtime.provider:
            self._retired.append(old.provider)  # closed at shutdown: running calls may still use it
        return changed

    def begin_shutdown(self) -> None:
        """Refuse new questions; the ones running finish (their deadlines are cut by the answerer)."""
        self.stopping = True
        for state in self._states.values():
            state.admission.close()

    async def _run_deferred(self) -> None:
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            await asyncio.to_thread(deferred)

    async def flush(self) -> None:
        """Write every workspace in memory (failures logged, never raised: the others still flush)."""
        await self.watcher.aclose()
        await self._run_deferred()
        for state in self._states.values():
            if not state.restored:
                continue
            await self.persist(state)  # a failure is logged by the store
        # Every rename made so far survives a power loss (bounded: a hung disk must not hold the exit).
        await asyncio.to_thread(self.syncer.flush, C.SHUTDOWN_FLUSH_DEADLINE_S)
        await asyncio.to_thread(self.store.close)  # a journal a failed snapshot left stays on disk, for the next start

    async def aclose(self) -> None:
        await reaped(C.SUBPROCESS_REAP_WAIT_S)  # the children of the tools' cancelled work, killed already
        for provider in [*self._retired, self.runtime.provider]:
            if provider is not None:
                await provider.aclose()
        self._retired.clear()
        if self.team is not None:
            await self.team.aclose()
