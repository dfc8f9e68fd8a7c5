"""The page's charts, drawn with matplotlib's Agg backend (a bench-only dependency) where their data exists."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.report.formatting import (
    as_number,
    dig,
    list_at,
    mapping_at,
    usd,
)
from bench.report.notify import notify_variants

CHART_FILES = {
    "cache_share": "cache_share.png",
    "context_fill": "context_fill.png",
    "cost_per_question": "cost_per_question.png",
    "notify_throughput": "notify_throughput.png",
}


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
        level = as_number(config.get(key))
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
            as_number(dig(sim, "live_memory", "cost_per_question_usd")),
            as_number(dig(sim, "naive", "cost_per_question_usd")),
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
    variants = notify_variants(data) if isinstance(data, Mapping) else {}
    if not any(as_number(dig(v, "notify", "notify_requests_per_s")) is not None for v in variants.values()):
        return False
    labels = list(variants)
    positions = list(range(len(labels)))
    left = figure.add_subplot(1, 2, 1)
    notify = [as_number(dig(v, "notify", "notify_requests_per_s")) or 0.0 for v in variants.values()]
    health = [as_number(dig(v, "notify", "health_requests_per_s")) or 0.0 for v in variants.values()]
    left.bar([p - 0.2 for p in positions], notify, width=0.4, color="C0", label="POST /notify")
    left.bar([p + 0.2 for p in positions], health, width=0.4, color="C7", label="GET /health (floor)")
    for p, value, variant in zip(positions, notify, variants.values(), strict=True):
        events = as_number(dig(variant, "notify", "notify_events_per_s"))
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
            values = [as_number(dig(variant, "notify", kind, q)) or 0.0 for q in quantiles]
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
