"""`make help` (and `make` alone) lists every target a developer runs, each with its one line."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALIASES = {"agents-cli"}  # another name for agent-clis


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_target_with_what_it_does() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = set(re.search(r"^\.PHONY: (.*)$", makefile, re.M).group(1).split()) - ALIASES  # type: ignore[union-attr]
    done = subprocess.run(["make", "-s", "-C", str(ROOT)], capture_output=True, text=True, timeout=30)
    listed = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert done.returncode == 0 and set(listed) == phony, done.stdout + done.stderr
    assert all(len(line.split()) > 2 for line in listed.values())  # a target and a phrase
