"""The tools section: the directory tree against `git ls-files`, and Grep against ripgrep, each with its goal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.formatting import (
    MISSING,
    Charts,
    against_goal,
    list_at,
    num,
    ratio,
    table,
)

# The goals bench/tools_bench.py states for itself.
TREE_GOAL = 2.0
GREP_GOAL = 1.3


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
            against_goal(r.get("tree_ratio"), TREE_GOAL),
            ratio(r.get("grep_ratio_median_vs_same_flags")),
            against_goal(r.get("grep_ratio_median_vs_plain_rg"), GREP_GOAL),
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
