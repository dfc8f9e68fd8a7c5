"""The big-repositories section: every goal against its floor, then one row per repository size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.report.formatting import (
    MISSING,
    Charts,
    as_number,
    dig,
    list_at,
    mapping_at,
    num,
    ratio,
    table,
)


def _verdict(goal: Mapping[str, Any], key: str = "ratio") -> str:
    """A goal's figure against its bound: "1.23x (met)", "0.52x (missed)", or "–"."""
    value = as_number(goal.get(key))
    met = goal.get("met")
    if value is None:
        return MISSING
    shown = f"{value:.2f}x" if key == "ratio" else num(value, 2)
    return f"{shown} ({'met' if met else 'missed'})" if isinstance(met, bool) else shown


GoalRow = tuple[str, str, str, str, str]  # goal, figure, floor, bound, verdict


def render_scale(data: Mapping[str, Any], charts: Charts) -> list[str]:
    goals = mapping_at(data, "goals")
    goal_rows = [*_question_goal_rows(goals), *_index_goal_rows(goals), *_server_goal_rows(goals)]
    return [
        "Method: repositories built from real sdists side by side, committed into git (3k: SymPy 1.13.3 and "
        "Sphinx 7.4.7; 15k: those, Django 5.1.4 and Ansible 10.7.0's first collections; 55k: all four), the "
        "server in a child process on the fake provider, questions through the official MCP client; every "
        f"figure against its floor measured in the same run ({num(data.get('minutes'), 0)} minutes, load "
        f"average {num(data.get('load_average'), 1)} on {num(data.get('cores'), 0)} shared cores: timings are "
        "noisy, CPU figures less so). Rerun: `python -m bench.scale_bench` (`--sizes 3k,15k,55k`).",
        "",
        f"Goals, on the {goals.get('repository', MISSING)} repository ({num(goals.get('files'))} files):",
        "",
        table(["goal", "figure", "floor", "bound", "ratio"], goal_rows),
        "",
        "By repository (warm: the slowest of the identifier questions, each the median of three askings):",
        "",
        _repository_table([r for r in list_at(data, "results") if isinstance(r, Mapping)]),
        "",
    ]


def _seconds(goals: Mapping[str, Any], goal: str, key: str) -> str:
    """A goal's timing (or size ratio) with three decimals."""
    return num(dig(goals, goal, key), 3)


def _question_goal_rows(goals: Mapping[str, Any]) -> list[GoalRow]:
    """The goals on answering an identifier question: warm, against the 3k repository, and cold."""
    return [
        (
            "identifier question, warm",
            f"{_seconds(goals, 'warm_identifier_s', 'value')} s",
            "–",
            "≤ 0.2 s",
            _verdict(mapping_at(goals, "warm_identifier_s"), "value"),
        ),
        (
            "the same against the 3k repository",
            f"{_seconds(goals, 'warm_vs_3k', 'value')} s",
            f"{_seconds(goals, 'warm_vs_3k', 'floor')} s",
            "≤ 1.2x",
            _verdict(mapping_at(goals, "warm_vs_3k")),
        ),
        (
            "identifier question, cold (index building)",
            f"{_seconds(goals, 'cold_identifier_vs_today', 'value')} s",
            f"{_seconds(goals, 'cold_identifier_vs_today', 'floor')} s (no index)",
            "≤ 1x",
            _verdict(mapping_at(goals, "cold_identifier_vs_today")),
        ),
    ]


def _index_goal_rows(goals: Mapping[str, Any]) -> list[GoalRow]:
    """The goals on what the symbol index costs: memory, its build and its updates."""
    rss = mapping_at(goals, "peak_rss_over_today_mb")
    return [
        (
            "peak RSS of the server",
            f"{num(rss.get('value'), 1)} MB",
            f"{num(rss.get('floor'), 1)} MB (no index)",
            "≤ +150 MB",
            f"+{num(rss.get('difference'), 1)} MB ({'met' if rss.get('met') else 'missed'})",
        ),
        (
            "index build (CPU)",
            f"{_seconds(goals, 'index_build_vs_floor', 'value')} s",
            f"{_seconds(goals, 'index_build_vs_floor', 'floor')} s (`rg --files` + parsing)",
            "≤ 3x",
            _verdict(mapping_at(goals, "index_build_vs_floor")),
        ),
        (
            "incremental update, per changed file",
            f"{_seconds(goals, 'incremental_ms_per_file', 'value')} ms",
            f"{_seconds(goals, 'incremental_ms_per_file', 'floor')} ms (parsing it)",
            "≤ 10 ms",
            _verdict(mapping_at(goals, "incremental_ms_per_file"), "value"),
        ),
    ]


def _server_goal_rows(goals: Mapping[str, Any]) -> list[GoalRow]:
    """The goals on the rest of the server at that size: the prompt, the watcher, a restart and the listing."""
    return [
        (
            "first prompt after 600 teed reads",
            f"{_seconds(goals, 'prompt_600_reads_vs_none', 'value')}x its size",
            "the size with none",
            "≤ 1.1x",
            _verdict(mapping_at(goals, "prompt_600_reads_vs_none")),
        ),
        (
            "20 new directories under watch (CPU)",
            f"{_seconds(goals, 'watcher_20_new_directories_cpu_s', 'value')} s",
            f"{_seconds(goals, 'watcher_20_new_directories_cpu_s', 'floor')} s (no watcher)",
            "≤ 0.5 s",
            _verdict(mapping_at(goals, "watcher_20_new_directories_cpu_s"), "value"),
        ),
        (
            "first question after a restart",
            f"{_seconds(goals, 'restart_vs_cold', 'value')} s",
            f"{_seconds(goals, 'restart_vs_cold', 'floor')} s (cold)",
            "≤ 0.5x",
            _verdict(mapping_at(goals, "restart_vs_cold")),
        ),
        (
            "listing (the directory tree)",
            f"{num(dig(goals, 'listing_vs_git', 'value'), 2)}x `git ls-files`",
            "bare `git ls-files`",
            "(2.9x before)",
            MISSING,
        ),
    ]


def _repository_table(results: Sequence[Mapping[str, Any]]) -> str:
    """One row per repository size, each figure beside its floor."""
    rows = []
    for r in results:
        q, build, listing = mapping_at(r, "questions"), mapping_at(r, "index_build"), mapping_at(r, "listing")
        watcher = mapping_at(r, "watcher")
        warm = [v for v in mapping_at(q, "warm_s").values() if as_number(v) is not None]
        floor = (as_number(build.get("rg_files_s")) or 0.0) + (as_number(build.get("parse_cpu_s")) or 0.0)
        rows.append(
            (
                str(r.get("size", MISSING)),
                num(r.get("files")),
                f"{num(listing.get('tree_ms'), 0)} / {num(listing.get('git_ls_files_ms'), 0)}",
                f"{num(build.get('cpu_s'), 1)} / {num(floor, 1)}",
                f"{num(build.get('peak_rss_mb'), 0)} MB, {num(build.get('index_mb'), 0)} MB",
                f"{num(dig(r, 'incremental', 'ms_per_file'), 1)} / {num(dig(r, 'incremental', 'cpu_ms_per_file'), 1)}",
                f"{num(q.get('cold_s'), 2)} / {num(q.get('today_cold_s'), 2)}",
                num(max(warm), 3) if warm else MISSING,
                f"{num(q.get('peak_rss_mb'), 0)} / {num(q.get('today_peak_rss_mb'), 0)}",
                ratio(dig(r, "prompt", "after_reads_ratio_worst")),
                f"{num(q.get('restart_generic_s'), 2)} / {num(q.get('cold_generic_s'), 2)}",
                f"{num(watcher.get('new_directories_cpu_s'), 2)} / {num(watcher.get('unwatched_cpu_s'), 2)}",
                f"{num(watcher.get('default_cap_watches'))} of {num(watcher.get('directories'))}",
            )
        )
    headers = [
        "repository",
        "files",
        "tree ms / git ls-files ms",
        "index build CPU s / floor",
        "build peak RSS, index size",
        "ms per changed file (wall / CPU)",
        "cold identifier s / no index",
        "warm identifier s",
        "server peak RSS MB / no index",
        "prompt after 600 reads",
        "restart s / cold s",
        "watcher CPU s / none",
        "watched at the default cap",
    ]
    return table(headers, rows)
