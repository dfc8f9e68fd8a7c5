"""Anthropic Messages adapter on the official `anthropic` SDK.

Passes tool schemas through verbatim, turns parts marked `cache=True` into `cache_control`
breakpoints, and normalises usage (total prompt = read + creation + uncached input).
SDK retries are off: the question loop owns retries so they stay inside its soft deadline.
The SDK builds the client; calls go through it as plain POSTs (`direct.Endpoint`), except while the
credential is one the SDK renews per request (the subscription's), whose calls the SDK sends itself.
The SDK is imported when the first request is sent, in a worker thread: importing it takes about two seconds
of CPU, which a starting server (and every command that builds a provider without asking) need not wait for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2

from live_memory.constants import ANTHROPIC_API_VERSION
from live_memory.core.errors import NoCredentialError, ProviderError, ProviderTimeoutError
from live_memory.core.messages import ChatRequest, ChatResponse, Message, Part, ProviderInfo, TextPart, ToolUsePart
from live_memory.core.records import ToolCall, Usage
from live_memory.providers.base import LazyClient, WireCache, wire_body, wire_json
from live_memory.providers.direct import (
    TIMEOUT,
    Endpoint,
    answer_json,
    endpoint_url,
    sdk_headers,
    status_error,
    token_count,
)
from live_memory.providers.failures import timed_out, unreachable

if TYPE_CHECKING:
    import anthropic

_CACHE = {"type": "ephemeral"}
_CACHE_HOUR = {"type": "ephemeral", "ttl": "1h"}  # written at 2x input instead of 1.25x, kept an hour
MESSAGES_PATH = "/v1/messages"


def _part_to_wire(part: Part) -> dict[str, Any]:
    block: dict[str, Any]
    if isinstance(part, TextPart):
        block = {"type": "text", "text": part.text}
    elif isinstance(part, ToolUsePart):
        block = {"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.input)}
    else:
        block = {"type": "tool_result", "tool_use_id": part.tool_use_id, "content": part.content}
        if part.is_error:
            block["is_error"] = True
    if part.cache:
        block["cache_control"] = _CACHE_HOUR if part.long_cache else _CACHE
    return block


def _message_to_wire(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": [_part_to_wire(p) for p in message.parts]}


def _head(request: ChatRequest, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model or model,
        "max_tokens": request.max_tokens,
        "system": [_part_to_wire(p) for p in request.system],
    }
    if request.tools:
        body["tools"] = [dict(t) for t in request.tools]
    return body


def request_body(request: ChatRequest, model: str) -> dict[str, Any]:
    """The exact JSON body sent; separate so the layout can be tested without a server."""
    return {**_head(request, model), "messages": [_message_to_wire(m) for m in request.messages]}


def _encode_message(message: Message) -> bytes:
    return wire_json(_message_to_wire(message))


def encode_request(request: ChatRequest, model: str, cache: WireCache) -> bytes:
    """`request_body` encoded, its head and each message's bytes taken from `cache` when sent before."""
    key = (request.model or model, request.max_tokens, request.system, tuple(map(id, request.tools)))
    head = cache.fragment(key, request.tools, lambda: _head(request, model))
    return wire_body(head, "messages", cache.encode_all(request.messages, _encode_message))


def _usage(raw: object) -> Usage:
    usage = raw if isinstance(raw, dict) else {}
    creation = usage.get("cache_creation")
    creation = creation if isinstance(creation, dict) else {}
    return Usage(
        input_tokens=token_count(usage.get("input_tokens")),
        output_tokens=token_count(usage.get("output_tokens")),
        cache_read_tokens=token_count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=token_count(usage.get("cache_creation_input_tokens")),
        cache_write_1h_tokens=token_count(creation.get("ephemeral_1h_input_tokens")),
    )


def reply_from(data: Mapping[str, Any], fallback_model: str) -> ChatResponse:
    """A Messages API answer (its JSON) as a `ChatResponse`: text blocks joined, every tool call kept."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    content = data.get("content")
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") == "tool_use":
            arguments = block.get("input")
            arguments = arguments if isinstance(arguments, dict) else {}
            calls.append(ToolCall(str(block.get("id") or ""), str(block.get("name") or ""), arguments))
    return ChatResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=str(data.get("stop_reason") or ""),
        usage=_usage(data.get("usage")),
        model=str(data.get("model") or fallback_model),
    )


@dataclass(frozen=True)
class _Clients:
    sdk: anthropic.AsyncAnthropic
    direct: Endpoint | None  # None while the credential refreshes per request: the SDK sends those calls


class AnthropicProvider:
    """ChatProvider for the Anthropic Messages API (and gateways speaking it)."""

    def __init__(
        self,
        info: ProviderInfo,
        *,
        api_key: str = "",
        auth_token: str = "",
        credentials: Any = None,
        extra_headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,  # injectable so tests can serve the wire in-process
    ) -> None:
        if not api_key and not auth_token and credentials is None:
            raise NoCredentialError("no Anthropic credential configured")
        self.info = info
        self._wire = WireCache()
        self._credential = (api_key or None, auth_token or None, credentials)
        self._headers = {"anthropic-version": ANTHROPIC_API_VERSION, **(extra_headers or {})}
        self._http_client = http_client
        self._clients = LazyClient(self._build_clients)

    def _build_clients(self) -> _Clients:
        import anthropic

        api_key, auth_token, credentials = self._credential
        http = self._http_client or anthropic.DefaultAsyncHttpxClient(timeout=TIMEOUT)
        sdk = anthropic.AsyncAnthropic(
            api_key=api_key,
            auth_token=auth_token,
            credentials=credentials,
            base_url=self.info.base_url,
            max_retries=0,
            timeout=TIMEOUT,
            default_headers=self._headers,
            http_client=http,
        )
        if sdk.custom_auth is not None:  # a token that may be renewed before any call, and retried once on a 401
            return _Clients(sdk, None)
        url = endpoint_url(sdk.base_url, MESSAGES_PATH)
        headers = sdk_headers(sdk.default_headers)
        return _Clients(sdk, Endpoint(self.info.name, http, url, headers, subscription=self.info.subscription))

    async def prepare(self) -> None:
        """Build the SDK client now, in a worker thread (a restarted server is about to be asked again)."""
        await self._clients.get()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        content = encode_request(request, self.info.model, self._wire)
        clients = await self._clients.get()
        data = await (clients.direct.post(content) if clients.direct else self._sdk_post(clients.sdk, content))
        return reply_from(data, request.model or self.info.model)

    async def _sdk_post(self, client: anthropic.AsyncAnthropic, content: bytes) -> dict[str, Any]:
        import anthropic  # loaded by now: a lookup

        try:
            response = await client.post(MESSAGES_PATH, cast_to=httpx2.Response, content=content)
        except anthropic.APIStatusError as exc:
            raise status_error(self.info.name, exc.response, subscription=self.info.subscription) from None
        except anthropic.APITimeoutError:
            url = endpoint_url(client.base_url, MESSAGES_PATH)
            raise ProviderTimeoutError(timed_out(self.info.name, url)) from None
        except anthropic.APIConnectionError as exc:
            url = endpoint_url(client.base_url, MESSAGES_PATH)
            raise ProviderTimeoutError(unreachable(self.info.name, url, str(exc))) from None
        except anthropic.AnthropicError as exc:
            raise ProviderError(f"{self.info.name}: {exc}") from None
        return answer_json(self.info.name, response.content)

    async def aclose(self) -> None:
        if self._clients.built is not None:
            await self._clients.built.sdk.close()
