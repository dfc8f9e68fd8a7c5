"""Admission and fork/commit: raced commits are rebased (both kept), linear commits always land,
serial mode is FIFO, a full workspace says "busy" at once, workspaces never wait on each other."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import pytest

from live_memory.core.errors import BusyError
from live_memory.core.messages import ChatRequest, ChatResponse, TextPart, ToolResultPart
from live_memory.core.records import ToolCall
from live_memory.memory.context_window import ContextWindow
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.fakes.engine import Engine, engine_for, until


class GatedProvider(ScriptedProvider):
    """Each question waits for its own gate; 'read N' questions read N files first."""

    def __init__(self) -> None:
        super().__init__()
        self.gates: dict[str, asyncio.Event] = {}
        self.started: dict[str, asyncio.Event] = {}

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())

    def arrived(self, name: str) -> asyncio.Event:
        return self.started.setdefault(name, asyncio.Event())

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        question = [m for m in request.messages if m.text.startswith("## Question")][-1]
        first = question.parts[0]
        assert isinstance(first, TextPart)
        name = first.text.split("\n")[1]
        self.arrived(name).set()
        await self.gate(name).wait()
        tools_done = any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts)
        if name.startswith("read") and not tools_done and name != "read 0":
            count = int(name.split()[1])
            calls = tuple(ToolCall(f"c{i}", "Read", {"file_path": f"f{i}.py"}) for i in range(count))
            return text_response("", tool_calls=calls)
        return text_response(f"answer to {name}")


def manager_for(tmp_path: Path, provider: GatedProvider, **options: str) -> Engine:
    return engine_for(tmp_path, provider, **options)


def repo(tmp_path: Path, name: str = "repo") -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    for i in range(3):
        (root / f"f{i}.py").write_text(f"X{i} = {i}\n")
    return root


def questions_in(window: ContextWindow) -> list[str]:
    return [t.question for t in window.history if t.kind == "question"]


async def test_a_linear_commit_is_adopted_even_when_it_explored_less(tmp_path: Path) -> None:
    """Regression: a compacted (smaller, less exploring) fork must never be discarded."""
    manager = manager_for(tmp_path, GatedProvider())
    state = (await manager.service.open(str(repo(tmp_path)))).state
    fork_id, fork = state.fork()
    fork.history = []  # as if compaction summarized everything away
    assert not state.commit(fork_id, fork)  # linear, not rebased
    assert state.window is fork


@pytest.mark.parametrize("first", ["read 0", "read 2"])
async def test_a_real_race_keeps_both_answers_in_commit_order(tmp_path: Path, first: str) -> None:
    provider = GatedProvider()
    manager = manager_for(tmp_path, provider)
    cwd = str(repo(tmp_path))
    provider.gate("warm up").set()
    await manager.answerer.ask(cwd, "warm up")
    light = asyncio.create_task(manager.answerer.ask(cwd, "read 0"))
    heavy = asyncio.create_task(manager.answerer.ask(cwd, "read 2"))
    await asyncio.gather(provider.arrived("read 0").wait(), provider.arrived("read 2").wait())
    second = "read 2" if first == "read 0" else "read 0"
    provider.gate(first).set()
    await (light if first == "read 0" else heavy)
    provider.gate(second).set()
    answers = await asyncio.gather(light, heavy)
    assert [a.answer for a in answers] == ["answer to read 0", "answer to read 2"]  # every caller is answered
    state = (await manager.service.open(cwd)).state
    second_kept = "read 2" if first == "read 0" else "read 0"
    assert questions_in(state.window) == ["warm up", first, second_kept]  # the later commit is rebased, not dropped
    assert state.stats.rebased_commits == 1


async def test_serial_mode_answers_in_arrival_order(tmp_path: Path) -> None:
    provider = GatedProvider()
    manager = manager_for(tmp_path, provider, concurrency="serial")
    cwd = str(repo(tmp_path))
    tasks = []
    state = (await manager.service.open(cwd)).state

    def arrived(n: int) -> bool:
        return state.admission.running + state.admission.waiting > n

    for index, name in enumerate(("q one", "q two", "q three")):
        tasks.append(asyncio.create_task(manager.answerer.ask(cwd, name)))
        await until(partial(arrived, index))  # arrived in order
    for name in ("q three", "q two", "q one"):  # released in reverse: order must still be FIFO
        provider.gate(name).set()
    await asyncio.gather(*tasks)
    assert questions_in(state.window) == ["q one", "q two", "q three"]


async def test_a_full_workspace_answers_busy_at_once(tmp_path: Path) -> None:
    provider = GatedProvider()
    manager = manager_for(tmp_path, provider, concurrency="serial", max_waiting_queries="1")
    cwd = str(repo(tmp_path))
    running = asyncio.create_task(manager.answerer.ask(cwd, "q running"))
    await provider.arrived("q running").wait()
    waiting = asyncio.create_task(manager.answerer.ask(cwd, "q waiting"))
    state = (await manager.service.open(cwd)).state
    await until(lambda: state.admission.waiting == 1)
    with pytest.raises(BusyError, match="busy with 1 question"):
        await manager.answerer.ask(cwd, "q refused")
    provider.gate("q running").set()
    provider.gate("q waiting").set()
    await asyncio.gather(running, waiting)


async def test_workspaces_never_wait_on_each_other(tmp_path: Path) -> None:
    provider = GatedProvider()
    manager = manager_for(tmp_path, provider, concurrency="serial")
    blocked = asyncio.create_task(manager.answerer.ask(str(repo(tmp_path, "a")), "q blocked"))
    await provider.arrived("q blocked").wait()
    provider.gate("q free").set()
    result = await asyncio.wait_for(manager.answerer.ask(str(repo(tmp_path, "b")), "q free"), 10)
    assert result.answer == "answer to q free"
    assert not blocked.done()
    provider.gate("q blocked").set()
    await blocked
