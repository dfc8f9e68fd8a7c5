"""Where the tests find a coding agent's real CLI: the copy the project's install script put in `.tools/`,
else one on PATH; the tests that need it skip, saying how to install it, when there is none."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.llm_server import RecordedRequest, Reply


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
