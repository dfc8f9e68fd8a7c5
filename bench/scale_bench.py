"""Big repositories: a question naming code at 3k, 15k and 55k files, and a prompt that stays bounded however much
the memory sees, each goal against its floor measured in the same run.

Repositories (bench/big_repos.py): real sdists side by side, committed into git, built once under bench/.cache:
3k = SymPy 1.13.3 + Sphinx 7.4.7; 15k = those + Django 5.1.4 + Ansible 10.7.0's first collections; 55k = all four.
The server runs as `live-memory` does, in a child process (its own interpreter: its RSS and CPU are its own), on the
fake provider (an instant answer); questions go through the official MCP client. Per repository:

- listing: the directory tree (`build_directory_tree`: git's listing, rendered) against bare `git ls-files`;
- index build: the build child (`python -m live_memory.tools.index_child`), wall time, CPU and peak RSS, against
  its floor: `rg --files` plus parsing every file it indexes (`build_card`, what any index must do);
- incremental update: files edited in place, re-indexed (`refresh`), per file;
- identifier questions ("How does `lambdify` work?", "Where is `main` defined?", "Who uses `lambdify`?", and a
  name defined nowhere), asked on a fresh server (cold: the first question, the index being built, against the
  same on a server without the index, today's) and once the index is ready (warm, against the 3k repository's);
- peak RSS of the server over those questions, with the index and without;
- the first prompt of a question after 600 teed reads, and after a restart, against the same with none;
- the first question after a restart (tree, outline and index taken back from disk; the provider's client
  prepared meanwhile) against a cold one, each server up for SETTLE_S before its first question;
- the watcher: CPU for 20 new directories over 10 s with every directory watched, against the same without a
  watcher; and how many directories the default cap watches.

Run: `python -m bench.scale_bench [--sizes 3k,15k,55k]` (minutes; the 55k build takes the longest), then
`python -m bench.report --only scale`. Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx2

from bench.big_repos import SIZES, big_repo
from bench.common import McpAsker, save_results, server_process, warn_if_busy
from bench.scale_parts import (
    edit_cost,
    first_prompt_chars,
    index_build_cost,
    listing_cost,
    parse_floor,
    watcher_cost,
)
from live_memory.testing.llm_server import FakeLLM

NAME = "scale"
# The identifier questions: a name defined once (SymPy's lambdify, in every repository), a name defined in many
# places, the uses of a name, and a name defined nowhere; each asked twice in other words when warm.
QUESTIONS = {
    "defined once": ["How does `lambdify` work?", "Explain what `lambdify` does."],
    "defined in many places": ["Where is `main` defined?", "Which file defines `main`?"],
    "its uses": ["Who uses `lambdify`?", "Which files use `lambdify`?"],
    "defined nowhere": ["How does `no_such_name_zz` work?", "Explain `no_such_name_zz`."],
}
GENERIC = ("How is the project organised?", "What are the main parts of this code base?")
SERVER: dict[str, Any] = {
    "force_explore_when_cold": "false",
    "reuse_answers": "false",
    "watch": "false",
    "allowed_roots": "/",
}
READY_TIMEOUT_S = 3600.0
SETTLE_S = 3.0
COLD_ROUNDS = 3  # fresh servers per cold figure, in turn with the floor's: the median (a busy machine is noisy)


async def _ask(url: str, cwd: Path, question: str) -> float:
    async with McpAsker(f"{url}/mcp", read_timeout_s=600) as asker:
        started = time.perf_counter()
        _text, error = await asker.ask(question, str(cwd))
        elapsed = time.perf_counter() - started
    if error:
        raise RuntimeError(f"{question!r} failed: {_text[:200]}")
    return elapsed


async def _index_state(url: str, repo: Path) -> dict[str, Any]:
    """The checkout's symbol index as /stats shows it (`repo` resolved already)."""
    async with httpx2.AsyncClient(base_url=url, timeout=30) as http:
        stats = (await http.get("/stats")).json()
    found = stats.get("server", {}).get("symbol_index", {})
    return dict(found.get(str(repo), {}))


async def _until_ready(url: str, repo: Path) -> dict[str, Any]:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        state = await _index_state(url, repo)
        if state.get("state") in ("ready", "failed"):
            return state
        await asyncio.sleep(1.0)
    raise RuntimeError("the index was not ready in time")


def _peak_rss_mb(pid: int) -> float | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


@contextlib.contextmanager
def _server(fake: FakeLLM, data: Path, **options: str) -> Iterator[tuple[str, int]]:
    """A server that has been up for SETTLE_S (an agent's question rarely follows a restart within milliseconds;
    a restart prepares its provider's client meanwhile, a first start does not)."""
    chosen: dict[str, Any] = {**SERVER, **options}
    with server_process(fake.base_url, data, **chosen) as server:
        time.sleep(SETTLE_S)
        yield server.url, server.pid


def _identifier_round(url: str, repo: Path, wording: int) -> dict[str, float]:
    return {kind: asyncio.run(_ask(url, repo, asked[wording])) for kind, asked in QUESTIONS.items()}


def cold_and_warm(fake: FakeLLM, repo: Path, tmp: Path) -> dict[str, Any]:
    """Today's server (no index) and this one, each fresh: the first question (cold; COLD_ROUNDS times in turn,
    the median), then, once the index is ready, the identifier questions (warm); the servers' peak RSS; then
    restarts of the indexed one against fresh starts for a question naming no code."""
    out: dict[str, Any] = {"today_cold_samples_s": [], "cold_samples_s": [], "index_at_first_answer": []}
    for round_index in range(COLD_ROUNDS):
        with _server(fake, tmp / f"today-{round_index}", symbol_index="false") as (url, pid):
            out["today_cold_samples_s"].append(asyncio.run(_ask(url, repo, QUESTIONS["defined once"][0])))
            if round_index == 0:
                out["today_questions_s"] = _identifier_round(url, repo, 1)
                out["today_peak_rss_mb"] = _peak_rss_mb(pid)
        indexed = tmp / f"indexed-{round_index}"
        with _server(fake, indexed) as (url, pid):
            out["cold_samples_s"].append(asyncio.run(_ask(url, repo, QUESTIONS["defined once"][0])))
            out["index_at_first_answer"].append(asyncio.run(_index_state(url, repo)).get("state"))
            if round_index == COLD_ROUNDS - 1:
                out["index"] = asyncio.run(_until_ready(url, repo))
                out["warm_s"] = {k: statistics.median(v) for k, v in _rounds(url, repo).items()}
                out["peak_rss_mb"] = _peak_rss_mb(pid)
                _until_tree_kept(indexed)
    out["today_cold_s"] = statistics.median(out["today_cold_samples_s"])
    out["cold_s"] = statistics.median(out["cold_samples_s"])
    out["cold_generic_samples_s"], out["restart_generic_samples_s"] = [], []
    for round_index in range(COLD_ROUNDS):
        with _server(fake, tmp / f"cold-generic-{round_index}") as (url, _pid):
            out["cold_generic_samples_s"].append(asyncio.run(_ask(url, repo, GENERIC[0])))
        with _server(fake, indexed) as (url, _pid):  # a restart: the snapshot, tree and index are on disk
            out["restart_generic_samples_s"].append(asyncio.run(_ask(url, repo, GENERIC[round_index % 2])))
            if round_index == 0:
                out["restart_index"] = asyncio.run(_until_ready(url, repo))
                out["restart_identifier_s"] = asyncio.run(_ask(url, repo, "What does `sympify` do?"))
    out["cold_generic_s"] = statistics.median(out["cold_generic_samples_s"])
    out["restart_generic_s"] = statistics.median(out["restart_generic_samples_s"])
    return out


def _rounds(url: str, repo: Path) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {kind: [] for kind in QUESTIONS}
    for wording in (1, 0, 1):  # the first wording's answer was given cold: reuse is off, each runs in full
        for kind, seconds in _identifier_round(url, repo, wording).items():
            found[kind].append(seconds)
    return found


def _until_tree_kept(data: Path) -> None:
    """The tree is kept in the background after a load: a restart measured before that would scan."""
    deadline = time.monotonic() + 600
    while not list((data / "workspaces").glob("*.tree.json")):
        if time.monotonic() > deadline:
            raise RuntimeError("the tree was not kept in time")
        time.sleep(0.5)


def measure(size: str, fake: FakeLLM) -> dict[str, Any]:
    repo = big_repo(size).resolve()
    print(f"\n{size}: {repo}", flush=True)
    with tempfile.TemporaryDirectory(prefix=f"lm-scale-{size}-") as name:
        tmp = Path(name)
        result: dict[str, Any] = {"size": size, "sdists": list(SIZES[size])}
        result["listing"] = listing_cost(repo)
        result["files"] = result["listing"]["files"]
        print(f"  listing {result['listing']}", flush=True)
        build = index_build_cost(repo, tmp / "index.sqlite")
        build.update(parse_floor(repo))
        result["index_build"] = build
        print(f"  index build {build}", flush=True)
        result["incremental"] = edit_cost(repo, tmp / "index.sqlite")
        print(f"  incremental {result['incremental']}", flush=True)
        result["questions"] = cold_and_warm(fake, repo, tmp)
        print(f"  questions {result['questions']}", flush=True)
        result["prompt"] = first_prompt_chars(fake, repo, tmp, SERVER)
        print(f"  prompt {result['prompt']}", flush=True)
        result["watcher"] = watcher_cost(repo)
        print(f"  watcher {result['watcher']}", flush=True)
    return result


def goals(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each goal of the issue, on the largest repository measured, with its floor and its verdict."""
    by_size = {r["size"]: r for r in results}
    largest = results[-1]
    small = by_size.get("3k")
    q = largest["questions"]
    warm = max(q["warm_s"].values())
    warm_small = max(small["questions"]["warm_s"].values()) if small else None
    build = largest["index_build"]
    incremental = largest["incremental"]
    prompt = largest["prompt"]
    watcher = largest["watcher"]
    return {
        "repository": largest["size"],
        "files": largest["files"],
        "warm_identifier_s": {"value": warm, "goal": 0.2, "met": warm <= 0.2},
        "warm_vs_3k": _ratio(warm, warm_small, 1.2),
        "cold_identifier_vs_today": _ratio(q["cold_s"], q["today_cold_s"], 1.0),
        "first_answer_waited_for_the_index": "ready" in q["index_at_first_answer"],
        "peak_rss_over_today_mb": _difference(q["peak_rss_mb"], q["today_peak_rss_mb"], 150.0),
        # CPU against CPU (the build runs at a lower priority: on a busy machine its wall time says more of the
        # machine than of the build); the wall times as well.
        "index_build_vs_floor": _ratio(build["cpu_s"], build["rg_files_s"] + build["parse_cpu_s"], 3.0),
        "index_build_wall_vs_floor": _ratio(build["wall_s"], build["rg_files_s"] + build["parse_s"], 3.0),
        "incremental_ms_per_file": {  # CPU milliseconds (the wall time is in the repository's figures)
            "value": incremental["cpu_ms_per_file"],
            "floor": incremental["parse_cpu_ms_per_file"],
            "goal": 10.0,
            "met": incremental["cpu_ms_per_file"] <= 10.0,
        },
        "prompt_600_reads_vs_none": _ratio(prompt["after_reads_ratio_worst"], 1.0, 1.1),
        "watcher_20_new_directories_cpu_s": {
            "value": watcher["new_directories_cpu_s"],
            "floor": watcher["unwatched_cpu_s"],
            "goal": 0.5,
            "met": watcher["new_directories_cpu_s"] <= 0.5,
        },
        "restart_vs_cold": _ratio(q["restart_generic_s"], q["cold_generic_s"], 0.5),
        "listing_vs_git": {"value": largest["listing"]["ratio"], "issue": 2.9},
    }


def _ratio(value: float | None, floor: float | None, goal: float) -> dict[str, Any]:
    if value is None or not floor:
        return {"value": value, "floor": floor, "ratio": None, "goal": goal, "met": None}
    ratio = round(value / floor, 3)
    return {"value": round(value, 4), "floor": round(floor, 4), "ratio": ratio, "goal": goal, "met": ratio <= goal}


def _difference(value: float | None, floor: float | None, goal: float) -> dict[str, Any]:
    if value is None or floor is None:
        return {"value": value, "floor": floor, "difference": None, "goal": goal, "met": None}
    difference = round(value - floor, 1)
    return {"value": value, "floor": floor, "difference": difference, "goal": goal, "met": difference <= goal}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(SIZES), help=f"comma-separated, of {', '.join(SIZES)}")
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    warn_if_busy()
    sizes = [s for s in args.sizes.split(",") if s]
    started = time.monotonic()
    with FakeLLM() as fake:
        results = [measure(size, fake) for size in sizes]
    figures = {
        "load_average": round(os.getloadavg()[0], 1),
        "cores": os.cpu_count(),
        "minutes": round((time.monotonic() - started) / 60, 1),
        "results": results,
        "goals": goals(results),
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout.strip(),
    }
    save_results(NAME, figures)
    return figures


if __name__ == "__main__":
    main()
