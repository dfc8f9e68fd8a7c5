"""Answering one question, top to bottom:

    validate -> open the workspace (service) -> admit -> fork -> tool loop -> settle: commit, charge,
    persist (service)

`Answerer` only answers questions. It takes the settings snapshot once per question, gets the loaded
workspace and its tools from the `WorkspaceService`, and never talks HTTP or MCP (`mcp_tools.py` and
the jobs call it). The state is journaled before the answer returns, so an answered question
survives a crash; the snapshot is written behind, a moment later (see `store`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from live_memory import constants as C
from live_memory.core.errors import BusyError, InputError, NoCredentialError, ProviderError
from live_memory.core.records import QuestionResult, TeamAnswer, Usage
from live_memory.engine.agent_loop import LoopOutcome, Progress, QuestionLoop
from live_memory.engine.answer_reuse import KeptAnswer, given_again
from live_memory.engine.compaction import CompactionReport, CompactionScope, Compactor
from live_memory.engine.summarizer import Conversation, Summarizer
from live_memory.memory.context_window import ContextWindow
from live_memory.settings.config import Settings
from live_memory.settings.logging_setup import log_question
from live_memory.settings.prices import cache_read_share
from live_memory.settings.runtime import Runtime, missing_credential_message
from live_memory.workspaces import team_work
from live_memory.workspaces.policies import compaction_policy, loop_limits
from live_memory.workspaces.service import OpenWorkspace, WorkspaceService
from live_memory.workspaces.spend import caps_of
from live_memory.workspaces.telemetry import INTERRUPTED, RecentQuestion, error_kind
from live_memory.workspaces.workspace import WorkspaceState

logger = logging.getLogger(__name__)

TEAM_ANSWER_MODEL = "team-answer"  # the trailer's model for an answer given again from a teammate's
GIVEN_AGAIN_MODEL = "given-again"  # the trailer's model for this memory's earlier answer given again


@dataclass(frozen=True)
class Answered:
    """What `_answer` gives back: the loop's outcome, the answer as the caller gets it, and what it cost."""

    outcome: LoopOutcome
    answer: str
    cost_usd: float | None


def clamp_answer_tokens(requested: int, settings: Settings) -> int:
    if requested <= 0:
        default: int = settings.max_answer_tokens
        return default
    return max(C.MIN_ANSWER_TOKENS, min(C.MAX_ANSWER_TOKENS, requested))


def validate_question(question: Any) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InputError("question is empty: ask a plain-language question about the workspace")
    if len(question) > C.MAX_QUESTION_CHARS:
        raise InputError(f"question is too long ({len(question)} chars; at most {C.MAX_QUESTION_CHARS})")
    return question.strip()


class Answerer:
    def __init__(
        self,
        service: WorkspaceService,
        tool_schemas: Sequence[Mapping[str, Any]],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        deadline_reserve_s: float = C.FINAL_ANSWER_RESERVE_S,
    ) -> None:
        self.service = service
        self.telemetry = service.telemetry  # recent questions and provider errors, for /stats and /metrics
        self.tool_schemas = tuple(tool_schemas)
        self.clock = clock
        self.wall_clock = wall_clock
        self.deadline_reserve_s = deadline_reserve_s
        self._loops: set[QuestionLoop] = set()
        self._cut_to: float | None = None  # set at shutdown: every loop's deadline is at most this far off
        self._compactor: tuple[Runtime, Compactor] | None = None

    async def ask(
        self,
        cwd: str,
        question: str,
        max_answer_tokens: int = 0,
        progress: Progress | None = None,
        *,
        agent: str = "",
    ) -> QuestionResult:
        """Answer one question; `progress`, the caller's, is told what it is doing as that changes (for its
        progress reports); `agent` names the coding agent that asked (for /stats)."""
        runtime = self.service.runtime  # one consistent view even if a reload lands meanwhile
        settings = runtime.settings
        question = validate_question(question)
        if runtime.provider is None:
            self.telemetry.provider_error("no_credential")
            raise NoCredentialError(missing_credential_message(settings))
        if self.service.stopping:
            raise BusyError("Live Memory is shutting down; retry in a few seconds", C.BUSY_RETRY_AFTER_S)
        started = self.clock()
        progress = progress or Progress()
        workspace = await self.service.open(cwd, caps=caps_of(runtime), question=question)
        state = workspace.state
        if workspace.team_answer is not None:
            return self._from_team(state, workspace.team_answer, question, started, agent)
        if workspace.earlier is not None:
            return self._given_again(state, workspace.earlier, question, started, agent)
        timeout_s = settings.default_timeout_s
        progress.report("waiting for earlier questions on this workspace")
        wait_s = timeout_s * C.ADMISSION_WAIT_SHARE
        # Only entering the admission is bounded by the wait; the slot is held until the answer is committed.
        async with contextlib.AsyncExitStack() as admitted:
            try:
                async with asyncio.timeout(wait_s):
                    await admitted.enter_async_context(state.admission.admit())
            except TimeoutError:
                raise BusyError(
                    f"Live Memory is still busy with this workspace after {wait_s:.0f} s; retry shortly",
                    C.BUSY_RETRY_AFTER_S,
                ) from None
            try:
                remaining = max(timeout_s - (self.clock() - started), C.MIN_TIMEOUT_S)
                answered = await self._answer(
                    workspace, runtime, question, max_answer_tokens, remaining, progress, agent
                )
            except ProviderError as exc:
                self.telemetry.provider_error(error_kind(exc))
                raise
        out, cost = answered.outcome, answered.cost_usd
        latency = self.clock() - started
        result = "timed_out" if out.timed_out else "partial" if out.partial else "answered"
        if out.partial:
            self.telemetry.provider_error(INTERRUPTED)
        self.telemetry.question(
            state.id, RecentQuestion(self.wall_clock(), latency, out.tool_calls, cost, result, question, agent)
        )
        log_question(
            workspace=str(state.root),
            latency_s=latency,
            prompt_tokens=out.usage.prompt_tokens,
            output_tokens=out.usage.output_tokens,
            cache_read_tokens=out.usage.cache_read_tokens,
            cost_usd=cost,
            outcome=result,
        )
        return QuestionResult(
            answer=answered.answer,
            model=out.model,
            latency_s=latency,
            usage=out.usage,
            tool_calls=out.tool_calls,
            files_read=len(out.files_read),
            cost_usd=cost,
            context_used_tokens=state.window.prompt_tokens(),
            context_total_tokens=state.window.budget_tokens,
            timed_out=out.timed_out,
            error=out.partial,
        )

    def _from_team(
        self, state: WorkspaceState, shared: TeamAnswer, question: str, started: float, agent: str
    ) -> QuestionResult:
        """A teammate's answer to the same question on the same bytes: given quoted, with whose it is (the store's
        database's word), at no model cost (it does not join this memory's conversation), and audited."""
        answer = team_work.quoted_answer(shared)
        team_work.audit_served(shared, str(state.root))
        return self._without_model(state, answer, TEAM_ANSWER_MODEL, question, started, agent)

    def _given_again(
        self, state: WorkspaceState, kept: KeptAnswer, question: str, started: float, agent: str
    ) -> QuestionResult:
        """This memory's earlier answer to the same need on the same bytes, given again at no model cost (it does
        not join the conversation: the earlier exchange is there already, or was folded into the ledger)."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(kept.at))
        return self._without_model(state, given_again(kept, when), GIVEN_AGAIN_MODEL, question, started, agent)

    def _without_model(
        self, state: WorkspaceState, answer: str, model: str, question: str, started: float, agent: str
    ) -> QuestionResult:
        """An answer that took no model call: counted as answered, at no cost."""
        latency = self.clock() - started
        self.service.count_given(state, agent)
        self.telemetry.question(
            state.id, RecentQuestion(self.wall_clock(), latency, 0, 0.0, "answered", question, agent)
        )
        return QuestionResult(
            answer=answer,
            model=model,
            latency_s=latency,
            usage=Usage(),
            tool_calls=0,
            files_read=0,
            cost_usd=0.0,
            context_used_tokens=state.window.prompt_tokens(),
            context_total_tokens=state.window.budget_tokens,
        )

    @property
    def time_budget_s(self) -> float:
        """How long a question may take (the current settings'), for the caller's progress reports."""
        return self.service.settings.default_timeout_s

    async def check_workspace(self, cwd: str) -> None:
        """Raise the error a question about `cwd` would meet before it runs (an invalid or refused cwd)."""
        await self.service.locate(cwd)

    def cut_deadlines(self, grace_s: float) -> None:
        """Shutdown: running questions (and any that start now) return their best answer within `grace_s`."""
        self._cut_to = self.clock() + grace_s
        for loop in list(self._loops):
            loop.cut_deadline(grace_s)

    async def _answer(
        self,
        workspace: OpenWorkspace,
        runtime: Runtime,
        question: str,
        max_answer_tokens: int,
        timeout_s: float,
        progress: Progress,
        agent: str = "",
    ) -> Answered:
        """Fork -> loop -> settle (commit, charge, persist), each step of the workspace's state through the
        service. `agent`: who asked."""
        assert runtime.provider is not None
        settings = runtime.settings
        state = workspace.state
        compactor = self._compactor_for(runtime)
        scope = CompactionScope(
            gate=state.gate,
            tree_root=state.tree_root,
            distill=workspace.may_distill,
            cache_key=state.id,
            team_facts=tuple(state.team_inbox),
        )
        compactions: list[CompactionReport] = []  # what the loop's compactions did: charged even if it fails

        async def compact(window: ContextWindow, overflow_limit: int | None) -> CompactionReport | None:
            report = await compactor(window, overflow_limit, scope=scope)
            if report is not None:
                compactions.append(report)
            return report

        fork_id, window = self.service.fork(state)
        loop = QuestionLoop(
            runtime.provider,
            workspace.tools,
            self.tool_schemas,
            loop_limits(
                settings,
                timeout_s=timeout_s,
                answer_tokens=clamp_answer_tokens(max_answer_tokens, settings),
                reserve_s=self.deadline_reserve_s,
                hot_set=compactor.policy.hot_set,
            ),
            workspace_root=workspace.root,
            cache_key=state.id,
            compactor=compact,
            clock=self.clock,
        )
        self._loops.add(loop)
        if self._cut_to is not None:
            loop.cut_deadline(max(self._cut_to - self.clock(), 0.0))
        try:
            with self.service.in_flight(state):
                out = await loop.answer(window, question, progress)
        except BaseException:
            self.service.discard(state, fork_id, runtime, compactions)
            raise
        finally:
            self._loops.discard(loop)
        settled = await self.service.settle(
            state, fork_id, window, runtime, out, compactions, question, workspace.tools, workspace.asked, agent
        )
        answer = out.answer
        if settled.unsaved is not None:  # the answer stands; the caller learns it is not durable yet, and why
            answer = f"{answer}\n\n(answer given, not yet saved: {settled.unsaved}; see the server log)"
        return Answered(out, answer, settled.cost_usd)

    def _compactor_for(self, runtime: Runtime) -> Compactor:
        """The compactor of this settings snapshot: built on its first question, kept until a reload."""
        built = self._compactor
        if built is None or built[0] is not runtime:
            built = self._compactor = (runtime, build_compactor(runtime, self.tool_schemas, self.clock))
        return built[1]


def build_compactor(
    runtime: Runtime, tool_schemas: Sequence[Mapping[str, Any]], clock: Callable[[], float]
) -> Compactor:
    """A settings snapshot's compactor: its policy, and a summarizer on its provider (none without one)."""
    settings = runtime.settings
    provider = runtime.provider
    summary_model = settings.summary_model or settings.model
    read_share = cache_read_share(settings)
    policy = compaction_policy(settings)
    summarizer = (
        Summarizer(
            provider,
            # The answering model itself (named or not) continues its own cached conversation.
            model=None if summary_model == settings.model else summary_model,
            conversation=Conversation(
                tuple(tool_schemas),
                settings.long_cache,
                lifetime_s=cache_lifetime_s(settings),
                clock=clock,
                read_share=read_share,
            ),
        )
        if provider
        else None
    )
    return Compactor(policy, summarizer)


def cache_lifetime_s(settings: Settings) -> float:
    """How long the provider keeps the history's prefix after a request read it (a fold's cache estimate):
    Anthropic's 5 minutes or, for history breakpoints that ask for it, an hour; an implicit cache, about as
    long as its keep-warm interval (which stays under its lifetime)."""
    if settings.profile.cache_style == "none":
        return 0.0
    if settings.profile.cache_style == "implicit":
        return settings.profile.keep_warm_interval_s
    return C.CACHE_LONG_TTL_S if settings.long_cache == "history" else C.CACHE_TTL_S
