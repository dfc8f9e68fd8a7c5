"""The engine's policies a settings snapshot gives a question: the compactor's and the question loop's.

Each is built here and nowhere else. The engine cannot build them itself: the compaction policy holds the
tree's policy, sized from the prompt's head (the tools' schemas: a package beside the engine's, not below it).
"""

from __future__ import annotations

from live_memory import constants as C
from live_memory.engine.agent_loop import LoopLimits
from live_memory.engine.compaction import CompactionPolicy
from live_memory.memory.hot_set import HotSet, hot_set_of
from live_memory.settings.config import Settings
from live_memory.workspaces.loading import tree_policy


def compaction_policy(settings: Settings) -> CompactionPolicy:
    return CompactionPolicy(
        threshold=settings.compaction_threshold,
        floor=settings.compaction_floor,
        history_max_tokens=settings.history_max_tokens,
        history_floor=settings.history_floor,
        tree=tree_policy(settings),
        # One hot set for the loop and the compactor, priced from the answering model.
        hot_set=hot_set_of(settings),
    )


def loop_limits(
    settings: Settings, *, timeout_s: float, answer_tokens: int, reserve_s: float, hot_set: HotSet | None
) -> LoopLimits:
    """One question's limits: its deadline, answer length and wrap-up reserve are the question's own, its hot
    set the compactor's (the two must agree on what is held)."""
    return LoopLimits(
        timeout_s=timeout_s,
        max_iterations=settings.max_iterations,
        answer_tokens=answer_tokens,
        context_tokens=settings.model_context_tokens,
        force_explore_when_cold=settings.force_explore_when_cold,
        reserve_s=reserve_s,
        retry_base_s=settings.provider_retry_base_s,
        long_cache=settings.long_cache,
        hot_set=hot_set,
        answer_chars=settings.history_answer_chars,
        pre_read_chars=int(settings.pre_read_tokens * C.CHARS_PER_TOKEN),
    )
