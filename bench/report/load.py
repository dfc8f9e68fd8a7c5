"""The load section: every top-level figure of the chaos run, one row each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    Charts,
    scalar,
    table,
)


def render_load(data: Mapping[str, Any], charts: Charts) -> list[str]:
    rows: list[tuple[str, str]] = []
    for key, value in data.items():
        if isinstance(value, list):
            continue
        if isinstance(value, Mapping):  # e.g. errors by kind: one row per kind, not a dict in a cell
            rows += [(f"{key.replace('_', ' ')}: {kind}", scalar(count)) for kind, count in value.items()]
            rows += [] if value else [(key.replace("_", " "), "none")]
            continue
        rows.append((key.replace("_", " "), scalar(value)))
    return [
        "Method: concurrent MCP sessions over several workspaces while clients flood `/notify` and the fake "
        "provider injects 429s, 529s, stalls and dropped connections; nothing answered may be lost.",
        "",
        table(["figure", "value"], rows),
        "",
    ]
