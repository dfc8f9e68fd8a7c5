"""The cost section: Live Memory against no memory, per setup, from bench/results/savings.json."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bench.report.formatting import (
    MISSING,
    Charts,
    as_number,
    dig,
    image,
    list_at,
    mapping_at,
    num,
    pct,
    table,
    usd,
)


def render_savings(data: Mapping[str, Any], charts: Charts) -> list[str]:
    lines = [
        "Method: 100 scripted questions about the Django 5.1.4 repository in 5 sessions (restart between "
        "sessions), replayed through the real Live Memory server and through a no-memory baseline (a fresh "
        "explorer per question that reads the files the answer needs), against fake providers with the same "
        "cache rules; one scripted model reads a file only when its content is not already in the prompt. "
        "It measures the mechanics (what is re-sent and what is cached), not answer quality.",
        "",
    ]
    config = mapping_at(data, "config")
    if config:
        lines += [
            f"Workload: {num(config.get('questions'))} questions, {num(config.get('sessions'))} sessions "
            f"({num(config.get('restarts'))} restarts), {num(config.get('tees'))} tees and "
            f"{num(config.get('edits'))} edits by the agent, `max_context_tokens` = "
            f"{num(config.get('max_context_tokens'))}, workload digest `{config.get('workload_digest', MISSING)}`.",
            "",
        ]
    setups: Mapping[str, Any] = mapping_at(data, "setups")
    if not setups:
        return [*lines, "_No setups in the result file._", ""]
    summary = []
    for name, setup in setups.items():
        lm, base = mapping_at(setup, "live_memory"), mapping_at(setup, "baseline")
        summary.append(
            (
                str(setup.get("label", name)),
                usd(lm.get("cost_per_question_usd")),
                usd(base.get("cost_per_question_usd")),
                usd(lm.get("cost_usd")),
                usd(base.get("cost_usd")),
                _difference(lm.get("cost_usd"), base.get("cost_usd")),
                _break_even(dig(setup, "comparison", "break_even_after_question")),
            )
        )
    lines += [
        table(
            [
                "setup",
                "Live Memory $/question",
                "no memory $/question",
                "Live Memory total",
                "no memory total",
                "Live Memory vs no memory",
                "break-even",
            ],
            summary,
        ),
        "",
        "Break-even: the question after which Live Memory's cumulative cost stays below the baseline's.",
        "",
    ]
    for name, setup in setups.items():
        lines += _savings_setup(name, setup)
    lines += image(charts, "cost_per_question", "Cumulative cost per question, Live Memory vs baselines")
    limits = list_at(data, "limits")
    if limits:
        lines += ["Limits:", "", *[f"- {item}" for item in limits], ""]
    return lines


def _difference(ours: Any, theirs: Any) -> str:
    a, b = as_number(ours), as_number(theirs)
    if a is None or b is None or not b:
        return MISSING
    return f"{(a - b) / b * 100:+.1f}%"


def _break_even(after: Any) -> str:
    if after is None:
        return MISSING
    if after == "never":
        return "never"
    return "from the first question" if after == 0 else f"after question {num(after)}"


def _savings_setup(name: str, setup: Mapping[str, Any]) -> list[str]:
    lm, base = mapping_at(setup, "live_memory"), mapping_at(setup, "baseline")

    def both(key: str, show: Callable[[Any], str] = num) -> tuple[str, str]:
        return show(lm.get(key)), show(base.get(key))

    rows = [
        (
            "requests (of which summarizer)",
            *[f"{num(a.get('requests'))} ({num(a.get('summarizer_requests'))})" for a in (lm, base)],
        ),
        ("Read tool calls", *both("read_calls")),
        ("input (prompt) tokens", *both("prompt_tokens")),
        ("… uncached", *both("uncached_input_tokens")),
        ("… cache read", *both("cache_read_tokens")),
        ("… cache write", *both("cache_write_tokens")),
        ("cache-read share", *both("cache_read_share", pct)),
        ("output tokens", *both("output_tokens")),
        ("USD total", *both("cost_usd", usd)),
        ("USD per question", *both("cost_per_question_usd", usd)),
    ]
    title = (
        f"{setup.get('label', name)} (`{setup.get('model', MISSING)}`, {setup.get('cache_rules', MISSING)} cache rules)"
    )
    lines = [f"### {title}", "", table(["", "Live Memory", "no memory"], rows), ""]
    components = lm.get("cost_usd_by_component") or {}
    if components:
        parts = ", ".join(f"{key.replace('_', ' ')} {usd(value)}" for key, value in components.items())
        lines += [f"Where Live Memory's cost goes: {parts}.", ""]
    extras = []
    if "compactions" in lm:
        extras.append(f"{num(lm.get('compactions'))} compactions")
    if "summarizer_cost_usd" in lm:
        extras.append(f"summarizer {usd(lm.get('summarizer_cost_usd'))}")
    wasted = lm.get("final_tool_loop_cache_writes") or {}
    if as_number(wasted.get("tokens")):
        premium = wasted.get("premium_over_uncached_usd")
        extra = f", {usd(premium)} more than as uncached input" if as_number(premium) is not None else ""
        extras.append(
            f"cache writes by a question's last (post-tool) request, never read by a later request: "
            f"{num(wasted.get('tokens'))} tokens ({usd(wasted.get('usd'))}{extra})"
        )
    if "server_reported_cost_usd" in lm:
        extras.append(f"the server's own /stats cost: {usd(lm.get('server_reported_cost_usd'))}")
    if extras:
        lines += ["Live Memory: " + "; ".join(extras) + ".", ""]
    by_reads = [
        (
            arm,
            mapping_at(a, "cost_per_question_by_reads_usd"),
            mapping_at(a, "questions_by_reads"),
        )
        for arm, a in (("Live Memory", lm), ("no memory", base))
    ]
    counts = sorted({int(k) for _, costs, _ in by_reads for k in costs}, key=int)
    if counts:
        rows = [
            (
                arm,
                *[
                    f"{usd(costs.get(str(n)))} ({num(questions.get(str(n)))})" if str(n) in costs else MISSING
                    for n in counts
                ],
            )
            for arm, costs, questions in by_reads
        ]
        lines += [
            "Mean cost per question by the number of files the model had to read (questions in brackets):",
            "",
            table(["", *[f"{n} read{'' if n == 1 else 's'}" for n in counts]], rows),
            "",
        ]
    return lines
