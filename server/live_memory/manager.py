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
from live_memory.errors import BusyError, InputError, LiveMemoryError, NoCredentialError, WorkspaceLoadError
from live_memory.ingest import FileEvent, IngestResult
from live_memory.jobs import JobRegistry
from live_memory.lifecycle import WorkspaceLifecycle
from live_memory.logging_setup import log_question
from live_memory.providers.base import ChatProvider
from live_memory.providers.factory import missing_credential_message
from live_memory.providers.pricing import PriceOverrides, cost_usd
from live_memory.records import QuestionResult, Usage
from live_memory.spend import Caps, SpendTracker
from live_memory.summarizer import Summarizer
from live_memory.workspace import WorkspaceState

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
        self.workspaces = WorkspaceLifecycle(lambda: self.runtime.settings, wall_clock)
        self.registry = self.workspaces.registry
        self.retired_providers: list[ChatProvider] = []
        self.stopping = False
        self._active: set[QuestionLoop] = set()
        self.calls_in_progress = 0  # MCP tool calls still being answered (the shutdown drain waits on them)
        self._quiet = asyncio.Event()
        self._quiet.set()
        self.jobs = JobRegistry(ttl_s=C.JOB_TTL_S, max_jobs=C.MAX_JOBS, clock=clock)
        self.spend = SpendTracker(runtime.settings.data_dir, wall_clock)

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    def caps(self) -> Caps:
        s = self.settings
        return Caps(daily_usd=float(s.daily_budget_usd), workspace_daily_usd=float(s.workspace_daily_budget_usd))

    def cost(self, model: str, usage: Usage, provider: ChatProvider) -> float | None:
        """USD for `usage`, None on a subscription credential (not metered)."""
        if provider.info.subscription:
            return None
        s = self.settings
        overrides = PriceOverrides(
            float(s.price_input), float(s.price_output), float(s.price_cache_write), float(s.price_cache_read)
        )
        return cost_usd(model, usage, overrides)

    def background_allowed(self, state: WorkspaceState) -> bool:
        return bool(self.settings.background) and self.spend.background_allowed(state.id, self.caps())

    # --- delegated workspace operations --------------------------------------------------------
    async def notify(self, cwd: str, events: Sequence[FileEvent]) -> tuple[IngestResult, bool]:
        return await self.workspaces.notify(cwd, events)

    async def wipe(self, cwd: str, *, reload_now: bool) -> dict[str, Any]:
        return await self.workspaces.wipe(cwd, reload_now=reload_now)

    # --- configuration and shutdown ------------------------------------------------------------
    def reload(self, runtime: Runtime) -> list[str]:
        """Swap settings and provider as one value; workspaces stay. Returns the changed option keys."""
        old = self.runtime
        changed = [k for k, v in runtime.settings.values.items() if v != old.settings.values.get(k)]
        if runtime.settings.model != old.settings.model and "model" not in changed:
            changed.append("model")
        self.runtime = runtime
        self.workspaces.apply_settings(runtime.settings)
        if old.provider is not None and old.provider is not runtime.provider:
            self.retired_providers.append(old.provider)  # closed at shutdown: calls may still use it
        return changed

    def begin_shutdown(self, grace_s: float) -> None:
        """Refuse new questions; running ones return their best answer within `grace_s`."""
        self.stopping = True
        for state in self.registry.all():
            state.admission.close()
        for loop in list(self._active):
            loop.cut_deadline(grace_s)

    def call_started(self) -> None:
        self.calls_in_progress += 1
        self._quiet.clear()

    def call_finished(self) -> None:
        self.calls_in_progress -= 1
        if self.calls_in_progress == 0:
            self._quiet.set()

    async def wait_quiet(self, timeout_s: float) -> bool:
        """Wait until no MCP call is being answered; False if `timeout_s` passed first."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._quiet.wait()
        except TimeoutError:
            return False
        return True

    async def aclose(self) -> None:
        await self.jobs.aclose()
        await self.workspaces.flush_all()
        for provider in [*self.retired_providers, self.runtime.provider]:
            if provider is not None:
                await provider.aclose()
        self.retired_providers.clear()

    # --- questions -----------------------------------------------------------------------------
    def compactor(self, state: WorkspaceState, runtime: Runtime) -> Compactor:
        settings = runtime.settings
        provider = runtime.provider
        summarizer = Summarizer(provider, model=settings.summary_model or None) if provider else None

        def record(report: CompactionReport) -> None:
            stats = state.stats
            stats.compactions += 1
            stats.summaries_written += report.summaries
            stats.qa_summarized += report.summarized_pairs
            stats.last_compaction_at = self.wall_clock()
            stats.background_usage = stats.background_usage + report.usage
            if provider is not None:
                spent = self.cost(settings.summary_model or settings.model, report.usage, provider) or 0.0
                stats.background_cost_usd += spent
                self.spend.record(state.id, spent, background=True)

        async def rebuild_tree() -> str:
            return await self.workspaces.directory_tree(state)

        return Compactor(
            summarizer=summarizer,
            gate=state.gate,
            threshold=float(settings.compaction_threshold),
            floor=float(settings.compaction_floor),
            rebuild_tree=rebuild_tree,
            on_report=record,
            distill_allowed=lambda: self.background_allowed(state),
        )

    async def ask(
        self, cwd: str, question: str, max_answer_tokens: int = 0, outcome: LoopOutcome | None = None
    ) -> QuestionResult:
        runtime = self.runtime  # one consistent view even if a reload lands meanwhile
        settings = runtime.settings
        question = validate_question(question)
        state, root = self.registry.get_or_create(cwd)
        if runtime.provider is None:
            raise NoCredentialError(missing_credential_message(settings))
        if self.stopping:
            raise BusyError("Live Memory is shutting down; retry in a few seconds", C.BUSY_RETRY_AFTER_S)
        self.spend.check_question(state.id, self.caps())
        answer_tokens = clamp_answer_tokens(max_answer_tokens, settings)
        started = self.clock()
        timeout_s = float(settings.default_timeout_s)
        out = outcome or LoopOutcome(answer="", model=runtime.provider.info.model)
        out.status = "waiting for earlier questions on this workspace"
        try:
            async with asyncio.timeout(timeout_s * C.ADMISSION_WAIT_SHARE):
                admission = state.admission.admit()
                await admission.__aenter__()
        except TimeoutError:
            raise BusyError(
                f"Live Memory is still busy with this workspace after {timeout_s * C.ADMISSION_WAIT_SHARE:.0f} s; "
                "retry shortly",
                C.BUSY_RETRY_AFTER_S,
            ) from None
        try:
            await self._load(state)
            remaining = max(timeout_s - (self.clock() - started), C.MIN_TIMEOUT_S)
            await self._answer(
                state,
                root=root,
                runtime=runtime,
                question=question,
                answer_tokens=answer_tokens,
                timeout_s=remaining,
                out=out,
            )
        finally:
            await admission.__aexit__(None, None, None)
        cost = self.cost(out.model, out.usage, runtime.provider)
        outcome_name = "timed_out" if out.timed_out else "partial" if out.partial else "answered"
        log_question(
            workspace=str(state.root),
            latency_s=self.clock() - started,
            prompt_tokens=out.usage.prompt_tokens,
            output_tokens=out.usage.output_tokens,
            cache_read_tokens=out.usage.cache_read_tokens,
            cost_usd=cost,
            outcome=outcome_name,
        )
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
            error=out.partial,
        )

    async def _load(self, state: WorkspaceState) -> None:
        state.last_used = self.clock()
        try:
            await self.workspaces.ensure_loaded(state)
        except LiveMemoryError:
            raise
        except Exception as exc:  # one broken workspace must not take the others down
            logger.exception("loading workspace %s failed", state.root)
            self.registry.drop(state.root)  # the next question retries from scratch
            raise WorkspaceLoadError(f"the workspace {state.root} could not be loaded: {exc}") from None
        await self.workspaces.enforce_capacity(keep=state)

    async def _answer(
        self,
        state: WorkspaceState,
        *,
        root: Path,
        runtime: Runtime,
        question: str,
        answer_tokens: int,
        timeout_s: float,
        out: LoopOutcome,
    ) -> None:
        """Fork -> loop -> commit -> persist. The snapshot is written before the answer returns,
        so an answered question survives a crash."""
        assert runtime.provider is not None
        settings = runtime.settings
        fork_id, window = state.fork()
        loop = QuestionLoop(
            runtime.provider,
            self.tool_factory(root, settings),
            self.tool_schemas,
            LoopLimits(
                timeout_s=timeout_s,
                max_iterations=int(settings.max_iterations),
                answer_tokens=answer_tokens,
                context_tokens=settings.model_context_tokens,
                force_explore_when_cold=bool(settings.force_explore_when_cold),
            ),
            workspace_root=root,
            cache_key=state.id,
            compactor=self.compactor(state, runtime),
            clock=self.clock,
        )
        state.in_flight += 1
        self._active.add(loop)
        try:
            await loop.answer(window, question, out)
        except BaseException:
            state.abandon(fork_id)
            raise
        finally:
            state.in_flight -= 1
            self._active.discard(loop)
        window.calibrate(
            out.first_prompt_estimate,
            out.first_prompt_actual,
            C.CALIBRATION_EMA_ALPHA,
            C.CALIBRATION_MIN_RATIO,
            C.CALIBRATION_MAX_RATIO,
        )
        score = (len(out.files_read), out.usage.prompt_tokens + out.usage.output_tokens)
        if not state.commit(fork_id, window, score):
            state.stats.races_lost += 1
            logger.info("a concurrent question on %s explored more; this exchange is not kept", state.root)
        cost = self.cost(out.model, out.usage, runtime.provider)
        self.spend.record(state.id, cost or 0.0, background=False)
        read_chars = sum(window.files[p].size for p in out.files_read if p in window.files)
        saved = int(read_chars / window.chars_per_token) - out.usage.output_tokens
        state.stats.tokens_saved += max(saved, 0)
        state.stats.questions += 1
        state.stats.usage = state.stats.usage + out.usage
        state.stats.cost_usd += cost or 0.0
        state.stats.last_question_at = self.wall_clock()
        state.last_prompt_at = self.clock()
        await self.workspaces.persist(state)
        await self.spend.save()
