"""A model call as one plain POST: the SDK client's headers go out, every failure is the provider error the
SDK's exception for it was, and answers that are not JSON objects are refused clearly."""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest

from live_memory.core.errors import (
    BadRequestError,
    OverloadedError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
)
from live_memory.providers.direct import Endpoint, endpoint_url, sdk_headers, token_count
from tests.fakes.wire import Wire

URL = "https://api.test/v1/messages"


async def post(respond: Callable[[httpx2.Request], httpx2.Response], content: bytes = b"{}") -> tuple[object, Wire]:
    wire = Wire(respond)
    http = wire.client()
    try:
        answer = await Endpoint("anthropic", http, URL, {"X-Api-Key": "k", "User-Agent": "SDK/1"}).post(content)
    finally:
        await http.aclose()
    return answer, wire


async def test_the_body_goes_out_as_it_is_with_the_sdk_headers_and_the_json_answer_comes_back() -> None:
    answer, wire = await post(lambda _r: httpx2.Response(200, json={"content": []}), b'{"model":"m"}')
    [sent] = wire.requests
    assert (sent.method, str(sent.url), sent.content) == ("POST", URL, b'{"model":"m"}')
    assert (sent.headers["x-api-key"], sent.headers["user-agent"]) == ("k", "SDK/1")
    assert sent.extensions["timeout"]["connect"] is not None  # the call is bounded like the SDK's
    assert answer == {"content": []}


async def test_a_failure_keeps_the_endpoints_own_message_and_its_retry_hint() -> None:
    body = {"error": {"type": "rate_limit_error", "message": "slow down"}}
    with pytest.raises(RateLimitedError, match="slow down") as caught:
        await post(lambda _r: httpx2.Response(429, json=body, headers={"retry-after": "3"}))
    assert caught.value.retry_after_s == 3.0


async def test_a_failure_without_a_json_body_is_described_by_its_status_and_text() -> None:
    with pytest.raises(OverloadedError, match=r"HTTP 502 \(Error code: 502 - bad gateway\)") as caught:
        await post(lambda _r: httpx2.Response(502, text="bad gateway"))
    assert caught.value.retryable


async def test_an_unfollowed_redirect_is_a_rejected_request_not_an_answer() -> None:
    with pytest.raises(BadRequestError, match="HTTP 307"):
        await post(lambda _r: httpx2.Response(307, headers={"location": "https://elsewhere.test/"}))


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b""])
async def test_an_answer_that_is_not_a_json_object_is_a_clear_provider_error(content: bytes) -> None:
    with pytest.raises(ProviderError, match=r"^anthropic: the endpoint's answer is not a JSON object$"):
        await post(lambda _r: httpx2.Response(200, content=content))


async def test_a_timeout_is_a_retryable_error_naming_the_provider() -> None:
    def stall(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("no answer", request=request)

    with pytest.raises(ProviderTimeoutError, match=r"^anthropic: request to \S+ timed out$") as caught:
        await post(stall)
    assert caught.value.retryable


def test_headers_the_sdk_omits_are_left_out_and_paths_join_the_base_url_as_the_sdk_joins_them() -> None:
    omitted = object()  # what the SDKs put where a header must not be sent
    assert sdk_headers({"A": "1", "OpenAI-Project": omitted}) == {"A": "1"}
    assert endpoint_url("https://api.test/v1/", "/chat/completions") == "https://api.test/v1/chat/completions"
    assert endpoint_url("https://api.test", "/v1/messages") == URL


@pytest.mark.parametrize(("value", "count"), [(12, 12), (3.0, 3), (None, 0), ("7", 0), (True, 0)])
def test_token_counts_are_numbers_or_nothing(value: object, count: int) -> None:
    assert token_count(value) == count
