"""Regenerate docs/benchmarks.md and its charts (docs/img/*.png) from bench/results/*.json.

Run: `python -m bench.report` after any benchmark (`make bench`, or `python -m bench.<name>`). Every
`bench/results/*.json` that exists is read; a benchmark whose file (or any figure) is missing is written
as "not run yet" (or "–"), never an error, so the document can be regenerated at any time.

Owns: the markdown (pure functions of the result dicts: `render_*`, `render_document`) and the charts
(`write_charts`, matplotlib with the Agg backend, a bench-only dependency: without it the document is still
written, without images). Output is deterministic for the same inputs: no timestamps other than those inside
the results, sorted inputs, PNGs without the software-version metadata.
Must never: run a benchmark, or edit anything but docs/benchmarks.md and docs/img/*.png.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
RESULTS_DIR = HERE / "results"
DOC_PATH = HERE.parent / "docs" / "benchmarks.md"
IMG_DIR = HERE.parent / "docs" / "img"
MISSING = "–"
CHART_FILES = {
    "cache_share": "cache_share.png",
    "context_fill": "context_fill.png",
    "cost_per_question": "cost_per_question.png",
    "notify_throughput": "notify_throughput.png",
}
# Goals stated by the benchmarks themselves (bench/tools_bench.py, bench/prefix_cache.py).
TREE_GOAL = 2.0
GREP_GOAL = 1.3
CACHE_GOAL_SHARE = 0.90
CACHE_GOAL_GAP_POINTS = 3.0

Charts = Mapping[str, str]  # chart key -> path relative to the document


# -- small formatting helpers ----------------------------------------------------------------------------
def dig(data: Any, *path: str | int, default: Any = None) -> Any:
    """`data[a][b]...`, or `default` as soon as a step is missing or of the wrong type."""
    for step in path:
        found = (isinstance(step, int) and isinstance(data, list) and -len(data) <= step < len(data)) or (
            isinstance(step, str) and isinstance(data, Mapping) and step in data
        )
        if not found:
            return default
        data = data[step]
    return data


def mapping_at(data: Any, *path: str | int) -> Mapping[str, Any]:
    """`dig`, but an empty mapping unless the value found is a mapping."""
    found = dig(data, *path)
    return found if isinstance(found, Mapping) else {}


def list_at(data: Any, *path: str | int) -> list[Any]:
    """`dig`, but an empty list unless the value found is a list."""
    found = dig(data, *path)
    return found if isinstance(found, list) else []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def num(value: Any, digits: int = 2) -> str:
    """Integers with thousands separators, floats with `digits` decimals, anything else as text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if value is None or value == "":
        return MISSING
    return str(value)


def pct(value: Any, digits: int = 2) -> str:
    """A share in 0..1 as a percentage."""
    number = _number(value)
    return MISSING if number is None else f"{number * 100:.{digits}f}%"


def usd(value: Any) -> str:
    number = _number(value)
    if number is None:
        return MISSING
    if number == 0:
        return "$0"
    return f"${number:.6f}" if abs(number) < 0.01 else f"${number:.4f}"


def ratio(value: Any) -> str:
    number = _number(value)
    return MISSING if number is None else f"{number:.2f}x"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table: the first column left-aligned, the others right-aligned."""

    def cell(value: Any) -> str:
        return (value if isinstance(value, str) else num(value)).replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(["---", *(["---:"] * (len(headers) - 1))]) + " |",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def image(charts: Charts, key: str, alt: str) -> list[str]:
    return [f"![{alt}]({charts[key]})", ""] if key in charts else []


# -- sections ----------------------------------------------------------------------------------------------
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
    a, b = _number(ours), _number(theirs)
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
    if _number(wasted.get("tokens")):
        premium = wasted.get("premium_over_uncached_usd")
        extra = f", {usd(premium)} more than as uncached input" if _number(premium) is not None else ""
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


def _notify_variants(data: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """{variant label: {"notify": ..., "watcher"?: ...}} for both result shapes (one run, or per variant)."""
    if isinstance(data.get("notify"), Mapping):
        return {"as measured": data}
    return {k: v for k, v in data.items() if isinstance(v, Mapping) and isinstance(v.get("notify"), Mapping)}


def render_notify(data: Mapping[str, Any], charts: Charts) -> list[str]:
    variants = _notify_variants(data)
    first = next(iter(variants.values()), {})
    lines = [
        f"Method: {num(dig(first, 'notify', 'clients'))} concurrent clients post `/notify` batches of "
        f"{num(dig(first, 'notify', 'events_per_request'))} `read` events carrying "
        f"{num(dig(first, 'notify', 'content_bytes'))} bytes each to the real server in its own process; "
        "the baseline is the same clients calling `GET /health`. The watcher figure is the time from a file "
        "write to `/stats` reporting it stale. `GET /health during /notify` is one more client probing every "
        "10 ms while the load runs (`python -m bench.notify_bench`; goals: 5,000 events/s, that p99 under 50 ms).",
        "",
    ]
    rows = []
    for label, variant in variants.items():
        n = variant["notify"]
        rows.append(_notify_row(f"POST /notify ({label})", n))
        if isinstance(n.get("health_during_notify_latency"), Mapping):
            during = _latency_cells(n, "health_during_notify_latency")
            rows.append((f"GET /health during /notify ({label})", MISSING, MISSING, MISSING, *during))
        health_rate = num(n.get("health_requests_per_s"), 1)
        rows.append((f"GET /health ({label})", health_rate, MISSING, MISSING, *_latency_cells(n, "health_latency")))
    baseline = data.get("baseline")
    if isinstance(baseline, Mapping):  # `--baseline-src`: the code before a change, in the same run
        lines[-2] += " The previous code ran the same rounds in the same run, alternating with them (`--baseline-src`)."
        rows.append(_notify_row("POST /notify (previous code, same run)", baseline))
    if rows:
        lines += [table(["endpoint", "req/s", "events/s", "MiB/s", "p50 ms", "p95 ms", "p99 ms"], rows), ""]
    cpu = [
        f"{num(dig(v, 'notify', 'server_cpu_ms_per_notify'), 2)} ms ({label})"
        for label, v in variants.items()
        if dig(v, "notify", "server_cpu_ms_per_notify") is not None
    ]
    if isinstance(baseline, Mapping) and baseline.get("server_cpu_ms_per_notify") is not None:
        cpu.append(f"{num(baseline.get('server_cpu_ms_per_notify'), 2)} ms (previous code, same run)")
    if cpu:
        lines += [f"Server CPU per /notify request (all its threads): {', '.join(cpu)}.", ""]
    watchers = [(label, v["watcher"]) for label, v in variants.items() if isinstance(v.get("watcher"), Mapping)]
    if watchers:
        rows = [
            (
                label,
                num(w.get("edits")),
                num(w.get("noticed")),
                num(w.get("median_ms"), 1),
                num(w.get("p95_ms"), 1),
                num(w.get("debounce_ms")),
            )
            for label, w in watchers
        ]
        lines += [table(["watcher", "edits", "noticed", "median ms", "p95 ms", "debounce ms"], rows), ""]
    lines += image(charts, "notify_throughput", "/notify throughput and latency vs /health")
    return lines


def render_tools(data: Mapping[str, Any], charts: Charts) -> list[str]:
    lines = [
        "Method: medians of interleaved runs on the Django 5.1.4 repository and a synthetic 100k-file "
        "repository: the directory tree vs bare `git ls-files`, and the Grep tool vs ripgrep run directly.",
        "",
        f"Goals: tree at most {TREE_GOAL}x `git ls-files`; Grep at most {GREP_GOAL}x ripgrep.",
        "",
    ]
    rows = [
        (
            str(r.get("repo", MISSING)),
            num(r.get("files")),
            num(r.get("directory_tree_ms"), 1),
            num(r.get("git_ls_files_ms"), 1),
            _against(r.get("tree_ratio"), TREE_GOAL),
            ratio(r.get("grep_ratio_median_vs_same_flags")),
            _against(r.get("grep_ratio_median_vs_plain_rg"), GREP_GOAL),
        )
        for r in list_at(data, "results")
        if isinstance(r, Mapping)
    ]
    if rows:
        headers = [
            "repository",
            "files",
            "tree ms",
            "git ls-files ms",
            "tree ratio",
            "Grep vs rg (same flags)",
            "Grep vs `rg -n -i`",
        ]
        lines += [table(headers, rows), ""]
    return lines


def _against(value: Any, goal: float) -> str:
    """A ratio with its verdict against an upper-bound goal."""
    number = _number(value)
    if number is None:
        return MISSING
    return f"{number:.2f}x ({'met' if number <= goal else 'missed'})"


def _latency_cells(data: Mapping[str, Any], key: str) -> tuple[str, str, str]:
    """p50, p95 and p99 of a latency summary, in ms."""
    return num(dig(data, key, "p50_ms"), 1), num(dig(data, key, "p95_ms"), 1), num(dig(data, key, "p99_ms"), 1)


def _notify_row(label: str, figures: Mapping[str, Any]) -> tuple[str, ...]:
    """One /notify row: requests/s, events/s, MiB/s, then its latency."""
    rates = (
        num(figures.get("notify_requests_per_s"), 1),
        num(figures.get("notify_events_per_s"), 1),
        num(figures.get("notify_mib_per_s"), 2),
    )
    return (label, *rates, *_latency_cells(figures, "notify_latency"))


def render_overhead(data: Mapping[str, Any], charts: Charts) -> list[str]:
    rows = [
        (label, num(dig(data, key, "p50_ms")), num(dig(data, key, "p95_ms")), num(dig(data, key, "p99_ms")))
        for label, key in (
            ("(a) question through Live Memory (MCP client)", "question"),
            ("(b) MCP SDK echo tool, same client and transport", "echo"),
            (f"(c) one direct {data.get('protocol', 'provider')} SDK call", "provider"),
            ("(c') the same SDK client posting the request the server sent (whole conversation)", "replay"),
            ("(a0) the same question through the server before the change (`--baseline-src`)", "baseline"),
        )
        if key not in ("baseline", "replay") or key in data
    ]
    spread = ", ".join(ratio(r) for r in list_at(data, "ratio_per_repetition"))
    lines = [
        f"Method: {num(data.get('repetitions'))} x {num(data.get('calls_per_repetition'))} interleaved calls of "
        "each path, servers in their own processes, a fake provider answering instantly. The floor is "
        "p50(b) + p50(c); the ratio is p50(a) over it (`python -m bench.overhead`). (a) includes what makes the "
        "answer survive a kill (one journal append in a worker thread; the snapshot is written behind, off the "
        "answer path); (c) sends a one-line prompt, while (a) sends the whole conversation (system, tools, "
        "history): (c') sends that same request through the SDK client's `post`, so p50(b) + p50(c') is the "
        "floor of a server forwarding it with the SDK; the server sends it without the SDK's per-call request "
        "and response handling (`providers/direct.py`), so its ratio to that floor can be below 1. "
        "`--profile DIR` writes cProfile stats of the server and the fake provider.",
        "",
        table(["path", "p50 ms", "p95 ms", "p99 ms"], rows),
        "",
        f"Floor {num(data.get('floor_p50_ms'))} ms; overhead at p50 {num(data.get('overhead_p50_ms'))} ms; "
        f"ratio to the floor {_against(data.get('ratio_p50'), _number(data.get('goal_ratio')) or 1.3)}"
        + (f" (per repetition: {spread})." if spread else "."),
        "",
    ]
    if "replay" in data:
        same = ", ".join(ratio(r) for r in list_at(data, "ratio_same_request_per_repetition"))
        lines += [
            f"Against the same-request floor p50(b) + p50(c') = {num(data.get('floor_same_request_p50_ms'))} ms: "
            f"ratio {ratio(data.get('ratio_same_request_p50'))}" + (f" (per repetition: {same})." if same else "."),
            "",
        ]
    if "baseline" in data:
        before = ", ".join(ratio(r) for r in list_at(data, "baseline_ratio_per_repetition"))
        lines += [
            f"In the same run, the server before the change: ratio to the floor {ratio(data.get('baseline_ratio_p50'))}"
            + (f" (per repetition: {before})." if before else "."),
            "",
        ]
    return lines


def render_load(data: Mapping[str, Any], charts: Charts) -> list[str]:
    rows: list[tuple[str, str]] = []
    for key, value in data.items():
        if isinstance(value, list):
            continue
        if isinstance(value, Mapping):  # e.g. errors by kind: one row per kind, not a dict in a cell
            rows += [(f"{key.replace('_', ' ')}: {kind}", _scalar(count)) for kind, count in value.items()]
            rows += [] if value else [(key.replace("_", " "), "none")]
            continue
        rows.append((key.replace("_", " "), _scalar(value)))
    return [
        "Method: concurrent MCP sessions over several workspaces while clients flood `/notify` and the fake "
        "provider injects 429s, 529s, stalls and dropped connections; nothing answered may be lost.",
        "",
        table(["figure", "value"], rows),
        "",
    ]


def render_snapshot_io(data: Mapping[str, Any], charts: Charts) -> list[str]:
    rows = [
        (
            num(r.get("budget_tokens")),
            num(r.get("snapshot_bytes")),
            num(r.get("write_now_ms"), 1),
            num(r.get("load_plus_load_json_ms"), 1),
            num(r.get("revalidate_ms"), 1),
            num(r.get("restart_total_ms"), 1),
            num(r.get("prompt_tokens_call_ms"), 3),
        )
        for r in list_at(data, "results")
        if isinstance(r, Mapping)
    ]
    lines = [
        "Method: a context window filled to 100% of its budget (Django directory tree, ledger, manifest of "
        f"real files, Q&A history); medians of {num(data.get('runs'))} interleaved runs of snapshot write "
        "(with fsync), load, and re-validation of every known file after a restart.",
        "",
    ]
    if rows:
        headers = [
            "budget tokens",
            "snapshot bytes",
            "write ms",
            "load ms",
            "re-validate ms",
            "restart total ms",
            "prompt_tokens() ms",
        ]
        lines += [table(headers, rows), ""]
    return lines


def render_workspaces(data: Mapping[str, Any], charts: Charts) -> list[str]:
    rows = [
        (
            str(r.get("config", MISSING)),
            f"{num(r.get('provider_latency_ms'))} ms",
            num(r.get("questions")),
            num(r.get("questions_per_s")),
            num(dig(r, "latency", "p50_ms"), 1),
            num(dig(r, "latency", "p99_ms"), 1),
            num(r.get("errors")),
        )
        for r in list_at(data, "results")
        if isinstance(r, Mapping)
    ]
    lines = [
        f"Method: {num(data.get('callers'))} concurrent MCP callers ask "
        f"{num(data.get('questions_per_caller', data.get('questions_per_caller_per_round')))} "
        f"questions each, spread over {num(data.get('workspaces'))} workspaces or all on one (parallel or serial "
        "mode), with an instant and a 100 ms fake provider; the server runs in its own process.",
        "",
    ]
    if rows:
        headers = ["configuration", "provider latency", "questions", "questions/s", "p50 ms", "p99 ms", "errors"]
        lines += [table(headers, rows), ""]
    ratios = mapping_at(data, "ratios")
    if isinstance(ratios, Mapping) and ratios:
        keys = sorted({k for v in ratios.values() if isinstance(v, Mapping) for k in v})
        rows = [(latency, *[ratio(dig(v, k)) for k in keys]) for latency, v in sorted(ratios.items())]
        lines += [table(["provider latency", *[k.replace("_", " ") for k in keys]], rows), ""]
    return lines


# -- session bill ----------------------------------------------------------------------------------------
SESSION_ARMS = ("A", "C", "B-strict", "B-trusting")
SESSION_ARM_NAMES = {
    "A": "A no memory",
    "C": "C Explore subagent",
    "B-strict": "B Live Memory (strict)",
    "B-trusting": "B Live Memory (trusting)",
}
MODES = ("strict", "trusting")
SESSION_KINDS_MEMORY = (
    "system+tree",
    "frozen block / ledger",
    "held file copies",
    "history Q&A",
    "own Read results",
    "other tool results",
    "tool calls",
    "per-question tail",
    "ledger upkeep (summarizer)",
    "output",
)


def _runs_of(data: Mapping[str, Any], repo: str) -> list[Mapping[str, Any]]:
    """The workload rows of a repository (a rotation of a sequence is read through the trend, not as a row)."""
    runs = mapping_at(data, "runs").values()
    return [r for r in runs if isinstance(r, Mapping) and r.get("repo") == repo and not r.get("rotation")]


def _run(data: Mapping[str, Any], repo: str, name: str) -> Mapping[str, Any]:
    return mapping_at(data, "runs", f"{repo}/{name}")


def _helper(arm: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping_at(arm, "memory") or mapping_at(arm, "subagent")


def _money(value: Any) -> str:
    number = _number(value)
    return MISSING if number is None else f"${number:.4f}" if abs(number) < 1 else f"${number:,.2f}"


def render_session_bill(data: Mapping[str, Any], charts: Charts) -> list[str]:
    config = mapping_at(data, "config")
    repos = list(mapping_at(config, "repos"))
    lines = [
        "Method: the same task sequence replayed through three arms of a Claude Code session: **A** no memory "
        "(the main agent greps and reads; results stay in its context until compaction), **B** Live Memory (one "
        "`ask_live_memory` per exploration task to the real server in its own process, its model scripted as "
        "*strict* — re-reads any file not held verbatim — or *trusting* — answers from an earlier answer or "
        "ledger fact naming the file until a change notice; the hooks' tees go to `/notify`), **C** Explore "
        "subagent (a fresh Haiku context per question that greps, reads and reports); B and C delegate as the "
        "skill says (not for files the agent holds, nor to edit a small file it has read). Every edit task Reads the "
        "file unless held, then Edits it. The main agent is priced at Sonnet 4.5 (and Opus 4.5), the memory and "
        "the subagent at Haiku 4.5; every client's cache follows the Anthropic rules on a virtual clock (think "
        "time 30/120/600 s, 1 h between sessions). Full method: `bench/session_bill.py`; "
        f"server under test: `{config.get('server', MISSING)}`.",
        "",
        "Rerun: `python -m bench.session_bill` (a few minutes; deterministic for a given server), against another "
        "checkout's server with `--server-src OTHER/server`, then `python -m bench.report --only session_bill`.",
        "",
    ]
    if not repos:
        return [*lines, "_No runs in the result file._", ""]
    lines += _session_goals(data, repos)
    for repo in repos:
        lines += _session_repo(data, repo)
    limits = list_at(data, "limits")
    if limits:
        lines += ["Limits:", "", *[f"- {item}" for item in limits], ""]
    return lines


def _session_goals(data: Mapping[str, Any], repos: Sequence[str]) -> list[str]:
    """The figures the product is judged on, per repository and memory model, from one run."""
    rows = []
    for repo in repos:
        for mode in ("strict", "trusting"):
            base = _run(data, repo, "medium-natural-60")
            low = _run(data, repo, "low-natural-60")
            small = _run(data, repo, "high-small-60")
            long = _run(data, repo, "medium-natural-120")
            if not dig(base, "arms", f"B-{mode}"):
                continue
            b120 = dig(long, "compare", "decile_last_over_first_sonnet", f"B-{mode}")
            a120 = dig(long, "compare", "decile_last_over_first_sonnet", "A")
            mean = mapping_at(data, "trend", repo)  # the mean over every 120-task sequence
            rotated = mapping_at(mean, "rotations")  # the mean over one sequence's rotations
            relative = [v for v in list_at(rotated, f"memory-{mode}", "over_subagent_by_decile") if v]
            trend = f"{ratio(relative[0])} → {ratio(relative[-1])}" if relative else MISSING
            rows.append(
                (
                    f"{repo}, {mode}",
                    ratio(dig(base, "compare", mode, "memory_over_subagent_per_question")),
                    f"{ratio(b120)} (A {ratio(a120)})",
                    _trend_cell(rotated, mode),
                    _trend_cell(mean, mode),
                    trend,
                    _slash(ratio(dig(base, "compare", mode, f"b_over_{x}_sonnet")) for x in "ca"),
                    _slash(ratio(dig(low, "compare", mode, f"b_over_{x}_sonnet")) for x in "ca"),
                    ratio(dig(small, "compare", mode, "b_over_a_sonnet")),
                    f"{pct(dig(base, 'arms', f'B-{mode}', 'memory', 'cache_read_share'), 1)}; "
                    f"{pct(dig(base, 'arms', f'B-{mode}', 'memory', 'cache_hit_share'), 1)}",
                )
            )
    if not rows:
        return []
    return [
        "### The figures to beat",
        "",
        table(
            [
                "repository, memory model",
                "memory $/question ÷ subagent's (60 tasks, medium)",
                "whole bill $/task last ÷ first decile, 120 tasks (B; A)",
                "memory $/question last ÷ first decile; 2nd ÷ 1st half, 120 tasks, every task in every decile "
                "(mean of one sequence's rotations)",
                "the same, mean of the distinct sequences",
                "memory ÷ subagent $/question, first → last decile, 120 tasks (rotations)",
                "B÷C / B÷A, 60 tasks medium",
                "B÷C / B÷A, 60 tasks low locality",
                "B÷A, 60 tasks high locality small files",
                "memory's prompt tokens read from cache; cache reads ÷ (reads + writes) (60 medium)",
            ],
            rows,
        ),
        "",
        "Totals are the whole bill (main agent at Sonnet 4.5 + memory or subagent at Haiku 4.5); below 1.00x "
        "means B costs less. Every ratio comes from the same run. The subagent answers each question from a "
        "fresh context, so its trend over a session is the task mix's; memory ÷ subagent per decile is the "
        "memory's own trend as it learns. One 120-task sequence's deciles swing with its task mix, so the 120-task "
        "trend is read from means (per decile, then the ratio): over one sequence started at each tenth of the way "
        "in (its rotations: every task sits in every decile once, so the task order cancels out), and over the "
        "distinct sequences of the run. What still moves the subagent's figure over a rotated session is which "
        "questions reach a helper: later on, the main agent holds more files and asks only about the others.",
        "",
    ]


def _trend_cell(figures: Mapping[str, Any], mode: str) -> str:
    """Memory's last ÷ first decile and second ÷ first half, then the subagent's, over a session's deciles."""
    if not figures:
        return MISSING
    memory, subagent = mapping_at(figures, f"memory-{mode}"), mapping_at(figures, "subagent")
    return (
        f"{ratio(memory.get('last_over_first'))}; {ratio(memory.get('second_half_over_first_half'))} "
        f"(subagent {ratio(subagent.get('last_over_first'))}; {ratio(subagent.get('second_half_over_first_half'))})"
    )


def _session_repo(data: Mapping[str, Any], repo: str) -> list[str]:
    info = mapping_at(data, "config", "repos", repo)
    lines = [
        f"### {repo}",
        "",
        f"{num(info.get('eligible'))} eligible files of {num(info.get('files'))} text files (digest "
        f"`{info.get('digest', MISSING)}`).",
        "",
    ]
    runs = _runs_of(data, repo)
    rows = []
    for r in runs:
        arms = mapping_at(r, "arms")
        cmp_ = mapping_at(r, "compare")
        rows.append(
            (
                f"{r.get('workload')} ({num(r.get('questions'))} q, {num(r.get('edits'))} edits)",
                *[_money(dig(arms, a, "total_usd_sonnet")) for a in SESSION_ARMS],
                _slash(ratio(dig(cmp_, m, "b_over_a_sonnet")) for m in MODES),
                _slash(ratio(dig(cmp_, m, "b_over_c_sonnet")) for m in MODES),
                _slash(_even(dig(cmp_, m, "break_even_vs_a_sonnet")) for m in MODES),
                _slash(_even(dig(cmp_, m, "break_even_vs_c_sonnet")) for m in MODES),
            )
        )
    lines += [
        "Whole bill at Sonnet 4.5 prices (strict / trusting where two figures are given; break-even: the task "
        "count from which B's cumulative bill stays below the other arm's):",
        "",
        table(
            [
                "workload",
                *[SESSION_ARM_NAMES[a] for a in SESSION_ARMS],
                "B÷A",
                "B÷C",
                "break-even vs A",
                "break-even vs C",
            ],
            rows,
        ),
        "",
    ]
    rows = []
    for r in runs:
        arms = mapping_at(r, "arms")
        rows.append(
            (
                str(r.get("workload")),
                *[_money(dig(arms, a, "total_usd_opus")) for a in SESSION_ARMS],
                _money(dig(arms, "C", "subagent", "usd_per_question")),
                _money(dig(arms, "B-strict", "memory", "usd_per_question")),
                _money(dig(arms, "B-trusting", "memory", "usd_per_question")),
                _slash(pct(dig(arms, f"B-{m}", "memory", "cache_read_share"), 1) for m in MODES),
            )
        )
    lines += [
        "Whole bill at Opus 4.5 prices, and the helper's own spend per question (Haiku 4.5):",
        "",
        table(
            [
                "workload",
                *[SESSION_ARM_NAMES[a] for a in SESSION_ARMS],
                "subagent $/q",
                "memory $/q strict",
                "memory $/q trusting",
                "memory cache-read share",
            ],
            rows,
        ),
        "",
    ]
    lines += _session_kinds(data, repo)
    lines += _session_deciles(data, repo)
    lines += _session_rotations(data, repo)
    lines += _session_waste(data, repo)
    return lines


def _slash(cells: Iterable[str]) -> str:
    return " / ".join(cells)


def _even(value: Any) -> str:
    return "never" if value is None else num(value)


def _session_kinds(data: Mapping[str, Any], repo: str) -> list[str]:
    base = _run(data, repo, "medium-natural-60")
    arms = mapping_at(base, "arms")
    if not arms:
        return []
    memory = {m: mapping_at(arms, f"B-{m}", "memory", "by_kind") for m in ("strict", "trusting")}
    kinds = [k for k in SESSION_KINDS_MEMORY if any(k in v for v in memory.values())]
    kinds += sorted({k for v in memory.values() for k in v} - set(kinds))
    rows = [
        (
            kind,
            *[
                f"{_money(dig(memory[m], kind, 'usd'))} ({pct(dig(memory[m], kind, 'share'), 1)})"
                for m in ("strict", "trusting")
            ],
            *[num(dig(memory[m], kind, "prompt_tokens")) for m in ("strict", "trusting")],
        )
        for kind in kinds
    ]
    lines = [
        "Where Live Memory's own money goes (60 tasks, medium locality), by prompt-block kind:",
        "",
        table(
            [
                "block kind",
                "strict USD (share)",
                "trusting USD (share)",
                "strict prompt tokens",
                "trusting prompt tokens",
            ],
            rows,
        ),
        "",
    ]
    main_kinds = {a: mapping_at(arms, a, "main", "by_kind_sonnet") for a in SESSION_ARMS}
    labels = sorted(
        {k for v in main_kinds.values() for k in v},
        key=lambda k: -max(_number(dig(v, k, "usd")) or 0 for v in main_kinds.values()),
    )
    rows = [
        (
            label,
            *[
                f"{_money(dig(main_kinds[a], label, 'usd'))} ({pct(dig(main_kinds[a], label, 'share'), 1)})"
                for a in SESSION_ARMS
            ],
        )
        for label in labels
    ]
    lines += [
        "Where the main agent's money goes (Sonnet 4.5, same workload):",
        "",
        table(["block kind", *[SESSION_ARM_NAMES[a] for a in SESSION_ARMS]], rows),
        "",
    ]
    return lines


def _session_deciles(data: Mapping[str, Any], repo: str) -> list[str]:
    long = _run(data, repo, "medium-natural-120")
    arms = mapping_at(long, "arms")
    if not arms:
        return []
    rows = []
    for d in range(10):
        row: list[str] = [f"{d * 10 + 1}-{d * 10 + 10}%"]
        row += [_money(dig(arms, a, "deciles_per_task_usd_sonnet", d)) for a in SESSION_ARMS]
        row += [_money(dig(_helper(mapping_at(arms, a)), "deciles_per_question_usd", d)) for a in SESSION_ARMS[1:]]
        rows.append(row)
    return [
        "Cost per task by decile of a 120-task session (whole bill, Sonnet), and the helper's own cost per question:",
        "",
        table(
            [
                "decile",
                *[f"{SESSION_ARM_NAMES[a]} $/task" for a in SESSION_ARMS],
                *[f"{SESSION_ARM_NAMES[a].split(' ', 1)[1]} helper $/q" for a in SESSION_ARMS[1:]],
            ],
            rows,
        ),
        "",
    ]


def _session_rotations(data: Mapping[str, Any], repo: str) -> list[str]:
    rotated = mapping_at(data, "trend", repo, "rotations")
    if not rotated:
        return []
    helpers = ["subagent", *(f"memory-{m}" for m in MODES)]
    rows = []
    for d in range(10):
        row = [f"{d * 10 + 1}-{d * 10 + 10}%"]
        row += [_money(dig(rotated, h, "deciles_per_question_usd", d)) for h in helpers]
        row += [ratio(dig(rotated, h, "over_subagent_by_decile", d)) for h in helpers[1:]]
        rows.append(row)
    rows.append(
        [
            "last ÷ first; 2nd ÷ 1st half",
            *[
                f"{ratio(dig(rotated, h, 'last_over_first'))}; {ratio(dig(rotated, h, 'second_half_over_first_half'))}"
                for h in helpers
            ],
            *["" for _ in helpers[1:]],
        ]
    )
    return [
        f"The helper's cost per question by decile, mean of `{rotated.get('sequence', MISSING)}` started at each "
        f"tenth of the way in ({num(rotated.get('runs'))} runs: every task in every decile once):",
        "",
        table(
            [
                "decile",
                "subagent $/q",
                *[f"memory $/q {m}" for m in MODES],
                *[f"memory ÷ subagent {m}" for m in MODES],
            ],
            rows,
        ),
        "",
    ]


def _session_waste(data: Mapping[str, Any], repo: str) -> list[str]:
    rows = []
    for r in _runs_of(data, repo):
        arms = mapping_at(r, "arms")
        cells: list[str] = [str(r.get("workload"))]
        for a in SESSION_ARMS:
            main = mapping_at(arms, a, "main")
            helper = _helper(mapping_at(arms, a))
            who = helper if a != "A" else main
            cells.append(f"{num(who.get('rereads'))}/{num(who.get('reads'))}")
        cells.append(_slash(f"{num(dig(arms, f'B-{m}', 'server_compactions'))}" for m in MODES))
        cells.append(_slash(f"{num(dig(arms, f'B-{m}', 'summarizer_requests'))}" for m in MODES))
        for a in SESSION_ARMS[1:]:
            helper = _helper(mapping_at(arms, a))
            written = _number(helper.get("cache_write_tokens"))
            never = _number(helper.get("never_read_cache_write_tokens"))
            share = never / written if never is not None and written else None
            cells.append(f"{num(helper.get('never_read_cache_write_tokens'))} ({pct(share, 0)})")
        rows.append(cells)
    return [
        "Re-reads (Reads of a file version already read for an earlier task, over all Reads: the main agent's in "
        "A, the helper's in B and C), the memory's compactions and summarizer calls (strict / trusting), and "
        "cache-written tokens that no later request read (share of all written):",
        "",
        table(
            [
                "workload",
                *[f"re-reads {a}" for a in SESSION_ARMS],
                "memory compactions",
                "summarizer calls",
                *[f"never-read writes {a}" for a in SESSION_ARMS[1:]],
            ],
            rows,
        ),
        "",
    ]


def _scalar(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_scalar(v)}" for k, v in sorted(value.items())) or MISSING
    return num(value)


def render_generic(data: Mapping[str, Any], charts: Charts) -> list[str]:
    rows = [(key, _scalar(value)) for key, value in data.items() if not isinstance(value, list)]
    return [table(["figure", "value"], rows), ""] if rows else ["_No scalar figures in the result file._", ""]


@dataclass(frozen=True)
class Section:
    key: str  # bench/results/<key>.json
    title: str
    module: str
    render: Callable[[Mapping[str, Any], Charts], list[str]]


SECTIONS: tuple[Section, ...] = (
    Section(
        "session_bill",
        "Session bill: a Claude Code user's whole bill",
        "bench.session_bill",
        render_session_bill,
    ),
    Section("savings", "Cost: Live Memory vs no memory", "bench.savings", render_savings),
    Section(
        "prefix_cache", "Prompt-cache effectiveness over a long session", "bench.prefix_cache", render_prefix_cache
    ),
    Section("notify_bench", "File events: /notify throughput and watcher latency", "bench.notify_bench", render_notify),
    Section("workspaces_bench", "Many workspaces at once", "bench.workspaces_bench", render_workspaces),
    Section("overhead", "Per-question server overhead", "bench.overhead", render_overhead),
    Section("load", "Load under chaos", "bench.load", render_load),
    Section("snapshot_io", "Snapshots: write, load and re-validate", "bench.snapshot_io", render_snapshot_io),
    Section("tools", "Tools: directory tree and Grep", "bench.tools_bench", render_tools),
)


def render_section(section: Section, data: Any, charts: Charts) -> str:
    lines = [f"## {section.title}", ""]
    if not isinstance(data, Mapping):
        lines += [f"Not run yet: `python -m {section.module}` writes `bench/results/{section.key}.json`.", ""]
        return "\n".join(lines)
    try:
        lines += section.render(data, charts)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a result file of an unexpected shape
        lines += [
            f"_The result file has an unexpected shape ({type(exc).__name__}); its top-level figures:_",
            "",
            *render_generic(data, charts),
        ]
    return "\n".join(lines)


def render_document(results: Mapping[str, Any], charts: Charts | None = None, notes: Sequence[str] = ()) -> str:
    """The whole of docs/benchmarks.md for these results (a missing key means that benchmark did not run)."""
    charts = charts or {}
    known = {s.key for s in SECTIONS}
    others = [
        Section(key, f"Other results: {key}", f"bench.{key}", render_generic)
        for key in sorted(results)
        if key not in known
    ]
    sections = [*SECTIONS, *others]
    head = [
        "# Benchmarks",
        "",
        "<!-- Generated by `python -m bench.report` from bench/results/*.json; do not edit by hand. -->",
        "",
        "Every figure below comes from `bench/results/<name>.json`, written by `python -m bench.<module>` "
        "(`make bench` runs the default set); regenerate this page with `python -m bench.report`. All "
        "provider traffic goes to the fake provider (`tests/fakes/llm_server.py`), which simulates each "
        "provider's prompt caching; timings come from a shared 2-core machine and are noisy.",
        "",
        *[f"> {note}" for note in notes],
        *([""] if notes else []),
        *[f"- [{s.title}](#{_anchor(s.title)})" + ("" if s.key in results else " (not run yet)") for s in sections],
        "",
    ]
    body = [render_section(s, results.get(s.key), charts) for s in sections]
    return "\n".join(head) + "\n" + "\n".join(body).rstrip("\n") + "\n"


def splice_sections(
    document: str, results: Mapping[str, Any], keys: Sequence[str], charts: Charts | None = None
) -> str:
    """`document` with only the sections of `keys` (and their contents lines) regenerated; every other section
    is kept as it was (so one benchmark's figures can be refreshed without the other result files)."""
    charts = charts or {}
    order = [s.key for s in SECTIONS]
    wanted = [s for s in SECTIONS if s.key in keys]
    unknown = set(keys) - set(order)
    if unknown:
        raise ValueError(f"unknown benchmark section(s): {', '.join(sorted(unknown))}")
    head, *chunks = document.split("\n## ")
    sections = {chunk.split("\n", 1)[0]: "## " + chunk.rstrip("\n") for chunk in chunks}
    titles = [chunk.split("\n", 1)[0] for chunk in chunks]
    toc = head.rstrip("\n").split("\n")
    for section in wanted:
        text = render_section(section, results.get(section.key), charts).rstrip("\n")
        line = f"- [{section.title}](#{_anchor(section.title)})" + ("" if section.key in results else " (not run yet)")
        later = [s.title for s in SECTIONS[order.index(section.key) + 1 :] if s.title in sections]
        if section.title not in sections:
            titles.insert(titles.index(later[0]) if later else len(titles), section.title)
        sections[section.title] = text
        current = [i for i, t in enumerate(toc) if t.startswith(f"- [{section.title}](")]
        if current:
            toc[current[0]] = line
        else:
            after = [i for i, t in enumerate(toc) if later and t.startswith(f"- [{later[0]}](")]
            entries = [i for i, t in enumerate(toc) if t.startswith("- [")]
            toc.insert(after[0] if after else (entries[-1] + 1 if entries else len(toc)), line)
    return "\n".join(toc) + "\n\n" + "\n\n".join(sections[t] for t in titles) + "\n"


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


# -- charts ------------------------------------------------------------------------------------------------
def write_charts(results: Mapping[str, Any], img_dir: Path, doc_dir: Path, *, dpi: int = 100) -> dict[str, str]:
    """Draw every chart whose data exists; returns {chart key: path relative to doc_dir}. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img_dir.mkdir(parents=True, exist_ok=True)
    drawn: dict[str, str] = {}
    painters: dict[str, Callable[[Any, Mapping[str, Any]], bool]] = {
        "cache_share": _chart_cache_share,
        "context_fill": _chart_context_fill,
        "cost_per_question": _chart_cost,
        "notify_throughput": _chart_notify,
    }
    with plt.rc_context({"font.size": 9, "axes.grid": True, "grid.alpha": 0.3, "svg.hashsalt": "live-memory"}):
        for key, paint in painters.items():
            figure = plt.figure(figsize=(10, 4.2), dpi=dpi)
            try:
                if paint(figure, results):
                    # Fixed margins instead of tight_layout(): as readable here, and half the drawing time.
                    height = figure.get_size_inches()[1]
                    figure.subplots_adjust(
                        left=0.08, right=0.985, bottom=0.5 / height, top=1 - 0.35 / height, wspace=0.22, hspace=0.12
                    )
                    path = img_dir / CHART_FILES[key]
                    figure.savefig(path, format="png", dpi=dpi, metadata={"Software": None})
                    drawn[key] = Path(os.path.relpath(path, doc_dir)).as_posix()
            except (AttributeError, KeyError, TypeError, ValueError):
                pass  # a result file of an unexpected shape: no chart, and the document links none
            finally:
                plt.close(figure)
    return drawn


def _series(sim: Any) -> list[Mapping[str, Any]]:
    return [p for p in list_at(sim, "series") if isinstance(p, Mapping) and "question" in p]


def _prefix_simulations(results: Mapping[str, Any]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    simulations = mapping_at(results, "prefix_cache", "simulations")
    return [(name, _series(sim)) for name, sim in simulations.items() if _series(sim)]


def _chart_cache_share(figure: Any, results: Mapping[str, Any]) -> bool:
    simulations = [(n, s) for n, s in _prefix_simulations(results) if any("cache_read_share" in p for p in s)]
    if not simulations:
        return False
    figure.set_size_inches(10, 1.2 + 2.0 * len(simulations))
    axes = figure.subplots(len(simulations), 1, sharex=True, squeeze=False)
    for index, (name, series) in enumerate(simulations):
        ax = axes[index][0]
        xs = [int(p["question"]) + 1 for p in series]
        for x, point in zip(xs, series, strict=True):
            if point.get("compaction"):
                ax.axvline(x, color="C3", lw=0.8, alpha=0.6)
        if all("naive_cache_read_share" in p for p in series):
            naive = [float(p["naive_cache_read_share"]) * 100 for p in series]
            ax.plot(xs, naive, color="0.6", lw=0.7, label="naive layout (same session)")
        ours = [float(p.get("cache_read_share", 0)) * 100 for p in series]
        ax.plot(xs, ours, color=f"C{index}", lw=1.3, label="Live Memory")
        ax.plot([], [], color="C3", lw=0.8, alpha=0.6, label="compaction")
        ax.set_ylim(0, 101)
        ax.set_ylabel(f"{name}\n% from cache")
        ax.legend(loc="lower left", ncol=3, fontsize=7)
    axes[0][0].set_title("Cache-read share of each question's prompt tokens (prefix_cache), compactions marked")
    axes[-1][0].set_xlabel("question")
    return True


def _chart_context_fill(figure: Any, results: Mapping[str, Any]) -> bool:
    simulations = [(n, s) for n, s in _prefix_simulations(results) if any("fill" in p for p in s)]
    if not simulations:
        return False
    ax = figure.add_subplot(1, 1, 1)
    for index, (name, series) in enumerate(simulations):
        xs = [int(p["question"]) + 1 for p in series]
        ax.plot(xs, [float(p.get("fill", 0)) * 100 for p in series], color=f"C{index}", lw=1.2, label=name)
        marks = [(x, float(p.get("fill", 0)) * 100) for x, p in zip(xs, series, strict=True) if p.get("compaction")]
        if marks:
            ax.scatter(*zip(*marks, strict=True), color=f"C{index}", marker="v", s=30, zorder=3)
    config = mapping_at(results, "prefix_cache", "config")
    for key, label in (("compaction_threshold", "compaction threshold"), ("compaction_floor", "compaction floor")):
        level = _number(config.get(key))
        if level is not None:
            ax.axhline(level * 100, color="grey", ls="--", lw=0.8)
            ax.annotate(label, (1, level * 100), textcoords="offset points", xytext=(2, 3), fontsize=7, color="grey")
    ax.set_xlabel("question")
    ax.set_ylabel("context fill after the question (% of budget)")
    ax.set_ylim(0, 100)
    ax.set_title("Context fill over a long session: the watermark sawtooth (compactions marked)")
    ax.legend(loc="lower right", fontsize=7)
    return True


def _chart_cost(figure: Any, results: Mapping[str, Any]) -> bool:
    from matplotlib import ticker

    setups = [
        (name, setup)
        for name, setup in mapping_at(results, "savings", "setups").items()
        if dig(setup, "series", "live_memory_cumulative_usd") and dig(setup, "series", "baseline_cumulative_usd")
    ]
    simulations = mapping_at(results, "prefix_cache", "simulations")
    bars = [
        (
            name,
            _number(dig(sim, "live_memory", "cost_per_question_usd")),
            _number(dig(sim, "naive", "cost_per_question_usd")),
        )
        for name, sim in simulations.items()
    ]
    bars = [(n, a, b) for n, a, b in bars if a is not None and b is not None]
    panels = len(setups) + (1 if bars else 0)
    if not panels:
        return False
    for index, (name, setup) in enumerate(setups):
        ax = figure.add_subplot(1, panels, index + 1)
        series = setup["series"]
        ours, theirs = series["live_memory_cumulative_usd"], series["baseline_cumulative_usd"]
        xs = list(series.get("question") or range(1, len(ours) + 1))
        ax.plot(xs, ours, color="C0", lw=1.4, label="Live Memory")
        ax.plot(xs, theirs, color="C3", lw=1.4, label="no memory (fresh explorer)")
        sessions = series.get("session") or []
        for x, previous, current in zip(xs[1:], sessions, sessions[1:], strict=False):
            if current != previous:
                ax.axvline(x - 0.5, color="grey", lw=0.6, ls=":")
        marks = [(x, y) for x, y, c in zip(xs, ours, series.get("compaction") or [], strict=False) if c]
        if marks:
            ax.scatter(*zip(*marks, strict=True), color="C0", marker="v", s=28, zorder=3, label="compaction")
        ax.set_title(f"{setup.get('label', name)}: cumulative USD", fontsize=9)
        ax.set_xlabel("question (dotted: restart)")
        ax.legend(loc="upper left", fontsize=7)
    if bars:
        ax = figure.add_subplot(1, panels, panels)
        positions = list(range(len(bars)))
        ax.bar([p - 0.2 for p in positions], [a for _, a, _ in bars], width=0.4, color="C0", label="Live Memory")
        ax.bar([p + 0.2 for p in positions], [b for _, _, b in bars], width=0.4, color="C1", label="naive layout")
        ax.set_xticks(positions, [n for n, _, _ in bars])
        ax.set_yscale("log")  # the providers' prices differ tenfold
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"${value:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        for p, (_, ours, naive) in zip(positions, bars, strict=True):
            ax.annotate(usd(ours), (p - 0.2, ours), ha="center", va="bottom", fontsize=7)
            ax.annotate(usd(naive), (p + 0.2, naive), ha="center", va="bottom", fontsize=7)
        ax.set_title("prefix_cache: USD per question", fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    return True


def _chart_notify(figure: Any, results: Mapping[str, Any]) -> bool:
    data = results.get("notify_bench")
    variants = _notify_variants(data) if isinstance(data, Mapping) else {}
    if not any(_number(dig(v, "notify", "notify_requests_per_s")) is not None for v in variants.values()):
        return False
    labels = list(variants)
    positions = list(range(len(labels)))
    left = figure.add_subplot(1, 2, 1)
    notify = [_number(dig(v, "notify", "notify_requests_per_s")) or 0.0 for v in variants.values()]
    health = [_number(dig(v, "notify", "health_requests_per_s")) or 0.0 for v in variants.values()]
    left.bar([p - 0.2 for p in positions], notify, width=0.4, color="C0", label="POST /notify")
    left.bar([p + 0.2 for p in positions], health, width=0.4, color="C7", label="GET /health (floor)")
    for p, value, variant in zip(positions, notify, variants.values(), strict=True):
        events = _number(dig(variant, "notify", "notify_events_per_s"))
        if events is not None:
            left.annotate(f"{events:,.0f} events/s", (p - 0.2, value), ha="center", va="bottom", fontsize=7)
    left.set_xticks(positions, labels)
    left.set_ylabel("requests per second")
    left.set_title("Throughput", fontsize=9)
    left.legend(loc="lower right", fontsize=7)
    right = figure.add_subplot(1, 2, 2)
    quantiles = ("p50_ms", "p95_ms", "p99_ms")
    width = 0.8 / (2 * len(labels))
    for index, (label, variant) in enumerate(variants.items()):
        for offset, (kind, color) in enumerate((("notify_latency", f"C{index}"), ("health_latency", "C7"))):
            values = [_number(dig(variant, "notify", kind, q)) or 0.0 for q in quantiles]
            shift = (2 * index + offset) * width - 0.4 + width / 2
            alpha = 1.0 if offset == 0 else 0.5
            name = f"/notify ({label})" if offset == 0 else f"/health ({label})"
            right.bar(
                [q + shift for q in range(len(quantiles))], values, width=width, color=color, alpha=alpha, label=name
            )
    right.set_xticks(range(len(quantiles)), [q.removesuffix("_ms") for q in quantiles])
    right.set_ylabel("latency (ms)")
    right.set_title("Latency", fontsize=9)
    right.legend(loc="upper left", fontsize=7)
    return True


# -- entry point -------------------------------------------------------------------------------------------
def load_results(directory: Path) -> tuple[dict[str, Any], list[str]]:
    """{name: parsed JSON} for every readable results file, and a note for each unreadable one."""
    results: dict[str, Any] = {}
    problems: list[str] = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"`{path.name}` could not be read ({type(exc).__name__}); its section is left out.")
            continue
        if isinstance(data, Mapping):
            results[path.stem] = data
        else:
            problems.append(f"`{path.name}` does not hold a JSON object; its section is left out.")
    return results, problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="directory of <name>.json results")
    parser.add_argument("--doc", type=Path, default=DOC_PATH, help="markdown file to write")
    parser.add_argument("--img", type=Path, default=IMG_DIR, help="directory for the PNG charts")
    parser.add_argument("--dpi", type=int, default=100, help="chart resolution (dots per inch)")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated result names (e.g. session_bill): regenerate only these sections of the document",
    )
    args = parser.parse_args(argv)
    results, notes = load_results(args.results)
    try:
        charts = write_charts(results, args.img, args.doc.parent, dpi=args.dpi)
    except ImportError:
        charts = {}
        notes.append("Charts left out: matplotlib is not installed (`pip install -e '.[bench]'`).")
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    if args.only:  # the regenerated sections link their charts, redrawn (byte-identical for the same results)
        keys = [k for k in args.only.split(",") if k]
        existing = args.doc.read_text(encoding="utf-8") if args.doc.exists() else render_document({})
        args.doc.write_text(splice_sections(existing, results, keys, charts), encoding="utf-8")
        print(f"wrote {args.doc} (sections: {', '.join(keys)}; {len(charts)} charts in {args.img})")
        for note in notes:
            print(f"note: {note}")
        return 0
    args.doc.write_text(render_document(results, charts, notes), encoding="utf-8")
    print(f"wrote {args.doc} ({len(results)} result files, {len(charts)} charts in {args.img})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
