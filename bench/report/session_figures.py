"""The session bill's arms, workloads and memory models, and the helpers that select its rows and show their
ranges: shared by its section of the page and the README's block, so both read the result file alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bench.report.formatting import (
    MISSING,
    as_number,
    dig,
    list_at,
    mapping_at,
    ratio,
)

SESSION_ARMS = ("A", "C", "B-strict", "B-trusting")
SESSION_ARM_NAMES = {
    "A": "A no memory",
    "C": "C Explore subagent",
    "B-strict": "B Live Memory (strict)",
    "B-trusting": "B Live Memory (trusting)",
}
MODES = ("strict", "trusting")
# The helper each delegating arm asks: (column label, arm, key of the helper's figures in that arm).
SESSION_HELPERS = (
    ("subagent", "C", "subagent"),
    ("memory strict", "B-strict", "memory"),
    ("memory trusting", "B-trusting", "memory"),
)
# The kinds of question, in table order; all listed (as "–") when a result file has none.
QUESTION_KINDS = ("locate", "uses", "explain", "edit", "walkthrough", "review", "area", "follow-up")
CONTENT_GOALS = ("content", "content_low")  # the 60-task content rows the whole bill is judged on
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
# The workloads the figures to beat (and the README's) are read from, in every repository.
GOAL_WORKLOADS = {
    "base": "medium-natural-60",
    "low": "low-natural-60",
    "small": "high-small-60",
    "long": "medium-natural-120",
    "content": "medium-natural-60-content",
    "content_low": "low-natural-60-content",
}
EXPLORE_INHERITS = (
    "Claude Code 2.1.332's built-in Explore agent definition (in the CLI's bundled code: agentType "
    '"Explore", model "inherit") runs on the session\'s main model unless the Agent call names a model'
)


def runs_of(data: Mapping[str, Any], repo: str) -> list[Mapping[str, Any]]:
    """The workload rows of a repository (a rotation of a sequence is read through the trend, not as a row)."""
    runs = mapping_at(data, "runs").values()
    return [r for r in runs if isinstance(r, Mapping) and r.get("repo") == repo and not r.get("rotation")]


def workload_runs(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every repository's workload rows, repositories in the order of the run's configuration."""
    return [r for repo in mapping_at(data, "config", "repos") for r in runs_of(data, repo)]


def _run(data: Mapping[str, Any], repo: str, name: str) -> Mapping[str, Any]:
    return mapping_at(data, "runs", f"{repo}/{name}")


def goal_runs(data: Mapping[str, Any], repo: str) -> dict[str, Mapping[str, Any]]:
    """{role in GOAL_WORKLOADS: that workload's run} for a repository (an empty mapping where it did not run)."""
    return {role: _run(data, repo, name) for role, name in GOAL_WORKLOADS.items()}


def is_control(run: Mapping[str, Any]) -> bool:
    """A decoy-free control row: the same tasks without the files opened while locating that turn out not to
    matter (a content row is decoy-free too, but asks other questions)."""
    if is_content(run):
        return False
    return run.get("decoys") is False or str(run.get("workload", "")).endswith("-nodecoy")


def is_content(run: Mapping[str, Any]) -> bool:
    """A content row: the same draws with two in five of the questions that touch files asking for the bodies of
    files (a walkthrough, a review, a directory's files on a topic, the same need asked again)."""
    return bool(run.get("content")) or str(run.get("workload", "")).endswith("-content")


def helper_figures(arm: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping_at(arm, "memory") or mapping_at(arm, "subagent")


def compared(runs: Iterable[Mapping[str, Any]], key: str, modes: Sequence[str] = MODES) -> list[Any]:
    """`compare[mode][key]` of every run and memory model (None where a figure is missing)."""
    return [dig(r, "compare", mode, key) for r in runs for mode in modes]


def decile_path(rotated: Mapping[str, Any], mode: str) -> str:
    """Memory ÷ subagent $/question in the first and the last decile with a figure: "0.93x → 0.72x"."""
    relative = [v for v in list_at(rotated, f"memory-{mode}", "over_subagent_by_decile") if v]
    return f"{ratio(relative[0])} → {ratio(relative[-1])}" if relative else MISSING


def _bound(value: float) -> str:
    """A ratio with two decimals, or three where two would round it onto 1.00 from either side."""
    text = f"{value:.2f}"
    return f"{value:.3f}" if text == "1.00" and value != 1 else text


def _percent(value: float) -> str:
    return f"{value * 100:.0f}"


def span(values: Sequence[Any], unit: str = "x") -> str:
    """The range of `values` as ratios ("0.53–0.64x"; unit "" for plain numbers) or, with unit "%", shares in
    0..1 ("93–98%"); "–" when there are none or any is missing (a range over the figures that happen to exist
    would be invented)."""
    numbers = [as_number(v) for v in values]
    found = [n for n in numbers if n is not None]
    if not found or len(found) < len(numbers):
        return MISSING
    show: Callable[[float], str] = _percent if unit == "%" else _bound
    low, high = show(min(found)), show(max(found))
    return (low if low == high else f"{low}–{high}") + unit


def money(value: Any) -> str:
    number = as_number(value)
    return MISSING if number is None else f"${number:.4f}" if abs(number) < 1 else f"${number:,.2f}"


def slash(cells: Iterable[str]) -> str:
    return " / ".join(cells)


def reread_share(memory: Mapping[str, Any]) -> float | None:
    """The share of a model's Reads that re-read a file: none of none when it read nothing."""
    rereads, reads = as_number(memory.get("rereads")), as_number(memory.get("reads"))
    if rereads is None or reads is None:
        return None
    return rereads / reads if reads else 0.0
