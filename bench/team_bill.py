"""Team bill: what a team's memory saves the developers who come after the first, through the team store.

Setup: N developers (default 3), each with their own `live-memory serve` process (bench/virtual_serve.py on
the replay's virtual clock), data dir and checkout of the repository; the checkouts hold the same files under
different paths and share one `origin` remote URL, so the server names them as one repository; every server
has `team_store` pointing at one PostgreSQL (a throwaway cluster, as the tests start, unless `--store` gives
one). Each developer replays the same session-bill workload (the same tasks, edits and seed: arm B of
bench/session_bill.py, the scripted memory model answering through the fake provider), one developer after
another: developer k+1 starts once the team store holds what developer k's server learned (its queue on disk
is empty and the store's fact count stopped rising, within a bound), a day of virtual time later, with a cold
provider cache. What a developer's server pulls joins its ledger at its first freeze (a workspace's first
load waits briefly for the pull) and after each compaction.

Each memory model (strict, trusting; see bench/bill_memory.py) is its own team, under its own repository
identity, so one model's facts never reach the other's developers. The run is made three times, as more teams
per model: with the defaults (only facts travel); with `team_share_answers` on (answers travel too, and a later
developer's server gives a teammate's answer to the same question about the same bytes without a model call);
and with answers shared and developers 2..N asking the same tasks in their own words (bench/bill_reword.py:
each question's phrasing swapped for another of the same meaning, with the same names and files).

Figures per developer and memory model: the memory's spend per question at Haiku prices (its own requests:
answers and ledger upkeep), requests per question, that spend over developer 1's, and what its ledger held at
the end (facts from the team, facts it queued for the team). The store: its facts (rows) per team and per
developer who first learned them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.bill_cache import VirtualClock
from bench.bill_memory import ServerCommand, ServerProcess, copy_workspace, fake_provider
from bench.bill_reword import reworded
from bench.bill_workload import Repo, Workload, build_tasks, load_repo
from bench.common import map_jobs, print_table, warn_if_busy, write_results
from bench.provenance import write_json
from bench.session_bill import MODES, RUNS_DIR, SEED, SERVER_OPTIONS, memory_workload, parse_workload
from live_memory.team.queue import QUEUE_FILE
from live_memory.team.repo_identity import normalize_remote
from live_memory.team.store import TeamStore
from live_memory.workspaces.store import SnapshotStore

NAME = "team_bill"
DEVELOPERS = 3
REPO = "live-memory"
QUICK_LOAD = parse_workload("medium-natural-30")
FULL_LOAD = parse_workload("medium-natural-120")  # the session-bill shape with most compactions
# The issue's goals: developers 2..N pay at most this share of developer 1's memory spend per question (with
# facts alone; with answers shared and the questions reworded, REWORDED_GOAL for both models).
GOALS = {"strict": 0.85, "trusting": 0.6}
REWORDED_GOAL = 0.5
REMOTE = "https://example.com/bench/{repo}-{team}.git"  # one per team (memory model and run)
DAY_S = 86_400.0
STORE_WAIT_S = 60.0  # longest real wait for a developer's facts to reach the store
STORE_POLL_S = 0.25  # between looks at the store while waiting (a test passes a shorter one)
STORE_TIMEOUT_S = 10.0
PULL_ALL = 100_000
FIRST_TASKS = 20  # the start of a session, compared on its own
# The two ways a team shares: facts only (the default), and facts plus answers (team_share_answers on).
VARIANTS: dict[str, dict[str, str]] = {
    "facts": {},
    "answers": {"team_share_answers": "true"},
    "reworded": {"team_share_answers": "true"},  # developers 2..N ask in their own words (bench/bill_reword.py)
}
# Where each variant's figures go in the results; the default (facts only) at the top.
VARIANT_KEYS = {"answers": "with_shared_answers", "reworded": "with_reworded_answers"}

LIMITS = (
    "The memory models are scripted (bench/bill_memory.py): a ledger fact saves what their rules let it save. "
    "Trusting skips a file's Read when an answer or fact names the file; strict never skips a Read for a fact "
    "(a fact shows no bytes), it only skips the search for where a name is defined.",
    "Every developer replays the same tasks and edits: the best case for sharing (a real team asks about "
    "overlapping, not identical, code). Facts about a file hold only where its bytes match, so what developer 1 "
    "learned after an edit reaches the others only once they made the same edit (at their next compaction).",
    "Pulls and pushes are counted from each server's ledger at the end against the store's rows: a fact a "
    "ledger dropped before the end is not counted.",
    "Only a fact grounded on files whose bytes the server saw (read, held, outlined by a symbol lookup, or "
    "reported by the hooks) can be shared; a fact with no grounds holds nowhere in particular and stays local.",
    "With team_share_answers on, every later developer asks developer 1's questions word for word about the same "
    "bytes, so each one is answered from the store: the upper bound of what sharing answers saves. A real team "
    "repeats a question less often (an agent fleet running the same tasks, more often).",
)


# -- one team (one memory model) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TeamJob:
    """One memory model's team: its developers replay `load` one after another against the store at `url`."""

    repo: str
    load: Workload
    mode: str
    developers: int
    url: str
    team: str  # the part of the remote URL that keeps this team's facts apart from any other's
    command: ServerCommand
    options: tuple[tuple[str, str], ...]
    seed: int
    poll_s: float = STORE_POLL_S
    reword: bool = False  # developers 2..N ask the same tasks in their own words


def team_remote(repo: str, team: str) -> str:
    return REMOTE.format(repo=repo, team=team)


def team_checkout(repo: Repo, target: Path, remote: str) -> Path:
    """A developer's checkout: the repository's files at `target` with the team's `origin` remote."""
    copy_workspace(repo, target)
    if not (target / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=target, check=True, capture_output=True, timeout=30)
    subprocess.run(["git", "remote", "remove", "origin"], cwd=target, check=False, capture_output=True, timeout=30)
    subprocess.run(["git", "remote", "add", "origin", remote], cwd=target, check=True, capture_output=True, timeout=30)
    return target


async def _store_facts(url: str, repo_id: str) -> list[Any]:
    store = await TeamStore.connect(url, pool_max=1, timeout_s=STORE_TIMEOUT_S)
    try:
        return (await store.pull(repo_id, limit=PULL_ALL)).rows
    finally:
        await store.aclose()


async def _store_count(url: str, repo_id: str | None = None, *, table: Literal["facts", "answers"] = "facts") -> int:
    store = await TeamStore.connect(url, pool_max=1, timeout_s=STORE_TIMEOUT_S)
    try:
        return await store.counts(repo_id, table=table)
    finally:
        await store.aclose()


def queued(data_dir: Path) -> int:
    """Facts waiting in a server's queue on disk for the team store."""
    try:
        return sum(1 for line in (data_dir / QUEUE_FILE).read_bytes().splitlines() if line.strip())
    except FileNotFoundError:
        return 0


def wait_for_store(
    data_dir: Path, url: str, repo_id: str, timeout_s: float = STORE_WAIT_S, poll_s: float = STORE_POLL_S
) -> dict[str, Any]:
    """Wait until the server's queue is empty and the store's count of facts and answers for `repo_id` held
    still between two looks `poll_s` apart (bounded); returns what was seen."""
    started = time.monotonic()
    last = -1
    while True:
        count = asyncio.run(_store_count(url, repo_id)) + asyncio.run(_store_count(url, repo_id, table="answers"))
        waiting = queued(data_dir)
        if not waiting and count == last:
            return {"drained": True, "store_rows": count, "waited_s": round(time.monotonic() - started, 2)}
        if time.monotonic() - started > timeout_s:
            return {"drained": False, "store_rows": count, "queued": waiting, "waited_s": round(timeout_s, 2)}
        last = count
        time.sleep(poll_s)  # polling another process's background push, bounded above


FactKey = tuple[str, frozenset[tuple[str, str]]]


@dataclass(frozen=True)
class HeldFact:
    """A ledger fact as a server's snapshot kept it."""

    text: str
    sources: tuple[tuple[str, str], ...]
    team: str = ""
    stale: bool = False

    @property
    def key(self) -> FactKey:
        return self.text, frozenset(self.sources)


def ledger_facts(data_dir: Path) -> list[HeldFact]:
    """What the server's ledgers held when it stopped (read from its snapshots)."""
    store = SnapshotStore(data_dir)
    held: list[HeldFact] = []
    try:
        for meta in store.list_meta():
            snapshot = store.load(meta.workspace_id)
            ledger = snapshot.window.ledger if snapshot is not None else None
            if ledger is None or isinstance(ledger, str):
                continue
            held += [HeldFact(f.text, tuple(sorted(f.sources.items())), f.team, f.stale) for f in ledger.facts]
    finally:
        store.close()
    return held


def ledger_figures(held: Sequence[HeldFact], stored: set[FactKey]) -> dict[str, int]:
    """A developer's ledger at the end against the store: facts from the team; facts learned here, those
    grounded on files (only they may leave), those the store holds (pushed, or confirmed when an earlier
    developer pushed them first), and the grounded, fresh ones it does not (the sharing policy kept them)."""
    own = [f for f in held if not f.team]
    grounded = [f for f in own if f.sources]
    return {
        "ledger_facts": len(held),
        "ledger_facts_from_team": len(held) - len(own),
        "ledger_facts_learned": len(own),
        "ledger_facts_grounded": len(grounded),
        "ledger_facts_in_store": sum(1 for f in own if f.key in stored),
        "ledger_facts_kept_back": sum(1 for f in grounded if not f.stale and f.key not in stored),
    }


def run_team(job: TeamJob) -> dict[str, Any]:
    """The team's developers in turn; {"developers": [figures...], "store": {...}}."""
    logging.basicConfig(level=logging.WARNING)
    repo = load_repo(job.repo)
    tasks = build_tasks(repo, job.load, job.seed)
    remote = team_remote(job.repo, job.team)
    repo_id = normalize_remote(remote) or remote
    developers: list[dict[str, Any]] = []
    held: list[list[HeldFact]] = []
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"team-{job.repo}-{job.mode}-", dir=RUNS_DIR) as name:
        tmp = Path(name).resolve()
        clock = VirtualClock()
        with fake_provider(clock) as fake:
            for index in range(1, job.developers + 1):
                started = time.perf_counter()
                asked = reworded(tasks, index - 1) if job.reword else tasks
                home = tmp / f"developer-{index}"
                workspace = team_checkout(repo, home / "src" / f"checkout-{index}" / repo.name, remote)
                # Each developer starts a day after the last one ended: no provider cache outlives the gap.
                clock = VirtualClock(clock.now + DAY_S, publish=home / "virtual-clock")
                options = {
                    **SERVER_OPTIONS,
                    **dict(job.options),
                    "team_store": job.url,
                    "team_user": f"developer-{index}",
                }
                with ServerProcess(job.command, fake.base_url, home, options) as server:
                    arm = memory_workload(repo, asked, job.mode, fake, server, workspace, clock)
                    handed = wait_for_store(home / "data", job.url, repo_id, poll_s=job.poll_s)
                figures = developer_figures(index, arm.figures(), handed)
                developers.append(figures | {"seconds": round(time.perf_counter() - started, 1)})
                held.append(ledger_facts(home / "data"))
    rows = asyncio.run(_store_facts(job.url, repo_id))
    stored = {(row.text, frozenset(row.sources.items())) for row in rows}
    for figures, facts in zip(developers, held, strict=True):
        figures.update(ledger_figures(facts, stored))
        figures["store_facts_first_learned"] = sum(1 for row in rows if row.user == f"developer-{figures['index']}")
    answers = asyncio.run(_store_count(job.url, repo_id, table="answers"))
    return {"developers": developers, "store": {"facts": len(rows), "answers": answers}}


def developer_figures(index: int, arm: Mapping[str, Any], handed: Mapping[str, Any]) -> dict[str, Any]:
    """One developer's figures from its arm-B run (`ArmRun.figures()`) and the wait for its facts to reach
    the store."""
    memory = arm["memory"]
    return {
        "index": index,
        "memory_usd_per_question": memory["usd_per_question"],
        "memory_usd": memory["usd"],
        # The first tasks: where a newcomer lacks most of what the session will teach it.
        "memory_usd_first_tasks": round(sum(memory["per_task_usd"][:FIRST_TASKS]), 6),
        "deciles_per_question_usd": memory["deciles_per_question_usd"],
        "questions": memory["questions"],
        "requests_per_question": memory["requests_per_question"],
        "tool_rounds_per_question": memory["tool_rounds_per_question"],
        "reads": memory["reads"],
        "summarizer_requests": arm.get("summarizer_requests"),
        "server_compactions": arm.get("server_compactions"),
        "answers_reused": arm.get("team_answers_reused"),
        "ask_errors": arm.get("ask_errors"),
        "failed_provider_requests": arm.get("failed_provider_requests"),
        "store": dict(handed),
    }


# -- the whole run -----------------------------------------------------------------------------------------
def shape(teams: Mapping[str, Mapping[str, Any]], bounds: Mapping[str, float] = GOALS) -> dict[str, Any]:
    """Per developer, each memory model's figures side by side, its ratios to developer 1, and the store's
    counts over every team; then whether each model's goal (`bounds`) was met."""
    modes = list(teams)
    count = max((len(t["developers"]) for t in teams.values()), default=0)
    first = {mode: teams[mode]["developers"][0]["memory_usd_per_question"] for mode in modes if count}
    developers: list[dict[str, Any]] = []
    for position in range(count):
        per_mode = {mode: teams[mode]["developers"][position] for mode in modes}
        developers.append(
            {
                "index": position + 1,
                "memory_usd_per_question": {m: d["memory_usd_per_question"] for m, d in per_mode.items()},
                "requests_per_question": {m: d["requests_per_question"] for m, d in per_mode.items()},
                "over_first": {m: _ratio(d["memory_usd_per_question"], first[m]) for m, d in per_mode.items()},
                "first_tasks_over_first": {
                    m: _ratio(d["memory_usd_first_tasks"], teams[m]["developers"][0]["memory_usd_first_tasks"])
                    for m, d in per_mode.items()
                },
                "by_mode": per_mode,
            }
        )
    pulls = sum(d["ledger_facts_from_team"] for t in teams.values() for d in t["developers"])
    pushes = sum(d["ledger_facts_in_store"] for t in teams.values() for d in t["developers"])
    store = {
        "facts": sum(t["store"]["facts"] for t in teams.values()),
        "answers": sum(t["store"].get("answers", 0) for t in teams.values()),
        # The reason a fact stays local: no grounds (none of its files' bytes seen) or the sharing policy.
        "facts_learned_ungrounded": sum(
            d["ledger_facts_learned"] - d["ledger_facts_grounded"] for t in teams.values() for d in t["developers"]
        ),
        "facts_kept_back": sum(d["ledger_facts_kept_back"] for t in teams.values() for d in t["developers"]),
        "pulls": pulls,
        "pushes": pushes,
        "by_mode": {mode: dict(t["store"]) for mode, t in teams.items()},
        "counted": "facts: rows in the store; pulls: facts from the team in the developers' ledgers at the end; "
        "pushes: facts the developers' ledgers learned themselves that the store holds at the end (pushed, or "
        "confirmed when an earlier developer pushed them first); a fact a ledger dropped before the end is not "
        "counted.",
    }
    return {"developers": developers, "store": store, "goals": goals(developers, bounds)}


def shape_variants(teams: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, Any]:
    """The default variant's figures at the top (facts only), the others under their VARIANT_KEYS."""
    by_variant: dict[str, dict[str, Mapping[str, Any]]] = {}
    for (variant, mode), team in teams.items():
        by_variant.setdefault(variant, {})[mode] = team
    shaped: dict[str, Any] = shape(by_variant["facts"]) if "facts" in by_variant else {}
    for variant, key in VARIANT_KEYS.items():
        if variant in by_variant:
            bounds = dict.fromkeys(GOALS, REWORDED_GOAL) if variant == "reworded" else GOALS
            shaped[key] = shape(by_variant[variant], bounds)
    return shaped


def goals(developers: Sequence[Mapping[str, Any]], bounds: Mapping[str, float] = GOALS) -> dict[str, Any]:
    """For each memory model: the worst ratio of developers 2..N to developer 1, against its bound."""
    out: dict[str, Any] = {}
    later = developers[1:]
    for mode, bound in bounds.items():
        ratios = [d["over_first"].get(mode) for d in later]
        known = [r for r in ratios if isinstance(r, (int, float))]
        worst = max(known) if known else None
        out[mode] = {"bound": bound, "worst_ratio": worst, "met": worst is not None and worst <= bound}
    return out


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b:
        return None
    return round(a / b, 3)


@contextmanager
def team_store(url: str) -> Iterator[str]:
    """The store's URL: the one given, else a database of a throwaway PostgreSQL cluster, removed at the end."""
    if url:
        yield url
        return
    from live_memory.testing.postgres import PostgresCluster, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        raise SystemExit(f"no PostgreSQL to start ({reason}); pass --store postgresql://...")
    cluster = PostgresCluster.launch()
    try:
        yield cluster.url(cluster.create_database())
    finally:
        cluster.destroy()


def run(
    *,
    quick: bool = False,
    repo: str = REPO,
    load: Workload | None = None,
    developers: int = DEVELOPERS,
    modes: Sequence[str] = MODES,
    variants: Sequence[str] = tuple(VARIANTS),
    store: str = "",
    command: ServerCommand | None = None,
    options: Mapping[str, str] | None = None,
    jobs: int = 2,
    seed: int = SEED,
    store_poll_s: float = STORE_POLL_S,
) -> dict[str, Any]:
    command = command or ServerCommand()
    load = load or (QUICK_LOAD if quick else FULL_LOAD)
    load_repo(repo)  # fail early (and download once) before the workers start
    started = time.perf_counter()
    run_id = secrets.token_hex(4)  # a team per model and run: a given store may hold earlier runs' facts
    teams = [(variant, mode) for variant in variants for mode in modes]
    with team_store(store) as url:
        todo = [
            TeamJob(
                repo,
                load,
                mode,
                developers,
                url,
                f"{variant}-{mode}-{run_id}",
                command,
                tuple(sorted({**(options or {}), **VARIANTS[variant]}.items())),
                seed,
                store_poll_s,
                reword=variant == "reworded",
            )
            for variant, mode in teams
        ]
        done = map_jobs(run_team, todo, jobs)
    repo_data = load_repo(repo)
    return {
        "method": (__doc__ or "").strip(),
        "limits": list(LIMITS),
        "config": {
            "quick": quick,
            "seed": seed,
            "repo": repo,
            "repo_digest": repo_data.digest(),
            "workload": load.name,
            "tasks": len(build_tasks(repo_data, load, seed)),
            "developers": developers,
            "modes": list(modes),
            "variants": {variant: VARIANTS[variant] for variant in variants},
            "store": "given (--store)" if store else "a throwaway PostgreSQL cluster (live_memory/testing/postgres.py)",
            "remote": team_remote(repo, "<model>-<run>"),
            "server": command.describe(),
            "server_options": {**SERVER_OPTIONS, **(options or {}), "team_store": "the store above"},
        },
        **shape_variants(dict(zip(teams, done, strict=True))),
        "seconds": round(time.perf_counter() - started, 1),
    }


# -- printing and the command ------------------------------------------------------------------------------
def print_figures(data: Mapping[str, Any]) -> None:
    if "developers" in data:
        print_variant(data, f"Team bill: {data['config']['repo']} / {data['config']['workload']}, facts shared")
    if "with_shared_answers" in data:
        title = f"Team bill: {data['config']['repo']} / {data['config']['workload']}, facts and answers shared"
        print_variant(data["with_shared_answers"], title)
    if "with_reworded_answers" in data:
        title = f"Team bill: {data['config']['repo']} / {data['config']['workload']}, answers shared, reworded"
        print_variant(data["with_reworded_answers"], title)


def print_variant(data: Mapping[str, Any], title: str) -> None:
    rows = []
    for d in data["developers"]:
        for mode in d["memory_usd_per_question"]:
            mine = d["by_mode"][mode]
            rows.append(
                (
                    f"developer {d['index']} {mode}",
                    f"${d['memory_usd_per_question'][mode]:.5f}",
                    "–" if d["over_first"][mode] is None else f"{d['over_first'][mode]:.2f}x",
                    d["requests_per_question"][mode],
                    mine["reads"],
                    f"{mine['ledger_facts_learned']}/{mine['ledger_facts_grounded']}/{mine['ledger_facts_in_store']}",
                    mine["ledger_facts_from_team"],
                    mine["store_facts_first_learned"],
                )
            )
    print_table(
        [
            "developer / model",
            "memory $/q",
            "vs dev 1",
            "req/q",
            "reads",
            "learned/grounded/in store",
            "from team",
            "new in store",
        ],
        rows,
        title=title,
    )
    store = data["store"]
    print(f"  store: {store['facts']} facts, {store['answers']} answers, {store['pulls']} facts pulled into "
          f"ledgers, {store['pushes']} pushed")  # fmt: skip
    for mode, goal in data["goals"].items():
        print(f"  goal {mode}: developers 2..N <= {goal['bound']}x of developer 1: worst {goal['worst_ratio']}x, "
              f"{'met' if goal['met'] else 'not met'}")  # fmt: skip


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.team_bill", description=__doc__.split("\n")[0] if __doc__ else ""
    )
    parser.add_argument("--quick", action="store_true", help="a small workload (under 3 minutes)")
    parser.add_argument("--store", default="", help="a team store's postgresql:// URL (default: a throwaway one)")
    parser.add_argument("--developers", type=int, default=DEVELOPERS, help="developers in the team (at least 2)")
    parser.add_argument("--repo", default=REPO, help="live-memory or django")
    parser.add_argument("--workload", default="", help="a session-bill workload name, e.g. medium-natural-60")
    parser.add_argument("--modes", default=",".join(MODES), help="memory models: strict,trusting")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="what the team shares: facts (only), answers (facts and answers), reworded (answers; developers 2..N "
        "ask in their own words)",
    )
    parser.add_argument("--server-python", default=ServerCommand().python, help="interpreter that runs the server")
    parser.add_argument("--server-src", default=str(ServerCommand().src), help="the server checkout's server/")
    parser.add_argument("--option", action="append", default=[], help="extra server option key=value")
    parser.add_argument("--jobs", type=int, default=2, help="memory models run in parallel")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", default="", help=f"results file (default bench/results/{NAME}.json)")
    args = parser.parse_args(argv)
    if args.developers < 2:
        parser.error("--developers must be at least 2 (developer 1 learns, the others pull)")
    unknown = [m for m in args.modes.split(",") if m and m not in MODES]
    if unknown:
        parser.error(f"unknown memory model(s) {', '.join(unknown)}: use {', '.join(MODES)}")
    unknown = [v for v in args.variants.split(",") if v and v not in VARIANTS]
    if unknown or not args.variants.strip(","):
        parser.error(f"unknown or no variant(s) {', '.join(unknown)}: use {', '.join(VARIANTS)}")
    if any("=" not in o for o in args.option):
        parser.error("--option takes key=value")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    warn_if_busy()
    command = ServerCommand.given(args.server_python, args.server_src)
    data = run(
        quick=args.quick,
        repo=args.repo,
        load=parse_workload(args.workload) if args.workload else None,
        developers=args.developers,
        modes=[m for m in args.modes.split(",") if m],
        variants=[v for v in args.variants.split(",") if v],
        store=args.store,
        command=command,
        options=dict(o.split("=", 1) for o in args.option),
        jobs=args.jobs,
        seed=args.seed,
    )
    print_figures(data)
    path = write_json(Path(args.out), data) if args.out else write_results(NAME, data)
    print(f"\nwrote {path} ({data['seconds']} s)")
    return data


if __name__ == "__main__":
    main()
