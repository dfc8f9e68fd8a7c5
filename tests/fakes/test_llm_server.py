"""Tests of the fake provider through the real anthropic and openai SDKs."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anthropic
import httpx2
import openai
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import CacheControlEphemeralParam, Message, TextBlock, TextBlockParam, ToolParam
from openai import AsyncOpenAI

from live_memory.testing.llm_server import CHARS_PER_TOKEN, FakeLLM, RecordedRequest, Reply

HAIKU = "claude-haiku-4-5"
SONNET = "claude-sonnet-4-6"
EPHEMERAL: CacheControlEphemeralParam = {"type": "ephemeral"}
REPO_ROOT = Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(min_cacheable_tokens=64) as server:
        yield server


def anthropic_client(fake: FakeLLM) -> AsyncAnthropic:
    return AsyncAnthropic(base_url=fake.base_url, api_key="test", max_retries=0)


def openai_client(fake: FakeLLM) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=fake.openai_base_url, api_key="test", max_retries=0)


def tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def cached_system(text: str, ttl: Literal["5m", "1h"] = "5m") -> list[TextBlockParam]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral", "ttl": ttl}}]


def text_of(message: Message) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextBlock))


async def ask(
    client: AsyncAnthropic,
    question: str = "question",
    *,
    system: str | list[TextBlockParam] | anthropic.Omit = anthropic.omit,
    model: str = HAIKU,
    max_tokens: int = 64,
) -> Message:
    return await client.messages.create(
        model=model,
        max_tokens=max_tokens,
        system=system,
        messages=[{"role": "user", "content": question}],
    )


# ------------------------------------------------------------------------------------------ anthropic wire


async def test_anthropic_sdk_round_trips_text_and_tool_use(fake: FakeLLM) -> None:
    fake.script(Reply.text("hello there"), Reply.tool_call("grep", {"pattern": "def main"}, call_id="toolu_1"))
    async with anthropic_client(fake) as client:
        text = await ask(client, "say hi")
        tool = await ask(client, "find main")

    assert [block.type for block in text.content] == ["text"]
    assert text_of(text) == "hello there"
    assert text.stop_reason == "end_turn"
    assert text.model == HAIKU
    assert text.usage.output_tokens == tokens("hello there")
    assert [block.type for block in tool.content] == ["tool_use"]  # empty text → no text block
    call = tool.content[0]
    assert isinstance(call, anthropic.types.ToolUseBlock)
    assert (call.id, call.name, call.input) == ("toolu_1", "grep", {"pattern": "def main"})
    assert tool.stop_reason == "tool_use"

    first = fake.requests[0]
    assert (first.protocol, first.path, first.stream) == ("anthropic", "/v1/messages", False)
    assert first.headers["authorization"] == "Bearer test"  # anthropic 2.x sends the api_key as a bearer token
    assert "anthropic-version" in first.headers
    assert first.body["messages"] == [{"role": "user", "content": "say hi"}]
    assert first.prompt_tokens == tokens("say hi")
    assert first.usage is not None
    assert first.usage["output_tokens"] == tokens("hello there")


async def test_anthropic_stream_helper_yields_text_and_final_usage(fake: FakeLLM) -> None:
    fake.script(Reply.text("a streamed answer of some length"))
    async with (
        anthropic_client(fake) as client,
        client.messages.stream(
            model=HAIKU,
            max_tokens=64,
            system=cached_system("s" * 400),
            messages=[{"role": "user", "content": "stream please"}],
        ) as stream,
    ):
        pieces = [piece async for piece in stream.text_stream]
        final = await stream.get_final_message()

    assert len(pieces) > 1
    assert "".join(pieces) == "a streamed answer of some length"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == tokens("a streamed answer of some length")
    assert final.usage.cache_creation_input_tokens == 100
    assert final.usage.input_tokens == tokens("stream please")
    assert fake.requests[0].stream is True


async def test_anthropic_raw_stream_sends_tool_input_as_json_deltas(fake: FakeLLM) -> None:
    fake.script(Reply.tool_call("read_file", {"path": "src/app.py"}, text="Reading."))
    async with anthropic_client(fake) as client:
        stream = await client.messages.create(
            model=HAIKU, max_tokens=64, messages=[{"role": "user", "content": "go"}], stream=True
        )
        events = [event async for event in stream]

    kinds = [event.type for event in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 2
    partial_json = "".join(
        event.delta.partial_json
        for event in events
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta"
    )
    assert json.loads(partial_json) == {"path": "src/app.py"}


async def test_anthropic_stream_helper_parses_scripted_tool_input(fake: FakeLLM) -> None:
    fake.script(Reply.tool_call("read_file", {"path": "src/app.py", "lines": [1, 20]}, text="Reading."))
    async with (
        anthropic_client(fake) as client,
        client.messages.stream(model=HAIKU, max_tokens=64, messages=[{"role": "user", "content": "go"}]) as stream,
    ):
        final = await stream.get_final_message()

    assert [block.type for block in final.content] == ["text", "tool_use"]
    call = final.content[1]
    assert isinstance(call, anthropic.types.ToolUseBlock)
    assert call.input == {"path": "src/app.py", "lines": [1, 20]}
    assert final.stop_reason == "tool_use"


async def test_anthropic_mid_stream_drop_raises_after_partial_text(fake: FakeLLM) -> None:
    fake.script(Reply.text("0123456789abcdefghij", drop_after_chars=7))
    received: list[str] = []
    async with anthropic_client(fake) as client:
        # anthropic 2.x lets the transport error escape unwrapped from a stream; accept the wrapped form too
        with pytest.raises((anthropic.APIConnectionError, httpx2.RemoteProtocolError)):
            async with client.messages.stream(
                model=HAIKU, max_tokens=64, messages=[{"role": "user", "content": "go"}]
            ) as stream:
                async for piece in stream.text_stream:
                    received.append(piece)

    assert "".join(received) == "0123456"


async def test_drop_reply_closes_connection_without_response(fake: FakeLLM) -> None:
    fake.script(Reply.drop(), Reply.text("never sent", drop_after_chars=3))
    async with anthropic_client(fake) as client:
        with pytest.raises(anthropic.APIConnectionError):
            await ask(client)
        with pytest.raises(anthropic.APIConnectionError):  # non-streaming drop_after_chars → plain drop
            await ask(client)

    assert len(fake.requests) == 2
    assert all(record.usage is None for record in fake.requests)


async def test_beta_path_accepts_system_role_messages_like_claude_code(fake: FakeLLM) -> None:
    fake.script(Reply.text("cli answer"))
    async with anthropic_client(fake) as client:
        stream = await client.beta.messages.create(
            model=HAIKU,
            max_tokens=64,
            messages=[
                {"role": "system", "content": "You are Claude Code."},
                {"role": "user", "content": [{"type": "text", "text": "what is here?"}]},
            ],
            stream=True,
            extra_query={"beta": "true"},  # the CLI posts here; anthropic 2.x's beta resource no longer adds it
        )
        text = "".join(
            [
                event.delta.text
                async for event in stream
                if event.type == "content_block_delta" and event.delta.type == "text_delta"
            ]
        )

    assert text == "cli answer"
    record = fake.requests[0]
    assert (record.path, record.query) == ("/v1/messages", "beta=true")
    assert record.stream is True
    assert record.body["messages"][0]["role"] == "system"


async def test_max_tokens_truncates_long_text_and_reports_max_tokens(fake: FakeLLM) -> None:
    fake.script(Reply.text("x" * 100))
    async with anthropic_client(fake) as client:
        message = await ask(client, max_tokens=5)

    assert text_of(message) == "x" * 20
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 5


async def test_default_reply_echoes_last_user_text_and_responder_overrides_it(fake: FakeLLM) -> None:
    seen: list[RecordedRequest] = []

    def responder(request: RecordedRequest) -> Reply:
        seen.append(request)
        return Reply.text("from responder")

    async with anthropic_client(fake) as client:
        default = await ask(client, "what does main do?")
        fake.responder = responder
        fake.script(Reply.text("scripted first"))
        scripted = await ask(client)
        answered = await ask(client, "third")

    assert text_of(default) == "fake answer: what does main do?"
    assert text_of(scripted) == "scripted first"
    assert text_of(answered) == "from responder"
    assert [FakeLLM.last_user_text(request.body) for request in seen] == ["third"]


def test_last_user_text_reads_strings_blocks_and_tool_results() -> None:
    anthropic_body = {
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [{"type": "text", "text": "a.py"}],
                    },
                    {"type": "text", "text": "now?"},
                ],
            },
        ]
    }
    openai_body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}]}

    assert FakeLLM.last_user_text(anthropic_body) == "a.py\nnow?"
    assert FakeLLM.last_user_text(openai_body) == "parts"
    assert FakeLLM.last_user_text({"messages": []}) == ""


async def test_prompt_tokens_sum_ceil_chars_per_token_over_blocks(fake: FakeLLM) -> None:
    tool: ToolParam = {"name": "grep", "description": "search", "input_schema": {"type": "object"}}
    async with anthropic_client(fake) as client:
        await client.messages.create(
            model=HAIKU,
            max_tokens=8,
            tools=[tool],
            system="sys",
            messages=[
                {"role": "user", "content": "hello"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": 1}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "found"}],
                },
            ],
        )
        counted = await client.messages.count_tokens(
            model=HAIKU, system="sys", messages=[{"role": "user", "content": "hello"}]
        )

    expected = (
        tokens(json.dumps(tool, sort_keys=True))
        + tokens("sys")
        + tokens("hello")
        + tokens("grep" + json.dumps({"q": 1}))
        + tokens("found")
    )
    assert fake.requests[0].prompt_tokens == expected
    assert counted.input_tokens == tokens("sys") + tokens("hello")
    assert fake.other_requests == [("POST", "/v1/messages/count_tokens")]


async def test_models_endpoint_lists_models_for_both_sdks(fake: FakeLLM) -> None:
    async with anthropic_client(fake) as claude, openai_client(fake) as gpt:
        anthropic_ids = [model.id async for model in claude.models.list()]
        openai_ids = [model.id for model in (await gpt.models.list()).data]

    assert HAIKU in anthropic_ids
    assert anthropic_ids == openai_ids
    assert fake.requests == []


# ----------------------------------------------------------------------------------------------- openai wire


async def test_openai_sdk_round_trips_text_and_tool_calls(fake: FakeLLM) -> None:
    fake.script(Reply.text("plain answer"), Reply.tool_calls([("grep", {"q": "x"}), ("ls", {})], text="Looking."))
    async with openai_client(fake) as client:
        text = await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        tools = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "search"}]
        )

    assert text.choices[0].message.content == "plain answer"
    assert text.choices[0].finish_reason == "stop"
    assert text.usage is not None
    assert text.usage.prompt_tokens == tokens("user\nhi")
    choice = tools.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Looking."
    calls = choice.message.tool_calls or []
    assert [(call.function.name, json.loads(call.function.arguments)) for call in calls] == [  # type: ignore[union-attr]
        ("grep", {"q": "x"}),
        ("ls", {}),
    ]
    assert all(call.id.startswith("call_") for call in calls)
    record = fake.requests[0]
    assert (record.protocol, record.path) == ("openai", "/v1/chat/completions")
    assert record.headers["authorization"] == "Bearer test"


async def test_openai_stream_puts_usage_in_last_chunk_when_requested(fake: FakeLLM) -> None:
    fake.script(Reply.text("streamed openai text"), Reply.tool_call("ls", {"dir": "."}))
    async with openai_client(fake) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        tool_stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        tool_chunks = [chunk async for chunk in tool_stream]

    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "streamed openai text"
    assert [chunk.usage for chunk in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == tokens("streamed openai text")
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"
    arguments = "".join(
        call.function.arguments or ""
        for chunk in tool_chunks
        for call in chunk.choices[0].delta.tool_calls or []
        if call.function is not None
    )
    assert json.loads(arguments) == {"dir": "."}
    assert all(chunk.usage is None for chunk in tool_chunks)
    assert tool_chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_openai_mid_stream_drop_raises_connection_error(fake: FakeLLM) -> None:
    fake.script(Reply.text("abcdefgh", drop_after_chars=3))
    received: list[str] = []
    async with openai_client(fake) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        with pytest.raises(openai.APIConnectionError):
            async for chunk in stream:
                received.append(chunk.choices[0].delta.content or "")

    assert "".join(received) == "abc"


async def test_openai_honours_max_completion_tokens(fake: FakeLLM) -> None:
    fake.script(Reply.text("y" * 50), Reply.text("z" * 50))
    async with openai_client(fake) as client:
        by_completion = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_completion_tokens=2
        )
        by_max = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=3
        )

    assert by_completion.choices[0].message.content == "y" * 8
    assert by_completion.choices[0].finish_reason == "length"
    assert by_max.choices[0].message.content == "z" * 12


async def test_deepseek_rules_report_hit_and_miss_tokens_in_64_token_units() -> None:
    system = "d" * (400 - len("system\n"))  # exactly 100 tokens
    messages: list[Any] = [{"role": "system", "content": system}, {"role": "user", "content": "question"}]
    with FakeLLM(cache_rules="deepseek") as fake:
        async with openai_client(fake) as client:
            first = await client.chat.completions.create(model="deepseek-chat", messages=messages)
            second = await client.chat.completions.create(
                model="deepseek-chat", messages=[*messages[:1], {"role": "user", "content": "other question"}]
            )

    assert first.usage is not None
    assert second.usage is not None
    assert second.usage.prompt_tokens_details is None
    assert first.usage.model_extra == {
        "prompt_cache_hit_tokens": 0,
        "prompt_cache_miss_tokens": first.usage.prompt_tokens,
    }
    assert second.usage.model_extra == {
        "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": second.usage.prompt_tokens - 64,
    }


async def test_openai_cache_needs_1024_tokens_and_counts_in_128_token_steps() -> None:
    def prompt(system_tokens: int, question: str) -> list[Any]:
        text = "o" * (system_tokens * CHARS_PER_TOKEN - len("system\n"))
        return [{"role": "system", "content": text}, {"role": "user", "content": question}]

    async def cached(client: AsyncOpenAI, messages: list[Any]) -> int:
        completion = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        assert completion.usage is not None
        assert completion.usage.prompt_tokens_details is not None
        return completion.usage.prompt_tokens_details.cached_tokens or 0

    long_question = "q" * 800  # 200 tokens: the prompt exceeds 1024 but its shared prefix does not
    with FakeLLM(cache_rules="openai") as fake:
        async with openai_client(fake) as client:
            assert await cached(client, prompt(1300, "first")) == 0
            assert await cached(client, prompt(1300, "second")) == 1280
            assert await cached(client, prompt(1000, long_question)) == 0
            assert await cached(client, prompt(1000, long_question + "!")) == 0
            assert await cached(client, prompt(1000, long_question)) == 1152  # whole prompt matches: 1202 → 1152


# --------------------------------------------------------------------------------------- anthropic caching


async def test_anthropic_cache_writes_then_reads_stable_system_prefix(fake: FakeLLM) -> None:
    system = cached_system("s" * 400)  # 100 tokens
    async with anthropic_client(fake) as client:
        first = await ask(client, "question one", system=system)
        second = await ask(client, "question two", system=system)

    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (100, 0)
    assert first.usage.input_tokens == tokens("question one")
    assert first.usage.cache_creation is not None
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == 100
    assert (second.usage.cache_creation_input_tokens, second.usage.cache_read_input_tokens) == (0, 100)
    assert second.usage.input_tokens == tokens("question two")
    recorded = fake.requests[1].usage
    assert recorded is not None
    assert (recorded["cache_read_input_tokens"], recorded["input_tokens"]) == (100, tokens("question two"))


async def test_anthropic_prefix_below_minimum_is_never_cached(fake: FakeLLM) -> None:
    system = cached_system("s" * 200)  # 50 tokens < 64
    async with anthropic_client(fake) as client:
        usages = [(await ask(client, system=system)).usage for _ in range(2)]

    for usage in usages:
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
        assert usage.input_tokens == 50 + tokens("question")


async def test_anthropic_default_minimum_depends_on_the_request_model() -> None:
    system = cached_system("s" * 8000)  # 2000 tokens: below haiku-4-5's 4096, above sonnet-4-6's 1024
    with FakeLLM() as fake:
        async with anthropic_client(fake) as client:
            haiku = [(await ask(client, system=system, model=HAIKU)).usage for _ in range(2)]
            sonnet = [(await ask(client, system=system, model=SONNET)).usage for _ in range(2)]

    assert [usage.cache_read_input_tokens for usage in haiku] == [0, 0]
    assert [usage.cache_creation_input_tokens for usage in haiku] == [0, 0]
    assert [usage.cache_creation_input_tokens for usage in sonnet] == [2000, 0]
    assert [usage.cache_read_input_tokens for usage in sonnet] == [0, 2000]


async def test_anthropic_breakpoint_more_than_20_blocks_after_written_position_misses(fake: FakeLLM) -> None:
    def later_turn(extra_blocks: int) -> list[Any]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": f"block {i}"} for i in range(extra_blocks)]
        blocks[-1]["cache_control"] = EPHEMERAL
        return [{"role": "user", "content": blocks}]

    system_text = "s" * 400
    async with anthropic_client(fake) as client:
        await ask(client, system=cached_system(system_text))  # writes the system block (position 0)
        far = await client.messages.create(model=HAIKU, max_tokens=8, system=system_text, messages=later_turn(20))
        near = await client.messages.create(model=HAIKU, max_tokens=8, system=system_text, messages=later_turn(19))

    assert far.usage.cache_read_input_tokens == 0  # positions 20..1 checked, 0 is out of reach
    assert far.usage.cache_creation_input_tokens == fake.requests[1].prompt_tokens
    assert near.usage.cache_read_input_tokens == 100  # positions 19..0: finds the system block
    assert near.usage.cache_creation_input_tokens == fake.requests[2].prompt_tokens - 100


async def test_anthropic_cache_entry_expires_after_ttl_on_injected_clock() -> None:
    clock = FakeClock()
    system = cached_system("s" * 400)
    with FakeLLM(min_cacheable_tokens=64, clock=clock, cache_ttl_s=300) as fake:
        async with anthropic_client(fake) as client:
            reads: list[int | None] = []
            for advance in (0, 299, 299, 301):
                clock.now += advance
                reads.append((await ask(client, system=system)).usage.cache_read_input_tokens)
            assert fake.requests[-1].received_at == clock.now

    assert reads == [0, 100, 100, 0]  # each hit refreshes the TTL; 301 s of silence expires it


async def test_one_hour_breakpoint_survives_five_minutes_and_is_reported_separately() -> None:
    clock = FakeClock()
    with FakeLLM(min_cacheable_tokens=64, clock=clock) as fake:
        async with anthropic_client(fake) as client:
            first = await ask(client, system=cached_system("h" * 400, ttl="1h"))
            clock.now += 1800
            second = await ask(client, system=cached_system("h" * 400, ttl="1h"))

    assert first.usage.cache_creation is not None
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == 100
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == 0
    assert second.usage.cache_read_input_tokens == 100


async def test_top_level_cache_control_caches_the_growing_conversation(fake: FakeLLM) -> None:
    turn_one: list[Any] = [{"role": "user", "content": "u" * 400}]
    turn_two: list[Any] = [
        *turn_one,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    async with anthropic_client(fake) as client:
        first = await client.messages.create(model=HAIKU, max_tokens=8, messages=turn_one, cache_control=EPHEMERAL)
        second = await client.messages.create(model=HAIKU, max_tokens=8, messages=turn_two, cache_control=EPHEMERAL)

    assert first.usage.cache_creation_input_tokens == 100
    assert second.usage.cache_read_input_tokens == 100
    assert second.usage.cache_creation_input_tokens == tokens("ok") + tokens("more")
    assert second.usage.input_tokens == 0


async def test_max_tokens_zero_prewarms_the_cache_with_an_empty_answer(fake: FakeLLM) -> None:
    system = cached_system("s" * 400)
    async with anthropic_client(fake) as client:
        warm = await ask(client, system=system, max_tokens=0)
        real = await ask(client, system=system)

    assert warm.content == []
    assert warm.stop_reason == "max_tokens"
    assert warm.usage.output_tokens == 0
    assert warm.usage.cache_creation_input_tokens == 100
    assert real.usage.cache_read_input_tokens == 100


async def test_more_than_four_breakpoints_is_rejected_without_consuming_the_script(fake: FakeLLM) -> None:
    system: list[TextBlockParam] = [{"type": "text", "text": f"part {i}", "cache_control": EPHEMERAL} for i in range(5)]
    fake.script(Reply.text("kept for later"))
    async with anthropic_client(fake) as client:
        with pytest.raises(anthropic.BadRequestError) as raised:
            await ask(client, system=system)
        later = await ask(client)

    assert raised.value.api_message == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    assert raised.value.type == "invalid_request_error"
    assert text_of(later) == "kept for later"
    assert fake.requests[0].usage is None


async def test_reset_cache_forgets_written_entries(fake: FakeLLM) -> None:
    system = cached_system("s" * 400)
    async with anthropic_client(fake) as client:
        await ask(client, system=system)
        fake.reset_cache()
        after_reset = await ask(client, system=system)

    assert after_reset.usage.cache_read_input_tokens == 0
    assert after_reset.usage.cache_creation_input_tokens == 100


# -------------------------------------------------------------------------------------------------- errors


async def test_error_replies_raise_the_matching_anthropic_exceptions(fake: FakeLLM) -> None:
    fake.script(
        Reply.error(429, "slow down", headers={"retry-after": "7"}),
        Reply.error(529, "Overloaded"),
        Reply.error(401, "invalid x-api-key"),
    )
    async with anthropic_client(fake) as client:
        with pytest.raises(anthropic.RateLimitError) as limited:
            await ask(client)
        with pytest.raises(anthropic.InternalServerError) as overloaded:
            await ask(client)
        with pytest.raises(anthropic.AuthenticationError) as unauthorized:
            await ask(client)

    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
        "request_id": limited.value.request_id,
    }
    assert isinstance(overloaded.value, anthropic.APIStatusError)
    assert overloaded.value.status_code == 529
    assert overloaded.value.type == "overloaded_error"
    assert unauthorized.value.type == "authentication_error"
    assert [record.usage for record in fake.requests] == [None, None, None]


async def test_error_replies_raise_the_matching_openai_exceptions(fake: FakeLLM) -> None:
    fake.script(
        Reply.error(429, "Rate limit reached", headers={"retry-after": "2"}, code="rate_limit_exceeded"),
        Reply.error(500, "boom"),
        Reply.error(401, "Incorrect API key provided", code="invalid_api_key"),
    )
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    async with openai_client(fake) as client:
        with pytest.raises(openai.RateLimitError) as limited:
            await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        with pytest.raises(openai.InternalServerError) as failed:
            await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        with pytest.raises(openai.AuthenticationError) as unauthorized:
            await client.chat.completions.create(model="gpt-4o-mini", messages=messages)

    assert limited.value.response.headers["retry-after"] == "2"
    assert limited.value.code == "rate_limit_exceeded"
    assert failed.value.status_code == 500
    assert unauthorized.value.code == "invalid_api_key"
    assert unauthorized.value.param is None


async def test_prompt_too_long_states_the_computed_token_counts(fake: FakeLLM) -> None:
    fake.script(Reply.prompt_too_long(), Reply.prompt_too_long())
    question = "w" * 4000  # 1000 tokens
    async with anthropic_client(fake) as claude, openai_client(fake) as gpt:
        with pytest.raises(anthropic.BadRequestError) as claude_error:
            await ask(claude, question)
        with pytest.raises(openai.BadRequestError) as gpt_error:
            await gpt.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": question}])

    assert claude_error.value.api_message == "prompt is too long: 1000 tokens > 999 maximum"
    gpt_tokens = tokens("user\n" + question)
    assert gpt_error.value.code == "context_length_exceeded"
    assert f"maximum context length is {gpt_tokens - 1} tokens" in gpt_error.value.message
    assert f"your messages resulted in {gpt_tokens} tokens" in gpt_error.value.message


async def test_context_limit_triggers_prompt_too_long_automatically(fake: FakeLLM) -> None:
    fake.context_limit_tokens = 50
    fake.script(Reply.text("fits"))
    async with anthropic_client(fake) as client:
        with pytest.raises(anthropic.BadRequestError) as raised:
            await ask(client, "v" * 404)  # 101 tokens
        fits = await ask(client, "short")

    assert raised.value.api_message == "prompt is too long: 101 tokens > 50 maximum"
    assert text_of(fits) == "fits"


# -------------------------------------------------------------------------------------------- concurrency


async def test_stall_holds_a_request_until_released_while_others_are_served(fake: FakeLLM) -> None:
    release = threading.Event()
    fake.script(Reply.stall(release, then=Reply.text("released")), Reply.text("meanwhile"))
    async with anthropic_client(fake) as client:
        stalled = asyncio.create_task(ask(client, "slow one"))
        assert await asyncio.to_thread(fake.stalled.wait, 5.0)
        meanwhile = await ask(client, "fast one")
        assert not stalled.done()
        assert len(fake.requests) == 2  # the stalled request was recorded on arrival
        release.set()
        answer = await asyncio.wait_for(stalled, 5.0)

    assert text_of(meanwhile) == "meanwhile"
    assert text_of(answer) == "released"
    assert not fake.stalled.is_set()
    assert fake.requests[0].usage is not None


async def test_stop_releases_stalled_requests_with_the_default_answer() -> None:
    fake = FakeLLM().start()
    fake.script(Reply.stall())
    try:
        async with anthropic_client(fake) as client:
            stalled = asyncio.create_task(ask(client))
            assert await asyncio.to_thread(fake.stalled.wait, 5.0)
            await asyncio.to_thread(fake.stop)
            answer = await asyncio.wait_for(stalled, 5.0)
    finally:
        fake.stop()

    assert text_of(answer) == "stalled answer"


async def test_wait_for_requests_blocks_until_enough_requests_arrived(fake: FakeLLM) -> None:
    assert fake.wait_for_requests(1, timeout=0.01) is False
    waited = asyncio.create_task(asyncio.to_thread(fake.wait_for_requests, 2, 5.0))
    async with anthropic_client(fake) as client:
        await ask(client)
        await ask(client)

    assert await waited is True


# ---------------------------------------------------------------------------------------------------- CLI


def test_module_runs_standalone_server_from_the_command_line() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "live_memory.testing.llm_server", "--port", "0", "--rules", "deepseek"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    address: list[str] = []
    found = threading.Event()

    def watch_log() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if "Uvicorn running on " in line:
                address.append(line.split("Uvicorn running on ")[1].split()[0])
                found.set()

    watcher = threading.Thread(target=watch_log, daemon=True)
    watcher.start()
    try:
        assert found.wait(15.0), "the standalone server did not report its address"
        response = httpx2.post(
            address[0] + "/v1/chat/completions",
            json={"model": "deepseek-chat", "messages": [{"role": "user", "content": "ping"}]},
            timeout=5.0,
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
        watcher.join(timeout=5)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    assert response.json()["choices"][0]["message"]["content"] == "fake answer: ping"
    assert "prompt_cache_hit_tokens" in response.json()["usage"]


def _growing_conversation(protocol: str, turns: int) -> list[dict[str, Any]]:
    """Request bodies of one conversation growing by a tool round and an exchange per request, with a long
    stable prefix (tools, system), a moving breakpoint on the newest message and a 1-hour one on the system.
    Every third question is kept in the history in other words than it was asked: the next request leaves
    the path of the previous one there (as a rewritten turn does)."""
    tool = {"name": "grep", "description": "d" * 300, "input_schema": {"type": "object", "properties": {}}}
    bodies: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    for turn in range(turns):
        question = f"question {turn}: " + "q" * 80
        kept = question if turn % 3 else f"question {turn}, rephrased: " + "q" * 80
        if protocol == "anthropic":
            latest = {"role": "user", "content": [{"type": "text", "text": question, "cache_control": EPHEMERAL}]}
            bodies.append(
                {
                    "model": HAIKU,
                    "max_tokens": 16,
                    "tools": [tool],
                    "system": [
                        {"type": "text", "text": "s" * 2000, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
                    ],
                    "messages": [*history, latest],
                }
            )
            history += [
                {"role": "user", "content": [{"type": "text", "text": kept}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": f"t{turn}", "name": "grep", "input": {"q": turn}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": "r" * 300}]},
                {"role": "assistant", "content": [{"type": "text", "text": f"answer {turn} " + "a" * 200}]},
            ]
        else:
            function = {"type": "function", "function": {"name": "grep", "description": "d" * 300, "parameters": {}}}
            bodies.append(
                {
                    "model": "gpt-5-mini",
                    "tools": [function],
                    "messages": [
                        {"role": "system", "content": "s" * 6000},
                        *history,
                        {"role": "user", "content": question},
                    ],
                }
            )
            call = {"id": f"c{turn}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            history += [
                {"role": "user", "content": kept},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{turn}", "content": "r" * 300},
                {"role": "assistant", "content": f"answer {turn} " + "a" * 200},
            ]
    return bodies


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
async def test_memo_reports_the_usage_a_fake_recomputing_every_block_reports(protocol: str) -> None:
    clock = FakeClock()
    rules: Literal["anthropic", "openai"] = "anthropic" if protocol == "anthropic" else "openai"
    bodies = _growing_conversation(protocol, 14)
    usages: list[list[dict[str, Any] | None]] = []
    for memo_limit in (100_000, 0):  # the memo warm from every earlier request, then none at all
        clock.now = 1000.0
        with FakeLLM(cache_rules=rules, min_cacheable_tokens=64, clock=clock, memo_limit=memo_limit) as fake:
            async with httpx2.AsyncClient(base_url=fake.base_url) as http:
                path = "/v1/messages" if protocol == "anthropic" else "/v1/chat/completions"
                for index, body in enumerate(bodies):
                    clock.now += 400.0 if index == 9 else 1.0  # one gap past the 5-minute TTL: entries expire
                    (await http.post(path, json=body)).raise_for_status()
            usages.append([record.usage for record in fake.requests])

    warm, cold = usages
    assert warm == cold
    assert all(usage is not None for usage in warm)
    read = "cache_read_input_tokens" if protocol == "anthropic" else "prompt_tokens_details"
    reads = [usage[read] if protocol == "anthropic" else usage[read]["cached_tokens"] for usage in warm if usage]
    assert reads[1] > 500 and reads[8] > reads[1]  # a long prefix was read back, and it grew
    assert reads[9] < reads[8]  # after the gap only what outlived it (Anthropic: the 1-hour system) is read
    assert reads[-1] > reads[8]


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions"])
async def test_a_recorded_request_gives_back_the_json_that_was_sent(fake: FakeLLM, path: str) -> None:
    body = {
        "model": HAIKU,
        "max_tokens": 16,
        "temperature": 0.5,
        "metadata": {"one": 1, "one_float": 1.0, "flag": True, "big": 10**20, "nothing": None},
        "messages": [{"role": "user", "content": "é ✓ \u2028 naïve"}],
    }
    raw = json.dumps(body, ensure_ascii=False).encode()
    seen: list[dict[str, Any]] = []

    def responder(record: RecordedRequest) -> Reply:
        seen.append(record.body)
        return Reply.text("ok")

    fake.responder = responder
    async with httpx2.AsyncClient(base_url=fake.base_url) as http:
        sent = await http.post(path, content=raw, headers={"content-type": "application/json"})
        broken = await http.post(path, content=b"{not json")

    assert sent.status_code == 200
    assert broken.status_code == 400
    record, bad = fake.requests
    assert record.raw_body == raw
    assert record.body == body
    assert seen == [body]
    metadata = record.body["metadata"]
    assert [type(metadata[key]) for key in ("one", "one_float", "flag")] == [int, float, bool]
    record.body["edited"] = True  # one dict for the record's life: a test's edits stay
    assert record.body["edited"] is True
    assert (bad.raw_body, bad.body, bad.usage) == (b"{not json", {}, None)


def _flipped_conversation(protocol: str, where: str, value: object) -> dict[str, Any]:
    """One request whose tool definition or resent tool call holds `value`; all else stays the same."""
    if protocol == "anthropic":
        return {
            "model": HAIKU,
            "max_tokens": 16,
            "tools": [{"name": "grep", "input_schema": {"type": "object", "maximum": value if where == "tool" else 9}}],
            "messages": [
                {"role": "user", "content": "q" * 400},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "grep",
                            "input": {"limit": value if where == "message" else 9},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "r" * 400, "cache_control": EPHEMERAL}
                    ],
                },
            ],
        }
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}, "index": value}
    return {
        "model": "gpt-5-mini",
        "messages": [
            {"role": "system", "content": "s" * 6000},
            {"role": "user", "content": "q" * 400},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "r" * 400},
        ],
    }


@pytest.mark.parametrize(
    ("protocol", "where"), [("anthropic", "message"), ("anthropic", "tool"), ("openai", "message")]
)
async def test_a_resent_prefix_changed_only_in_a_number_type_is_a_new_prefix(protocol: str, where: str) -> None:
    # 1, 1.0 and true are equal in Python but not the same JSON: the fake's shortcuts must not mistake them.
    clock = FakeClock()
    rules: Literal["anthropic", "openai"] = "anthropic" if protocol == "anthropic" else "openai"
    bodies = [_flipped_conversation(protocol, where, value) for value in (1, 1.0, True, 1)]
    reads: list[list[int]] = []
    for memo_limit in (100_000, 0):
        with FakeLLM(cache_rules=rules, min_cacheable_tokens=64, clock=clock, memo_limit=memo_limit) as fake:
            async with httpx2.AsyncClient(base_url=fake.base_url) as http:
                for body in bodies:
                    clock.now += 1.0
                    path = "/v1/messages" if protocol == "anthropic" else "/v1/chat/completions"
                    (await http.post(path, json=body)).raise_for_status()
            usages = [record.usage or {} for record in fake.requests]
            if protocol == "anthropic":
                reads.append([usage["cache_read_input_tokens"] for usage in usages])
            else:
                reads.append([usage["prompt_tokens_details"]["cached_tokens"] for usage in usages])
            totals = [record.prompt_tokens for record in fake.requests]

    warm, cold = reads
    assert warm == cold
    if protocol == "anthropic":
        assert warm == [0, 0, 0, totals[3]]  # only the last request resends the first one's prefix
    else:
        assert 0 < warm[1] == warm[2] < warm[3]  # the system and question are read back, the call only at the end


async def test_memo_reports_the_same_usage_when_conversations_interleave() -> None:
    clock = FakeClock()
    first = _growing_conversation("anthropic", 8)
    second = [json.loads(json.dumps(body).replace("question", "another question")) for body in first]
    usages: list[list[dict[str, Any] | None]] = []
    counted: list[list[int]] = []
    for memo_limit in (100_000, 0):
        clock.now = 1000.0
        with FakeLLM(min_cacheable_tokens=64, clock=clock, memo_limit=memo_limit) as fake:
            async with httpx2.AsyncClient(base_url=fake.base_url) as http:
                counts = []
                for mine, theirs in zip(first, second, strict=True):
                    for body in (mine, theirs):
                        clock.now += 1.0
                        (await http.post("/v1/messages", json=body)).raise_for_status()
                    counted_tokens = await http.post("/v1/messages/count_tokens", json=mine)
                    counts.append(counted_tokens.json()["input_tokens"])
            usages.append([record.usage for record in fake.requests])
            counted.append(counts)

    assert usages[0] == usages[1]
    assert counted[0] == counted[1]
    reads = [usage["cache_read_input_tokens"] for usage in usages[0] if usage]
    assert all(read > 500 for read in reads[2:])  # each conversation reads its own prefix back
