"""The tool loop for one question, driven directly: a scripted provider, the real read-only tools on a
temporary directory, and a window of its own (no service, no HTTP)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from live_memory import constants as C
from live_memory.constants import PROVIDER_MAX_RETRIES
from live_memory.core import prompts
from live_memory.core.errors import AuthError, OverloadedError, PromptTooLongError, ProviderError, RateLimitedError
from live_memory.core.messages import ChatRequest, ChatResponse, Message, TextPart, ToolResultPart, ToolUsePart
from live_memory.core.records import ToolCall, Usage
from live_memory.engine.agent_loop import LoopLimits, LoopOutcome, QuestionLoop
from live_memory.memory.context_window import ContextWindow
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.tools import TOOL_SCHEMAS, Toolbox, ToolOutcome
from tests.fakes.engine import until

APP = "VERSION = 3\n"


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Silent(ScriptedProvider):
    """A provider whose calls never return (the model is stuck) until `release` is set."""

    def __init__(self, *replies: ChatResponse | ProviderError, stall_from: int = 0) -> None:
        super().__init__(*replies)
        self.stall_from = stall_from
        self.release = anyio.Event()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        if len(self.requests) >= self.stall_from:
            self.requests.append(request)
            await self.release.wait()
            return text_response("too late")
        return await super().chat(request)


def read(path: str, call_id: str = "r1") -> ChatResponse:
    return text_response("", tool_calls=(ToolCall(call_id, "Read", {"file_path": path}),))


def limits(**overrides: object) -> LoopLimits:
    values: dict[str, object] = {
        "timeout_s": 30.0,
        "max_iterations": 4,
        "answer_tokens": 256,
        "context_tokens": 100_000,
        "force_explore_when_cold": False,
    }
    values.update(overrides)
    return LoopLimits(**values)  # type: ignore[arg-type]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(APP)
    return tmp_path


async def loop_for(
    root: Path, provider: ScriptedProvider, clock: Callable[[], float] | None = None, **overrides: object
) -> QuestionLoop:
    tools = await Toolbox.create(root)
    loop = QuestionLoop(provider, tools, TOOL_SCHEMAS, limits(**overrides), workspace_root=root, cache_key="ws-1")
    if clock is not None:
        loop.clock = clock
    return loop


def logged_delay(record: logging.LogRecord) -> float:
    """The delay a "retrying provider call" record names: its first argument."""
    assert isinstance(record.args, tuple)
    delay = record.args[0]
    assert isinstance(delay, float)
    return delay


def last_parts(request: ChatRequest) -> tuple[object, ...]:
    return request.messages[-1].parts


async def test_a_tool_result_goes_back_to_the_model_and_the_read_is_remembered(root: Path) -> None:
    provider = ScriptedProvider(read("app.py"), text_response("VERSION is 3 (app.py:1)"))
    window = ContextWindow(budget_tokens=100_000)
    out = await (await loop_for(root, provider)).answer(window, "What is VERSION?")
    assert out.answer == "VERSION is 3 (app.py:1)"
    assert (out.tool_calls, out.files_read, out.timed_out, out.partial) == (1, ["app.py"], False, None)
    assert out.usage == Usage(input_tokens=20, output_tokens=10)  # both calls counted
    result, hint = last_parts(provider.requests[1])
    assert isinstance(hint, TextPart) and hint.text.startswith(prompts.HINT_HEADING)  # the hint rides along
    assert isinstance(result, ToolResultPart) and result.tool_use_id == "r1" and "VERSION = 3" in result.content
    assert window.files["app.py"].sha256 == hashlib.sha256(APP.encode()).hexdigest()
    assert [t.kind for t in window.history] == ["question", "answer"]
    assert window.history[-1].message.text == "VERSION is 3 (app.py:1)"
    assert window.history[-1].cites == ("app.py",)


async def test_every_request_carries_the_tools_the_answer_budget_and_the_workspace_cache_key(root: Path) -> None:
    provider = ScriptedProvider(text_response("done"))
    await (await loop_for(root, provider, answer_tokens=321)).answer(ContextWindow(budget_tokens=100_000), "q?")
    [request] = provider.requests
    assert (request.max_tokens, request.cache_key) == (321, "ws-1")
    assert [t["name"] for t in request.tools] == [t["name"] for t in TOOL_SCHEMAS]


async def test_the_per_question_hint_names_recently_modified_files_and_is_never_stored(root: Path) -> None:
    window = ContextWindow(budget_tokens=100_000)
    window.record_read("app.py", "0" * 64, 12)
    window.note_modified("app.py")
    provider = ScriptedProvider(text_response("ok"))
    await (await loop_for(root, provider, timeout_s=30.0, answer_tokens=200)).answer(window, "  where?  ")
    question, hint = last_parts(provider.requests[0])
    assert isinstance(question, TextPart) and question.text == "## Question\nwhere?"
    assert isinstance(hint, TextPart) and hint.text.startswith(prompts.HINT_HEADING)
    assert "about 30 s" in hint.text and "at most 200 tokens" in hint.text
    assert "Modified by the agents since you last saw them" in hint.text and "app.py" in hint.text
    assert prompts.HINT_HEADING not in str([t.message for t in window.history])
    assert window.drain_recently_modified() == []  # shown once, then cleared


async def test_a_cold_memory_answer_without_tools_is_sent_back_to_explore_once(root: Path) -> None:
    provider = ScriptedProvider(text_response("a guess"), text_response("still a guess"))
    out = await (await loop_for(root, provider, force_explore_when_cold=True)).answer(
        ContextWindow(budget_tokens=100_000), "What is VERSION?"
    )
    assert out.answer == "still a guess"  # nudged once, not forever
    assert len(provider.requests) == 2
    assert provider.requests[1].messages[-2].text == "a guess"
    assert provider.requests[1].messages[-1].parts[0] == TextPart(prompts.COLD_EXPLORE_NUDGE, cache=True)


async def test_a_cold_memory_whose_question_names_a_defined_name_answers_without_the_nudge(root: Path) -> None:
    (root / "tools.py").write_text("def make_widget(size):\n    return size * 2\n")
    provider = ScriptedProvider(text_response("`make_widget` is in tools.py:1-2"))
    loop = await loop_for(root, provider, force_explore_when_cold=True)
    out = await loop.answer(ContextWindow(budget_tokens=100_000), "Where is `make_widget` defined?")
    assert out.answer == "`make_widget` is in tools.py:1-2" and len(provider.requests) == 1
    assert "tools.py:1-2" in provider.requests[0].messages[-1].text  # the lookup grounded it


async def test_a_warm_memory_answers_without_the_explore_nudge(root: Path) -> None:
    window = ContextWindow(budget_tokens=100_000)
    window.observe("app.py", APP, hashlib.sha256(APP.encode()).hexdigest())
    provider = ScriptedProvider(text_response("VERSION is 3"))
    out = await (await loop_for(root, provider, force_explore_when_cold=True)).answer(window, "What is VERSION?")
    assert out.answer == "VERSION is 3" and len(provider.requests) == 1


async def test_out_of_tool_turns_the_model_is_asked_once_for_its_answer(root: Path) -> None:
    provider = ScriptedProvider(read("app.py", "a"), read("app.py", "b"), text_response("VERSION is 3"))
    out = await (await loop_for(root, provider, max_iterations=2)).answer(ContextWindow(budget_tokens=100_000), "q?")
    assert out.answer == "VERSION is 3" and out.tool_calls == 2
    assert provider.requests[2].messages[-1].text.startswith(prompts.ITERATIONS_NUDGE)


async def test_a_model_that_keeps_calling_tools_past_the_limit_gets_a_clear_placeholder(root: Path) -> None:
    provider = ScriptedProvider(responder=lambda request: read("app.py", f"c{len(request.messages)}"))
    out = await (await loop_for(root, provider, max_iterations=2)).answer(ContextWindow(budget_tokens=100_000), "q?")
    assert out.answer == "(no answer within the tool-turn limit)"
    assert len(provider.requests) == 3  # two tool turns and the one wrap-up request


async def test_an_empty_final_text_is_reported_as_an_empty_answer(root: Path) -> None:
    provider = ScriptedProvider(text_response("   "))
    out = await (await loop_for(root, provider)).answer(ContextWindow(budget_tokens=100_000), "q?")
    assert out.answer == "(the model returned an empty answer)"


async def test_a_rate_limit_with_retry_after_is_retried_and_answered(root: Path) -> None:
    provider = ScriptedProvider(RateLimitedError("slow down", retry_after_s=0.0), text_response("fine"))
    out = await (await loop_for(root, provider)).answer(ContextWindow(budget_tokens=100_000), "q?")
    assert out.answer == "fine" and len(provider.requests) == 2


async def test_an_overloaded_provider_is_retried_with_a_doubling_backoff_from_the_configured_base(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider = ScriptedProvider(OverloadedError("busy"), OverloadedError("busy"), text_response("fine"))
    caplog.set_level("INFO", logger="live_memory.engine.agent_loop")
    loop = await loop_for(root, provider, retry_base_s=0.01)
    out = await loop.answer(ContextWindow(budget_tokens=100_000), "q?")
    assert out.answer == "fine" and len(provider.requests) == 3
    delays = [logged_delay(r) for r in caplog.records if r.getMessage().startswith("retrying provider call")]
    assert len(delays) == 2
    assert 0.005 <= delays[0] <= 0.015 and 0.01 <= delays[1] <= 0.03  # base x (0.5..1.5), doubled once


async def test_retries_stop_after_the_limit_and_the_providers_error_reaches_the_caller(root: Path) -> None:
    failures = [RateLimitedError("slow down", retry_after_s=0.0) for _ in range(PROVIDER_MAX_RETRIES + 1)]
    provider = ScriptedProvider(*failures, text_response("never reached"))
    window = ContextWindow(budget_tokens=100_000)
    with pytest.raises(RateLimitedError, match="slow down"):
        await (await loop_for(root, provider)).answer(window, "q?")
    assert len(provider.requests) == PROVIDER_MAX_RETRIES + 1
    assert window.qa_count() == 0  # nothing learned: nothing is committed


@pytest.mark.parametrize(
    "error",
    [
        RateLimitedError("spend cap reached", retry_after_s=None),  # a 429 without retry-after: a cap
        RateLimitedError("come back in a minute", retry_after_s=60.0),  # past the 30 s deadline
        AuthError("invalid x-api-key", status=401),
    ],
    ids=["spend-cap", "retry-after-past-deadline", "auth"],
)
async def test_a_failure_that_retrying_cannot_fix_in_time_is_raised_at_once(root: Path, error: ProviderError) -> None:
    provider = ScriptedProvider(error, text_response("never reached"))
    with pytest.raises(type(error), match=str(error)):
        await (await loop_for(root, provider, clock=Clock())).answer(ContextWindow(budget_tokens=100_000), "q?")
    assert len(provider.requests) == 1


async def test_a_provider_failure_after_tool_calls_keeps_a_partial_answer_naming_the_files(root: Path) -> None:
    provider = ScriptedProvider(read("app.py"), AuthError("connection reset"))
    window = ContextWindow(budget_tokens=100_000)
    out = await (await loop_for(root, provider)).answer(window, "What is VERSION?")
    assert out.partial == "the model endpoint failed before the answer was complete (connection reset)"
    assert out.answer == (
        "[Partial answer: the model endpoint failed before the answer was complete (connection reset). "
        "Files examined: app.py.]"
    )
    assert window.qa_count() == 1 and window.files["app.py"].path == "app.py"  # what was found is kept


async def test_a_prompt_too_long_error_compacts_once_and_retries_within_the_stated_limit(root: Path) -> None:
    compactions: list[int | None] = []

    async def compactor(window: ContextWindow, limit: int | None) -> None:
        compactions.append(limit)

    provider = ScriptedProvider(PromptTooLongError("prompt is too long", limit_tokens=3000), text_response("ok"))
    loop = QuestionLoop(provider, await Toolbox.create(root), (), limits(), workspace_root=root, compactor=compactor)
    out = await loop.answer(ContextWindow(budget_tokens=100_000), "q?")
    assert out.answer == "ok"
    assert compactions == [None, 3000]  # the routine check before the prompt, then the overflow
    assert loop.hard_limit == 3000  # the provider's real limit is adopted for the rest of the question


async def test_a_second_prompt_too_long_error_is_raised_instead_of_looping(root: Path) -> None:
    calls: list[int | None] = []

    async def compactor(window: ContextWindow, limit: int | None) -> None:
        calls.append(limit)

    too_long = [PromptTooLongError("prompt is too long", limit_tokens=3000) for _ in range(2)]
    provider = ScriptedProvider(*too_long, text_response("never reached"))
    loop = QuestionLoop(provider, await Toolbox.create(root), (), limits(), workspace_root=root, compactor=compactor)
    with pytest.raises(PromptTooLongError):
        await loop.answer(ContextWindow(budget_tokens=100_000), "q?")
    assert calls == [None, 3000] and len(provider.requests) == 2


async def test_the_oldest_tool_output_is_shortened_when_it_crowds_the_hard_context(root: Path) -> None:
    for name in ("one", "two"):
        (root / f"{name}.txt").write_text("".join(f"{name} line {i} with some padding text\n" for i in range(200)))
    provider = ScriptedProvider(read("one.txt", "a"), read("two.txt", "b"), text_response("both read"))
    out = await (await loop_for(root, provider, context_tokens=4000)).answer(ContextWindow(budget_tokens=4000), "q?")
    assert out.answer == "both read"
    results = [p for m in provider.requests[2].messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert len(results) == 2 and results[0].content == prompts.SHRUNK_TOOL_RESULT  # the older one goes first
    assert "two line 199" in results[1].content  # the newest result stays whole
    assert out.files_read == ["one.txt", "two.txt"]


async def test_results_of_a_round_of_reads_are_sent_but_not_written_to_the_cache(root: Path) -> None:
    (root / "b.py").write_text("B = 2\n")
    grep = text_response("", tool_calls=(ToolCall("g1", "Grep", {"pattern": "VERSION"}),))
    provider = ScriptedProvider(grep, read("app.py"), text_response("done"))
    await (await loop_for(root, provider)).answer(ContextWindow(budget_tokens=100_000), "q?")
    after_grep, after_read = provider.requests[1], provider.requests[2]

    def marked(request: ChatRequest) -> list[type]:
        return [type(p) for m in request.messages for p in m.parts if p.cache]

    # After a search the model usually reads next: its results end the cached prefix (bp4).
    assert marked(after_grep)[-1] is ToolResultPart and after_grep.messages[-1].parts[0].cache
    # After only Reads it usually answers: bp4 stays on the call, the results are not written.
    assert isinstance(after_read.messages[-2].parts[-1], ToolUsePart) and after_read.messages[-2].parts[-1].cache
    assert not any(p.cache for p in after_read.messages[-1].parts)


async def test_with_no_time_left_the_answer_says_the_budget_ran_out(root: Path) -> None:
    provider = Silent()
    window = ContextWindow(budget_tokens=100_000)
    with anyio.fail_after(5):
        out = await (await loop_for(root, provider, timeout_s=0.0)).answer(window, "q?")
    assert out.timed_out
    assert out.answer == (
        "No complete answer within the time budget (0s); the model did not finish in time. "
        "Ask again, or narrow the question."
    )
    assert window.qa_count() == 1


async def answer_while(loop: QuestionLoop, meanwhile: Callable[[], Awaitable[None]]) -> LoopOutcome:
    """Answer a question on a fresh window while `meanwhile` acts on the loop beside it (bounded)."""
    results: list[LoopOutcome] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                results.append(await loop.answer(ContextWindow(budget_tokens=100_000), "q?"))

            tasks.start_soon(ask)
            await meanwhile()
    return results[0]


async def test_a_shutdown_cut_returns_the_shutdown_notice_with_the_files_examined(root: Path) -> None:
    provider = Silent(read("app.py"), stall_from=1)
    loop = await loop_for(root, provider, clock=Clock())

    async def cut_while_thinking() -> None:
        await until(lambda: len(provider.requests) == 2)  # the model is thinking after the Read
        loop.cut_deadline(0.0)

    out = await answer_while(loop, cut_while_thinking)
    assert out.timed_out and loop.cut_short
    assert out.answer == (
        "No complete answer: Live Memory is shutting down and cut this question short. "
        "Files examined so far: app.py. Ask again in a few seconds."
    )


async def test_a_cut_later_than_the_deadline_changes_nothing(root: Path) -> None:
    clock = Clock()
    loop = await loop_for(root, ScriptedProvider(), clock=clock, timeout_s=30.0)
    loop.deadline = clock() + 30.0
    loop.cut_deadline(60.0)
    assert (loop.deadline, loop.cut_short) == (clock() + 30.0, False)
    loop.cut_deadline(5.0)
    assert (loop.deadline, loop.cut_short) == (clock() + 5.0, True)


def test_the_question_message_is_what_history_stores() -> None:
    question = Message("user", (TextPart(prompts.question_block("  where is main?\n")),))
    assert question.text == "## Question\nwhere is main?"


class BlockingTools:
    """The tool seam with a tool that never finishes (a slow search), until the question is cut."""

    def __init__(self) -> None:
        self.started = anyio.Event()

    async def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        self.started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_deadline_during_a_tool_run_still_sends_a_well_formed_wrap_up(root: Path) -> None:
    clock = Clock()
    grep = text_response("", tool_calls=(ToolCall("g1", "Grep", {"pattern": "VERSION"}),))
    provider = ScriptedProvider(grep, text_response("VERSION is probably 3"))
    tools = BlockingTools()
    loop = QuestionLoop(provider, tools, TOOL_SCHEMAS, limits(), workspace_root=root, clock=clock)

    async def deadline_while_the_tool_runs() -> None:
        await tools.started.wait()
        loop.cut_deadline(0.0)  # the soft deadline fires now...
        clock.now -= 7.5  # ...with the usual reserve left on the loop's clock for the wrap-up call

    out = await answer_while(loop, deadline_while_the_tool_runs)
    wrap_up = provider.requests[-1]
    uses = [p.id for m in wrap_up.messages for p in m.parts if isinstance(p, ToolUsePart)]
    answered = [p.tool_use_id for m in wrap_up.messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert uses == answered == ["g1"]
    assert out.answer == "VERSION is probably 3"


# -- the names a question mentions, looked up before the first request ----------------------------
MODELS = "class Card:\n    def render(self) -> str:\n        return ''\n\n\ndef load(path):\n    return Card()\n"
LOAD = "### models.py:6-7  load (function)\n```\n6\tdef load(path):"  # with its code: the signature is its first line


class RecordingTools:
    """The loop's tool seam around a real toolbox: notes each call and how many model requests came before."""

    def __init__(self, box: Toolbox, provider: ScriptedProvider) -> None:
        self.box = box
        self.provider = provider
        self.calls: list[tuple[str, dict[str, Any], int]] = []

    async def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        self.calls.append((name, dict(arguments), len(self.provider.requests)))
        return await self.box.run(name, arguments)


@pytest.fixture
def models_root(root: Path) -> Path:
    (root / "models.py").write_text(MODELS)
    return root


async def recording_loop(
    root: Path, provider: ScriptedProvider, **overrides: object
) -> tuple[QuestionLoop, RecordingTools]:
    tools = RecordingTools(await Toolbox.create(root), provider)
    loop = QuestionLoop(provider, tools, TOOL_SCHEMAS, limits(**overrides), workspace_root=root, cache_key="ws-1")
    return loop, tools


def hint_of(request: ChatRequest) -> str:
    hint = last_parts(request)[-1]
    assert isinstance(hint, TextPart) and hint.text.startswith(prompts.HINT_HEADING)
    return hint.text


async def test_the_names_a_question_mentions_are_looked_up_with_find_symbol_before_the_first_request(
    models_root: Path,
) -> None:
    provider = ScriptedProvider(text_response("ok"))
    loop, tools = await recording_loop(models_root, provider)
    await loop.answer(ContextWindow(budget_tokens=100_000), "Does `load` call `Card.render` or parse_config?")
    looked_up = [(tool, arguments["name"], arguments["kind"], before) for tool, arguments, before in tools.calls]
    assert looked_up == [
        ("find_symbol", "load", "definition", 0),
        ("find_symbol", "Card.render", "definition", 0),
        ("find_symbol", "parse_config", "definition", 0),
    ]


async def test_only_as_many_names_as_the_limit_allows_are_looked_up_and_zero_turns_it_off(models_root: Path) -> None:
    question = "Does `load` call `Card.render`?"
    provider = ScriptedProvider(text_response("ok"), text_response("ok"))
    one, tools = await recording_loop(models_root, provider, question_names=1)
    await one.answer(ContextWindow(budget_tokens=100_000), question)
    assert [arguments["name"] for _, arguments, _ in tools.calls] == ["load"]
    off, tools = await recording_loop(models_root, provider, question_names=0)
    await off.answer(ContextWindow(budget_tokens=100_000), question)
    assert tools.calls == []
    assert prompts.DEFINITIONS_HEADING not in hint_of(provider.requests[-1])


async def test_the_definitions_found_ride_in_the_hint_of_every_request_of_the_question(models_root: Path) -> None:
    provider = ScriptedProvider(read("app.py"), text_response("done"))
    out = await (await loop_for(models_root, provider)).answer(
        ContextWindow(budget_tokens=100_000), "What does `load` return?"
    )
    for request in provider.requests:
        hint = hint_of(request)
        definitions = hint.split(prompts.DEFINITIONS_HEADING + "\n", 1)[1]
        assert definitions.startswith("### models.py:6-7  load (function)\n") and LOAD in definitions
    assert out.tool_calls == 1  # the model's Read; the lookup is not one of its calls


async def test_the_definitions_are_never_stored_and_the_next_question_does_not_carry_them(models_root: Path) -> None:
    window = ContextWindow(budget_tokens=100_000)
    provider = ScriptedProvider(text_response("first"), text_response("second"))
    loop = await loop_for(models_root, provider)
    await loop.answer(window, "What does `load` do?")
    await loop.answer(window, "And what else is there?")
    assert LOAD in hint_of(provider.requests[0])
    later = provider.requests[1]
    assert not any(LOAD in m.text or prompts.DEFINITIONS_HEADING in m.text for m in later.messages)
    assert not any(prompts.DEFINITIONS_HEADING in t.message.text for t in window.history)


async def test_a_definition_in_a_file_the_prompt_holds_comes_without_its_code(models_root: Path) -> None:
    window = ContextWindow(budget_tokens=100_000)
    window.observe("models.py", MODELS, hashlib.sha256(MODELS.encode()).hexdigest())
    window.sync_deltas()
    provider = ScriptedProvider(text_response("from the held copy"))
    await (await loop_for(models_root, provider)).answer(window, "What does `load` return?")
    hint = hint_of(provider.requests[0])
    assert "models.py:6-7  load (function)  [its lines are held in your context" in hint
    assert "6\tdef load(path):" not in hint  # sent once, in the held copy, not again in the hint
    assert "def load(path):" in str(provider.requests[0].system)


async def test_a_name_without_a_definition_adds_nothing_to_the_hint(models_root: Path) -> None:
    provider = ScriptedProvider(text_response("none"), text_response("one"))
    loop = await loop_for(models_root, provider, timeout_s=30.0, answer_tokens=256)
    await loop.answer(ContextWindow(budget_tokens=100_000), "Where is `nowhere_defined` defined?")
    plain = prompts.question_hint(time_budget_s=30.0, answer_tokens=256, recently_modified=[])
    assert hint_of(provider.requests[0]) == plain
    await loop.answer(ContextWindow(budget_tokens=100_000), "Is `nowhere_defined` near `load`?")
    definitions = hint_of(provider.requests[1]).split(prompts.DEFINITIONS_HEADING, 1)[1]
    assert LOAD in definitions and "nowhere_defined" not in definitions


async def test_a_name_defined_in_many_files_comes_with_the_code_of_the_one_this_memory_read(tmp_path: Path) -> None:
    for n in range(C.SYMBOL_CODE_MAX_DEFINITIONS + 2):
        (tmp_path / f"v{n}.py").write_text(f"def wrapper(view):\n    return 'view {n}'\n")
    window = ContextWindow(budget_tokens=100_000)
    provider = ScriptedProvider(read("v3.py"), text_response("v3.py:1-2"), text_response("again"))
    loop = await loop_for(tmp_path, provider)
    await loop.answer(window, "What does `wrapper` do?")
    first = hint_of(provider.requests[0])
    assert "v0.py:1-2" in first and "```" not in first  # too many definitions to show code, none preferred
    await loop.answer(window, "Is `wrapper` safe to change?")
    again = hint_of(provider.requests[2]).split(prompts.DEFINITIONS_HEADING + "\n", 1)[1]
    assert again.splitlines()[1].startswith("### v3.py:1-2")  # the file it read comes first...
    assert "2\t    return 'view 3'" in again and "'view 0'" not in again  # ...with its code, and no other's


def answer_from_the_hint(request: ChatRequest) -> ChatResponse:
    """A model that answers a "where" question at once from the definitions in the hint."""
    found = [line for line in hint_of(request).splitlines() if line.startswith("models.py:")]
    return text_response(f"`load` is defined at {found[0].split()[0]}." if found else "I would have to search.")


async def test_a_where_question_is_answered_with_one_request_that_already_names_the_lines(models_root: Path) -> None:
    provider = ScriptedProvider(responder=answer_from_the_hint)
    window = ContextWindow(budget_tokens=100_000)
    out = await (await loop_for(models_root, provider)).answer(window, "Where is `load` defined?")
    [request] = provider.requests
    assert "models.py:6-7" in hint_of(request)
    assert out.answer == "`load` is defined at models.py:6-7."
    assert (out.tool_calls, out.files_read) == (0, [])
    # The file the lookup outlined grounds what is learned from it, with its bytes' hash; the prompt does not
    # list it (a lookup costs no manifest line).
    digest = hashlib.sha256((models_root / "models.py").read_bytes()).hexdigest()
    assert window.grounds() == {"models.py": digest} and "models.py" not in window.files


async def test_looking_up_the_names_is_bounded_by_the_questions_deadline(root: Path) -> None:
    tools = BlockingTools()  # a find_symbol that never finishes (a slow scan)
    loop = QuestionLoop(Silent(), tools, TOOL_SCHEMAS, limits(timeout_s=0.0), workspace_root=root)
    with anyio.fail_after(5):
        out = await loop.answer(ContextWindow(budget_tokens=100_000), "Where is `load` defined?")
    assert out.timed_out
    assert out.answer.startswith("No complete answer within the time budget")


async def test_a_shutdown_cut_while_the_names_are_looked_up_returns_the_shutdown_notice(root: Path) -> None:
    tools = BlockingTools()  # a find_symbol that never finishes (a slow scan)
    loop = QuestionLoop(Silent(), tools, TOOL_SCHEMAS, limits(), workspace_root=root, clock=Clock())
    results: list[LoopOutcome] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                results.append(await loop.answer(ContextWindow(budget_tokens=100_000), "Where is `load` defined?"))

            tasks.start_soon(ask)
            await tools.started.wait()
            loop.cut_deadline(0.0)
    [out] = results
    assert out.timed_out and loop.cut_short
    assert out.answer.startswith("No complete answer: Live Memory is shutting down")
