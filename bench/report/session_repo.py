"""The session bill's tables for one repository: whole bills, the helpers' requests and costs by kind of
question, where the money goes, deciles, rotations and waste.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.report.formatting import (
    MISSING,
    as_number,
    dig,
    mapping_at,
    num,
    pct,
    ratio,
    table,
)
from bench.report.session_figures import (
    GOAL_WORKLOADS,
    MODES,
    QUESTION_KINDS,
    SESSION_ARM_NAMES,
    SESSION_ARMS,
    SESSION_HELPERS,
    SESSION_KINDS_MEMORY,
    goal_runs,
    helper_figures,
    is_control,
    money,
    runs_of,
    slash,
)


def _workload_cell(run: Mapping[str, Any]) -> str:
    control = ", no decoys" if is_control(run) else ""
    return f"{run.get('workload')} ({num(run.get('questions'))} q, {num(run.get('edits'))} edits{control})"


def repository_tables(data: Mapping[str, Any], repo: str) -> list[str]:
    info = mapping_at(data, "config", "repos", repo)
    lines = [
        f"### {repo}",
        "",
        f"{num(info.get('eligible'))} eligible files of {num(info.get('files'))} text files (digest "
        f"`{info.get('digest', MISSING)}`).",
        "",
    ]
    runs = runs_of(data, repo)
    lines += _sonnet_bills(runs)
    lines += _opus_bills(runs)
    lines += _session_requests(runs)
    lines += _session_question_kinds(data, repo)
    lines += _session_kinds(data, repo)
    lines += _session_deciles(data, repo)
    lines += _session_rotations(data, repo)
    lines += _session_waste(data, repo)
    return lines


def _sonnet_bills(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each workload's whole bill per arm at Sonnet prices, B's ratios to A and C, and the break-even points."""
    rows = []
    for r in runs:
        arms = mapping_at(r, "arms")
        cmp_ = mapping_at(r, "compare")
        rows.append(
            (
                _workload_cell(r),
                money(dig(arms, "A", "total_usd_sonnet")),
                money(dig(arms, "C", "total_usd_sonnet")),
                money(dig(arms, "C", "total_usd_sonnet_inherit")),
                *[money(dig(arms, f"B-{m}", "total_usd_sonnet")) for m in MODES],
                slash(ratio(dig(cmp_, m, "b_over_a_sonnet")) for m in MODES),
                slash(ratio(dig(cmp_, m, "b_over_c_sonnet")) for m in MODES),
                slash(ratio(dig(cmp_, m, "b_over_c_inherit_sonnet")) for m in MODES),
                slash(_even(dig(cmp_, m, "break_even_vs_a_sonnet")) for m in MODES),
                slash(_even(dig(cmp_, m, "break_even_vs_c_sonnet")) for m in MODES),
            )
        )
    return [
        "Whole bill at Sonnet 4.5 prices, the Explore subagent on Haiku 4.5 or inheriting Sonnet 4.5 (strict / "
        "trusting where two figures are given; B÷C and break-even vs C against the subagent on Haiku unless "
        "named; break-even: the task count from which B's cumulative bill stays below the other arm's):",
        "",
        table(
            [
                "workload",
                SESSION_ARM_NAMES["A"],
                f"{SESSION_ARM_NAMES['C']} on Haiku",
                f"{SESSION_ARM_NAMES['C']} inheriting Sonnet",
                *[SESSION_ARM_NAMES[f"B-{m}"] for m in MODES],
                "B÷A",
                "B÷C",
                "B÷C inheriting Sonnet",
                "break-even vs A",
                "break-even vs C",
            ],
            rows,
        ),
        "",
    ]


def _opus_bills(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each workload's whole bill per arm at Opus prices, and the helpers' own spend per question."""
    rows = []
    for r in runs:
        arms = mapping_at(r, "arms")
        rows.append(
            (
                str(r.get("workload")),
                *[money(dig(arms, a, "total_usd_opus")) for a in SESSION_ARMS],
                money(dig(arms, "C", "subagent", "usd_per_question")),
                money(dig(arms, "C", "subagent", "usd_per_question_inherit")),
                money(dig(arms, "B-strict", "memory", "usd_per_question")),
                money(dig(arms, "B-trusting", "memory", "usd_per_question")),
                slash(pct(dig(arms, f"B-{m}", "memory", "cache_read_share"), 1) for m in MODES),
            )
        )
    return [
        "Whole bill at Opus 4.5 prices, and the helper's own spend per question (Haiku 4.5, or Sonnet 4.5 for the "
        "subagent that inherits the main model):",
        "",
        table(
            [
                "workload",
                SESSION_ARM_NAMES["A"],
                f"{SESSION_ARM_NAMES['C']} on Haiku",
                *[SESSION_ARM_NAMES[f"B-{m}"] for m in MODES],
                "subagent $/q on Haiku",
                "subagent $/q inheriting Sonnet",
                "memory $/q strict",
                "memory $/q trusting",
                "memory cache-read share",
            ],
            rows,
        ),
        "",
    ]


def _session_requests(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = []
    for r in runs:
        helpers = [mapping_at(r, "arms", arm, key) for _, arm, key in SESSION_HELPERS]
        rows.append(
            (
                str(r.get("workload")),
                *[num(h.get("requests_per_question")) for h in helpers],
                *[num(h.get("tool_rounds_per_question")) for h in helpers],
            )
        )
    return [
        "The helper's requests to its model and tool rounds per question:",
        "",
        table(
            [
                "workload",
                *[f"requests/q {label}" for label, _, _ in SESSION_HELPERS],
                *[f"tool rounds/q {label}" for label, _, _ in SESSION_HELPERS],
            ],
            rows,
        ),
        "",
    ]


def _session_question_kinds(data: Mapping[str, Any], repo: str) -> list[str]:
    lines: list[str] = []
    for role in ("base", "content"):
        arms = mapping_at(goal_runs(data, repo)[role], "arms")
        if not arms:
            continue
        by_kind = [mapping_at(arms, arm, key, "by_question_kind") for _, arm, key in SESSION_HELPERS]
        found = {k for v in by_kind for k in v}
        kinds = [k for k in QUESTION_KINDS if k in found or not found] + sorted(found - set(QUESTION_KINDS))
        rows = [
            (
                kind,
                *[f"{money(dig(v, kind, 'usd_per_question'))} ({num(dig(v, kind, 'questions'))})" for v in by_kind],
                *[
                    f"{num(dig(v, kind, 'requests_per_question'))}; {num(dig(v, kind, 'tool_rounds_per_question'))}"
                    for v in by_kind
                ],
            )
            for kind in kinds
        ]
        lines += [
            "The helper's cost per question (questions in brackets), and requests and tool rounds per question, by the "
            f"kind of question ({GOAL_WORKLOADS[role]}; the subagent on Haiku 4.5; a question given an earlier answer "
            "again sends none):",
            "",
            table(
                [
                    "question kind",
                    *[f"{label} $/q" for label, _, _ in SESSION_HELPERS],
                    *[f"{label} requests; tool rounds /q" for label, _, _ in SESSION_HELPERS],
                ],
                rows,
            ),
            "",
        ]
    return lines


def _even(value: Any) -> str:
    return "never" if value is None else num(value)


def _session_kinds(data: Mapping[str, Any], repo: str) -> list[str]:
    base = goal_runs(data, repo)["base"]
    arms = mapping_at(base, "arms")
    if not arms:
        return []
    memory = {m: mapping_at(arms, f"B-{m}", "memory", "by_kind") for m in ("strict", "trusting")}
    kinds = [k for k in SESSION_KINDS_MEMORY if any(k in v for v in memory.values())]
    kinds += sorted({k for v in memory.values() for k in v} - set(kinds))
    rows = [
        (
            kind,
            *[
                f"{money(dig(memory[m], kind, 'usd'))} ({pct(dig(memory[m], kind, 'share'), 1)})"
                for m in ("strict", "trusting")
            ],
            *[num(dig(memory[m], kind, "prompt_tokens")) for m in ("strict", "trusting")],
        )
        for kind in kinds
    ]
    lines = [
        "Where Live Memory's own money goes (60 tasks, medium locality), by prompt-block kind:",
        "",
        table(
            [
                "block kind",
                "strict USD (share)",
                "trusting USD (share)",
                "strict prompt tokens",
                "trusting prompt tokens",
            ],
            rows,
        ),
        "",
    ]
    main_kinds = {a: mapping_at(arms, a, "main", "by_kind_sonnet") for a in SESSION_ARMS}
    labels = sorted(
        {k for v in main_kinds.values() for k in v},
        key=lambda k: -max(as_number(dig(v, k, "usd")) or 0 for v in main_kinds.values()),
    )
    rows = [
        (
            label,
            *[
                f"{money(dig(main_kinds[a], label, 'usd'))} ({pct(dig(main_kinds[a], label, 'share'), 1)})"
                for a in SESSION_ARMS
            ],
        )
        for label in labels
    ]
    lines += [
        "Where the main agent's money goes (Sonnet 4.5, same workload):",
        "",
        table(["block kind", *[SESSION_ARM_NAMES[a] for a in SESSION_ARMS]], rows),
        "",
    ]
    return lines


def _session_deciles(data: Mapping[str, Any], repo: str) -> list[str]:
    long = goal_runs(data, repo)["long"]
    arms = mapping_at(long, "arms")
    if not arms:
        return []
    rows = []
    for d in range(10):
        row: list[str] = [f"{d * 10 + 1}-{d * 10 + 10}%"]
        row += [money(dig(arms, a, "deciles_per_task_usd_sonnet", d)) for a in SESSION_ARMS]
        row += [
            money(dig(helper_figures(mapping_at(arms, a)), "deciles_per_question_usd", d)) for a in SESSION_ARMS[1:]
        ]
        rows.append(row)
    return [
        "Cost per task by decile of a 120-task session (whole bill, Sonnet), and the helper's own cost per question:",
        "",
        table(
            [
                "decile",
                *[f"{SESSION_ARM_NAMES[a]} $/task" for a in SESSION_ARMS],
                *[f"{SESSION_ARM_NAMES[a].split(' ', 1)[1]} helper $/q" for a in SESSION_ARMS[1:]],
            ],
            rows,
        ),
        "",
    ]


def _session_rotations(data: Mapping[str, Any], repo: str) -> list[str]:
    rotated = mapping_at(data, "trend", repo, "rotations")
    if not rotated:
        return []
    helpers = ["subagent", *(f"memory-{m}" for m in MODES)]
    rows = []
    for d in range(10):
        row = [f"{d * 10 + 1}-{d * 10 + 10}%"]
        row += [money(dig(rotated, h, "deciles_per_question_usd", d)) for h in helpers]
        row += [ratio(dig(rotated, h, "over_subagent_by_decile", d)) for h in helpers[1:]]
        rows.append(row)
    rows.append(
        [
            "last ÷ first; 2nd ÷ 1st half",
            *[
                f"{ratio(dig(rotated, h, 'last_over_first'))}; {ratio(dig(rotated, h, 'second_half_over_first_half'))}"
                for h in helpers
            ],
            *["" for _ in helpers[1:]],
        ]
    )
    return [
        f"The helper's cost per question by decile, mean of `{rotated.get('sequence', MISSING)}` started at each "
        f"tenth of the way in ({num(rotated.get('runs'))} runs: every task in every decile once):",
        "",
        table(
            [
                "decile",
                "subagent $/q",
                *[f"memory $/q {m}" for m in MODES],
                *[f"memory ÷ subagent {m}" for m in MODES],
            ],
            rows,
        ),
        "",
    ]


def _session_waste(data: Mapping[str, Any], repo: str) -> list[str]:
    rows = []
    for r in runs_of(data, repo):
        arms = mapping_at(r, "arms")
        cells: list[str] = [str(r.get("workload"))]
        for a in SESSION_ARMS:
            main = mapping_at(arms, a, "main")
            helper = helper_figures(mapping_at(arms, a))
            who = helper if a != "A" else main
            cells.append(f"{num(who.get('rereads'))}/{num(who.get('reads'))}")
        cells.append(slash(f"{num(dig(arms, f'B-{m}', 'server_compactions'))}" for m in MODES))
        cells.append(slash(f"{num(dig(arms, f'B-{m}', 'summarizer_requests'))}" for m in MODES))
        for a in SESSION_ARMS[1:]:
            helper = helper_figures(mapping_at(arms, a))
            written = as_number(helper.get("cache_write_tokens"))
            never = as_number(helper.get("never_read_cache_write_tokens"))
            share = never / written if never is not None and written else None
            cells.append(f"{num(helper.get('never_read_cache_write_tokens'))} ({pct(share, 0)})")
        rows.append(cells)
    return [
        "Re-reads (Reads of a file version already read for an earlier task, over all Reads: the main agent's in "
        "A, the helper's in B and C), the memory's compactions and summarizer calls (strict / trusting), and "
        "cache-written tokens that no later request read (share of all written):",
        "",
        table(
            [
                "workload",
                *[f"re-reads {a}" for a in SESSION_ARMS],
                "memory compactions",
                "summarizer calls",
                *[f"never-read writes {a}" for a in SESSION_ARMS[1:]],
            ],
            rows,
        ),
        "",
    ]
