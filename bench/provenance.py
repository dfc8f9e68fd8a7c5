"""What a benchmark's figures were measured on: the commit and the date every result file records.

`bench.report` prints them beside every section and in the README's block, so no figure stands without them.
The commit is `git rev-parse HEAD`, with "-dirty" when the work tree's code differs from it; results, the
report's pages and charts, and prose (Markdown) cannot change a figure, so a change there does not count.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
# What cannot change a figure (see the module docstring).
NOT_CODE = (":!bench/results", ":!docs", ":!*.md")


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def measured_on() -> dict[str, str]:
    """{"commit": `git rev-parse HEAD` (with "-dirty" when the code in the work tree differs from it), "date": the
    UTC day}: what every result file records, so a figure always says what it was measured on."""
    commit = _git("rev-parse", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no", "--", ".", *NOT_CODE):
        commit += "-dirty"
    return {"commit": commit, "date": time.strftime("%Y-%m-%d", time.gmtime())}


def stamped(figures: Mapping[str, Any]) -> dict[str, Any]:
    """`figures` with the commit and date they were measured on first (`measured_on`)."""
    return {**measured_on(), **{k: v for k, v in figures.items() if k not in ("commit", "date")}}


def write_json(path: Path, figures: Mapping[str, Any]) -> Path:
    """Write `figures`, stamped, to `path` (indented, trailing newline) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stamped(figures), indent=2) + "\n")
    return path
