"""Snapshot write and load time for a context window filled to 100% of a 200k and of a 1M token budget.

Method (in-process, engine classes only)
    A `ContextWindow` is filled until `prompt_tokens()` reaches the budget: the directory tree of the
    Django 5.1.4 sdist repository (bench/.cache, built by `bench.tools_bench.django_repo`) within the
    manager's 10% tree share, a ~2k-token ledger of facts attributed to real files, manifest entries for
    real files of that repository with their true SHA-256 (1,000 for 200k, 5,000 for 1M), and
    deterministic Q&A history (questions ~120 characters, answers 1.2-2k characters) for the rest. Held file
    bytes are left out on purpose: they never reach a snapshot, so a history-heavy window is the largest
    snapshot a window of that size can produce. Timed, medians of RUNS runs, contenders interleaved in
    rotating order so that load drift hits them alike:
    - `to_json`: building the payload (in the server this runs ON the event loop, under the store lock);
    - `SnapshotStore.write_now`: json.dumps + temp file + fsync + os.replace (the directory's fsync
      runs later, coalesced, on a background thread); baseline: json.dumps of the same payload + a
      plain write, no fsync;
    - `SnapshotStore.load` (read + json.loads + schema check) + `ContextWindow.load_json`;
      baseline: read + json.loads;
    - re-validation after a restart: `safe_files.disk_hashes` over `paths_to_validate()` (real files, page
      cache warm) + `ContextWindow.revalidate`; baseline: reading the same files without hashing;
    - also `ContextWindow.prompt_tokens()`, which the question loop calls before every provider call.

Limits
    Page cache is warm for the re-validation (a cold restart would add disk reads). fsync cost depends on
    the disk and on what else writes to it (other processes share this machine); figures are medians, not
    minima. The payload mirrors `WorkspaceLifecycle.persist` (`workspace`, `window`, `stats`).

Run: `python -m bench.snapshot_io`. Writes bench/results/snapshot_io.json.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import print_table, save_results, warn_if_busy
from bench.tools_bench import django_repo
from live_memory.constants import DIRECTORY_TREE_SHARE
from live_memory.core.messages import Message, TextPart
from live_memory.core.prompts import question_block
from live_memory.fs.safe_files import disk_hashes
from live_memory.memory.context_window import ContextWindow
from live_memory.outline.directory_tree import build_directory_tree
from live_memory.workspaces.snapshot import SCHEMA_VERSION, parse_snapshot, restore_window, snapshot_payload
from live_memory.workspaces.store import SnapshotStore
from live_memory.workspaces.workspace import WorkspaceStats

NAME = "snapshot_io"
RUNS = 7
SEED = 424_242
SIZES = ((200_000, 1_000), (1_000_000, 5_000))  # (budget tokens, manifest entries)
LEDGER_FACTS = 60


def tracked_files(repo: Path) -> list[str]:
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True, timeout=120
    ).stdout.decode()
    return sorted(p for p in listing.split("\0") if p)


def build_window(repo: Path, files: list[str], budget: int, manifest_entries: int) -> ContextWindow:
    rng = random.Random(SEED + budget)
    window = ContextWindow(budget_tokens=budget)
    tree_chars = int(budget * DIRECTORY_TREE_SHARE * window.chars_per_token)
    window.set_directory_tree(asyncio.run(build_directory_tree(repo, budget_chars=tree_chars)))
    chosen = files[:: max(1, len(files) // manifest_entries)][:manifest_entries]
    for rel in chosen:
        data = (repo / rel).read_bytes()
        window.record_read(rel, hashlib.sha256(data).hexdigest(), len(data))
    facts = [
        f"- {path} holds the {Path(path).stem} logic; it is used by {rng.choice(chosen)} and configured in "
        f"django/conf/global_settings.py"
        for path in rng.sample(chosen, LEDGER_FACTS)
    ]
    window.ledger.set_from_summary("\n".join(facts), {f.path: f.sha256 for f in window.files.values()})
    window.freeze()
    total = window.prompt_tokens()  # grows by exactly the tokens of each appended message
    index = 0
    while True:
        question = f"Q{index}: where is {Path(rng.choice(chosen)).stem} handled, and what calls it? " + "x" * 40
        cites = rng.sample(chosen, 3)
        answer = "\n".join(
            f"- {rng.choice(cites)} defines the {Path(rng.choice(cites)).stem} helpers; "
            f"{rng.choice(chosen)} consumes them via an import."
            for _ in range(rng.randint(10, 16))
        )
        message = Message("user", (TextPart(question_block(question)),))
        size = window.tokens(question_block(question)) + window.tokens(answer)
        if total + size > budget:
            break
        window.add_exchange(message, question, answer, cites)
        total += size
        index += 1
    assert window.prompt_tokens() == total, (window.prompt_tokens(), total)
    return window


def _interleaved(contenders: list[Callable[[], object]], runs: int = RUNS) -> list[float]:
    """Median milliseconds of each contender, run round-robin in rotating order after one warm-up."""
    for run in contenders:
        run()
    samples: list[list[float]] = [[] for _ in contenders]
    for round_index in range(runs):
        shift = round_index % len(contenders)
        for index in [*range(shift, len(contenders)), *range(shift)]:
            started = time.perf_counter()
            contenders[index]()
            samples[index].append((time.perf_counter() - started) * 1000)
    return [statistics.median(s) for s in samples]


def measure(repo: Path, files: list[str], budget: int, manifest_entries: int, tmp: Path) -> dict[str, Any]:
    window = build_window(repo, files, budget, manifest_entries)
    store = SnapshotStore(tmp / f"data-{budget}")
    workspace = f"bench{budget}"
    plain = tmp / f"plain-{budget}.json"

    def payload() -> dict[str, Any]:
        return snapshot_payload(str(repo), window, WorkspaceStats())

    body = payload()

    def write_now() -> None:
        store.write_now(workspace, body)

    def plain_write() -> None:
        data = json.dumps({"schema": 1, "saved_at": time.time(), **body}, separators=(",", ":"))
        plain.write_text(data, encoding="utf-8")

    to_json_ms, write_ms, plain_write_ms = _interleaved([payload, write_now, plain_write])
    snapshot_bytes = store.path_for(workspace).stat().st_size

    def load() -> None:
        loaded = store.load(workspace)
        assert loaded is not None
        restore_window(ContextWindow(budget_tokens=budget), loaded.window)

    def load_only() -> None:
        assert store.load(workspace) is not None

    def plain_load() -> None:
        json.loads(plain.read_bytes())

    load_total_ms, load_only_ms, plain_load_ms = _interleaved([load, load_only, plain_load])
    paths = sorted(window.paths_to_validate())
    parsed = parse_snapshot({"schema": SCHEMA_VERSION, **body})

    def revalidate() -> None:
        restored = ContextWindow(budget_tokens=budget)
        restore_window(restored, parsed.window)
        restored.revalidate(disk_hashes(repo, paths))

    def read_only() -> None:
        for rel in paths:
            (repo / rel).read_bytes()

    def load_json_only() -> None:
        restore_window(ContextWindow(budget_tokens=budget), parse_snapshot({"schema": SCHEMA_VERSION, **body}).window)

    revalidate_ms, read_ms, load_json_ms = _interleaved([revalidate, read_only, load_json_only])
    prompt_tokens_ms = _interleaved([window.prompt_tokens])[0]
    return {
        "budget_tokens": budget,
        "prompt_tokens": window.prompt_tokens(),
        "qa_pairs": window.qa_count(),
        "manifest_entries": len(window.files),
        "ledger_facts": len(window.ledger.facts),
        "paths_validated": len(paths),
        "snapshot_bytes": snapshot_bytes,
        "to_json_ms": round(to_json_ms, 2),
        "write_now_ms": round(write_ms, 2),
        "baseline_dumps_write_no_fsync_ms": round(plain_write_ms, 2),
        "write_ratio": round(write_ms / plain_write_ms, 2),
        "load_ms": round(load_only_ms, 2),
        "load_json_ms": round(load_json_ms, 2),
        "load_plus_load_json_ms": round(load_total_ms, 2),
        "baseline_read_loads_ms": round(plain_load_ms, 2),
        "load_ratio": round(load_total_ms / plain_load_ms, 2),
        "revalidate_ms": round(max(revalidate_ms - load_json_ms, 0.0), 2),
        "baseline_read_files_ms": round(read_ms, 2),
        "revalidate_ratio": round(max(revalidate_ms - load_json_ms, 0.0) / read_ms, 2),
        "restart_total_ms": round(load_total_ms + max(revalidate_ms - load_json_ms, 0.0), 2),
        "prompt_tokens_call_ms": round(prompt_tokens_ms, 3),
    }


def main() -> dict[str, Any]:
    warn_if_busy()
    repo = django_repo()
    files = tracked_files(repo)
    results = []
    with tempfile.TemporaryDirectory(prefix="lm-snapshot-bench-", dir=Path(__file__).parent / ".cache") as tmp:
        for budget, entries in SIZES:
            print(f"building and timing a {budget:,}-token window ...", flush=True)
            results.append(measure(repo, files, budget, entries, Path(tmp)))
    labels = [f"{r['budget_tokens'] // 1000}k window" for r in results]
    rows = [
        ("prompt tokens (fill)", *(r["prompt_tokens"] for r in results)),
        (
            "Q&A pairs / manifest / facts",
            *(f"{r['qa_pairs']}/{r['manifest_entries']}/{r['ledger_facts']}" for r in results),
        ),
        ("snapshot size, bytes", *(r["snapshot_bytes"] for r in results)),
        ("to_json (on the event loop), ms", *(r["to_json_ms"] for r in results)),
        ("write_now (fsync, atomic), ms", *(r["write_now_ms"] for r in results)),
        ("  baseline dumps+write, no fsync, ms", *(r["baseline_dumps_write_no_fsync_ms"] for r in results)),
        ("  ratio", *(r["write_ratio"] for r in results)),
        ("load + load_json, ms", *(r["load_plus_load_json_ms"] for r in results)),
        ("  of which store.load, ms", *(r["load_ms"] for r in results)),
        ("  baseline read + json.loads, ms", *(r["baseline_read_loads_ms"] for r in results)),
        ("  ratio", *(r["load_ratio"] for r in results)),
        ("re-validation (disk_hashes), ms", *(r["revalidate_ms"] for r in results)),
        ("  files hashed", *(r["paths_validated"] for r in results)),
        ("  baseline read files, no hash, ms", *(r["baseline_read_files_ms"] for r in results)),
        ("  ratio", *(r["revalidate_ratio"] for r in results)),
        ("restart total (load+json+hashes), ms", *(r["restart_total_ms"] for r in results)),
        ("prompt_tokens() per call, ms", *(r["prompt_tokens_call_ms"] for r in results)),
    ]
    print_table(["medians", *labels], rows, title=f"snapshot I/O (medians of {RUNS} runs)")
    figures = {"runs": RUNS, "results": results}
    save_results(NAME, figures)
    return figures


if __name__ == "__main__":
    main()
