"""The snapshots section: write, load and re-validation times by context budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    Charts,
    list_at,
    num,
    table,
)


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
