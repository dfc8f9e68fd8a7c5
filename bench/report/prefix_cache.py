"""The prompt-cache section: the share of prompt tokens read from cache against its goal and the ideal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    MISSING,
    Charts,
    dig,
    image,
    list_at,
    mapping_at,
    num,
    pct,
    ratio,
    table,
    usd,
)

# The goal bench/prefix_cache.py states for itself.
CACHE_GOAL_SHARE = 0.90
CACHE_GOAL_GAP_POINTS = 3.0


def render_prefix_cache(data: Mapping[str, Any], charts: Charts) -> list[str]:
    config = mapping_at(data, "config")
    lines = [
        f"Method: one scripted session of {num(config.get('questions'))} questions (tees, edits, tool use) "
        "through the real server against the fake provider's cache simulations; the share of prompt tokens "
        "served from cache is compared with the ideal for the same request sequence and with a naive layout "
        "(the volatile block re-rendered in place, front truncation instead of compaction) replayed to a fresh "
        f"fake. `max_context_tokens` = {num(config.get('max_context_tokens'))}.",
        "",
        f"Goal (Anthropic): at least {CACHE_GOAL_SHARE:.0%} of question prompt tokens from cache, within "
        f"{CACHE_GOAL_GAP_POINTS:.0f} points of the ideal.",
        "",
    ]
    simulations: Mapping[str, Any] = mapping_at(data, "simulations")
    rows = []
    for name, sim in simulations.items():
        lm, naive = mapping_at(sim, "live_memory"), mapping_at(sim, "naive")
        rows.append(
            (
                f"{name} (`{sim.get('model', MISSING)}`)",
                pct(lm.get("cache_read_share_questions")),
                pct(lm.get("ideal_share_questions")),
                pct(naive.get("cache_read_share_questions")),
                usd(lm.get("cost_per_question_usd")),
                usd(naive.get("cost_per_question_usd")),
                ratio(dig(sim, "ratios", "cost_naive_over_live_memory")),
                num(lm.get("compactions")),
            )
        )
    if rows:
        lines += [
            table(
                [
                    "simulation",
                    "cache share",
                    "ideal",
                    "naive cache share",
                    "$/question",
                    "naive $/question",
                    "naive ÷ Live Memory",
                    "compactions",
                ],
                rows,
            ),
            "",
        ]
    verdict = next(
        (line for line in list_at(simulations, "anthropic", "analysis") if str(line).startswith("goal")),
        None,
    )
    if verdict:
        lines += [f"Verdict: {verdict}", ""]
    lines += image(charts, "cache_share", "Cache-read share per question with compaction points")
    lines += image(charts, "context_fill", "Context fill per question: the watermark sawtooth")
    return lines
