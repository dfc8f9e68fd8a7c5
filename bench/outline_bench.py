"""Tree outline benchmark: what listing the files' definitions after a small repository's tree adds to the tree
scan that runs when a workspace loads and at each re-freeze (server/live_memory/outline/tree_outline.py).

On this repository at the session bill's fixed commit (its whole tree leaves the prompt's head under Haiku
4.5's 4,096-token cache minimum), the scan as the server runs it for Haiku (tree, then the outline up to the
minimum) is timed the first time (a workspace's load: every file read and parsed) and again (a re-freeze: the
files unchanged), against the same scan with a cache minimum the tree alone clears (tree only), in turn,
medians of RUNS. Writes bench/results/outline_bench.json.

Run: `python -m bench.outline_bench` (seconds).
"""

from __future__ import annotations

import asyncio
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bill_memory import copy_workspace
from bench.bill_workload import load_repo
from bench.common import save_results, warn_if_busy
from live_memory import constants as C
from live_memory.core.prompts import OUTLINE_HEADING
from live_memory.outline.directory_tree import TreePolicy
from live_memory.outline.tree_outline import forget_outlines, scan_tree
from live_memory.providers.profiles import min_cacheable_tokens_for
from live_memory.workspaces.loading import HEAD_WITHOUT_TREE

NAME = "outline_bench"
RUNS = 15
BUDGET_TOKENS = 200_000
CHARS_PER_TOKEN = C.CHARS_PER_TOKEN


def policy(floor_tokens: int) -> TreePolicy:
    return TreePolicy(
        configured_tokens=C.DIRECTORY_TREE_TOKENS,
        cache_floor_tokens=floor_tokens,
        head_chars=len(HEAD_WITHOUT_TREE),
        max_share=C.DIRECTORY_TREE_SHARE,
    )


async def measure(root: Path) -> dict[str, Any]:
    outlined = policy(math.ceil(min_cacheable_tokens_for("claude-haiku-4-5") * C.CACHE_MIN_MARGIN))
    plain = policy(0)

    async def scan(p: TreePolicy) -> str:
        return (await scan_tree(root, p, budget_tokens=BUDGET_TOKENS, chars_per_token=CHARS_PER_TOKEN)).text

    samples: dict[str, list[float]] = {"first": [], "again": [], "tree_only": []}
    for _ in range(RUNS):
        forget_outlines()  # a workspace's load: every file is read and parsed
        for label, p in (("first", outlined), ("again", outlined), ("tree_only", plain)):
            started = time.perf_counter()
            await scan(p)
            samples[label].append(time.perf_counter() - started)
    text, tree = await scan(outlined), await scan(plain)
    outline = text.split(OUTLINE_HEADING, 1)[1] if OUTLINE_HEADING in text else ""
    first_ms, again_ms, plain_ms = (statistics.median(samples[k]) * 1000 for k in ("first", "again", "tree_only"))
    head = len(HEAD_WITHOUT_TREE)
    return {
        "repo": "live-memory (the session bill's fixed commit)",
        "runs": RUNS,
        "files": int(tree.split(" ", 1)[0]),
        "first_scan_ms": round(first_ms, 2),
        "rescan_ms": round(again_ms, 2),
        "tree_only_scan_ms": round(plain_ms, 2),
        "first_over_tree_only": round(first_ms / plain_ms, 2),
        "rescan_over_tree_only": round(again_ms / plain_ms, 2),
        "files_outlined": len(outline.strip().splitlines()),
        "head_tokens_tree_only": round((head + len(tree)) / CHARS_PER_TOKEN),
        "head_tokens_outlined": round((head + len(text)) / CHARS_PER_TOKEN),
        "cache_minimum_tokens": min_cacheable_tokens_for("claude-haiku-4-5"),
    }


def main() -> dict[str, Any]:
    warn_if_busy()
    with tempfile.TemporaryDirectory() as tmp:  # a workspace as the session bill makes it: a fresh git init
        result = asyncio.run(measure(copy_workspace(load_repo("live-memory"), Path(tmp) / "live-memory")))
    for key, value in result.items():
        print(f"  {key:<26} {value}")
    save_results(NAME, result)
    return result


if __name__ == "__main__":
    main()
