"""The fake model endpoint's Anthropic and OpenAI-compatible wires (llm_server.py): a scripted reply fitted to the
request, sent whole or as an event stream, its errors in each protocol's shape, and a connection dropped on cue."""

from __future__ import annotations

import asyncio
import contextlib
import http
import json
import math
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from live_memory.providers.profiles import Protocol
from live_memory.testing.llm_replies import (
    Reply,
    ToolCall,
)
from live_memory.testing.prompt_blocks import (
    CHARS_PER_TOKEN,
    count_tokens,
    sorted_json,
)

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}
_TO_OPENAI_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}
_TO_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_RAW_SEND_KEY = "fake_llm.raw_send"
_RAW_RECEIVE_KEY = "fake_llm.raw_receive"


def _new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _sse(event: str | None, data: object) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _split(text: str, pieces: int = 4) -> list[str]:
    if not text:
        return []
    size = max(1, math.ceil(len(text) / pieces))
    return [text[start : start + size] for start in range(0, len(text), size)]


def _transport_of(scope: Scope) -> asyncio.BaseTransport | None:
    raw_send = scope.get(_RAW_SEND_KEY)
    cycle = getattr(raw_send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    return cast("asyncio.BaseTransport | None", transport)


async def _drop_connection(scope: Scope) -> None:
    """Close the TCP connection under this request (bytes already written are flushed first), then wait for
    the server to notice, so that it neither answers 500 nor logs an incomplete response."""
    transport = _transport_of(scope)
    if transport is None:
        raise RuntimeError("FakeLLM can only drop connections when served by uvicorn's h11 protocol")
    transport.close()
    raw_receive = cast("Receive | None", scope.get(_RAW_RECEIVE_KEY))
    if raw_receive is None:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(2.0):
            while (await raw_receive())["type"] != "http.disconnect":
                pass


class DropResponse(Response):
    def __init__(self) -> None:
        super().__init__(status_code=200)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _drop_connection(scope)


_DROP = None  # marker inside an event list: drop the connection here


class _EventStreamResponse(Response):
    """Server-sent events, optionally cut short by a connection drop (a ``None`` item)."""

    media_type = "text/event-stream"

    def __init__(self, events: Sequence[bytes | None], headers: dict[str, str]) -> None:
        super().__init__(status_code=200, headers={"cache-control": "no-cache", **headers})
        self.raw_headers = [(key, value) for key, value in self.raw_headers if key != b"content-length"]
        self.events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        for item in self.events:
            if item is _DROP:
                await _drop_connection(scope)
                return
            await send({"type": "http.response.body", "body": item, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class RawChannels:
    """Outermost ASGI layer: keeps the server's own send/receive in the scope so a handler can drop the
    connection underneath Starlette."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[_RAW_SEND_KEY] = send
            scope[_RAW_RECEIVE_KEY] = receive
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class _Answer:
    """A resolved text/tool answer, already fitted to max_tokens."""

    text: str
    calls: tuple[tuple[str, ToolCall], ...]  # (id, call)
    stop_reason: str
    output_tokens: int
    drop_after_chars: int | None


def req_id() -> dict[str, str]:
    request_id = _new_id("req_")
    return {"request-id": request_id, "x-request-id": request_id}


def anthropic_error(
    status: int, error_type: str | None, message: str, headers: Iterable[tuple[str, str]] = ()
) -> Response:
    request_id = _new_id("req_")
    body = {
        "type": "error",
        "error": {"type": error_type or _ANTHROPIC_ERROR_TYPES.get(status, "api_error"), "message": message},
        "request_id": request_id,
    }
    return JSONResponse(body, status_code=status, headers={"request-id": request_id, **dict(headers)})


def openai_error(
    status: int,
    *,
    error_type: str | None,
    message: str,
    code: str | None,
    headers: dict[str, str],
    param: str | None = None,
) -> Response:
    default_type = _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": error_type or default_type, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers={"x-request-id": _new_id("req_"), **headers})


def error_response(protocol: Protocol, reply: Reply) -> Response:
    message = reply.message or _reason(reply.status)
    if protocol == "anthropic":
        response = anthropic_error(reply.status, reply.error_type, message, reply.headers)
        if reply.error_code is not None:
            payload = json.loads(bytes(response.body))
            payload["error"]["details"] = {"error_code": reply.error_code}
            return JSONResponse(payload, status_code=reply.status, headers=dict(response.headers))
        return response
    return openai_error(
        reply.status,
        error_type=reply.error_type,
        message=message,
        code=reply.error_code,
        headers=dict(reply.headers),
    )


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else f"HTTP {status}"


def fit_answer(protocol: Protocol, reply: Reply, body: dict[str, Any]) -> _Answer:
    """Apply max_tokens (0 → empty answer; text longer than max_tokens*4 chars → truncated) and defaults."""
    prefix = "toolu_" if protocol == "anthropic" else "call_"
    calls = tuple((call.call_id or _new_id(prefix), call) for call in reply.calls)
    text = reply.content
    if protocol == "anthropic":
        limit = body.get("max_tokens")
    else:
        limit = body.get("max_completion_tokens")
        if limit is None:
            limit = body.get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and (limit <= 0 or len(text) > limit * CHARS_PER_TOKEN):
        limit = max(0, limit)
        text = text[: limit * CHARS_PER_TOKEN]
        stop = "max_tokens" if protocol == "anthropic" else "length"
        return _Answer(text, (), stop, limit, reply.drop_after_chars)
    if reply.stop_reason is not None:
        table = _TO_ANTHROPIC_STOP if protocol == "anthropic" else _TO_OPENAI_STOP
        stop = table.get(reply.stop_reason, reply.stop_reason)
    elif calls:
        stop = "tool_use" if protocol == "anthropic" else "tool_calls"
    else:
        stop = "end_turn" if protocol == "anthropic" else "stop"
    output_tokens = reply.output_tokens
    if output_tokens is None:
        produced = text + "".join(call.name + sorted_json(call.input) for _, call in calls)
        output_tokens = count_tokens(produced)
    return _Answer(text, calls, stop, output_tokens, reply.drop_after_chars)


def _anthropic_content(answer: _Answer) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    truncated_to_nothing = not answer.text and answer.stop_reason == "max_tokens"
    if (answer.text or not answer.calls) and not truncated_to_nothing:
        content.append({"type": "text", "text": answer.text})
    for call_id, call in answer.calls:
        content.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.input})
    return content


def anthropic_message(model: str, answer: _Answer, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_content(answer),
        "stop_reason": answer.stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def _text_pieces(text: str, drop_after: int | None) -> tuple[list[str], bool]:
    """Text chunks to stream, and whether the connection drops right after them."""
    if drop_after is None:
        return _split(text), False
    return _split(text[: max(0, drop_after)]), True


def _anthropic_event(event_type: str, **fields: Any) -> bytes:
    return _sse(event_type, {"type": event_type, **fields})


def anthropic_stream(model: str, answer: _Answer, usage: dict[str, Any]) -> Response:
    start_usage = {**usage, "output_tokens": min(1, usage["output_tokens"])}
    message: dict[str, Any] = {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[bytes | None] = [
        _anthropic_event("message_start", message=message),
        _anthropic_event("ping"),
    ]
    for index, block in enumerate(_anthropic_content(answer)):
        if block["type"] == "text":
            events.append(
                _anthropic_event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            )
            pieces, drop = _text_pieces(block["text"], answer.drop_after_chars)
            events.extend(
                _anthropic_event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
                for piece in pieces
            )
            if drop:
                events.append(_DROP)
                return _EventStreamResponse(events, req_id())
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events.append(_anthropic_event("content_block_start", index=index, content_block=start))
            events.extend(
                _anthropic_event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
                for piece in _split(json.dumps(block["input"]))
            )
        events.append(_anthropic_event("content_block_stop", index=index))
    if answer.drop_after_chars is not None:
        events.append(_DROP)
        return _EventStreamResponse(events, req_id())
    final_usage = {key: value for key, value in usage.items() if key not in ("cache_creation", "service_tier")}
    delta = {"stop_reason": answer.stop_reason, "stop_sequence": None}
    events.append(_anthropic_event("message_delta", delta=delta, usage=final_usage))
    events.append(_anthropic_event("message_stop"))
    return _EventStreamResponse(events, req_id())


def _openai_tool_calls(answer: _Answer) -> list[dict[str, Any]]:
    return [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.input)},
        }
        for call_id, call in answer.calls
    ]


def openai_completion(model: str, answer: _Answer, usage: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.text if answer.text or not answer.calls else None,
        "refusal": None,
    }
    if answer.calls:
        message["tool_calls"] = _openai_tool_calls(answer)
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": answer.stop_reason, "logprobs": None}],
        "usage": usage,
    }


def openai_stream(model: str, answer: _Answer, usage: dict[str, Any] | None) -> Response:
    completion_id = _new_id("chatcmpl-")
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        payload: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        }
        if usage is not None:
            payload["usage"] = None
        return _sse(None, payload)

    has_text = bool(answer.text) or not answer.calls
    events: list[bytes | None] = [chunk({"role": "assistant", "content": "" if has_text else None})]
    pieces, drop = _text_pieces(answer.text, answer.drop_after_chars)
    events.extend(chunk({"content": piece}) for piece in pieces)
    if drop:
        events.append(_DROP)
        return _EventStreamResponse(events, req_id())
    for index, (call_id, call) in enumerate(answer.calls):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        for piece in _split(json.dumps(call.input)):
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    events.append(chunk({}, answer.stop_reason))
    if usage is not None:
        tail = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": usage,
        }
        events.append(_sse(None, tail))
    events.append(_sse(None, "[DONE]"))
    return _EventStreamResponse(events, req_id())
