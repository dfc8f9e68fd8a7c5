"""Where the tests find a coding agent's real CLI: the copy the project's install script put in `.tools/`,
else one on PATH; the tests that need it skip, saying how to install it, when there is none. Also how they
run one to its end and script its model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from live_memory.testing.llm_server import RecordedRequest, Reply

CLI_TIMEOUT_S = 60.0
SHOWN_CHARS = 3000  # of stdout; twice as much of stderr, where the CLIs log


def installed_cli(candidate: Path, name: str) -> str | None:
    if os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which(name)


def require_cli(candidate: Path, name: str, how: str) -> str:
    """The CLI's path, or the test is skipped with `how` to install it."""
    path = installed_cli(candidate, name)
    if path is None:
        pytest.skip(f"{name} CLI not installed (run {how}); its real-CLI checks are skipped")
    return path


def run_json_lines(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float = CLI_TIMEOUT_S
) -> list[dict[str, Any]]:
    """Run a CLI to its end, offline and without a terminal; returns the JSON objects it printed, one a line.
    A run that fails or hangs raises AssertionError with the end of what it printed."""
    with subprocess.Popen(
        list(args),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as run:
        try:
            stdout, stderr = run.communicate(timeout=timeout_s)
            failure = f"exited {run.returncode}" if run.returncode != 0 else ""
        except subprocess.TimeoutExpired:
            run.kill()
            stdout, stderr = run.communicate()
            failure = f"did not finish within {timeout_s} s"
    if failure:
        raise AssertionError(f"{args[0]} {failure}:\n{stdout[-SHOWN_CHARS:]}\n{stderr[-2 * SHOWN_CHARS :]}")
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def scripted(
    turns: list[Reply], step_of: Callable[[RecordedRequest], int | None]
) -> Callable[[RecordedRequest], Reply]:
    """The agent's model: its request N (`step_of`: N tool results so far) gets turns[N], then a short final
    text; a side request (a title: `step_of` says None) gets a short text."""

    def respond(request: RecordedRequest) -> Reply:
        step = step_of(request)
        if step is None:
            return Reply.text("title")
        return turns[step] if step < len(turns) else Reply.text("done")

    return respond
