"""Tools benchmark: directory-tree build vs bare `git ls-files`, and Grep latency vs running ripgrep
directly, on (a) a real repository (the Django 5.1.4 sdist, committed into a fresh git repo) and
(b) a synthetic 100k-file repository. Medians of several runs. Not part of the test suite.

Run: `python -m bench.tools_bench` (also part of `make bench`). The first run downloads the sdist with
pip and builds both repositories under bench/.cache/ (keep that directory out of git); later runs
reuse them. Writes bench/results/tools.json. Goals: tree <= 2x `git ls-files`, Grep <= 1.3x rg. Also
times `find_symbol` (the lookup every question's names get before the model sees it: a ripgrep scan, then
outlines of the files it finds) beside a Grep for the same definition in the same run.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.provenance import write_json
from live_memory.constants import DIRECTORY_TREE_SHARE, MAX_TOOL_OUTPUT_BYTES
from live_memory.outline.directory_tree import build_directory_tree
from live_memory.testing.git_env import git_env
from live_memory.tools import Toolbox
from live_memory.tools.grep_engines import GrepQuery, ripgrep_argv

HERE = Path(__file__).parent
CACHE = HERE / ".cache"
RESULTS = HERE / "results" / "tools.json"
DJANGO = "django==5.1.4"
SYNTHETIC_FILES = 100_000
RUNS = 7
# The budget the manager gives the tree for a 200k-token window (10% at ~4 chars per token).
TREE_BUDGET = int(200_000 * DIRECTORY_TREE_SHARE * 4)
TREE_GOAL = 2.0
GREP_GOAL = 1.3

# Names looked up with find_symbol (definition, with code), timed beside Grep for `def NAME|class NAME`.
SYMBOLS = {
    "django": ["get_queryset", "QuerySet", "render_to_string", "_check_ordering"],
    "synthetic": ["func_1234", "func_99999", "Widget950", "no_such_name_zzz"],
}
PATTERNS = {
    "django": ["def get_queryset", r"class \w+Admin\(", "TODO", r"^import re$", "zzz_no_such_token_zzz"],
    "synthetic": [
        "TODO",
        r"def func_1234\b",
        r"class Widget9\d\d",
        r"return x \* 42",
        "zzz_no_such_token_zzz",
    ],
}


# -- fixtures -------------------------------------------------------------------------------------
def _git(repo: Path, *args: str) -> None:
    env = git_env(CACHE / "git-home")
    env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = "@1704067200 +0000"
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=1800)


def _commit_all(repo: Path) -> None:
    (CACHE / "git-home").mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "import")
    (repo / ".bench-ready").write_text("ok\n")  # untracked marker: the repo is complete


def django_repo() -> Path:
    _ensure_cache()
    repo = CACHE / "django-5.1.4"
    if (repo / ".bench-ready").exists():
        return repo
    sdists = CACHE / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    if not list(sdists.glob("[Dd]jango-5.1.4.tar.gz")):
        print(f"downloading the {DJANGO} sdist with pip ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                DJANGO,
                "-d",
                str(sdists),
            ],
            check=True,
            timeout=600,
        )
    archive = next(sdists.glob("[Dd]jango-5.1.4.tar.gz"))
    staging = CACHE / "django-staging"
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    (next(staging.iterdir())).rename(repo)
    staging.rmdir()
    print("committing the Django tree into a git repository ...", flush=True)
    _commit_all(repo)
    return repo


def synthetic_repo() -> Path:
    repo = CACHE / "synthetic-100k"
    if (repo / ".bench-ready").exists():
        return repo
    print(f"generating a synthetic {SYNTHETIC_FILES}-file repository ...", flush=True)
    words = ["alpha", "beta", "gamma", "delta", "TODO", "omega"]
    per_leaf = 100
    for i in range(SYNTHETIC_FILES):
        top, mid, leaf = i // 5000, (i // 500) % 10, (i // per_leaf) % 5
        directory = repo / f"pkg{top:02d}" / f"mod{mid}" / f"sub{leaf}"
        if i % per_leaf == 0:
            directory.mkdir(parents=True, exist_ok=True)
        body = (
            f'"""module {i}"""\nimport os\n\n\ndef func_{i}(x):\n    return x * {i % 97}\n\n\n'
            f"class Widget{i % 1000}:\n    NOTE = '{words[i % len(words)]}'\n"
        )
        (directory / f"file_{i}.py").write_text(body)
    (repo / ".gitignore").write_text("build/\n*.pyc\n")
    print("committing it (this takes a while once) ...", flush=True)
    _commit_all(repo)
    return repo


# -- measurements ---------------------------------------------------------------------------------
# The machine may be busy (other processes, 2 cores): the contenders of one comparison are run
# interleaved, round by round in rotating order, so load drifts hit them alike; medians are reported.
Contender = Callable[[], Awaitable[object]]


async def _interleaved(contenders: list[Contender], runs: int = RUNS) -> list[float]:
    for run in contenders:  # warm the page cache and git's index caches
        await run()
    samples: list[list[float]] = [[] for _ in contenders]
    for round_index in range(runs):
        shift = round_index % len(contenders)
        for index in [*range(shift, len(contenders)), *range(shift)]:
            started = time.perf_counter()
            await contenders[index]()
            samples[index].append(time.perf_counter() - started)
    return [statistics.median(s) * 1000 for s in samples]


def _command(argv: list[str], cwd: Path) -> Contender:
    async def run() -> None:  # blocking on purpose: the baseline is the bare command
        subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False, timeout=300)  # noqa: ASYNC221

    return run


async def measure(name: str, repo: Path) -> dict[str, Any]:
    ls_files = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]

    async def tree_build() -> str:
        return await build_directory_tree(repo, budget_chars=TREE_BUDGET)

    tree_ms, git_ms = await _interleaved([tree_build, _command(ls_files, repo)])
    tree = await tree_build()
    file_count = int(tree.split(" ", 1)[0])
    box = Toolbox(repo)
    assert box.ripgrep is not None, "ripgrep is required for this benchmark"
    grep_rows: list[dict[str, Any]] = []
    for pattern in PATTERNS[name]:
        arguments = {"pattern": pattern, "output_mode": "content", "head_limit": 200}
        outcome = await box.run("Grep", arguments)
        argv = ripgrep_argv(box.context, GrepQuery(pattern, "", False, None, "content", True))

        async def grep_tool(a: dict[str, Any] = arguments) -> object:
            return await box.run("Grep", a)

        plain = [argv[0], "-n", "-i", pattern]
        ours_ms, same_ms, plain_ms = await _interleaved([grep_tool, _command(argv, repo), _command(plain, repo)])
        first = outcome.text.splitlines()[0] if outcome.text else ""
        grep_rows.append(
            {
                "pattern": pattern,
                "grep_tool_ms": round(ours_ms, 2),
                "rg_same_flags_ms": round(same_ms, 2),
                "rg_plain_ms": round(plain_ms, 2),
                "ratio_vs_same_flags": round(ours_ms / same_ms, 2),
                "ratio_vs_plain_rg": round(ours_ms / plain_ms, 2),
                "first_line": first[:80],
            }
        )
    symbol_rows: list[dict[str, Any]] = []
    for symbol in SYMBOLS[name]:
        lookup_args = {"name": symbol, "kind": "definition", "code": True}
        grep_args = {"pattern": rf"(def|class) {symbol}\b", "output_mode": "content", "head_limit": 200}

        async def lookup(a: dict[str, Any] = lookup_args) -> object:
            return await box.run("find_symbol", a)

        async def grep_same(a: dict[str, Any] = grep_args) -> object:
            return await box.run("Grep", a)

        lookup_ms, grep_ms = await _interleaved([lookup, grep_same])
        found = (await box.run("find_symbol", lookup_args)).text.splitlines()
        symbol_rows.append(
            {
                "name": symbol,
                "find_symbol_ms": round(lookup_ms, 2),
                "grep_ms": round(grep_ms, 2),
                "ratio_vs_grep": round(lookup_ms / grep_ms, 2),
                "first_hit": (found[1] if len(found) > 1 else found[0] if found else "")[:80],
            }
        )
    return {
        "repo": name,
        "files": file_count,
        "find_symbol": symbol_rows,
        "find_symbol_ratio_median_vs_grep": round(statistics.median(r["ratio_vs_grep"] for r in symbol_rows), 2),
        "git_ls_files_ms": round(git_ms, 2),
        "directory_tree_ms": round(tree_ms, 2),
        "tree_ratio": round(tree_ms / git_ms, 2),
        "tree_chars": len(tree),
        "grep": grep_rows,
        "grep_ratio_median_vs_same_flags": round(statistics.median(r["ratio_vs_same_flags"] for r in grep_rows), 2),
        "grep_ratio_median_vs_plain_rg": round(statistics.median(r["ratio_vs_plain_rg"] for r in grep_rows), 2),
    }


def _print(result: dict[str, Any]) -> None:
    print(f"\n{result['repo']}: {result['files']} files")
    print(f"  directory tree  {result['directory_tree_ms']:9.1f} ms   git ls-files {result['git_ls_files_ms']:8.1f} ms")
    print(f"  tree ratio      {result['tree_ratio']:9.2f}x  (goal <= {TREE_GOAL}x, {result['tree_chars']} chars)")
    print(f"  {'Grep pattern':<28}{'tool ms':>10}{'rg same':>10}{'rg plain':>10}{'x same':>8}{'x plain':>8}")
    for row in result["grep"]:
        print(
            f"  {row['pattern']:<28}{row['grep_tool_ms']:>10.1f}{row['rg_same_flags_ms']:>10.1f}"
            f"{row['rg_plain_ms']:>10.1f}{row['ratio_vs_same_flags']:>8.2f}{row['ratio_vs_plain_rg']:>8.2f}"
        )
    print(
        f"  median Grep ratio: {result['grep_ratio_median_vs_same_flags']}x vs rg with the same flags, "
        f"{result['grep_ratio_median_vs_plain_rg']}x vs plain `rg -n -i` (goal <= {GREP_GOAL}x)"
    )
    print(f"  {'find_symbol name':<28}{'tool ms':>10}{'Grep ms':>10}{'x Grep':>8}")
    for row in result["find_symbol"]:
        print(f"  {row['name']:<28}{row['find_symbol_ms']:>10.1f}{row['grep_ms']:>10.1f}{row['ratio_vs_grep']:>8.2f}")


def _ensure_cache() -> None:
    """Create the cache directory, ignored by git from inside (as .pytest_cache does), so its ~100k
    files can never be committed by accident even before the repository's .gitignore lists it."""
    CACHE.mkdir(parents=True, exist_ok=True)
    marker = CACHE / ".gitignore"
    if not marker.exists():
        marker.write_text("# created by bench/tools_bench.py: everything here is a rebuildable cache\n*\n")


def main() -> dict[str, Any]:
    _ensure_cache()
    load = os.getloadavg()[0]
    if load > 1.0:
        print(f"note: load average {load:.1f} on {os.cpu_count()} cores; figures will be noisy", flush=True)
    repos = {"django": django_repo(), "synthetic": synthetic_repo()}
    results = [asyncio.run(measure(name, repo)) for name, repo in repos.items()]
    for result in results:
        _print(result)
    figures = {
        "runs_per_measurement": RUNS,
        "tree_budget_chars": TREE_BUDGET,
        "max_output_bytes": MAX_TOOL_OUTPUT_BYTES,
    }
    figures["results"] = results  # type: ignore[assignment]
    print(f"\nwrote {write_json(RESULTS, figures)}")
    return figures


if __name__ == "__main__":
    main()
