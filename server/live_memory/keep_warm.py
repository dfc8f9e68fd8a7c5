"""Keep-warm (opt-in): re-read each recently active workspace's cached prefix before the provider's
cache expires, so the next question does not pay full price for it.

A ping is built by the same `prompt_blocks()` path as a question (same tools, system and history
bytes, so it warms exactly the prefix questions use) with a throwaway trailing turn, and
`max_tokens=0` where the provider supports pre-warming (Anthropic), else 1. Eligibility: keep-warm
on, background calls allowed (kill switch, spend cap), a non-empty window, no question running,
a question within `keep_warm_max_idle_s`, and the last request at least one interval ago. The
interval is provider knowledge (Anthropic/OpenAI 240 s; DeepSeek's cache lasts hours, so never).
Pings count as background spend.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from live_memory.constants import KEEP_WARM_CHECK_S
from live_memory.manager import QuestionManager
from live_memory.providers.base import ChatRequest, Message, TextPart
from live_memory.workspace import WorkspaceState

logger = logging.getLogger(__name__)

PING = "(keep-warm ping: no answer needed)"


class KeepWarm:
    def __init__(self, manager: QuestionManager, clock: Callable[[], float] = time.monotonic) -> None:
        self.manager = manager
        self.clock = clock
        self.pings = 0
        self._task: asyncio.Task[None] | None = None

    def interval_s(self) -> float:
        settings = self.manager.settings
        configured = float(settings.keep_warm_interval_s)
        return configured if configured > 0 else settings.profile.keep_warm_interval_s

    def eligible(self, state: WorkspaceState) -> bool:
        settings = self.manager.settings
        if not settings.keep_warm or self.manager.runtime.provider is None or not state.loaded:
            return False
        if not self.manager.background_allowed(state) or state.window.qa_count() == 0:
            return False
        if state.in_flight or state.admission.running or state.last_prompt_at is None:
            return False
        idle = self.clock() - state.last_prompt_at
        interval = self.interval_s()
        last_question_idle = self.clock() - state.last_used
        return interval <= idle and last_question_idle <= float(settings.keep_warm_max_idle_s)

    async def tick(self) -> list[WorkspaceState]:
        """One pass over the workspaces; returns the ones pinged."""
        pinged = []
        for state in self.manager.registry.all():
            if self.eligible(state):
                try:
                    await self.ping(state)
                except Exception as exc:  # a failed ping only means the cache may be cold later
                    logger.info("keep-warm ping for %s failed: %s", state.root, exc)
                    state.last_prompt_at = self.clock()
                    continue
                pinged.append(state)
        return pinged

    async def ping(self, state: WorkspaceState) -> None:
        runtime = self.manager.runtime
        provider = runtime.provider
        assert provider is not None
        # No breakpoint on the throwaway ping itself: only the shared prefix is worth writing.
        system, messages = state.window.prompt_blocks([Message("user", (TextPart(PING),))], mark_tail=False)
        request = ChatRequest(
            system=system,
            messages=messages,
            max_tokens=0 if provider.info.protocol == "anthropic" else 1,
            tools=self.manager.tool_schemas,
            cache_key=state.id,
        )
        response = await provider.chat(request)
        state.last_prompt_at = self.clock()
        stats = state.stats
        stats.background_usage = stats.background_usage + response.usage
        spent = self.manager.cost(response.model, response.usage, provider) or 0.0
        stats.background_cost_usd += spent
        self.manager.spend.record(state.id, spent, background=True)
        self.pings += 1

    async def run(self) -> None:
        while True:
            await asyncio.sleep(KEEP_WARM_CHECK_S)
            await self.tick()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="live-memory keep-warm")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
