"""The OpenAI-compatible Chat Completions adapter: tool and message translation, cache routing,
response parsing and usage.

Wire-level units run the official SDK over `httpx2.MockTransport`; two tests use the fake provider's
cache simulation over loopback."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import httpx2
import pytest

from live_memory.core.errors import PromptTooLongError, ProviderError
from live_memory.core.messages import ChatRequest, Message, ProviderInfo, TextPart, ToolResultPart, ToolUsePart
from live_memory.providers.base import WireCache
from live_memory.providers.openai_compat import (
    OpenAICompatProvider,
    encode_request,
    request_body,
    tool_to_openai,
)
from live_memory.testing.llm_server import FakeLLM, Reply
from tests.fakes.wire import Wire
from tests.providers.sample_request import STABLE, TOOL, request


def openai_compat(fake: FakeLLM, name: str = "openai") -> OpenAICompatProvider:
    info = ProviderInfo(
        name,
        "openai",
        "gpt-5-mini",
        fake.openai_base_url,
        explicit_cache_control=False,
        routes_by_cache_key=name == "openai",
    )
    return OpenAICompatProvider(info, api_key="test")


def completion_json(message: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-5-mini-2025-08-07",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "ok", **(message or {})},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
    body.update(overrides)
    return body


def replying(status: int = 200, body: dict[str, Any] | None = None) -> Wire:
    payload = completion_json() if body is None else body
    return Wire(lambda _request: httpx2.Response(status, json=payload))


async def ask(
    wire: Wire, chat_request: ChatRequest | None = None, *, name: str = "openai", api_key: str = "sk-test"
) -> Any:
    routes = name == "openai"
    info = ProviderInfo(name, "openai", "gpt-5-mini", "https://api.test/v1", False, routes_by_cache_key=routes)
    provider = OpenAICompatProvider(info, api_key=api_key, http_client=wire.client())
    try:
        return await provider.chat(chat_request or request())
    finally:
        await provider.aclose()


async def test_openai_translates_tools_and_tool_results(fake: FakeLLM) -> None:
    fake.script(Reply.text("done"))
    transcript = (
        Message("assistant", (ToolUsePart("call_1", "Grep", {"pattern": "x"}),)),
        Message("user", (ToolResultPart("call_1", "a.py:1: x", is_error=False),)),
    )
    provider = openai_compat(fake)
    try:
        response = await provider.chat(request(transcript=transcript))
    finally:
        await provider.aclose()
    assert response.text == "done"
    body = fake.requests[0].body
    assert body["tools"][0] == {
        "type": "function",
        "function": {"name": "Grep", "description": "search", "parameters": TOOL["input_schema"]},
    }
    assert body["messages"][0] == {"role": "system", "content": STABLE + "\n\nvolatile block"}
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "a.py:1: x"}
    assert body["prompt_cache_key"] == "ws1"


@pytest.mark.parametrize("rules", ["openai", "deepseek"])
async def test_openai_compatible_cached_tokens_are_parsed(rules: str) -> None:
    with FakeLLM(cache_rules=rules) as fake:  # type: ignore[arg-type]
        fake.script(Reply.text("a"), Reply.text("b"))
        provider = openai_compat(fake, "deepseek" if rules == "deepseek" else "openai")
        long_request = request("x" * 6000)
        try:
            await provider.chat(long_request)
            second = await provider.chat(long_request)
        finally:
            await provider.aclose()
    assert second.usage.cache_read_tokens > 1000
    assert second.usage.prompt_tokens == fake.requests[1].prompt_tokens


def test_a_tool_without_description_or_schema_becomes_a_function_taking_no_arguments() -> None:
    assert tool_to_openai({"name": "Ping"}) == {
        "type": "function",
        "function": {"name": "Ping", "description": "", "parameters": {"type": "object", "properties": {}}},
    }


def test_system_parts_join_in_order_and_empty_ones_are_dropped() -> None:
    chat_request = ChatRequest(
        system=(TextPart("rules"), TextPart(""), TextPart("tree")),
        messages=(Message("user", (TextPart("q"),)),),
        max_tokens=5,
    )
    assert request_body(chat_request, "m")["messages"][0] == {"role": "system", "content": "rules\n\ntree"}
    no_system = ChatRequest(system=(TextPart(""),), messages=(Message("user", (TextPart("q"),)),), max_tokens=5)
    assert request_body(no_system, "m")["messages"] == [{"role": "user", "content": "q"}]


def test_each_user_text_part_is_its_own_message_so_the_trailing_hint_can_drop_out() -> None:
    chat_request = ChatRequest(
        system=(), messages=(Message("user", (TextPart("question"), TextPart("hint"))),), max_tokens=5
    )
    assert request_body(chat_request, "m")["messages"] == [
        {"role": "user", "content": "question"},
        {"role": "user", "content": "hint"},
    ]


def test_assistant_tool_calls_carry_sorted_json_arguments_and_null_content_without_text() -> None:
    transcript = (Message("assistant", (ToolUsePart("call_1", "Read", {"path": "a.py", "limit": 5}),)),)
    body = request_body(request(transcript=transcript), "m")
    assert body["messages"][-1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "Read", "arguments": '{"limit": 5, "path": "a.py"}'},
            }
        ],
    }


def test_a_failed_tool_result_is_marked_as_an_error_in_its_content() -> None:
    transcript = (Message("user", (ToolResultPart("call_1", "no such file", is_error=True),)),)
    body = request_body(request(transcript=transcript), "m")
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "ERROR: no such file"}


def test_encoded_bytes_are_the_request_body_plus_extras_and_stable_across_calls() -> None:
    transcript = (
        Message("assistant", (TextPart("Looking."), ToolUsePart("call_1", "Grep", {"pattern": "é"}))),
        Message("user", (ToolResultPart("call_1", "x"), TextPart("hint"))),
    )
    chat_request = request(transcript=transcript)
    cache = WireCache()
    first = encode_request(chat_request, "m", cache, {"prompt_cache_key": "ws1"})
    second = encode_request(chat_request, "m", cache, {"prompt_cache_key": "ws1"})
    assert json.loads(first) == {**request_body(chat_request, "m"), "prompt_cache_key": "ws1"}
    assert second == first


def test_a_new_system_prompt_tool_set_or_cache_key_is_sent_as_it_is_not_as_the_cached_head() -> None:
    cache = WireCache()
    first = request()
    encode_request(first, "m", cache, {"prompt_cache_key": "ws1"})
    new_system = replace(first, system=(TextPart("a compacted prompt head", cache=True),))
    new_tools = replace(first, tools=({"name": "Glob", "description": "d", "input_schema": {"type": "object"}},))
    for changed, extra in ((new_system, "ws1"), (new_tools, "ws1"), (first, "ws2")):
        body = json.loads(encode_request(changed, "m", cache, {"prompt_cache_key": extra}))
        assert body == {**request_body(changed, "m"), "prompt_cache_key": extra}


async def test_the_workspace_cache_key_is_sent_only_to_endpoints_that_route_by_it() -> None:
    routed, plain = replying(), replying()
    await ask(routed, name="openai")
    await ask(plain, name="deepseek")
    assert routed.body()["prompt_cache_key"] == "ws1"
    assert "prompt_cache_key" not in plain.body()


async def test_the_key_is_sent_as_a_bearer_token_and_a_keyless_local_server_gets_a_placeholder() -> None:
    keyed, keyless = replying(), replying()
    await ask(keyed)
    await ask(keyless, name="ollama", api_key="")
    assert keyed.requests[0].url == "https://api.test/v1/chat/completions"
    assert keyed.requests[0].headers["authorization"] == "Bearer sk-test"
    assert keyless.requests[0].headers["authorization"] == "Bearer not-needed"


async def test_a_reply_carries_text_tool_calls_finish_reason_and_the_served_model() -> None:
    message = {
        "content": "Checking.",
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "Read", "arguments": '{"path": "a.py"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "Grep", "arguments": ""}},
        ],
    }
    body = completion_json(message)
    body["choices"][0]["finish_reason"] = "tool_calls"
    response = await ask(replying(body=body))
    assert response.text == "Checking."
    assert [(c.id, c.name, dict(c.arguments)) for c in response.tool_calls] == [
        ("call_a", "Read", {"path": "a.py"}),
        ("call_b", "Grep", {}),
    ]
    assert response.stop_reason == "tool_calls"
    assert response.model == "gpt-5-mini-2025-08-07"


async def test_arguments_that_are_not_json_are_kept_for_the_tool_to_reject() -> None:
    message = {
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{path: a"}}],
    }
    response = await ask(replying(body=completion_json(message)))
    assert response.text == ""
    assert dict(response.tool_calls[0].arguments) == {"_unparsed_arguments": "{path: a"}


async def test_arguments_sent_as_an_object_are_taken_as_they_are_and_malformed_calls_are_skipped() -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": {"file_path": "a.py"}}},
        {"id": "c2", "type": "function"},  # no function: nothing to run
        "not a call",
    ]
    response = await ask(replying(body=completion_json({"content": "reading", "tool_calls": calls})))
    assert [(c.id, c.name, dict(c.arguments)) for c in response.tool_calls] == [("c1", "Read", {"file_path": "a.py"})]
    assert response.text == "reading"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (  # OpenAI: cached tokens in prompt_tokens_details
            {"prompt_tokens": 5000, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 4096}},
            (904, 40, 4096, 0),
        ),
        (  # DeepSeek: hit tokens at the top level
            {"prompt_tokens": 3000, "completion_tokens": 7, "prompt_cache_hit_tokens": 2944},
            (56, 7, 2944, 0),
        ),
        (  # gateways that bill cache writes
            {
                "prompt_tokens": 6000,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 4500},
            },
            (500, 1, 1000, 4500),
        ),
    ],
)
async def test_usage_splits_the_prompt_whatever_field_the_endpoint_reports_caching_in(
    usage: dict[str, Any], expected: tuple[int, int, int, int]
) -> None:
    got = (await ask(replying(body=completion_json(usage=usage)))).usage
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens, got.cache_write_tokens) == expected


async def test_a_reply_without_usage_counts_nothing() -> None:
    body = completion_json()
    del body["usage"]
    usage = (await ask(replying(body=body))).usage
    assert usage.prompt_tokens == 0 and usage.output_tokens == 0


async def test_a_reply_without_choices_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match=r"^openai: the endpoint returned no choices$"):
        await ask(replying(body=completion_json(choices=[])))


async def test_a_context_length_code_is_prompt_too_long_with_the_parsed_limit() -> None:
    error = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    with pytest.raises(PromptTooLongError) as caught:
        await ask(replying(400, error))
    assert caught.value.limit_tokens == 128000
    assert "maximum context length is 128000" in str(caught.value)
