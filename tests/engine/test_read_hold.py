"""The files the memory's model read whole, held while worth it (read_hold.py): the question's rounds stay in the
history as "read" turns (no delta repeats the bytes), the round that showed the file is written to the cache,
a window of a file or a changed file is not held, and the next freeze moves the file into the frozen block."""

from __future__ import annotations

import hashlib
from pathlib import Path

from live_memory.core.messages import ChatRequest, ChatResponse, ToolResultPart
from live_memory.core.records import ToolCall
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.hot_set import HotSet, HotSetPolicy
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.engine.test_agent_loop import loop_for

STORE = "def load():\n    return 1\n\n\ndef save():\n    return 2\n"


def eager(budget: int = 24_000) -> HotSet:
    """A hot set whose rule takes a file read once (a prior of one question: files come back at once)."""
    return HotSet(
        HotSetPolicy(budget_tokens=budget, prior_questions=1.0),
        read_share=0.1,
        write_share=1.25,
        max_file_bytes=256 * 1024,
    )


def read(arguments: dict[str, object]) -> ChatResponse:
    return text_response("", tool_calls=(ToolCall("r1", "Read", arguments),))


def results_cached(request: ChatRequest) -> bool:
    """Whether the request's last tool results end a cacheable prefix (written to the cache)."""
    parts = [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]
    return bool(parts) and parts[-1].cache


async def test_a_file_read_whole_is_held_its_round_kept_in_the_history_and_written_to_the_cache(tmp_path: Path) -> None:
    (tmp_path / "store.py").write_text(STORE)
    provider = ScriptedProvider(
        read({"file_path": "store.py"}), text_response("store.py:1-6 loads and saves."), text_response("again")
    )
    window = ContextWindow(budget_tokens=100_000)
    loop = await loop_for(tmp_path, provider, hot_set=eager())
    await loop.answer(window, "What does the store do?")
    held = window.files["store.py"]
    assert held.content == STORE and held.sha256 == hashlib.sha256(STORE.encode()).hexdigest()
    assert [t.kind for t in window.history] == ["question", "read", "read", "answer"]
    assert results_cached(provider.requests[1])  # the round that showed it is written, not sent uncached
    assert window.sync_deltas() == 0  # no copy follows: the round in the history shows it
    await (await loop_for(tmp_path, provider, hot_set=eager())).answer(window, "And what does it save?")
    kept = provider.requests[2].messages[2].parts[0]  # the first question's round, as it was sent
    assert isinstance(kept, ToolResultPart) and kept.content.startswith("1\tdef load():")
    window.freeze()  # a compaction's freeze: the file moves into the frozen block, the rounds go
    assert [t.kind for t in window.history] == ["question", "answer", "question", "answer"]
    assert f"### store.py\n```\n{STORE}\n```" in (window.frozen_volatile or "")


async def test_a_window_of_a_file_is_not_held_and_its_results_go_uncached(tmp_path: Path) -> None:
    (tmp_path / "store.py").write_text(STORE)
    provider = ScriptedProvider(read({"file_path": "store.py", "offset": 1, "limit": 2}), text_response("load: 1"))
    window = ContextWindow(budget_tokens=100_000)
    await (await loop_for(tmp_path, provider, hot_set=eager())).answer(window, "What does load return?")
    assert window.files["store.py"].content is None
    assert [t.kind for t in window.history] == ["question", "answer"]
    assert not results_cached(provider.requests[1])


async def test_without_room_or_a_rule_that_takes_it_the_file_is_only_known_by_name(tmp_path: Path) -> None:
    (tmp_path / "store.py").write_text(STORE)
    for hot in (eager(budget=5), HotSet(HotSetPolicy(24_000), 0.1, 1.25, 256 * 1024), None):
        provider = ScriptedProvider(read({"file_path": "store.py"}), text_response("ok"))
        window = ContextWindow(budget_tokens=100_000)
        await (await loop_for(tmp_path, provider, hot_set=hot)).answer(window, "What does the store do?")
        assert window.files["store.py"].content is None, hot  # read once, nothing says it comes back
        assert [t.kind for t in window.history] == ["question", "answer"]
