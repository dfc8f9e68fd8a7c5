"""Anthropic Messages adapter on the official `anthropic` SDK.

Passes tool schemas through verbatim, turns parts marked `cache=True` into `cache_control`
breakpoints, and normalises usage (total prompt = read + creation + uncached input).
SDK retries are off: the question loop owns retries so they stay inside its soft deadline.
The SDK is imported when the first request is sent, in a worker thread: importing it takes about two seconds
of CPU, which a starting server (and every command that builds a provider without asking) need not wait for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx2

from live_memory.constants import (
    ANTHROPIC_API_VERSION,
    PROVIDER_CONNECT_TIMEOUT_S,
    PROVIDER_REQUEST_TIMEOUT_S,
)
from live_memory.errors import NoCredentialError, ProviderError, ProviderTimeoutError
from live_memory.providers.base import (
    ChatRequest,
    ChatResponse,
    LazyClient,
    Message,
    Part,
    ProviderInfo,
    TextPart,
    ToolUsePart,
    WireCache,
    wire_body,
    wire_json,
)
from live_memory.providers.failures import from_status
from live_memory.records import ToolCall, Usage

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


def _usage(raw: Any) -> Usage:
    return Usage(
        input_tokens=int(getattr(raw, "input_tokens", 0) or 0),
        output_tokens=int(getattr(raw, "output_tokens", 0) or 0),
        cache_read_tokens=int(getattr(raw, "cache_read_input_tokens", 0) or 0),
        cache_write_tokens=int(getattr(raw, "cache_creation_input_tokens", 0) or 0),
        cache_write_1h_tokens=int(getattr(getattr(raw, "cache_creation", None), "ephemeral_1h_input_tokens", 0) or 0),
    )


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
        self._client = LazyClient(self._build_client)

    def _build_client(self) -> anthropic.AsyncAnthropic:
        import anthropic

        api_key, auth_token, credentials = self._credential
        return anthropic.AsyncAnthropic(
            api_key=api_key,
            auth_token=auth_token,
            credentials=credentials,
            base_url=self.info.base_url,
            max_retries=0,
            timeout=anthropic.Timeout(PROVIDER_REQUEST_TIMEOUT_S, connect=PROVIDER_CONNECT_TIMEOUT_S),
            default_headers=self._headers,
            http_client=self._http_client,
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        content = encode_request(request, self.info.model, self._wire)
        client = await self._client.get()
        import anthropic  # loaded by now: a lookup

        try:
            response = await client.post(MESSAGES_PATH, cast_to=anthropic.types.Message, content=content)
        except anthropic.APIStatusError as exc:
            raise self._status_error(exc) from None
        except anthropic.APITimeoutError:
            raise ProviderTimeoutError(f"{self.info.name}: request timed out") from None
        except anthropic.APIConnectionError as exc:
            raise ProviderTimeoutError(f"{self.info.name}: connection failed ({exc})") from None
        except anthropic.AnthropicError as exc:
            raise ProviderError(f"{self.info.name}: {exc}") from None
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in response.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                arguments = block.input if isinstance(block.input, dict) else {}
                calls.append(ToolCall(block.id, block.name, arguments))
        return ChatResponse(
            text="".join(texts),
            tool_calls=tuple(calls),
            stop_reason=str(response.stop_reason or ""),
            usage=_usage(response.usage),
            model=response.model or request.model or self.info.model,
        )

    def _status_error(self, exc: anthropic.APIStatusError) -> ProviderError:
        message = exc.message
        body = exc.body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            message = str(body["error"].get("message") or message)
        return from_status(
            provider=self.info.name,
            status=exc.status_code,
            message=message,
            headers={k.lower(): v for k, v in exc.response.headers.items()},
            subscription=self.info.subscription,
        )

    async def aclose(self) -> None:
        if self._client.built is not None:
            await self._client.built.close()
