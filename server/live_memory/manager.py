"""One question end to end: workspace -> admission -> fork -> tool loop -> commit -> result.

`QuestionManager` is the service's core object: it holds the effective settings and provider
(swapped atomically by hot reload), the workspace registry, and the tool factory. It never talks
HTTP or MCP; `mcp_tools.py` and the routes call it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_memory import constants as C
from live_memory.agent_loop import LoopLimits, LoopOutcome, QuestionLoop, ToolRunner
from live_memory.compaction import CompactionReport, Compactor
from live_memory.config import Settings
from live_memory.context_window import ContextWindow
from live_memory.directory_tree import build_directory_tree
from live_memory.errors import InputError, NoCredentialError
from live_memory.ingest import FileEvent, Ingestor, IngestPolicy, IngestResult
from live_memory.providers.base import ChatProvider
from live_memory.providers.factory import missing_credential_message
from live_memory.providers.pricing import cost_usd
from live_memory.records import QuestionResult
from live_memory.store import SnapshotStore, disk_hashes
from live_memory.summarizer import Summarizer
from live_memory.workspace import WorkspaceRegistry, WorkspaceState, WorkspaceStats, workspace_id

logger = logging.getLogger(__name__)

ToolFactory = Callable[[Path, Settings], ToolRunner]


@dataclass(frozen=True)
class Runtime:
    """Settings and the provider built from them; replaced as one value on reload."""

    settings: Settings
    provider: ChatProvider | None


def clamp_answer_tokens(requested: int, settings: Settings) -> int:
    if requested <= 0:
        return int(settings.max_answer_tokens)
    return max(C.MIN_ANSWER_TOKENS, min(C.MAX_ANSWER_TOKENS, requested))


def validate_question(question: Any) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InputError("question is empty: ask a plain-language question about the workspace")
    if len(question) > C.MAX_QUESTION_CHARS:
        raise InputError(f"question is too long ({len(question)} chars; at most {C.MAX_QUESTION_CHARS})")
    return question.strip()


class QuestionManager:
    def __init__(
        self,
        runtime: Runtime,
        *,
        tool_factory: ToolFactory,
        tool_schemas: Sequence[Mapping[str, Any]],
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.runtime = runtime
        self.tool_factory = tool_factory
        self.tool_schemas = tuple(tool_schemas)
        self.clock = clock
        self.wall_clock = wall_clock
        settings = runtime.settings
        self.registry = WorkspaceRegistry(
            budget_tokens=settings.context_tokens,
            distill_min_interval_s=float(settings.distill_min_interval_s),
        )
        self._locks: dict[Path, asyncio.Lock] = {}
        self.retired_providers: list[ChatProvider] = []
        self.store = SnapshotStore(settings.data_dir, clock=wall_clock)

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    async def ensure_loaded(self, state: WorkspaceState) -> None:
        """First use of a workspace: restore its snapshot (re-validated against the disk), build the
        directory tree and freeze the window once."""
        if state.loaded:
            return
        window = state.window
        payload = await asyncio.to_thread(self.store.load, state.id)
        if payload is not None:
            try:
                window.load_json(payload["window"])
                state.stats = WorkspaceStats.from_json(payload.get("stats", {}))
            except (KeyError, TypeError, ValueError) as exc:
                logger.warning("snapshot of %s does not fit this version (%s); starting fresh", state.root, exc)
                state.window = window = ContextWindow(budget_tokens=window.budget_tokens)
            hashes = await asyncio.to_thread(disk_hashes, state.root, window.paths_to_validate())
            checked = window.revalidate(hashes)
            logger.info("restored %s: %d Q&A pairs, %s", state.root, window.qa_count(), checked)
        window.set_directory_tree(await self.directory_tree(state))
        window.freeze()
        state.loaded = True

    async def persist(self, state: WorkspaceState) -> None:
        def snapshot() -> tuple[int, dict[str, Any]]:
            payload = {"workspace": str(state.root), "window": state.window.to_json(), "stats": state.stats.to_json()}
            return state.window.version, payload

        await self.store.save(state.id, snapshot, still_wanted=lambda: not state.dropped)

    async def flush_all(self) -> None:
        """Shutdown: write every loaded workspace (errors logged, never raised: others still flush)."""
        for state in self.registry.all():
            if not state.loaded:
                continue
            try:
                await self.persist(state)
            except OSError:
                logger.exception("could not write the snapshot of %s", state.root)

    async def directory_tree(self, state: WorkspaceState) -> str:
        window = state.window
        budget_chars = int(window.budget_tokens * C.DIRECTORY_TREE_SHARE * window.chars_per_token)
        return await build_directory_tree(state.root, budget_chars=budget_chars)

    def compactor(self, state: WorkspaceState, runtime: Runtime) -> Compactor:
        settings = runtime.settings
        provider = runtime.provider
        summarizer = Summarizer(provider, model=settings.summary_model or None) if provider else None

        def record(report: CompactionReport) -> None:
            stats = state.stats
            stats.compactions += 1
            stats.summaries_written += report.summaries
            stats.last_compaction_at = self.wall_clock()
            stats.background_usage = stats.background_usage + report.usage
            model = settings.summary_model or settings.model
            if provider is not None and not provider.info.subscription:
                stats.background_cost_usd += cost_usd(model, report.usage)

        async def rebuild_tree() -> str:
            return await self.directory_tree(state)

        return Compactor(
            summarizer=summarizer,
            gate=state.gate,
            threshold=float(settings.compaction_threshold),
            floor=float(settings.compaction_floor),
            rebuild_tree=rebuild_tree,
            on_report=record,
        )

    # --- workspace lifecycle ---------------------------------------------------------------------
    async def wipe(self, cwd: str, *, reload_now: bool) -> dict[str, Any]:
        """Drop a workspace's history, ledger and files (reset reloads at once; empty lazily)."""
        root = self.registry.root_for(cwd)
        state = self.registry.drop(root)
        dropped = {"qa_pairs": 0, "ledger_facts": 0, "file_contexts": 0}
        if state is not None:
            state.dropped = True
            dropped = {
                "qa_pairs": state.window.qa_count(),
                "ledger_facts": len(state.window.ledger.facts),
                "file_contexts": len(state.window.files),
            }
        snapshot_deleted = await self.store.delete(workspace_id(root))
        if reload_now:
            await self.ensure_loaded(self.registry.get_or_create(cwd))
        return {
            "workspace": str(root),
            "dropped": dropped,
            "snapshot_deleted": snapshot_deleted,
            "reloaded": reload_now,
        }

    def ingestor(self) -> Ingestor:
        settings = self.settings
        return Ingestor(
            IngestPolicy(
                passive_ingestion=bool(settings.passive_ingestion),
                max_file_bytes=int(settings.passive_max_file_bytes),
                file_globs=tuple(settings.file_globs),
                secret_globs=tuple(settings.secret_globs),
                echo_grace_s=C.ECHO_GRACE_S,
            )
        )

    async def notify(self, cwd: str, events: Sequence[FileEvent]) -> tuple[IngestResult, bool]:
        """Apply file events to a loaded workspace; an unloaded one is not created by events."""
        state = self.registry.loaded(cwd)
        if state is None:
            result = IngestResult()
            for event in events:
                result.ignore(event.path, "workspace not loaded (ask it a question first)")
            return result, False
        return await self.ingestor().apply(state, events), True

    def reload(self, runtime: Runtime) -> list[str]:
        """Swap settings and provider as one value; workspaces stay. Returns the changed option keys."""
        old = self.runtime
        changed = [k for k in runtime.settings.values if runtime.settings.values[k] != old.settings.values.get(k)]
        self.runtime = runtime
        self.registry.budget_tokens = runtime.settings.context_tokens
        self.registry.distill_min_interval_s = float(runtime.settings.distill_min_interval_s)
        for state in self.registry.all():
            state.window.budget_tokens = runtime.settings.context_tokens
            state.gate.min_interval_s = float(runtime.settings.distill_min_interval_s)
        if old.provider is not None and old.provider is not runtime.provider:
            self.retired_providers.append(old.provider)  # closed at shutdown: calls may still use it
        return changed

    async def aclose(self) -> None:
        for provider in [*self.retired_providers, self.runtime.provider]:
            if provider is not None:
                await provider.aclose()
        self.retired_providers.clear()

    # --- questions -------------------------------------------------------------------------------
    async def ask(
        self, cwd: str, question: str, max_answer_tokens: int = 0, outcome: LoopOutcome | None = None
    ) -> QuestionResult:
        runtime = self.runtime  # one consistent view even if a reload lands meanwhile
        question = validate_question(question)
        state = self.registry.get_or_create(cwd)
        if runtime.provider is None:
            raise NoCredentialError(missing_credential_message(runtime.settings))
        answer_tokens = clamp_answer_tokens(max_answer_tokens, runtime.settings)
        lock = self._locks.setdefault(state.root, asyncio.Lock())
        started = self.clock()
        out = outcome or LoopOutcome(answer="", model=runtime.provider.info.model)
        async with lock:
            await self.ensure_loaded(state)
            fork_id, window = state.fork()
            state.in_flight += 1
            try:
                loop = QuestionLoop(
                    runtime.provider,
                    self.tool_factory(state.root, runtime.settings),
                    self.tool_schemas,
                    LoopLimits(
                        timeout_s=float(runtime.settings.default_timeout_s),
                        max_iterations=int(runtime.settings.max_iterations),
                        answer_tokens=answer_tokens,
                        context_tokens=runtime.settings.context_tokens,
                        force_explore_when_cold=bool(runtime.settings.force_explore_when_cold),
                    ),
                    workspace_root=state.root,
                    cache_key=state.id,
                    compactor=self.compactor(state, runtime),
                    clock=self.clock,
                )
                await loop.answer(window, question, out)
            except BaseException:
                state.abandon(fork_id)
                raise
            finally:
                state.in_flight -= 1
            cost = None if runtime.provider.info.subscription else cost_usd(out.model, out.usage)
            window.calibrate(
                out.first_prompt_estimate,
                out.first_prompt_actual,
                C.CALIBRATION_EMA_ALPHA,
                C.CALIBRATION_MIN_RATIO,
                C.CALIBRATION_MAX_RATIO,
            )
            state.commit(fork_id, window)
            state.stats.questions += 1
            state.stats.usage = state.stats.usage + out.usage
            state.stats.cost_usd += cost or 0.0
            state.stats.last_question_at = self.wall_clock()
            await self.persist(state)  # before the answer returns: an answered question survives a crash
        return QuestionResult(
            answer=out.answer,
            model=out.model,
            latency_s=self.clock() - started,
            usage=out.usage,
            tool_calls=out.tool_calls,
            files_read=len(out.files_read),
            cost_usd=cost,
            context_used_tokens=state.window.prompt_tokens(),
            context_total_tokens=state.window.budget_tokens,
            timed_out=out.timed_out,
        )
