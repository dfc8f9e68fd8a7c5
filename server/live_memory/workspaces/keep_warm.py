"""Keep-warm (opt-in): re-read each recently active workspace's cached prefix before the provider's
cache expires, so the next question does not pay full price for it.

A ping is built by the same `build_prompt()` path as a question (same tools, system and history
bytes, so it warms exactly the prefix questions use) with a throwaway trailing turn, and
`max_tokens=0` where the provider supports pre-warming (Anthropic), else 1. Eligibility: keep-warm
on, background calls allowed (kill switch, spend cap), a non-empty window, no question running,
a question within `keep_warm_max_idle_s`, and the last request at least one interval ago. The
interval is provider knowledge (Anthropic/OpenAI 240 s; DeepSeek's cache lasts hours, so never).
Pings count as background spend.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from live_memory.constants import KEEP_WARM_CHECK_S
from live_memory.core.messages import ChatRequest, Message, TextPart
from live_memory.engine.prompt_layout import build_prompt
from live_memory.workspaces.service import WorkspaceService
from live_memory.workspaces.spend import caps_of
from live_memory.workspaces.workspace import WorkspaceState

logger = logging.getLogger(__name__)

PING = "(keep-warm ping: no answer needed)"


class KeepWarm:
    def __init__(
        self,
        service: WorkspaceService,
        tool_schemas: Sequence[Mapping[str, Any]],
        *,
        clock: Callable[[], float] = time.monotonic,
        check_interval_s: float = KEEP_WARM_CHECK_S,
    ) -> None:
        self.service = service
        self.tool_schemas = tuple(tool_schemas)
        self.clock = clock
        self.check_interval_s = check_interval_s
        self.pings = 0

    def interval_s(self) -> float:
        settings = self.service.settings
        configured = settings.keep_warm_interval_s
        return configured if configured > 0 else settings.profile.keep_warm_interval_s

    def eligible(self, state: WorkspaceState) -> bool:
        runtime = self.service.runtime
        settings = runtime.settings
        if not settings.keep_warm or runtime.provider is None or not state.loaded:
            return False
        background_ok = settings.background and self.service.spend.background_allowed(state.id, caps_of(runtime))
        if not background_ok or state.window.qa_count() == 0:
            return False
        if state.busy or state.last_prompt_at is None:
            return False
        idle = self.clock() - state.last_prompt_at
        last_question_idle = self.clock() - state.last_used
        return self.interval_s() <= idle and last_question_idle <= settings.keep_warm_max_idle_s

    async def tick(self) -> list[WorkspaceState]:
        """One pass over the workspaces; returns the ones pinged."""
        pinged = []
        for state in self.service.states():
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
        runtime = self.service.runtime
        provider = runtime.provider
        assert provider is not None
        # No breakpoint on the throwaway ping itself: only the shared prefix is worth writing.
        system, messages = build_prompt(
            state.window,
            [Message("user", (TextPart(PING),))],
            mark_tail=False,
            long_cache=runtime.settings.long_cache,
        )
        request = ChatRequest(
            system=system,
            messages=messages,
            max_tokens=0 if provider.info.prewarm_with_zero_tokens else 1,
            tools=self.tool_schemas,
            cache_key=state.id,
        )
        response = await provider.chat(request)
        state.last_prompt_at = self.clock()
        await self.service.spend.charge(state, runtime, response.model, response.usage, background=True)
        self.pings += 1

    async def run(self) -> None:
        """Runs until cancelled (the lifespan's task group owns it)."""
        while True:
            await anyio.sleep(self.check_interval_s)
            await self.tick()
