"""The team-bill benchmark (bench/team_bill.py): its arguments, how it shapes the developers' figures, the ledger
against the store, the docs table, and a tiny end-to-end run against a real PostgreSQL."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bench import report, session_bill, team_bill
from bench.bill_workload import build_tasks, load_repo, workload

from live_memory.engine.question_names import location_kind
from live_memory.team.repo_identity import normalize_remote, repository_identity
from tests.conftest import TeamDatabase


def developer(index: int, usd: float, first: float, *, from_team: int = 0, learned: int = 4) -> dict[str, Any]:
    return {
        "index": index,
        "memory_usd_per_question": usd,
        "memory_usd_first_tasks": first,
        "requests_per_question": 1.5 - index / 10,
        "ledger_facts_from_team": from_team,
        "ledger_facts_learned": learned,
        "ledger_facts_grounded": 2,
        "ledger_facts_in_store": 1,
        "ledger_facts_kept_back": 1,
        "answers_reused": index - 1,
    }


TEAMS: dict[str, Any] = {
    "strict": {
        "developers": [developer(1, 0.010, 0.2), developer(2, 0.008, 0.1, from_team=3), developer(3, 0.009, 0.1)],
        "store": {"facts": 5, "answers": 2},
    },
    "trusting": {
        "developers": [developer(1, 0.010, 0.2), developer(2, 0.005, 0.1, from_team=2), developer(3, 0.007, 0.1)],
        "store": {"facts": 4, "answers": 1},
    },
}


def test_arguments_default_to_three_developers_a_throwaway_store_and_both_models() -> None:
    args = team_bill.parse_args([])
    assert (args.developers, args.store, args.modes, args.quick) == (3, "", "strict,trusting", False)
    args = team_bill.parse_args(["--quick", "--store", "postgresql://h/db", "--developers", "4"])
    assert (args.developers, args.store, args.quick) == (4, "postgresql://h/db", True)


@pytest.mark.parametrize(
    "argv",
    [["--developers", "1"], ["--modes", "strict,careless"], ["--option", "no-equals-sign"], ["--variants", "gossip"]],
)
def test_arguments_a_run_cannot_measure_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        team_bill.parse_args(argv)
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("bench", [team_bill, session_bill], ids=["team_bill", "session_bill"])
def test_a_server_src_without_the_package_stops_the_run_before_it_starts(bench: Any, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"holds no live_memory package"):
        bench.main(["--server-src", str(tmp_path)])


def test_each_developer_gets_both_models_figures_and_ratios_to_developer_one() -> None:
    shaped = team_bill.shape(TEAMS)
    assert [d["index"] for d in shaped["developers"]] == [1, 2, 3]
    second = shaped["developers"][1]
    assert second["memory_usd_per_question"] == {"strict": 0.008, "trusting": 0.005}
    assert second["requests_per_question"] == {"strict": 1.3, "trusting": 1.3}
    assert second["over_first"] == {"strict": 0.8, "trusting": 0.5}
    assert second["first_tasks_over_first"] == {"strict": 0.5, "trusting": 0.5}
    assert shaped["developers"][0]["over_first"] == {"strict": 1.0, "trusting": 1.0}


def test_the_store_counts_add_up_over_both_teams() -> None:
    store = team_bill.shape(TEAMS)["store"]
    assert (store["facts"], store["answers"], store["pulls"], store["pushes"]) == (9, 3, 5, 6)
    assert (store["facts_learned_ungrounded"], store["facts_kept_back"]) == (12, 6)
    assert store["by_mode"] == {"strict": {"facts": 5, "answers": 2}, "trusting": {"facts": 4, "answers": 1}}


def test_facts_only_figures_stay_on_top_and_those_with_answers_shared_go_beside_them() -> None:
    cheaper = {mode: {**team, "developers": team["developers"][:1]} for mode, team in TEAMS.items()}
    shaped = team_bill.shape_variants(
        {("facts", mode): team for mode, team in TEAMS.items()}
        | {("answers", mode): team for mode, team in cheaper.items()}
    )
    assert shaped["developers"] == team_bill.shape(TEAMS)["developers"]
    assert len(shaped["with_shared_answers"]["developers"]) == 1
    reworded = team_bill.shape_variants({("reworded", mode): team for mode, team in TEAMS.items()})
    assert "developers" not in reworded and "with_shared_answers" not in reworded
    # Reworded questions answered from a teammate's answers: one goal for both models.
    assert reworded["with_reworded_answers"]["goals"]["trusting"] == {"bound": 0.5, "worst_ratio": 0.7, "met": False}
    text = "\n".join(report.render_team_bill({"config": {"modes": ["trusting"]}, **reworded}, {}))
    assert "Answers shared, developers 2..N asking in their own words" in text


def test_a_goal_is_judged_on_the_worst_later_developer() -> None:
    goals = team_bill.shape(TEAMS)["goals"]
    assert goals["strict"] == {"bound": 0.85, "worst_ratio": 0.9, "met": False}
    assert goals["trusting"] == {"bound": 0.6, "worst_ratio": 0.7, "met": False}


def test_a_ledger_is_read_against_the_store_by_text_and_grounds() -> None:
    sha = (("a.py", "1" * 64),)
    held = [
        team_bill.HeldFact("a.py defines f", sha),  # pushed
        team_bill.HeldFact("a.py defines g", sha),  # grounded, not in the store: kept back
        team_bill.HeldFact("a.py defines h", sha, stale=True),  # stale: waits, not kept back
        team_bill.HeldFact("b.py defines k", ()),  # no grounds: never leaves
        team_bill.HeldFact("c.py defines m", (("c.py", "2" * 64),), team="developer-1@x"),
    ]
    stored = {("a.py defines f", frozenset(sha)), ("c.py defines m", frozenset({("c.py", "2" * 64)}))}
    assert team_bill.ledger_figures(held, stored) == {
        "ledger_facts": 5,
        "ledger_facts_from_team": 1,
        "ledger_facts_learned": 4,
        "ledger_facts_grounded": 3,
        "ledger_facts_in_store": 1,
        "ledger_facts_kept_back": 1,
    }


def test_a_developers_checkout_is_the_teams_repository_whatever_its_path(tmp_path: Path) -> None:
    repo = load_repo("live-memory")
    remote = team_bill.team_remote("live-memory", "strict-0")
    first = team_bill.team_checkout(repo, tmp_path / "one" / "live-memory", remote)
    second = team_bill.team_checkout(repo, tmp_path / "two" / "elsewhere", remote)
    assert {asyncio.run(repository_identity(root)) for root in (first, second)} == {normalize_remote(remote)}
    changed = subprocess.run(["git", "diff", "--no-index", "--quiet", str(first), str(second)], check=False)
    assert changed.returncode == 0  # the same files


def test_the_docs_table_has_a_row_per_developer_and_the_goals() -> None:
    data = {
        "config": {
            "developers": 3,
            "workload": "medium-natural-30",
            "repo": "live-memory",
            "modes": ["strict", "trusting"],
        },
        **team_bill.shape(TEAMS),
        "limits": ["Scripted models."],
    }
    text = "\n".join(report.render_team_bill(data, {}))
    row = "| developer 2 | $0.008000 | 0.80x | 1.300 | 0.50x | 3 | 1 | $0.005000 | 0.50x | 1.300 | 0.50x | 2 | 1 |"
    assert row in text
    assert "- trusting: developers 2..N at most 0.60x of developer 1's memory $/question: worst 0.70x, not met." in text
    assert "Store: 9 facts and 3 answers; 5 facts pulled" in text
    assert "answers shared" not in text  # measured only when the run shared answers
    shared = "\n".join(report.render_team_bill(data | {"with_shared_answers": team_bill.shape(TEAMS)}, {}))
    assert shared.count("| developer 2 |") == 2 and "Facts and answers shared (`team_share_answers` on):" in shared
    assert "- Scripted models." in text
    assert "Team bill" in report.render_document({"team_bill": data})


def test_the_document_lists_the_team_bill_among_those_without_results_until_it_has_some() -> None:
    assert "`python -m bench.team_bill`" in report.render_document({})
    assert "- [Team bill: what the team store saves the next developers](#" in report.render_document({"team_bill": {}})


def test_two_developers_share_what_the_first_learned_through_a_real_store(team_db: TeamDatabase) -> None:
    """End to end, small, with answers shared: the first developer's facts and answers reach the store; the
    second's ledger holds some of the facts, and its server gives the first one's answers to the same questions,
    asked in the second developer's own words, without a model call."""
    load = workload("medium", "natural", (4,))
    data = team_bill.run(  # a short session whose history folds early: facts to share after a few tasks
        load=load,
        developers=2,
        modes=("trusting",),
        variants=("reworded",),
        store=team_db.url,
        jobs=1,
        options={"history_max_tokens": "150"},
        store_poll_s=0.05,  # the store is local: its count settles in milliseconds
    )
    first, second = data["with_reworded_answers"]["developers"]
    shared = data["with_reworded_answers"]["store"]["answers"]  # the answers grounded on files the server knew
    asked = [t.question for t in build_tasks(load_repo("live-memory"), load, session_bill.SEED) if t.question]
    # Where a name is defined is looked up afresh, never given again (the second developer shares its own).
    how = [q for q in asked if location_kind(q) is None]
    assert 0 < len(how) < len(asked) and shared == len(how) + 2 * (len(asked) - len(how))
    assert first["by_mode"]["trusting"]["answers_reused"] == 0
    assert second["by_mode"]["trusting"]["answers_reused"] == len(how)  # each given again, without a model call
    assert second["memory_usd_per_question"]["trusting"] < first["memory_usd_per_question"]["trusting"]
    data = data["with_reworded_answers"] | {"config": data["config"]}
    assert first["by_mode"]["trusting"]["store_facts_first_learned"] > 0
    assert first["by_mode"]["trusting"]["store"]["drained"]
    assert second["by_mode"]["trusting"]["ledger_facts_from_team"] > 0
    assert data["store"]["facts"] == first["by_mode"]["trusting"]["store_facts_first_learned"]
    assert second["by_mode"]["trusting"]["ask_errors"] == 0
