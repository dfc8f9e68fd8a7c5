"""OpenAI-compatible Chat Completions adapter on the official `openai` SDK.

Anthropic-native tool schemas become function tools here; the system parts are joined into one
system message in the same order, so the prompt prefix stays byte-stable for implicit caching.
Cached tokens are read from `prompt_tokens_details.cached_tokens` (OpenAI, Gemini, gateways) or
`prompt_cache_hit_tokens` (DeepSeek).
Like the Anthropic adapter, it imports its SDK in a worker thread when the first request is sent.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx2

from live_memory.constants import PROVIDER_CONNECT_TIMEOUT_S, PROVIDER_REQUEST_TIMEOUT_S
from live_memory.errors import ProviderError, ProviderTimeoutError
from live_memory.providers.base import (
    ChatRequest,
    ChatResponse,
    LazyClient,
    Message,
    ProviderInfo,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    WireCache,
    wire_body,
    wire_json,
)
from live_memory.providers.failures import from_status
from live_memory.records import ToolCall, Usage

if TYPE_CHECKING:
    import openai

SYSTEM_JOINER = "\n\n"
COMPLETIONS_PATH = "/chat/completions"


def tool_to_openai(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": schema["name"],
            "description": schema.get("description", ""),
            "parameters": schema.get("input_schema", {"type": "object", "properties": {}}),
        },
    }


def _message_to_wire(message: Message) -> list[dict[str, Any]]:
    """One neutral message may become several wire messages (tool results are their own role)."""
    if message.role == "assistant":
        text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        calls = [
            {
                "id": p.id,
                "type": "function",
                "function": {"name": p.name, "arguments": json.dumps(dict(p.input), sort_keys=True)},
            }
            for p in message.parts
            if isinstance(p, ToolUsePart)
        ]
        wire: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            wire["tool_calls"] = calls
        return [wire]
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            content = f"ERROR: {part.content}" if part.is_error else part.content
            out.append({"role": "tool", "tool_call_id": part.tool_use_id, "content": content})
        elif isinstance(part, TextPart):
            texts.append(part.text)
    # Each text part is its own user message: the per-question hint (always the last part) then drops
    # out of the next request without changing the messages before it, so the cached prefix still matches.
    out.extend({"role": "user", "content": text} for text in texts)
    return out


def _head(request: ChatRequest, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": request.model or model, "max_tokens": request.max_tokens}
    if request.tools:
        body["tools"] = [tool_to_openai(t) for t in request.tools]
    return body


def _system_messages(request: ChatRequest) -> list[dict[str, Any]]:
    system = SYSTEM_JOINER.join(p.text for p in request.system if p.text)
    return [{"role": "system", "content": system}] if system else []


def request_body(request: ChatRequest, model: str) -> dict[str, Any]:
    messages = _system_messages(request)
    for message in request.messages:
        messages.extend(_message_to_wire(message))
    return {**_head(request, model), "messages": messages}


def _encode_message(message: Message) -> bytes:
    return wire_json(_message_to_wire(message))[1:-1]  # the wire messages, comma-joined (one may become several)


def encode_request(request: ChatRequest, model: str, cache: WireCache, extra: Mapping[str, Any]) -> bytes:
    """`request_body` (plus `extra` fields) encoded, each message's bytes from `cache` when sent before."""
    fields = (request.model or model, request.max_tokens, tuple(extra.items()), tuple(map(id, request.tools)))
    head = cache.fragment(fields, request.tools, lambda: {**_head(request, model), **extra})
    system = cache.fragment(("system", request.system), None, lambda: _system_messages(request))[1:-1]
    messages = cache.encode_all(request.messages, _encode_message)
    return wire_body(head, "messages", itertools.chain((system,), messages))


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
    output = int(getattr(raw, "completion_tokens", 0) or 0)
    details = getattr(raw, "prompt_tokens_details", None)
    extra = getattr(raw, "model_extra", None) or {}
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    if not cached:
        cached = int(extra.get("prompt_cache_hit_tokens") or 0)
    written = 0
    if details is not None:
        written = int(getattr(details, "cache_write_tokens", 0) or 0)
        written = written or int((getattr(details, "model_extra", None) or {}).get("cache_write_tokens") or 0)
    uncached = max(prompt - cached - written, 0)
    return Usage(input_tokens=uncached, output_tokens=output, cache_read_tokens=cached, cache_write_tokens=written)


class OpenAICompatProvider:
    """ChatProvider for any OpenAI-compatible /chat/completions endpoint."""

    def __init__(
        self,
        info: ProviderInfo,
        *,
        api_key: str,
        http_client: httpx2.AsyncClient | None = None,  # injectable so tests can serve the wire in-process
    ) -> None:
        self.info = info
        self._wire = WireCache()
        self._api_key = api_key or "not-needed"
        self._http_client = http_client
        self._client = LazyClient(self._build_client)

    def _build_client(self) -> openai.AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.info.base_url,
            max_retries=0,
            timeout=openai.Timeout(PROVIDER_REQUEST_TIMEOUT_S, connect=PROVIDER_CONNECT_TIMEOUT_S),
            http_client=self._http_client,
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        extra = {"prompt_cache_key": request.cache_key} if request.cache_key and self.info.routes_by_cache_key else {}
        content = encode_request(request, self.info.model, self._wire, extra)
        client = await self._client.get()
        import openai  # loaded by now: a lookup
        from openai.types.chat import ChatCompletion

        try:
            response = await client.post(
                COMPLETIONS_PATH,
                cast_to=ChatCompletion,
                content=content,
                options={"security": {"bearer_auth": True}},  # what `chat.completions.create` asks for
            )
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except openai.APITimeoutError:
            raise ProviderTimeoutError(f"{self.info.name}: request timed out") from None
        except openai.APIConnectionError as exc:
            raise ProviderTimeoutError(f"{self.info.name}: connection failed ({exc})") from None
        except openai.OpenAIError as exc:
            raise ProviderError(f"{self.info.name}: {exc}") from None
        if not response.choices:
            raise ProviderError(f"{self.info.name}: the endpoint returned no choices")
        choice = response.choices[0]
        calls: list[ToolCall] = []
        for call in choice.message.tool_calls or ():
            function = getattr(call, "function", None)
            if function is None:
                continue
            try:
                arguments = json.loads(function.arguments or "{}")
            except ValueError:
                arguments = {"_unparsed_arguments": function.arguments}
            calls.append(ToolCall(call.id, function.name, arguments if isinstance(arguments, dict) else {}))
        return ChatResponse(
            text=choice.message.content or "",
            tool_calls=tuple(calls),
            stop_reason=str(choice.finish_reason or ""),
            usage=_usage(response.usage),
            model=response.model or request.model or self.info.model,
        )

    def _status_error(self, exc: openai.APIStatusError) -> ProviderError:
        message, code = exc.message, None
        body = exc.body
        if isinstance(body, dict):
            error = body.get("error", body)
            if isinstance(error, dict):
                message = str(error.get("message") or message)
                code = error.get("code") if isinstance(error.get("code"), str) else None
        return from_status(
            provider=self.info.name,
            status=exc.status_code,
            message=message,
            headers={k.lower(): v for k, v in exc.response.headers.items()},
            code=code,
        )

    async def aclose(self) -> None:
        if self._client.built is not None:
            await self._client.built.close()
