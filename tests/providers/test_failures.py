"""An endpoint's failure becomes one exception of the error tree, alike for both protocols, with a
message that says what the user can do."""

from __future__ import annotations

import pytest

from live_memory.core.errors import (
    AuthError,
    BadRequestError,
    OverloadedError,
    PromptTooLongError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
)
from live_memory.core.messages import ChatRequest, Message, ProviderInfo, TextPart
from live_memory.providers.anthropic import AnthropicProvider
from live_memory.providers.failures import (
    from_status,
    is_prompt_too_long,
    parse_context_limit,
    parse_retry_after,
)
from live_memory.providers.openai_compat import OpenAICompatProvider
from live_memory.testing.llm_server import FakeLLM, Reply

STABLE = "You are a test system prompt. " * 60  # longer than the scripted 100-token context limit


def request() -> ChatRequest:
    return ChatRequest(
        system=(TextPart(STABLE, cache=True),), messages=(Message("user", (TextPart("where?"),)),), max_tokens=64
    )


def fail(status: int, message: str = "nope", **kwargs: object) -> ProviderError:
    headers = kwargs.pop("headers", {})
    assert isinstance(headers, dict)
    return from_status(provider="acme", status=status, message=message, headers=headers, **kwargs)  # type: ignore[arg-type]


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
    provider: AnthropicProvider | OpenAICompatProvider
    if protocol == "anthropic":
        info = ProviderInfo("anthropic", "anthropic", "claude-haiku-4-5", fake.base_url, explicit_cache_control=True)
        provider = AnthropicProvider(info, api_key="test")
    else:
        info = ProviderInfo("openai", "openai", "gpt-5-mini", fake.openai_base_url, explicit_cache_control=False)
        provider = OpenAICompatProvider(info, api_key="test")
    try:
        with pytest.raises(error) as caught:
            await provider.chat(request())
    finally:
        await provider.aclose()
    assert callable(check) and check(caught.value), caught.value


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "2", "retry-after-ms": "9000"}, 2.0),  # seconds win when both are given
        ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),  # an HTTP date is not trusted as a delay
        ({}, None),
    ],
)
def test_retry_after_is_read_in_seconds_from_either_header(headers: dict[str, str], seconds: float | None) -> None:
    assert parse_retry_after(headers) == seconds


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        ("prompt is too long: 210345 tokens > 200000 maximum", 200000),
        ("This model's maximum context length is 128000 tokens. However you requested 130000", 128000),
        ("prompt is too long", None),
    ],
)
def test_the_context_limit_is_parsed_from_either_protocols_message(message: str, limit: int | None) -> None:
    assert parse_context_limit(message) == limit


def test_prompt_too_long_is_recognised_by_code_or_by_message_on_400_and_413_only() -> None:
    assert is_prompt_too_long(400, "whatever", "context_length_exceeded")
    assert is_prompt_too_long(413, "Prompt is too long", None)
    assert is_prompt_too_long(400, "input too long for model", None)
    assert not is_prompt_too_long(500, "prompt is too long", None)  # a server fault, not our prompt
    assert not is_prompt_too_long(400, "max_tokens must be positive", None)


def test_a_too_long_prompt_carries_its_limit_and_is_not_retryable() -> None:
    error = fail(400, "prompt is too long: 9 tokens > 8 maximum")
    assert isinstance(error, PromptTooLongError)
    assert error.limit_tokens == 8 and error.status == 400 and not error.retryable
    assert str(error) == "acme: prompt too long (prompt is too long: 9 tokens > 8 maximum)"


def test_a_rate_limit_with_retry_after_says_when_and_is_retryable() -> None:
    error = fail(429, "slow down", headers={"retry-after": "12"})
    assert isinstance(error, RateLimitedError)
    assert error.retryable and error.retry_after_s == 12.0
    assert str(error) == "acme: rate limited (slow down); retry after 12s."


def test_a_rate_limit_without_retry_after_is_a_spend_cap_that_will_not_clear_soon() -> None:
    error = fail(429, "quota exceeded")
    assert isinstance(error, RateLimitedError)
    assert not error.retryable and error.retry_after_s is None
    assert "will not clear by itself soon" in str(error)


def test_a_billing_problem_points_at_the_account_balance() -> None:
    error = fail(402, "insufficient balance")
    assert isinstance(error, RateLimitedError) and error.status == 402 and not error.retryable
    assert str(error) == "acme: billing problem (insufficient balance); check the account balance."


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_names_the_variable_to_check(status: int) -> None:
    error = fail(status, "invalid x-api-key")
    assert isinstance(error, AuthError) and error.status == status
    assert f"HTTP {status}: invalid x-api-key" in str(error)
    assert "Check LIVE_MEMORY_API_KEY" in str(error)


def test_a_rejected_subscription_credential_says_how_to_switch_to_a_key() -> None:
    error = fail(401, "token expired", subscription=True)
    assert isinstance(error, AuthError)
    assert "Claude subscription credential was rejected" in str(error)
    assert "live-memory config set api_key=..." in str(error)
    assert "LIVE_MEMORY_OAUTH=0" in str(error)


@pytest.mark.parametrize("status", [500, 502, 503, 529])
def test_server_side_failures_are_transient(status: int) -> None:
    error = fail(status, "")
    assert isinstance(error, OverloadedError) and error.retryable
    assert str(error) == f"acme: temporarily unavailable, HTTP {status} (HTTP {status})"  # empty detail -> status


def test_any_other_client_error_is_a_rejected_request_that_is_not_retried() -> None:
    error = fail(422, "  bad field  ")
    assert type(error) is BadRequestError and not error.retryable
    assert str(error) == "acme: request rejected, HTTP 422 (bad field)"
