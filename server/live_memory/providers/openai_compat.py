"""OpenAI-compatible Chat Completions adapter on the official `openai` SDK.

Anthropic-native tool schemas become function tools here; the system parts are joined into one
system message in the same order, so the prompt prefix stays byte-stable for implicit caching.
Cached tokens are read from `prompt_tokens_details.cached_tokens` (OpenAI, Gemini, gateways) or
`prompt_cache_hit_tokens` (DeepSeek).
Like the Anthropic adapter, it imports its SDK in a worker thread when the first request is sent, and
sends its calls as plain POSTs through the client the SDK built (`direct.Endpoint`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx2

from live_memory.core.errors import ProviderError
from live_memory.core.messages import (
    ChatRequest,
    ChatResponse,
    Message,
    ProviderInfo,
    TextPart,
    ToolResultPart,
    ToolUsePart,
)
from live_memory.core.records import ToolCall, Usage
from live_memory.providers.base import LazyClient, WireCache, wire_body, wire_json
from live_memory.providers.direct import TIMEOUT, Endpoint, endpoint_url, sdk_headers, token_count

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


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = token_count(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached = token_count(details.get("cached_tokens")) or token_count(raw.get("prompt_cache_hit_tokens"))
    written = token_count(details.get("cache_write_tokens"))
    return Usage(
        input_tokens=max(prompt - cached - written, 0),
        output_tokens=token_count(raw.get("completion_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def _tool_call(call: object) -> ToolCall | None:
    """One function call of an answer; arguments that are not a JSON object are kept for the tool to reject
    (some gateways send the object itself rather than its JSON text)."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return None
    function = call["function"]
    raw = function.get("arguments")
    arguments: object = raw
    if not isinstance(raw, dict):
        try:
            arguments = json.loads(raw or "{}")
        except (TypeError, ValueError):
            arguments = {"_unparsed_arguments": raw}
    name = str(function.get("name") or "")
    return ToolCall(str(call.get("id") or ""), name, arguments if isinstance(arguments, dict) else {})


def reply_from(data: Mapping[str, Any], fallback_model: str, provider: str) -> ChatResponse:
    """A Chat Completions answer (its JSON) as a `ChatResponse`: the first choice's text and tool calls."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ProviderError(f"{provider}: the endpoint returned no choices")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    calls = [call for call in map(_tool_call, message.get("tool_calls") or ()) if call is not None]
    text = message.get("content")
    return ChatResponse(
        text=text if isinstance(text, str) else "",
        tool_calls=tuple(calls),
        stop_reason=str(choice.get("finish_reason") or ""),
        usage=_usage(data.get("usage")),
        model=str(data.get("model") or fallback_model),
    )


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
        self._clients = LazyClient(self._build_clients)

    def _build_clients(self) -> tuple[openai.AsyncOpenAI, Endpoint]:
        import openai

        http = self._http_client or openai.DefaultAsyncHttpxClient(timeout=TIMEOUT)
        sdk = openai.AsyncOpenAI(
            api_key=self._api_key, base_url=self.info.base_url, max_retries=0, timeout=TIMEOUT, http_client=http
        )
        # The SDK adds the bearer credential per request (what `chat.completions.create` asks for), not by default.
        headers = {**sdk_headers(sdk.default_headers), "Authorization": f"Bearer {self._api_key}"}
        return sdk, Endpoint(self.info.name, http, endpoint_url(sdk.base_url, COMPLETIONS_PATH), headers)

    async def prepare(self) -> None:
        """Build the SDK client now, in a worker thread (a restarted server is about to be asked again)."""
        await self._clients.get()

    async def chat(self, request: ChatRequest) -> ChatResponse:
        extra = {"prompt_cache_key": request.cache_key} if request.cache_key and self.info.routes_by_cache_key else {}
        content = encode_request(request, self.info.model, self._wire, extra)
        _, endpoint = await self._clients.get()
        data = await endpoint.post(content)
        return reply_from(data, request.model or self.info.model, self.info.name)

    async def aclose(self) -> None:
        if self._clients.built is not None:
            await self._clients.built[0].close()
