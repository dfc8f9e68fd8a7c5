"""The team-bill section: developers 2..N against developer 1, per way of sharing and memory model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    usd,
)
from bench.report.session_figures import MODES


def render_team_bill(data: Mapping[str, Any], charts: Charts) -> list[str]:
    """Developers 2..N against developer 1 (the same tasks, one team store), per memory model: with facts
    shared (the default), then with answers shared too when the run measured it."""
    config = mapping_at(data, "config")
    modes = [str(m) for m in list_at(data, "config", "modes")] or list(MODES)
    lines = [
        f"Method: `bench/team_bill.py`: {num(config.get('developers'))} developers, each with their own server, "
        f"data dir and checkout (same files, different paths, one remote), replay the session-bill workload "
        f"`{config.get('workload', MISSING)}` on `{config.get('repo', MISSING)}` one after another, sharing one "
        "team store (PostgreSQL); the memory's own spend per question at Haiku prices (scripted memory models, "
        'fake provider). "first tasks": the memory\'s spend over the first 20 tasks. '
        f"{'Quick run. ' if config.get('quick') else ''}Rerun: `python -m bench.team_bill` "
        "(`--store URL` for a given PostgreSQL), then `python -m bench.report --only team_bill`.",
        "",
    ]
    if "developers" in data:
        lines += ["Facts shared (the default):", "", *_team_variant(data, modes)]
    shared = data.get("with_shared_answers")
    if isinstance(shared, Mapping):
        lines += ["Facts and answers shared (`team_share_answers` on):", "", *_team_variant(shared, modes)]
    reworded = data.get("with_reworded_answers")
    if isinstance(reworded, Mapping):
        title = "Answers shared, developers 2..N asking in their own words (`bench/bill_reword.py`):"
        lines += [title, "", *_team_variant(reworded, modes)]
    limits = [f"- {limit}" for limit in list_at(data, "limits")]
    if limits:
        lines += ["Limits:", "", *limits, ""]
    return lines


def _team_variant(data: Mapping[str, Any], modes: Sequence[str]) -> list[str]:
    """One way of sharing: a row per developer, the store's counts, and the goals."""
    rows = []
    for developer in list_at(data, "developers"):
        if not isinstance(developer, Mapping):
            continue
        cells: list[str] = [f"developer {developer.get('index', MISSING)}"]
        for mode in modes:
            cells += [
                usd(dig(developer, "memory_usd_per_question", mode)),
                ratio(dig(developer, "over_first", mode)),
                num(dig(developer, "requests_per_question", mode), 3),
                ratio(dig(developer, "first_tasks_over_first", mode)),
                num(dig(developer, "by_mode", mode, "ledger_facts_from_team")),
                num(dig(developer, "by_mode", mode, "answers_reused")),
            ]
        rows.append(cells)
    headers = ["developer"]
    for mode in modes:
        headers += [
            f"{mode} $/q",
            f"{mode} vs dev 1",
            f"{mode} req/q",
            f"{mode} first tasks vs dev 1",
            f"{mode} team facts",
            f"{mode} team answers",
        ]
    store = mapping_at(data, "store")
    lines = [table(headers, rows), ""] if rows else []
    lines.append(
        f"Store: {num(store.get('facts'))} facts and {num(store.get('answers'))} answers; "
        f"{num(store.get('pulls'))} facts pulled into the later developers' "
        f"ledgers, {num(store.get('pushes'))} of the facts the ledgers learned themselves are in the store; "
        f"{num(store.get('facts_learned_ungrounded'))} facts learned were grounded on no file's bytes (they never "
        f"leave), {num(store.get('facts_kept_back'))} grounded ones were kept back by the sharing policy."
    )
    lines.append("")
    goal_lines = [
        f"- {mode}: developers 2..N at most {ratio(dig(goal, 'bound'))} of developer 1's memory $/question: worst "
        f"{ratio(dig(goal, 'worst_ratio'))}, {'met' if dig(goal, 'met') else 'not met'}."
        for mode, goal in sorted(mapping_at(data, "goals").items())
        if isinstance(goal, Mapping)
    ]
    if goal_lines:
        lines += ["Goals:", "", *goal_lines, ""]
    return lines
