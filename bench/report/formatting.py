"""The shared formatting helpers: safe lookups into a result dict, numbers, shares, dollars and ratios as the
page shows them ("–" for a missing figure, never an error), markdown tables and chart links.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MISSING = "–"
# What the figures are, in plain words, where they stand (the README's block, the page's head).
PLAIN_WORDS = (
    "These are benchmark figures, not measurements of real use: the Claude Code sessions are generated (task "
    "sequences drawn from this repository and Django), and the models, the memory's and the agents', are "
    "scripted: fixed rules for what to read and how to answer stand in for real models. So they count what is "
    "sent, held, cached and paid for, at list prices; they say nothing about the quality of an answer."
)

Charts = Mapping[str, str]  # chart key -> path relative to the document


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


def as_number(value: Any) -> float | None:
    """A figure as a float, or None when it is not a number (a bool is not one)."""
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
    number = as_number(value)
    return MISSING if number is None else f"{number * 100:.{digits}f}%"


def usd(value: Any) -> str:
    number = as_number(value)
    if number is None:
        return MISSING
    if number == 0:
        return "$0"
    return f"${number:.6f}" if abs(number) < 0.01 else f"${number:.4f}"


def ratio(value: Any) -> str:
    number = as_number(value)
    return MISSING if number is None else f"{number:.2f}x"


def measured(data: Any) -> str:
    """When and on what the figures of a result file were measured: its commit (12 characters, "-dirty" kept)
    and date, each "–" when the file predates them."""
    commit, date = dig(data, "commit"), dig(data, "date")
    if isinstance(commit, str) and commit:
        base, dirty, _ = commit.partition("-dirty")
        commit = f"`{base[:12]}{'-dirty' if dirty else ''}`"
    else:
        commit = MISSING
    return f"measured at commit {commit} on {date if isinstance(date, str) and date else MISSING}"


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


def against_goal(value: Any, goal: float) -> str:
    """A ratio with its verdict against an upper-bound goal."""
    number = as_number(value)
    if number is None:
        return MISSING
    return f"{number:.2f}x ({'met' if number <= goal else 'missed'})"


def scalar(value: Any) -> str:
    """A figure in one table cell: a mapping as its "key: value" pairs, sorted."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {scalar(v)}" for k, v in sorted(value.items())) or MISSING
    return num(value)
