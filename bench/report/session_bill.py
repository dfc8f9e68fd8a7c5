"""The session-bill section's head: its method, the figures to beat and the content questions' figures; the
tables of each repository are in session_repo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.report.formatting import (
    MISSING,
    Charts,
    dig,
    list_at,
    mapping_at,
    pct,
    ratio,
    table,
)
from bench.report.session_figures import (
    CONTENT_GOALS,
    EXPLORE_INHERITS,
    MODES,
    decile_path,
    goal_runs,
    is_content,
    is_control,
    reread_share,
    runs_of,
    slash,
    span,
    workload_runs,
)
from bench.report.session_repo import repository_tables


def render_session_bill(data: Mapping[str, Any], charts: Charts) -> list[str]:
    config = mapping_at(data, "config")
    repos = list(mapping_at(config, "repos"))
    lines = [
        "Method: the same task sequence replayed through three arms of a Claude Code session: **A** no memory "
        "(the main agent greps and reads; results stay in its context until compaction), **B** Live Memory (one "
        "`ask_live_memory` per exploration task to the real server in its own process, its model scripted as "
        "*strict* — reads whatever the question needs that its prompt does not show current: a definition's "
        "lines when it was told them reliably, else the whole file — or *trusting* — also answers from an earlier "
        "answer or ledger fact naming the file until a change notice; both search whenever they were not told a "
        "file's location for this task; the hooks' tees go to `/notify`), **C** Explore subagent (a fresh "
        "context per question that greps, reads and reports); B and C delegate as the skill says (not for files "
        "the agent holds, nor to edit a small file it has read; who uses a name, always). Questions ask where a "
        "name is defined (locate), who uses it (uses), how code works (explain) or which lines to change (edit); "
        "the *content* rows turn two in five of the questions that touch files into questions that need whole "
        "files: what a file does and how it is organised (walkthrough), a review of a file for a concern (review), "
        "what a directory does about a topic taken from its files' prose (area: the 2-4 files under it that "
        "mention it), and the same need asked again in other words in a later session or well after (follow-up). "
        "Every edit task Reads the file unless held (only the cited lines of a larger file when an answer cited "
        "them, in B and C alike), then Edits it. The main "
        "agent is priced at Sonnet 4.5 (and Opus 4.5), the memory at "
        "Haiku 4.5, the subagent at Haiku 4.5 and at Sonnet 4.5: "
        f"{EXPLORE_INHERITS}, so with a Sonnet session it runs on Sonnet unless asked for Haiku. Every client's "
        "cache follows the Anthropic rules on a virtual clock (think time 30/120/600 s, 1 h between sessions). Full "
        f"method: `bench/session_bill.py`; server under test: `{config.get('server', MISSING)}`.",
        "",
        "Rerun: `python -m bench.session_bill` (a few minutes; deterministic for a given server), against another "
        "checkout's server with `--server-src OTHER/server`, then `python -m bench.report --only session_bill`.",
        "",
    ]
    if not repos:
        return [*lines, "_No runs in the result file._", ""]
    if any(is_control(r) for r in workload_runs(data)):
        lines += [
            "Rows marked *no decoys* are decoy-free controls: the same tasks without the files an explorer opens "
            "while locating that turn out not to matter. A question names a file only beside a name defined in "
            'several ("`Migration` (in its path)"), as an agent asking would; every arm goes straight to a file '
            "its question names.",
            "",
        ]
    lines += _session_goals(data, repos)
    lines += _content_goals(data, repos)
    for repo in repos:
        lines += repository_tables(data, repo)
    limits = list_at(data, "limits")
    if limits:
        lines += ["Limits:", "", *[f"- {item}" for item in limits], ""]
    return lines


def _session_goals(data: Mapping[str, Any], repos: Sequence[str]) -> list[str]:
    """The figures the product is judged on, per repository and memory model, from one run."""
    rows = []
    for repo in repos:
        runs = goal_runs(data, repo)
        base, low, small, long = runs["base"], runs["low"], runs["small"], runs["long"]
        mean = mapping_at(data, "trend", repo)  # the mean over every 120-task sequence
        rotated = mapping_at(mean, "rotations")  # the mean over one sequence's rotations
        a120 = dig(long, "compare", "decile_last_over_first_sonnet", "A")
        for mode in MODES:
            if not dig(base, "arms", f"B-{mode}"):
                continue
            b120 = dig(long, "compare", "decile_last_over_first_sonnet", f"B-{mode}")
            rows.append(
                (
                    f"{repo}, {mode}",
                    ratio(dig(base, "compare", mode, "memory_over_subagent_per_question")),
                    ratio(dig(base, "compare", mode, "memory_over_subagent_inherit_per_question")),
                    f"{ratio(b120)} (A {ratio(a120)})",
                    _trend_cell(rotated, mode),
                    _trend_cell(mean, mode),
                    decile_path(rotated, mode),
                    slash(ratio(dig(base, "compare", mode, f"b_over_{x}_sonnet")) for x in "ca"),
                    slash(ratio(dig(low, "compare", mode, f"b_over_{x}_sonnet")) for x in "ca"),
                    slash(ratio(dig(r, "compare", mode, "b_over_c_inherit_sonnet")) for r in (base, low)),
                    ratio(dig(small, "compare", mode, "b_over_a_sonnet")),
                    f"{pct(dig(base, 'arms', f'B-{mode}', 'memory', 'cache_read_share'), 1)}; "
                    f"{pct(dig(base, 'arms', f'B-{mode}', 'memory', 'cache_hit_share'), 1)}",
                )
            )
    if not rows:
        return []
    return [
        "### The figures to beat",
        "",
        table(
            [
                "repository, memory model",
                "memory $/question ÷ subagent's on Haiku (60 tasks, medium)",
                "memory $/question ÷ subagent's inheriting Sonnet (60 tasks, medium)",
                "whole bill $/task last ÷ first decile, 120 tasks (B; A)",
                "memory $/question last ÷ first decile; 2nd ÷ 1st half, 120 tasks, every task in every decile "
                "(mean of one sequence's rotations)",
                "the same, mean of the distinct sequences",
                "memory ÷ subagent $/question, first → last decile, 120 tasks (rotations)",
                "B÷C / B÷A, 60 tasks medium",
                "B÷C / B÷A, 60 tasks low locality",
                "B÷C with the subagent inheriting Sonnet, 60 tasks medium / low locality",
                "B÷A, 60 tasks high locality small files",
                "memory's prompt tokens read from cache; cache reads ÷ (reads + writes) (60 medium)",
            ],
            rows,
        ),
        "",
        "Totals are the whole bill (main agent at Sonnet 4.5 + memory at Haiku 4.5, or + subagent at Haiku 4.5, "
        "or at Sonnet 4.5 where it inherits the main model); below 1.00x means B costs less. Every ratio comes "
        "from the same run. The subagent answers each question from a "
        "fresh context, so its trend over a session is the task mix's; memory ÷ subagent per decile is the "
        "memory's own trend as it learns. One 120-task sequence's deciles swing with its task mix, so the 120-task "
        "trend is read from means (per decile, then the ratio): over one sequence started at each tenth of the way "
        "in (its rotations: every task sits in every decile once, so the task order cancels out), and over the "
        "distinct sequences of the run. What still moves the subagent's figure over a rotated session is which "
        "questions reach a helper: later on, the main agent holds more files and asks only about the others.",
        "",
    ]


def _content_goals(data: Mapping[str, Any], repos: Sequence[str]) -> list[str]:
    """The content rows' figures, per repository and memory model, from one run."""
    rows = []
    for repo in repos:
        runs = [r for r in runs_of(data, repo) if is_content(r)]
        goals = goal_runs(data, repo)
        for mode in MODES:
            if not any(dig(r, "arms", f"B-{mode}") for r in runs):
                continue
            memory = [mapping_at(r, "arms", f"B-{mode}", "memory") for r in runs]
            rows.append(
                (
                    f"{repo}, {mode}",
                    span([dig(r, "compare", mode, "memory_over_subagent_per_content_question") for r in runs]),
                    span([dig(r, "compare", mode, "memory_over_subagent_per_question") for r in runs]),
                    span([reread_share(m) for m in memory], "%"),
                    span([m.get("requests_per_question_after_20") for m in memory], ""),
                    slash(ratio(dig(goals[g], "compare", mode, "b_over_c_sonnet")) for g in CONTENT_GOALS),
                    slash(ratio(dig(goals[g], "compare", mode, "b_over_a_sonnet")) for g in CONTENT_GOALS),
                    str(sum(int(dig(r, "arms", f"B-{mode}", "wrong_answers") or 0) for r in runs)),
                )
            )
    if not rows:
        return []
    return [
        "### Content questions: the figures to beat",
        "",
        table(
            [
                "repository, memory model",
                "memory $ ÷ subagent's on Haiku, per content question (content rows)",
                "the same, every question of the content rows",
                "Reads re-reading a file read for an earlier question",
                "requests per question after the first 20",
                "whole bill B÷C, 60 tasks medium / low",
                "whole bill B÷A, 60 tasks medium / low",
                "answers not the question's",
            ],
            rows,
        ),
        "",
        "Ranges are over the content rows of the run (60 tasks at high, medium and low locality, 3 × 20 and 6 × 10 "
        "tasks); a content question is a walkthrough, a review, an area or a follow-up. The goals set for them: "
        "memory $ per question at most 0.5x the subagent's on Haiku with the strict model and 0.35x with the "
        "trusting one, re-reads at most 20%, at most 1.6 requests per question after the first 20, and a whole bill "
        "at most 0.85x the subagent arm's and 0.65x exploring alone. An answer that is not the question's would be "
        "an earlier answer given again for another need: the count checks that giving answers again never answers "
        "the wrong question.",
        "",
    ]


def _trend_cell(figures: Mapping[str, Any], mode: str) -> str:
    """Memory's last ÷ first decile and second ÷ first half, then the subagent's, over a session's deciles."""
    if not figures:
        return MISSING
    memory, subagent = mapping_at(figures, f"memory-{mode}"), mapping_at(figures, "subagent")
    return (
        f"{ratio(memory.get('last_over_first'))}; {ratio(memory.get('second_half_over_first_half'))} "
        f"(subagent {ratio(subagent.get('last_over_first'))}; {ratio(subagent.get('second_half_over_first_half'))})"
    )
