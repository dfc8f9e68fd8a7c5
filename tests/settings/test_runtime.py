"""The settings snapshot and provider a piece of work takes once: a reload that lands meanwhile never
mixes old and new within one question."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest

from live_memory.core.messages import ChatRequest, ChatResponse
from live_memory.core.records import QuestionResult
from live_memory.settings.config import load_settings
from live_memory.settings.runtime import Runtime
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.fakes.engine import engine_for, until


class Gated(ScriptedProvider):
    """Answers only once `gate` is set (a question that is still running)."""

    def __init__(self, answer: str) -> None:
        super().__init__(responder=lambda request: text_response(answer))
        self.gate = anyio.Event()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        await self.gate.wait()
        return await super().chat(request)


def test_a_runtime_cannot_be_changed_in_place(tmp_path: Path) -> None:
    runtime = Runtime(load_settings(env={"HOME": str(tmp_path)}, data_dir=tmp_path / "data"), None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        runtime.provider = ScriptedProvider()  # type: ignore[misc]


async def test_a_question_running_across_a_reload_finishes_on_the_runtime_it_started_with(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    old, new = Gated("from the old model"), ScriptedProvider(text_response("from the new model"))
    engine = engine_for(tmp_path, old)
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_API_KEY": "x", "LIVE_MEMORY_MAX_ANSWER_TOKENS": "777"}
    reloaded = Runtime(off_loop(load_settings, env=env, data_dir=tmp_path / "data"), new)
    results: list[QuestionResult] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                results.append(await engine.answerer.ask(str(root), "first"))

            tasks.start_soon(ask)
            await until(lambda: len(engine.service.states()) == 1 and engine.service.states()[0].in_flight == 1)
            await engine.service.reload(reloaded)
            old.gate.set()
        later = await engine.answerer.ask(str(root), "second")
    assert results[0].answer == "from the old model" and later.answer == "from the new model"
    assert old.requests[0].max_tokens != 777  # the old question kept its own limits
    assert new.requests[0].max_tokens == 777
