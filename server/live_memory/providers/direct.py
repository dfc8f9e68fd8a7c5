"""A model call as one plain POST of an encoded body, answered with the parsed JSON.

The SDKs' own `post` spends about 0.8 ms of CPU around each HTTP exchange (request options, merged
headers, an idempotency key; the response model built field by field), more than the rest of the
server adds to a question (`bench/overhead.py`). The SDK still makes the client, and this sends
through what it made: its connection pool and socket options, base URL, credential and headers.
An answer that is not 2xx becomes the same `ProviderError` as the SDK's exception for it did.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2

from live_memory.constants import PROVIDER_CONNECT_TIMEOUT_S, PROVIDER_REQUEST_TIMEOUT_S
from live_memory.core.errors import ProviderError, ProviderTimeoutError
from live_memory.providers.failures import from_status, timed_out, unreachable

TIMEOUT = httpx2.Timeout(PROVIDER_REQUEST_TIMEOUT_S, connect=PROVIDER_CONNECT_TIMEOUT_S)
_EXTENSIONS = {"timeout": TIMEOUT.as_dict()}  # what the client's `build_request` would attach


def sdk_headers(default_headers: Mapping[str, object]) -> dict[str, str]:
    """The headers an SDK client sends with every request (its `default_headers`, less the ones it omits)."""
    return {name: value for name, value in default_headers.items() if isinstance(value, str)}


def endpoint_url(base_url: object, path: str) -> str:
    """`path` under an SDK client's base URL, joined as the SDK joins them."""
    return str(base_url).rstrip("/") + path


class Endpoint:
    """Where one provider's model calls go, and how they are sent. The URL and headers are parsed once:
    each call builds its request from them directly, not through the client's per-call merging."""

    def __init__(
        self,
        provider: str,
        http: httpx2.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        *,
        subscription: bool = False,
    ) -> None:
        self.provider = provider  # named in error messages
        self.http = http
        self.url = httpx2.URL(url)
        self.headers = httpx2.Headers(headers)
        self.subscription = subscription

    async def post(self, content: bytes) -> dict[str, Any]:
        request = httpx2.Request("POST", self.url, headers=self.headers, content=content, extensions=_EXTENSIONS)
        try:
            response = await self.http.send(request)
        except httpx2.TimeoutException:
            raise ProviderTimeoutError(timed_out(self.provider, str(self.url))) from None
        except httpx2.TransportError as exc:
            raise ProviderTimeoutError(unreachable(self.provider, str(self.url), str(exc))) from None
        if response.status_code >= 300:
            raise status_error(self.provider, response, subscription=self.subscription)
        return answer_json(self.provider, response.content)


def token_count(value: object) -> int:
    """A count from an answer's JSON (0 for anything that is not a number)."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def answer_json(provider: str, content: bytes) -> dict[str, Any]:
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ProviderError(f"{provider}: the endpoint's answer is not a JSON object")
    return data


def status_error(provider: str, response: httpx2.Response, *, subscription: bool = False) -> ProviderError:
    """The error for an HTTP failure, carrying the endpoint's own message (as the SDKs word it when the
    body has none)."""
    try:
        body: Any = json.loads(response.content)
    except ValueError:
        body = None
    message, code = f"Error code: {response.status_code} - {body if body is not None else response.text}", None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = str(error.get("message") or message)
            code = error["code"] if isinstance(error.get("code"), str) else None
    return from_status(
        provider=provider,
        status=response.status_code,
        message=message,
        headers={name.lower(): value for name, value in response.headers.items()},
        code=code,
        subscription=subscription,
    )
