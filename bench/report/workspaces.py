"""The workspaces section: many concurrent callers over several workspaces or one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    MISSING,
    Charts,
    dig,
    list_at,
    mapping_at,
    num,
    ratio,
    table,
)


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
        ratio_rows = [(latency, *[ratio(dig(v, k)) for k in keys]) for latency, v in sorted(ratios.items())]
        lines += [table(["provider latency", *[k.replace("_", " ") for k in keys]], ratio_rows), ""]
    return lines
