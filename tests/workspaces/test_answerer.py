"""The answerer: a question goes through admission, the loop and the commit; refusals are clear;
a shutdown cuts running questions to their best answer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from live_memory.core.errors import AuthError, BusyError, NoCredentialError
from live_memory.core.messages import ChatRequest, ChatResponse
from live_memory.core.records import ToolCall, Usage
from live_memory.engine.agent_loop import Progress
from live_memory.settings.config import load_settings
from live_memory.settings.runtime import Runtime
from live_memory.testing.live_server import settings_for
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.workspaces.answerer import cache_lifetime_s
from tests.fakes.engine import engine_for, until
from tests.fakes.repo_builder import one_file_repo


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return one_file_repo(tmp_path)


async def test_an_answer_is_committed_and_the_next_question_sees_it(tmp_path: Path, workspace: Path) -> None:
    provider = ScriptedProvider(text_response("first answer"), text_response("second answer"))
    engine = engine_for(tmp_path, provider)
    first = await engine.answerer.ask(str(workspace), "what is VERSION?")
    second = await engine.answerer.ask(str(workspace), "and then?")
    assert (first.answer, second.answer) == ("first answer", "second answer")
    assert "what is VERSION?" in str(provider.requests[-1].messages)  # the first exchange is in memory
    state = await engine.service.find(str(workspace))
    assert state is not None and state.window.qa_count() == 2


class Steps(Progress):
    """The caller's progress, keeping every step it was told (a heartbeat reads only the latest)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def report(self, status: str) -> None:
        super().report(status)
        self.seen.append(status)


async def test_the_caller_is_told_each_step_of_the_question_as_it_happens(tmp_path: Path, workspace: Path) -> None:
    read = text_response("", tool_calls=(ToolCall("r1", "Read", {"file_path": "app.py"}),))
    engine = engine_for(tmp_path, ScriptedProvider(read, text_response("done")))
    progress = Steps()
    result = await engine.answerer.ask(str(workspace), "what is VERSION?", progress=progress)
    assert result.answer == "done"
    assert progress.now == "thinking (turn 2)"  # what a heartbeat sent now would say
    assert progress.seen == [
        "waiting for earlier questions on this workspace",
        "thinking (turn 1)",
        "running Read",
        "thinking (turn 2)",
    ]


async def test_without_a_provider_the_question_says_which_key_to_set(tmp_path: Path, workspace: Path) -> None:
    engine = engine_for(tmp_path, None)
    with pytest.raises(NoCredentialError, match="LIVE_MEMORY_API_KEY"):
        await engine.answerer.ask(str(workspace), "q")


async def test_after_shutdown_begins_new_questions_are_refused_with_a_retry(tmp_path: Path, workspace: Path) -> None:
    engine = engine_for(tmp_path, ScriptedProvider())
    engine.service.begin_shutdown()
    with pytest.raises(BusyError, match="shutting down"):
        await engine.answerer.ask(str(workspace), "q")


async def test_cut_deadlines_turns_a_running_question_into_its_best_answer(tmp_path: Path, workspace: Path) -> None:
    gate = anyio.Event()

    class Slow(ScriptedProvider):
        async def chat(self, request: ChatRequest) -> ChatResponse:
            if len(self.requests) == 0:
                self.requests.append(request)
                await gate.wait()  # the model never answers in time
            return await super().chat(request)

    provider = Slow(responder=lambda request: text_response("best effort"))
    engine = engine_for(tmp_path, provider)
    engine.answerer.deadline_reserve_s = 0.0
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            results = []

            async def ask() -> None:
                results.append(await engine.answerer.ask(str(workspace), "slow question"))

            tasks.start_soon(ask)
            await until(lambda: len(provider.requests) == 1)
            engine.answerer.cut_deadlines(0.0)
    [result] = results
    assert result.timed_out
    gate.set()


def test_a_fold_trusts_the_cache_for_as_long_as_the_provider_keeps_the_history(tmp_path: Path) -> None:
    def lifetime(protocol: str, **options: Any) -> float:
        return cache_lifetime_s(settings_for("http://127.0.0.1:9", tmp_path / "data", protocol=protocol, **options))

    assert lifetime("anthropic") == 3600.0  # the history's breakpoints ask for the 1-hour cache by default
    assert lifetime("anthropic", long_cache="prefix") == lifetime("anthropic", long_cache="off") == 300.0
    assert lifetime("openai") == 240.0  # an implicit cache: its keep-warm interval, under its lifetime
    uncached = settings_for("http://127.0.0.1:9", tmp_path / "data")
    uncached = replace(uncached, profile=replace(uncached.profile, cache_style="none"))
    assert cache_lifetime_s(uncached) == 0.0


LONG_ANSWER = "the answer, at length: " + "words " * 600  # about 900 tokens of history per exchange
SUMMARY = text_response("+ app.py holds VERSION", usage=Usage(input_tokens=2000, output_tokens=40))


async def test_a_compaction_is_counted_and_charged_even_when_its_question_then_fails(
    tmp_path: Path, workspace: Path
) -> None:
    answers = [text_response(LONG_ANSWER) for _ in range(3)]
    provider = ScriptedProvider(*answers, SUMMARY, AuthError("the key was revoked"))
    engine = engine_for(tmp_path, provider, history_max_tokens="1500")
    for index in range(3):
        await engine.answerer.ask(str(workspace), f"question {index}")
    with pytest.raises(AuthError, match="revoked"):
        await engine.answerer.ask(str(workspace), "the question that fails")
    state = await engine.service.find(str(workspace))
    assert state is not None
    assert state.stats.compactions == 1 and state.stats.background_cost_usd > 0  # the summary was paid for
    assert engine.service.spend.today().background_usd == pytest.approx(state.stats.background_cost_usd)
    assert state.window.qa_count() == 3  # the failed question's fork is dropped, its compaction with it


async def test_a_reload_brings_its_compaction_settings_to_the_next_question(tmp_path: Path, workspace: Path) -> None:
    answers = [text_response(LONG_ANSWER) for _ in range(3)]
    provider = ScriptedProvider(*answers, SUMMARY, text_response("after the fold"))
    engine = engine_for(tmp_path, provider)  # the default history bound: three exchanges stay as they are
    for index in range(3):
        await engine.answerer.ask(str(workspace), f"question {index}")
    state = await engine.service.find(str(workspace))
    assert state is not None and state.stats.compactions == 0
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_API_KEY": "x", "LIVE_MEMORY_HISTORY_MAX_TOKENS": "1500"}
    await engine.service.reload(Runtime(off_loop(load_settings, env=env, data_dir=tmp_path / "data"), provider))
    result = await engine.answerer.ask(str(workspace), "one more")
    assert result.answer == "after the fold"
    assert state.stats.compactions == 1 and state.window.qa_count() < 4
    assert "app.py holds VERSION" in state.window.ledger.text_for_summary()
