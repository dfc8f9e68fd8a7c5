"""The file-events section: /notify throughput and latency against /health, and the watcher's latency."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    MISSING,
    Charts,
    dig,
    image,
    num,
    table,
)


def notify_variants(data: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """{variant label: {"notify": ..., "watcher"?: ...}} for both result shapes (one run, or per variant)."""
    if isinstance(data.get("notify"), Mapping):
        return {"as measured": data}
    return {k: v for k, v in data.items() if isinstance(v, Mapping) and isinstance(v.get("notify"), Mapping)}


def render_notify(data: Mapping[str, Any], charts: Charts) -> list[str]:
    variants = notify_variants(data)
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
