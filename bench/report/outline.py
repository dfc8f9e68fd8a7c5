"""The outline section: a small repository's tree scan with its definitions, against the tree alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    Charts,
    num,
    table,
)


def render_outline(data: Mapping[str, Any], charts: Charts) -> list[str]:
    rows = [
        (
            "first scan (a workspace's load: every file read and parsed)",
            num(data.get("first_scan_ms"), 1),
            f"{num(data.get('first_over_tree_only'), 1)}x",
        ),
        (
            "scan again (a re-freeze, files unchanged)",
            num(data.get("rescan_ms"), 1),
            f"{num(data.get('rescan_over_tree_only'), 1)}x",
        ),
        ("the tree alone", num(data.get("tree_only_scan_ms"), 1), "1x"),
    ]
    return [
        f"Method: the tree scan as the server runs it for Haiku 4.5 on {data.get('repo')}, "
        f"{num(data.get('files'), 0)} files, whose whole tree leaves the prompt's head at "
        f"{num(data.get('head_tokens_tree_only'), 0)} tokens, under the "
        f"{num(data.get('cache_minimum_tokens'), 0)}-token cache minimum: the tree, then "
        f"{num(data.get('files_outlined'), 0)} files' top-level classes and functions up to it "
        f"({num(data.get('head_tokens_outlined'), 0)} tokens), against the tree alone, medians of "
        f"{num(data.get('runs'), 0)} runs in turn (`python -m bench.outline_bench`).",
        "",
        table(["scan", "ms", "x the tree alone"], rows),
        "",
    ]
