"""Only regular files are ever opened for reading: a FIFO in the workspace (as the file asked for, as an
ignore file the walker reads, or named in a change event) gets a prompt, clear answer, never a hang."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest

from live_memory.outline.directory_tree import build_directory_tree
from live_memory.testing.live_server import ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from live_memory.tools import Toolbox, ToolLimits
from tests.tools.blocking import TIMEOUT_S, releasing


@pytest.fixture
def fifo_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    os.mkfifo(root / "pipe")
    return root


async def _run(box: Toolbox, name: str, arguments: dict[str, Any], *fifos: Path) -> str:
    with releasing(*fifos):
        async with asyncio.timeout(TIMEOUT_S):
            outcome = await box.run(name, arguments)
    return outcome.text


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("Read", {"file_path": "pipe"}, "FIFO"),
        ("Grep", {"pattern": "x", "path": "pipe"}, "FIFO"),
        ("Glob", {"pattern": "*", "path": "pipe"}, "not a directory"),
        ("find_paths", {"path": "pipe"}, "not a directory"),
    ],
)
async def test_a_tool_pointed_at_a_fifo_refuses_it_at_once(
    fifo_workspace: Path, name: str, arguments: dict[str, Any], fragment: str
) -> None:
    text = await _run(await Toolbox.create(fifo_workspace), name, arguments, fifo_workspace / "pipe")
    assert fragment in text


async def test_a_fifo_lying_in_the_tree_is_skipped_by_every_listing(fifo_workspace: Path) -> None:
    for limits in (ToolLimits(), ToolLimits(use_ripgrep=False)):
        box = await Toolbox.create(fifo_workspace, limits)
        assert await _run(box, "Glob", {"pattern": "**/*"}, fifo_workspace / "pipe") == "src/app.py"
        grep = await _run(box, "Grep", {"pattern": "main"}, fifo_workspace / "pipe")
        assert grep == "Found 1 file\nsrc/app.py" or "ripgrep" in grep


async def test_fifos_named_like_ignore_files_do_not_stall_the_walker(fifo_workspace: Path) -> None:
    fifos = [fifo_workspace / ".gitignore", fifo_workspace / "src" / ".ignore", fifo_workspace / ".git/info/exclude"]
    (fifo_workspace / ".git" / "info").mkdir(parents=True)
    for fifo in fifos:
        os.mkfifo(fifo)
    box = await Toolbox.create(fifo_workspace, ToolLimits(use_ripgrep=False))
    assert await _run(box, "Glob", {"pattern": "**/*.py"}, *fifos) == "src/app.py"
    assert "src/ (1 file)" in await _run(box, "find_paths", {}, *fifos)
    with releasing(*fifos):
        async with asyncio.timeout(TIMEOUT_S):
            tree = await build_directory_tree(fifo_workspace, budget_chars=2000)
    assert "app.py" in tree


async def test_a_change_event_for_a_fifo_is_answered_at_once(
    fake: FakeLLM, fifo_workspace: Path, tmp_path: Path
) -> None:
    (fifo_workspace / ".git").mkdir()
    fake.responder = lambda request: Reply.text("ok")
    body = {"cwd": str(fifo_workspace), "events": [{"path": "pipe", "kind": "change"}, {"path": "src", "kind": "add"}]}
    with live_server(settings_for(fake.base_url, tmp_path / "data")) as server, releasing(fifo_workspace / "pipe"):
        _text, is_error = await ask_via_mcp(server.mcp_url, {"question": "warm up", "cwd": str(fifo_workspace)})
        assert not is_error, _text
        async with httpx2.AsyncClient(base_url=server.url, timeout=TIMEOUT_S) as client:
            response = await client.post("/notify", json=body)
    assert response.status_code == 200
    assert response.json()["workspace_loaded"] is True
    assert response.json()["accepted"] == 0
