"""The jail under a swap race: while another process keeps replacing a checked file with a symbolic link
(to a file outside the workspace, or to the workspace's .env) and a checked directory with a link to an
outside directory, no tool call may ever return an outside file's content or name, or the secret.

The swapper is a separate process so it truly runs beside the tools (no shared interpreter lock), and
the calls are issued in concurrent batches; every call's text is searched for the planted markers.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from live_memory.tools import Toolbox, ToolLimits

CONTENT_MARKER = "OUTSIDE-RACE-CONTENT-3e1f"
NAME_MARKER = "OUTSIDE-RACE-NAME-9c4d"
ENV_MARKER = "RACE-DOTENV-SECRET-51aa"
MARKERS = (CONTENT_MARKER, NAME_MARKER, ENV_MARKER)

ATTEMPTS = 1200  # tool calls in total
BATCH = 12
WALL_CAP_S = 60.0  # a safety net only: the run takes a few seconds

# Flips notes.txt (regular file <-> link to the outside file <-> link to .env) and sub/ (directory <->
# link to the outside directory) as fast as it can, until it is terminated.
_SWAPPER = r"""
import os, sys
ws, staging, outside = sys.argv[1:4]
notes = os.path.join(ws, "notes.txt")
sub = os.path.join(ws, "sub")
away = os.path.join(staging, "sub-away")
targets = [os.path.join(outside, "secret.txt"), os.path.join(ws, ".env")]
sys.stdout.write("ready\n"); sys.stdout.flush()
i = 0
while True:
    i += 1
    link = os.path.join(staging, "link")
    os.symlink(targets[i % 2], link)
    os.replace(link, notes)
    os.rename(sub, away)
    os.symlink(os.path.join(outside, "odir"), sub)
    regular = os.path.join(staging, "regular")
    with open(regular, "w") as handle:
        handle.write("harmless needle\n")
    os.replace(regular, notes)
    os.unlink(sub)
    os.rename(away, sub)
"""


def _build(base: Path) -> tuple[Path, Path, Path]:
    ws, staging, outside = base / "ws", base / "staging", base / "outside"
    for directory in (ws / "sub" / "deeper", staging, outside / "odir" / "inner-dir"):
        directory.mkdir(parents=True)
    (outside / "secret.txt").write_text(f"needle {CONTENT_MARKER}\n")
    (outside / "odir" / f"{NAME_MARKER}.txt").write_text(f"needle {CONTENT_MARKER}\n")
    (outside / "odir" / "inner.txt").write_text(f"needle {CONTENT_MARKER}\n")
    (outside / "odir" / "inner-dir" / f"{NAME_MARKER}-deep.txt").write_text(f"needle {CONTENT_MARKER}\n")
    (ws / ".env").write_text(f"API_TOKEN={ENV_MARKER} needle\n")
    (ws / "notes.txt").write_text("harmless needle\n")
    (ws / "sub" / "inner.txt").write_text("harmless needle inner\n")
    (ws / "sub" / "deeper" / "x.txt").write_text("harmless needle deeper\n")
    return ws, staging, outside


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Read", {"file_path": "notes.txt"}),
    ("Read", {"file_path": "sub/inner.txt"}),
    ("Read", {"file_path": "sub/deeper/x.txt"}),
    ("Grep", {"pattern": "needle", "path": "notes.txt", "output_mode": "content"}),
    ("Grep", {"pattern": "needle", "path": "sub", "output_mode": "content"}),
    ("Grep", {"pattern": "needle", "path": "sub"}),
    ("Grep", {"pattern": "needle", "output_mode": "content"}),
    ("Grep", {"pattern": "needle", "output_mode": "count"}),
    ("Glob", {"pattern": "**/*", "path": "sub"}),
    ("Glob", {"pattern": "sub/**"}),
    ("find_paths", {"path": "sub"}),
    ("find_paths", {}),
]


async def _race(box: Toolbox, attempts: int) -> tuple[int, Counter[str], int, list[str]]:
    """Run `attempts` calls; returns how many ran, the leaks per call, how many calls were refused
    (a Read refused: evidence that the swaps did hit the calls), and a few leaking outputs."""
    leaks: Counter[str] = Counter()
    examples: list[str] = []
    refused = 0
    done = 0
    started = time.monotonic()
    while done < attempts and time.monotonic() - started < WALL_CAP_S:
        batch = [CALLS[(done + i) % len(CALLS)] for i in range(BATCH)]
        outcomes = await asyncio.gather(*(box.run(name, args) for name, args in batch))
        for (name, args), outcome in zip(batch, outcomes, strict=True):
            refused += name == "Read" and outcome.is_error
            if any(marker in outcome.text for marker in MARKERS):
                key = f"{name} {args}"
                leaks[key] += 1
                if len(examples) < 3:
                    examples.append(f"{key}: {outcome.text[:300]!r}")
        done += len(batch)
    return done, leaks, refused, examples


@pytest.mark.parametrize("engine", ["ripgrep", "walker"])
async def test_no_tool_leaks_outside_content_names_or_secrets_under_a_swap_race(tmp_path: Path, engine: str) -> None:
    ws, staging, outside = _build(tmp_path)
    box = await Toolbox.create(ws, ToolLimits(use_ripgrep=engine == "ripgrep"))
    swapper = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SWAPPER,
        str(ws),
        str(staging),
        str(outside),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert swapper.stdout is not None
        async with asyncio.timeout(30):
            assert await swapper.stdout.readline() == b"ready\n"
        attempts, leaks, refused, examples = await _race(box, ATTEMPTS // 2)
        assert swapper.returncode is None, "the swapper stopped early"
    finally:
        if swapper.returncode is None:
            swapper.terminate()
        async with asyncio.timeout(10):
            await swapper.communicate()  # reaps it and drains its pipes
    assert attempts >= ATTEMPTS // 2, f"only {attempts} attempts within {WALL_CAP_S} s"
    assert not leaks, f"{sum(leaks.values())} leaks in {attempts} attempts: {dict(leaks)}; e.g. {examples}"
    assert refused > 0, "no call ever met a swapped path: the race did not happen"
