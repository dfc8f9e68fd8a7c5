"""The measurements of bench/scale_bench.py that need no server of their own (listing, index build and its
floor, incremental updates, the watcher) and the prompt-size one; each leaves the cached repository as it found
it (files and directories edited for a measurement are put back, their stamps too).

`python -m bench.scale_parts parse-floor REPO` prints the parse floor's JSON: run as a child at the build's own
priority, so that both are timed alike on a busy machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx2

from bench.common import McpAsker, server_process
from bench.tools_bench import TREE_BUDGET, _command, _interleaved
from live_memory.constants import CARD_PARSE_MAX_BYTES, SYMBOL_INDEX_NICE, WATCH_DEBOUNCE_MS, WATCH_MAX_DIRECTORIES
from live_memory.core.records import FileEvent
from live_memory.fs.jail import Jail
from live_memory.fs.walk import directories_breadth_first
from live_memory.outline.cards import build_card
from live_memory.outline.directory_tree import build_directory_tree
from live_memory.outline.symbol_store import SymbolStore
from live_memory.testing.llm_server import FakeLLM
from live_memory.tools.context import ToolLimits
from live_memory.tools.index_build import listed_files, refresh
from live_memory.workspaces.watcher import WorkspaceWatcher, watched_directories

EDITED_FILES = 20
NEW_DIRECTORIES = 20
NEW_DIRECTORIES_OVER_S = 10.0
TEED_READS = 600
TEED_MAX_BYTES = 64 * 1024
NOTIFY_BATCH = 300


def _nice() -> None:
    os.nice(SYMBOL_INDEX_NICE)


# -- listing -------------------------------------------------------------------------------------------------
def listing_cost(repo: Path) -> dict[str, Any]:
    """The directory tree (git's listing, rendered) against bare `git ls-files`: medians of interleaved runs."""
    argv = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]

    async def tree() -> str:
        return await build_directory_tree(repo, budget_chars=TREE_BUDGET)

    tree_ms, git_ms = asyncio.run(_interleaved([tree, _command(argv, repo)], runs=5))
    text = asyncio.run(tree())
    return {
        "files": int(text.split(" ", 1)[0]),
        "tree_ms": round(tree_ms, 1),
        "git_ls_files_ms": round(git_ms, 1),
        "ratio": round(tree_ms / git_ms, 2),
    }


# -- the index build and its floor ---------------------------------------------------------------------------
def index_build_cost(repo: Path, index: Path) -> dict[str, Any]:
    """The build child as the keeper starts it: wall time, CPU, peak RSS; and the index's size."""
    argv = [sys.executable, "-m", "live_memory.tools.index_child", str(repo), str(index)]
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert child.stdout is not None
    out = child.stdout.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"the index build failed (exit {child.returncode})")
    done = json.loads(out.decode().strip().splitlines()[-1])
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "files": done["files"],
        "index_mb": round(index.stat().st_size / 1e6, 1),
        "rg_files_s": _rg_files_s(repo),
    }


def _rg_files_s(repo: Path) -> float:
    rg = shutil.which("rg", path=str(Path(sys.executable).parent)) or "rg"
    argv = [rg, "--no-config", "--hidden", "--files", "--null", "--glob", "!.git"]
    samples = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(argv, cwd=repo, stdout=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples), 3)


def parse_floor(repo: Path) -> dict[str, Any]:
    """Parsing every file the index parses (`build_card` on its bytes), in a child at the build's priority."""
    argv = [sys.executable, "-m", "bench.scale_parts", "parse-floor", str(repo)]
    found = subprocess.run(argv, capture_output=True, text=True, check=True, preexec_fn=_nice)
    figures: dict[str, Any] = json.loads(found.stdout.strip().splitlines()[-1])
    return figures


def _parse_all(repo: Path) -> dict[str, Any]:
    jail = Jail(repo.resolve(), ToolLimits().secret_globs)
    paths = asyncio.run(listed_files(jail, ToolLimits())) or []
    started, cpu = time.perf_counter(), time.process_time()
    parsed = 0
    for path in paths:
        with contextlib.suppress(OSError):
            data = (jail.root / path).read_bytes()
            if len(data) <= CARD_PARSE_MAX_BYTES and b"\x00" not in data[:8192]:
                build_card(path, data)
                parsed += 1
    return {
        "parse_s": round(time.perf_counter() - started, 2),
        "parse_cpu_s": round(time.process_time() - cpu, 2),
        "parsed": parsed,
    }


# -- incremental updates ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def _put_back(paths: list[Path]) -> Iterator[None]:
    """Whatever happens to these files (and their directories), their bytes and stamps come back."""
    saved = {p: (p.read_bytes(), os.stat(p)) for p in paths}
    parents = {p.parent: os.stat(p.parent) for p in paths}
    try:
        yield
    finally:
        for path, (data, found) in saved.items():
            path.write_bytes(data)
            os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns))
        for parent, found in parents.items():
            os.utime(parent, ns=(found.st_atime_ns, found.st_mtime_ns))


def edit_cost(repo: Path, index: Path) -> dict[str, Any]:
    """Files edited in place (a line added), re-indexed as the keeper does: milliseconds per file."""
    root = repo.resolve()
    store = SymbolStore.open(index, str(root))
    if store is None:
        raise RuntimeError("the index to update cannot be opened")
    try:
        files = sorted(p for p in store.paths() if p.endswith(".py"))
        chosen = files[:: max(1, len(files) // EDITED_FILES)][:EDITED_FILES]
        jail = Jail(root, ToolLimits().secret_globs)
        build_card("warm.py", b"def warm():\n    pass\n")  # the grammar loads once per process, as in the server
        with _put_back([root / p for p in chosen]):
            for path in chosen:
                with (root / path).open("a") as handle:
                    handle.write("\n\ndef edited_for_the_bench():\n    return 1\n")
            started, cpu = time.perf_counter(), time.process_time()
            done = refresh(store, jail, chosen, listed=False)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        refresh(store, jail, chosen, listed=False)  # as it was
    finally:
        store.close()
    parse_ms, parse_cpu_ms = _parse_ms(root, chosen)
    return {
        "files": len(chosen),
        "parsed": done.parsed,
        "ms_per_file": round(elapsed * 1000 / len(chosen), 2),
        "cpu_ms_per_file": round(cpu * 1000 / len(chosen), 2),
        "parse_ms_per_file": parse_ms,  # its floor: parsing the same files
        "parse_cpu_ms_per_file": parse_cpu_ms,
    }


def _parse_ms(root: Path, paths: list[str]) -> tuple[float, float]:
    data = [(p, (root / p).read_bytes()) for p in paths]
    started, cpu = time.perf_counter(), time.process_time()
    for path, content in data:
        build_card(path, content)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return round(wall * 1000 / len(paths), 2), round(cpu * 1000 / len(paths), 2)


# -- the first prompt after many teed reads -------------------------------------------------------------------------
def _text_chars(value: Any) -> int:
    """Characters of text in a request body's system and messages (the prompt as the model reads it)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_chars(v) for v in value)
    if isinstance(value, dict):
        return sum(_text_chars(v) for k, v in value.items() if k in ("text", "content", "input", "system", "messages"))
    return 0


def _reads(repo: Path) -> list[dict[str, Any]]:
    """TEEDREADS hook tees of Reads: files of the repository with their content, as the hook sends them."""
    events: list[dict[str, Any]] = []
    for path in sorted(p for p in repo.rglob("*.py") if ".git" not in p.parts):
        data = path.read_bytes()
        if len(data) <= TEED_MAX_BYTES:
            events.append({"path": str(path), "kind": "read", "content": data.decode("utf-8", "replace")})
        if len(events) == TEED_READS:
            break
    return events


async def _ask(url: str, repo: Path, question: str) -> None:
    async with McpAsker(f"{url}/mcp", read_timeout_s=600) as asker:
        await asker.ask(question, str(repo))


async def _tee(url: str, repo: Path, events: list[dict[str, Any]]) -> None:
    async with httpx2.AsyncClient(base_url=url, timeout=120) as http:
        for start in range(0, len(events), NOTIFY_BATCH):
            body = {"cwd": str(repo), "session_id": "scale-bench", "events": events[start : start + NOTIFY_BATCH]}
            (await http.post("/notify", json=body)).raise_for_status()


def first_prompt_chars(fake: FakeLLM, repo: Path, tmp: Path, options: dict[str, Any]) -> dict[str, Any]:
    """The first request of a question after TEED_READS teed reads, and of the first question after a restart,
    against the same with none (the index off: it changes no prompt)."""
    out: dict[str, Any] = {}
    reads = _reads(repo)
    unindexed: dict[str, Any] = {**options, "symbol_index": "false"}
    for teed in (0, len(reads)):
        data = tmp / f"prompt-{teed}"
        with server_process(fake.base_url, data, **unindexed) as server:
            asyncio.run(_ask(server.url, repo, "How is the project organised?"))
            if teed:
                asyncio.run(_tee(server.url, repo, reads))
            before = len(fake.requests)
            asyncio.run(_ask(server.url, repo, "What are the main parts of this code base?"))
            out[f"next_question_chars_{teed}"] = _text_chars(fake.requests[before].body)
        with server_process(fake.base_url, data, **unindexed) as server:
            before = len(fake.requests)
            asyncio.run(_ask(server.url, repo, "Which parts are the largest?"))
            out[f"after_restart_chars_{teed}"] = _text_chars(fake.requests[before].body)
    out["teed_reads"] = len(reads)
    out["next_question_ratio"] = round(out[f"next_question_chars_{len(reads)}"] / out["next_question_chars_0"], 3)
    out["after_restart_ratio"] = round(out[f"after_restart_chars_{len(reads)}"] / out["after_restart_chars_0"], 3)
    out["after_reads_ratio_worst"] = max(out["next_question_ratio"], out["after_restart_ratio"])
    return out


# -- the watcher ------------------------------------------------------------------------------------------------
def watcher_cost(repo: Path) -> dict[str, Any]:
    """CPU of the whole process while NEW_DIRECTORIES directories appear over NEW_DIRECTORIES_OVER_S (a file
    written in each), with every directory of the repository watched, and the same without a watcher."""
    root = repo.resolve()
    every = 1 + sum(1 for _ in directories_breadth_first(str(root)))
    capped, left_out = watched_directories(root, WATCH_MAX_DIRECTORIES * 9 // 10)
    unwatched = _new_directories_cpu(root, None, "unwatched")
    watched = _new_directories_cpu(root, every * 10 // 9 + 200, "watched")  # room for all (a tenth is kept free)
    return {
        "directories": every,
        "default_cap_watches": len(capped),
        "default_cap_leaves_some_out": left_out,
        "unwatched_cpu_s": unwatched["cpu_s"],
        "new_directories_cpu_s": watched["cpu_s"],
        "watched": watched["watched"],
        "new_files_seen": watched["seen"],
    }


def _new_directories_cpu(root: Path, cap: int | None, tag: str) -> dict[str, Any]:
    parent = root / next(p.name for p in sorted(root.iterdir()) if p.is_dir() and p.name != ".git")
    created = [parent / f"scale-bench-{tag}-{n:02d}" for n in range(NEW_DIRECTORIES)]
    with _directories_put_back(parent, created):
        return asyncio.run(_watch_and_create(root, cap, created))


@contextlib.contextmanager
def _directories_put_back(parent: Path, created: list[Path]) -> Iterator[None]:
    found = os.stat(parent)
    try:
        yield
    finally:
        for path in created:
            shutil.rmtree(path, ignore_errors=True)
        os.utime(parent, ns=(found.st_atime_ns, found.st_mtime_ns))


async def _watch_and_create(root: Path, cap: int | None, created: list[Path]) -> dict[str, Any]:
    seen: set[str] = set()
    watcher = WorkspaceWatcher(debounce_ms=WATCH_DEBOUNCE_MS, max_directories=cap or 1)

    async def sink(_root: Path, events: Sequence[FileEvent]) -> None:
        seen.update(e.path for e in events)

    try:
        if cap is not None:
            watcher.watch(root, sink)
            await _until(lambda: watcher.status(root).startswith("on"), 600)
        watched = watcher.directories(root)
        cpu = time.process_time()
        for path in created:
            await asyncio.to_thread(_make, path)
            await asyncio.sleep(NEW_DIRECTORIES_OVER_S / len(created))
        wanted = {f"{p.relative_to(root)}/new.py" for p in created}
        if cap is not None:
            await _until(lambda: wanted <= seen, 60)
        return {"cpu_s": round(time.process_time() - cpu, 3), "watched": watched, "seen": len(wanted & seen)}
    finally:
        await watcher.aclose()


def _make(path: Path) -> None:
    path.mkdir()
    (path / "new.py").write_text("def made_for_the_bench():\n    return 1\n")


async def _until(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        await asyncio.sleep(0.05)


if __name__ == "__main__":
    if sys.argv[1:2] == ["parse-floor"]:
        print(json.dumps(_parse_all(Path(sys.argv[2]))))
