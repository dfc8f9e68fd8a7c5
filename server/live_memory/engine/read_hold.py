"""The hot set's part in a question: the files the memory's model read whole, held while that is worth it.

After each tool round, a file the round showed whole (a Read from its first line to its last, the bytes on
disk still those the Read fingerprinted) enters the hot set when the rule says holding it costs less than
its expected re-reads (hot_set.py). Its bytes are in the round already: the question's rounds stay in the
history up to that one (kind "read", context_window.py), so no copy is appended later, and the request that
carries them writes them to the provider's cache (a quarter more than sending them uncached, once) instead of
sending them uncached for nobody to read back. The next freeze shows the file in the frozen block; the next
compaction re-chooses it by the same rule.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path

from live_memory.engine.tool_runner import ToolOutcomeLike
from live_memory.fs.safe_files import read_for_revalidation
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.holding import hold_costs
from live_memory.memory.hot_set import FileUse, HotSet

_NUMBERED = re.compile(r"^\d+\t", re.M)


async def hold_reads(window: ContextWindow, root: Path, hot: HotSet, outcomes: Sequence[ToolOutcomeLike]) -> list[str]:
    """Take into the hot set the files `outcomes` (one round's Read results) showed whole, where the rule takes
    them; returns their paths."""
    shown: dict[str, tuple[str, int]] = {}  # path -> (SHA-256 read, lines shown)
    for outcome in outcomes:
        if outcome.is_error or len(outcome.files_read) != 1:
            continue
        read = outcome.files_read[0]
        known = window.files.get(read.path)
        if read.size > hot.max_file_bytes or (known is not None and known.content is not None):
            continue
        shown[read.path] = (read.sha256, len(_NUMBERED.findall(outcome.text)))
    if not shown:
        return []
    paths = sorted(shown)
    disk = await asyncio.to_thread(read_for_revalidation, root, paths, paths, hot.max_file_bytes)
    held: list[str] = []
    for path in paths:
        found, (sha, lines) = disk.get(path), shown[path]
        if found is None or found.text is None or found.sha256 != sha or _line_count(found.text) != lines:
            continue  # changed since, or only a window of it was read
        costs = hold_costs(window, hot.read_share, hot.write_share)
        use = window.file_uses.get(path, FileUse())
        if hot.policy.admits(window.tokens(found.text), use, window.questions_asked(), costs, window.held_tokens()):
            window.hold_read(path, found.text, sha)
            held.append(path)
    return held


def _line_count(text: str) -> int:
    """Lines as the Read tool numbers them: a final line without its newline counts, an empty file has none."""
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)
