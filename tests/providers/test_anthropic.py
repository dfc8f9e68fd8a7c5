"""The Anthropic Messages adapter: the request layout, response parsing, usage and failures.

Wire-level units run the official SDK over `httpx2.MockTransport`; two tests use the fake provider's
cache simulation over loopback."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx2
import pytest

from live_memory.constants import ANTHROPIC_API_VERSION
from live_memory.core.errors import AuthError, NoCredentialError, ProviderError, ProviderTimeoutError
from live_memory.core.messages import ChatRequest, Message, ProviderInfo, TextPart, ToolResultPart, ToolUsePart
from live_memory.providers.anthropic import AnthropicProvider, encode_request, request_body
from live_memory.providers.base import WireCache
from live_memory.testing.llm_server import FakeLLM, Reply
from tests.fakes.wire import Wire as BaseWire
from tests.providers.sample_request import TOOL, request

EPHEMERAL = {"type": "ephemeral"}


def anthropic(fake: FakeLLM) -> AnthropicProvider:
    info = ProviderInfo("anthropic", "anthropic", "claude-haiku-4-5", fake.base_url, explicit_cache_control=True)
    return AnthropicProvider(info, api_key="test")


def message_json(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    body.update(overrides)
    return body


class Wire(BaseWire):
    """An in-process Messages endpoint."""

    def provider(self, *, subscription: bool = False, **credential: Any) -> AnthropicProvider:
        info = ProviderInfo(
            "anthropic", "anthropic", "claude-haiku-4-5", "https://api.test", True, subscription=subscription
        )
        if not {"api_key", "auth_token", "credentials"} & credential.keys():
            credential["api_key"] = "sk-test"
        return AnthropicProvider(info, http_client=self.client(), **credential)


def replying(status: int = 200, **body: Any) -> Wire:
    payload = message_json(**body) if status == 200 else body
    return Wire(lambda _request: httpx2.Response(status, json=payload))


async def ask(wire: Wire, chat_request: ChatRequest | None = None, **credential: Any) -> Any:
    provider = wire.provider(**credential)
    try:
        return await provider.chat(chat_request or request())
    finally:
        await provider.aclose()


async def test_anthropic_text_tool_calls_and_breakpoints_on_the_wire(fake: FakeLLM) -> None:
    fake.script(Reply.tool_call("Grep", {"pattern": "x"}, text="Looking."))
    provider = anthropic(fake)
    try:
        response = await provider.chat(request())
    finally:
        await provider.aclose()
    assert response.text == "Looking."
    assert [(c.name, dict(c.arguments)) for c in response.tool_calls] == [("Grep", {"pattern": "x"})]
    body = fake.requests[0].body
    assert body["tools"] == [TOOL]  # passed through verbatim
    assert [b.get("cache_control") for b in body["system"]] == [{"type": "ephemeral"}] * 2


async def test_anthropic_usage_counts_cache_reads_and_writes(fake: FakeLLM) -> None:
    fake.script(Reply.text("one"), Reply.text("two"))
    provider = anthropic(fake)
    try:
        first = await provider.chat(request("first question"))
        second = await provider.chat(request("second question"))
    finally:
        await provider.aclose()
    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.prompt_tokens == fake.requests[1].prompt_tokens  # read + write + uncached = whole prompt


def test_only_parts_marked_for_caching_carry_a_breakpoint() -> None:
    chat_request = ChatRequest(
        system=(TextPart("stable", cache=True), TextPart("volatile")),
        messages=(Message("user", (TextPart("old"), TextPart("newest", cache=True))),),
        max_tokens=64,
    )
    body = request_body(chat_request, "claude-haiku-4-5")
    assert body["system"] == [
        {"type": "text", "text": "stable", "cache_control": EPHEMERAL},
        {"type": "text", "text": "volatile"},
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "old"},
                {"type": "text", "text": "newest", "cache_control": EPHEMERAL},
            ],
        }
    ]


def test_tool_turns_become_tool_use_and_tool_result_blocks() -> None:
    transcript = (
        Message("assistant", (TextPart("Looking."), ToolUsePart("toolu_1", "Grep", {"pattern": "x"}))),
        Message(
            "user",
            (ToolResultPart("toolu_1", "a.py:1: x"), ToolResultPart("toolu_2", "no such file", is_error=True)),
        ),
    )
    body = request_body(request(transcript=transcript), "claude-haiku-4-5")
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "Grep", "input": {"pattern": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py:1: x"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": True},
            ],
        },
    ]


def test_the_request_model_overrides_the_provider_model_and_no_tools_means_no_tools_key() -> None:
    chat_request = ChatRequest(system=(), messages=(Message("user", (TextPart("q"),)),), max_tokens=9, model="sum-1")
    body = request_body(chat_request, "claude-haiku-4-5")
    assert body["model"] == "sum-1"
    assert body["max_tokens"] == 9
    assert "tools" not in body
    assert request_body(request(), "claude-haiku-4-5")["model"] == "claude-haiku-4-5"


def test_encoded_bytes_are_the_request_body_and_stay_identical_when_messages_come_from_the_cache() -> None:
    transcript = (
        Message("assistant", (ToolUsePart("toolu_1", "Grep", {"pattern": "é"}),)),
        Message("user", (ToolResultPart("toolu_1", "naïve"),)),
    )
    chat_request = request(transcript=transcript)
    cache = WireCache()
    first = encode_request(chat_request, "claude-haiku-4-5", cache)
    second = encode_request(chat_request, "claude-haiku-4-5", cache)
    assert json.loads(first) == request_body(chat_request, "claude-haiku-4-5")
    assert second == first
    assert "naïve".encode() in first  # UTF-8 on the wire, not \u escapes


def test_a_new_system_prompt_or_tool_set_is_sent_as_it_is_not_as_the_cached_head() -> None:
    cache = WireCache()
    first = request()
    encode_request(first, "claude-haiku-4-5", cache)
    new_system = replace(first, system=(TextPart("a compacted prompt head", cache=True),))
    new_tools = replace(first, tools=({"name": "Glob", "description": "d", "input_schema": {"type": "object"}},))
    for changed in (new_system, new_tools):
        assert json.loads(encode_request(changed, "claude-haiku-4-5", cache)) == request_body(
            changed, "claude-haiku-4-5"
        )


async def test_a_reply_joins_its_text_blocks_and_keeps_every_tool_call() -> None:
    wire = replying(
        content=[
            {"type": "text", "text": "First, "},
            {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"path": "a.py"}},
            {"type": "text", "text": "then."},
            {"type": "tool_use", "id": "toolu_b", "name": "Grep", "input": {"pattern": "def"}},
        ],
        stop_reason="tool_use",
    )
    response = await ask(wire)
    assert response.text == "First, then."
    assert [(c.id, c.name, dict(c.arguments)) for c in response.tool_calls] == [
        ("toolu_a", "Read", {"path": "a.py"}),
        ("toolu_b", "Grep", {"pattern": "def"}),
    ]
    assert response.stop_reason == "tool_use"
    assert response.model == "claude-haiku-4-5-20251001"


async def test_a_reply_with_odd_blocks_keeps_what_it_can_and_counts_nothing_it_does_not_report() -> None:
    content = ["stray", {"type": "thinking"}, {"type": "tool_use", "id": "t1", "name": "Read", "input": "a.py"}]
    response = await ask(replying(content=content, usage=None, model=None))
    assert response.text == ""
    assert [(c.id, c.name, dict(c.arguments)) for c in response.tool_calls] == [("t1", "Read", {})]
    assert response.usage.prompt_tokens == 0 and response.usage.output_tokens == 0
    assert response.model == "claude-haiku-4-5"  # the requested model when the answer names none


async def test_usage_splits_the_prompt_into_uncached_read_and_written_tokens() -> None:
    wire = replying(
        usage={
            "input_tokens": 12,
            "output_tokens": 30,
            "cache_read_input_tokens": 4000,
            "cache_creation_input_tokens": 500,
        }
    )
    usage = (await ask(wire)).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        12,
        30,
        4000,
        500,
    )
    assert usage.prompt_tokens == 4512


async def test_the_credential_version_and_raw_body_reach_the_messages_endpoint() -> None:
    wire = replying()
    await ask(wire)
    sent = wire.requests[0]
    assert sent.method == "POST"
    assert sent.url == "https://api.test/v1/messages"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["anthropic-version"] == ANTHROPIC_API_VERSION
    assert wire.body() == request_body(request(), "claude-haiku-4-5")


async def test_a_bearer_token_and_extra_headers_are_sent_with_every_request() -> None:
    wire = replying()
    await ask(wire, auth_token="tok-1", extra_headers={"anthropic-beta": "oauth-2025-04-20"})
    sent = wire.requests[0]
    assert sent.headers["authorization"] == "Bearer tok-1"
    assert sent.headers["anthropic-beta"] == "oauth-2025-04-20"


def test_a_provider_without_any_credential_is_refused() -> None:
    info = ProviderInfo("anthropic", "anthropic", "claude-haiku-4-5", "https://api.test", True)
    with pytest.raises(NoCredentialError, match="no Anthropic credential"):
        AnthropicProvider(info)


async def test_the_endpoints_own_error_message_is_kept_in_the_raised_error() -> None:
    wire = replying(400, type="error", error={"type": "invalid_request_error", "message": "max_tokens: too big"})
    with pytest.raises(ProviderError, match="max_tokens: too big") as caught:
        await ask(wire)
    assert caught.value.status == 400
    assert not caught.value.retryable


async def test_a_rejected_subscription_credential_says_how_to_configure_a_key() -> None:
    wire = replying(401, type="error", error={"type": "authentication_error", "message": "invalid token"})
    provider = wire.provider(subscription=True, auth_token="oauth-tok")
    try:
        with pytest.raises(AuthError) as caught:
            await provider.chat(request())
    finally:
        await provider.aclose()
    assert "subscription credential was rejected" in str(caught.value)
    assert "LIVE_MEMORY_OAUTH=0" in str(caught.value)


async def test_a_refused_connection_is_a_retryable_timeout_naming_the_provider() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    with pytest.raises(
        ProviderTimeoutError, match=r"^anthropic: connection failed to https?://\S+/v1/messages "
    ) as caught:
        await ask(Wire(refuse))
    assert caught.value.retryable
    assert "LIVE_MEMORY_BASE_URL" in str(caught.value)  # and which option points there


async def oauth_token() -> Any:
    from anthropic.lib.credentials import AccessToken

    return AccessToken(token="oat-1", expires_at=0)


async def test_a_renewable_credential_goes_through_the_sdk_and_fails_like_a_static_one() -> None:
    wire = replying()
    answer = await ask(wire, credentials=oauth_token)
    assert answer.text == "ok"
    assert wire.requests[0].headers["authorization"] == "Bearer oat-1"  # the SDK's token flow sent it

    def time_out(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("no answer", request=request)

    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    with pytest.raises(ProviderTimeoutError, match=r"^anthropic: request to https?://\S+/v1/messages timed out$"):
        await ask(Wire(time_out), credentials=oauth_token)
    with pytest.raises(ProviderTimeoutError, match=r"^anthropic: connection failed to "):
        await ask(Wire(refuse), credentials=oauth_token)
    refused = replying(400, type="error", error={"type": "invalid_request_error", "message": "bad field"})
    with pytest.raises(ProviderError, match="bad field"):
        await ask(refused, credentials=oauth_token)


PAUSE_S = 600.0  # a ten-minute pause between questions: past the 5-minute lifetime, within the hour


def long_request(stable: str, *, long: bool) -> ChatRequest:
    return ChatRequest(
        system=(TextPart(stable, cache=True, long_cache=long),),
        messages=(Message("user", (TextPart("where is the parser?"),)),),
        max_tokens=64,
    )


async def test_a_one_hour_prefix_is_read_after_a_ten_minute_pause_and_a_five_minute_one_is_written_again() -> None:
    now = [1_000.0]
    with FakeLLM(min_cacheable_tokens=64, clock=lambda: now[0]) as fake:
        fake.script(*(Reply.text("answer") for _ in range(4)))
        provider = await asyncio.to_thread(anthropic, fake)  # the SDK's first client reads package metadata
        try:
            outcomes = {}
            for long in (True, False):
                stable = f"system prompt and tree ({'hour' if long else 'minutes'}) " + "word " * 400
                first = await provider.chat(long_request(stable, long=long))
                now[0] += PAUSE_S
                second = await provider.chat(long_request(stable, long=long))
                outcomes[long] = (first.usage, second.usage)
        finally:
            await provider.aclose()
    wire = [r.body["system"][0]["cache_control"] for r in fake.requests]
    assert wire[:2] == [{"type": "ephemeral", "ttl": "1h"}] * 2 and wire[2:] == [{"type": "ephemeral"}] * 2
    hour_first, hour_second = outcomes[True]
    assert hour_first.cache_write_1h_tokens == hour_first.cache_write_tokens > 0
    assert hour_second.cache_read_tokens == hour_first.cache_write_tokens  # read back after the pause
    short_first, short_second = outcomes[False]
    assert short_first.cache_write_1h_tokens == 0
    assert short_second.cache_read_tokens == 0 and short_second.cache_write_tokens == short_first.cache_write_tokens
