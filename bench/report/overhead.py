"""The overhead section: a question's latency through the server against the floor of its parts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    Charts,
    against_goal,
    as_number,
    dig,
    list_at,
    num,
    ratio,
    table,
)


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
        f"ratio to the floor {against_goal(data.get('ratio_p50'), as_number(data.get('goal_ratio')) or 1.3)}"
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
