"""Tools report the fingerprint of what they read, and the question loop records exactly that: a file
edited right after a Read is remembered as the model saw it (its change is then noticed as a change)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from live_memory.core.records import ToolCall
from live_memory.engine.agent_loop import LoopLimits, QuestionLoop
from live_memory.memory.context_window import ContextWindow
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.tools import TOOL_SCHEMAS, Toolbox, ToolOutcome

ORIGINAL = "def main():\n    return 'v1'\n"


class EditedRightAfter:
    """The real toolbox, with another process editing the file the moment a call returns."""

    def __init__(self, box: Toolbox, path: Path) -> None:
        self.box = box
        self.path = path

    async def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        outcome = await self.box.run(name, arguments)
        self.path.write_text("def main():\n    return 'v2, edited after the read'\n")
        return outcome


async def test_the_loop_records_the_hash_of_the_bytes_the_tool_returned(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(ORIGINAL)
    read = ToolCall("call-1", "Read", {"file_path": "src/app.py"})
    provider = ScriptedProvider(text_response("", tool_calls=(read,)), text_response("main returns v1"))
    limits = LoopLimits(
        timeout_s=30, max_iterations=3, answer_tokens=256, context_tokens=100_000, force_explore_when_cold=False
    )
    runner = EditedRightAfter(await Toolbox.create(tmp_path), tmp_path / "src" / "app.py")
    loop = QuestionLoop(provider, runner, TOOL_SCHEMAS, limits, workspace_root=tmp_path)
    window = ContextWindow(budget_tokens=100_000)
    out = await loop.answer(window, "what does main return?")
    assert out.files_read == ["src/app.py"]
    recorded = window.files["src/app.py"]
    assert (recorded.sha256, recorded.size) == (hashlib.sha256(ORIGINAL.encode()).hexdigest(), len(ORIGINAL))


async def test_a_toolbox_built_off_the_loop_works_like_one_built_directly(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    built = await Toolbox.create(tmp_path)
    direct = await asyncio.to_thread(Toolbox, tmp_path)  # the constructor, run off the loop
    assert built.root == direct.root and built.ripgrep == direct.ripgrep is not None
    for name, arguments in (("Read", {"file_path": "a.txt"}), ("Grep", {"pattern": "alpha"})):
        assert await built.run(name, arguments) == await direct.run(name, arguments)
