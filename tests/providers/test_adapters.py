"""The two wire adapters against the fake provider through the official SDKs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from live_memory.errors import (
    AuthError,
    BadRequestError,
    OverloadedError,
    PromptTooLongError,
    ProviderTimeoutError,
    RateLimitedError,
)
from live_memory.providers.anthropic import AnthropicProvider
from live_memory.providers.base import (
    ChatRequest,
    Message,
    ProviderInfo,
    TextPart,
    ToolResultPart,
    ToolUsePart,
)
from live_memory.providers.openai_compat import OpenAICompatProvider
from tests.fakes.llm_server import FakeLLM, Reply

TOOL = {
    "name": "Grep",
    "description": "search",
    "input_schema": {
        "type": "object",
        "properties": {"pattern": {"type": "string"}},
        "required": ["pattern"],
    },
}
STABLE = "You are a test system prompt. " * 60


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(min_cacheable_tokens=64) as server:
        yield server


def anthropic(fake: FakeLLM) -> AnthropicProvider:
    info = ProviderInfo("anthropic", "anthropic", "claude-haiku-4-5", fake.base_url, explicit_cache_control=True)
    return AnthropicProvider(info, api_key="test")


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


def request(question: str = "where?", *, transcript: tuple[Message, ...] = ()) -> ChatRequest:
    return ChatRequest(
        system=(TextPart(STABLE, cache=True), TextPart("volatile block", cache=True)),
        messages=(Message("user", (TextPart(question),)), *transcript),
        max_tokens=512,
        tools=(TOOL,),
        cache_key="ws1",
    )


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


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
@pytest.mark.parametrize(
    ("reply", "error", "check"),
    [
        (
            Reply.error(429, "slow", headers={"retry-after": "7"}),
            RateLimitedError,
            lambda e: e.retry_after_s == 7.0,
        ),
        (
            Reply.error(429, "spend cap"),
            RateLimitedError,
            lambda e: e.retry_after_s is None and not e.retryable,
        ),
        (Reply.error(529, "Overloaded"), OverloadedError, lambda e: e.retryable),
        (Reply.error(503, "busy"), OverloadedError, lambda e: e.retryable),
        (Reply.error(401, "bad key"), AuthError, lambda e: "LIVE_MEMORY_API_KEY" in str(e)),
        (Reply.error(404, "no such model"), BadRequestError, lambda e: not e.retryable),
        (Reply.prompt_too_long(limit_tokens=100), PromptTooLongError, lambda e: e.limit_tokens == 100),
        (Reply.drop(), ProviderTimeoutError, lambda e: e.retryable),
    ],
)
async def test_failures_map_to_the_error_tree(
    fake: FakeLLM, protocol: str, reply: Reply, error: type[Exception], check: object
) -> None:
    fake.script(reply)
    provider = anthropic(fake) if protocol == "anthropic" else openai_compat(fake)
    try:
        with pytest.raises(error) as caught:
            await provider.chat(request())
    finally:
        await provider.aclose()
    assert callable(check) and check(caught.value), caught.value
