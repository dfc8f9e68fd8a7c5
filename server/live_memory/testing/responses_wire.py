"""The OpenAI Responses API for :class:`~live_memory.testing.llm_server.FakeLLM`: ``POST /v1/responses``.

Codex CLI speaks only this protocol to a custom provider (``wire_api = "responses"``; its ``"chat"`` value
is refused since 2025), so the fake answers it with the same scripted replies as its other endpoints.

What it speaks
    A streamed request (``"stream": true``, what Codex sends) gets server-sent events in the order the real
    API sends them: ``response.created``, per output item ``response.output_item.added``, the text as
    ``response.output_text.delta`` pieces, ``response.output_item.done``, then ``response.completed`` with
    the usage. A text reply is one ``message`` item; each tool call is a ``function_call`` item whose
    ``arguments`` is a JSON string. A request without ``stream`` gets the finished response object.
    ``Reply.error`` answers in the OpenAI error shape; the other reply kinds (stalls, drops, overflows) are
    not simulated here and answer 501, so a test that needs them notices.

Recording
    Each request is appended to ``FakeLLM.requests`` with protocol ``"openai"`` and path ``/v1/responses``
    (tell it from Chat Completions by the path). There is no prompt cache simulation: the usage reports
    every input token as uncached.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from live_memory.testing.prompt_blocks import count_tokens

if TYPE_CHECKING:
    from live_memory.testing.llm_replies import RecordedRequest, Reply

PATHS = ("/v1/responses", "/responses")


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _event(kind: str, sequence: int, **fields: Any) -> bytes:
    payload = json.dumps({"type": kind, "sequence_number": sequence, **fields})
    return f"event: {kind}\ndata: {payload}\n\n".encode()


def namespaces(tools: Any) -> dict[str, tuple[str, str]]:
    """``{"<namespace>__<function>": (namespace, function)}`` for the functions inside the request's
    ``namespace`` tools (Codex sends each MCP server's tools as one namespace, e.g. ``mcp__live_memory``)."""
    found: dict[str, tuple[str, str]] = {}
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    found[f"{tool['name']}__{inner['name']}"] = (str(tool["name"]), inner["name"])
    return found


def custom_tools(tools: Any) -> set[str]:
    """Names of the request's freeform (``custom``) tools, e.g. Codex's ``apply_patch``."""
    listed = tools if isinstance(tools, list) else []
    return {str(t.get("name")) for t in listed if isinstance(t, dict) and t.get("type") == "custom"}


def output_items(reply: Reply, tools: Any = None) -> list[dict[str, Any]]:
    """The response's output: one assistant message (when there is text or nothing else), then each call.

    A call named ``<namespace>__<function>`` after a function of a namespace tool comes out as the real API
    says it: ``name`` the function, ``namespace`` the namespace. A call to a freeform tool is a
    ``custom_tool_call`` whose raw ``input`` is the scripted call's ``{"input": "..."}``."""
    qualified, freeform = namespaces(tools), custom_tools(tools)
    items: list[dict[str, Any]] = []
    if reply.content or not reply.calls:
        text = {"type": "output_text", "text": reply.content, "annotations": []}
        items.append(
            {"type": "message", "id": _id("msg_"), "status": "completed", "role": "assistant", "content": [text]}
        )
    for call in reply.calls:
        if call.name in freeform:
            raw = str(call.input.get("input", ""))
            call_id = call.call_id or _id("call_")
            items.append(
                {"type": "custom_tool_call", "id": _id("ctc_"), "call_id": call_id, "name": call.name, "input": raw}
            )
            continue
        item = {
            "type": "function_call",
            "id": _id("fc_"),
            "call_id": call.call_id or _id("call_"),
            "name": call.name,
            "arguments": json.dumps(call.input),
            "status": "completed",
        }
        if call.name in qualified:
            item["namespace"], item["name"] = qualified[call.name]
        items.append(item)
    return items


def usage_for(input_tokens: int, reply: Reply) -> dict[str, Any]:
    output_tokens = reply.produced_tokens()
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def response_object(
    model: str, items: list[dict[str, Any]], usage: dict[str, Any] | None, status: str
) -> dict[str, Any]:
    return {
        "id": _id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": items,
        "usage": usage,
        "error": None,
    }


def stream_events(model: str, reply: Reply, usage: dict[str, Any], tools: Any = None) -> list[bytes]:
    """The whole event stream for a reply, in the real API's order."""
    items = output_items(reply, tools)
    sequence = iter(range(1_000_000))
    events = [_event("response.created", next(sequence), response=response_object(model, [], None, "in_progress"))]
    for index, item in enumerate(items):
        if item["type"] == "message":
            empty = {**item, "status": "in_progress", "content": []}
            events.append(_event("response.output_item.added", next(sequence), output_index=index, item=empty))
            text, size = reply.content, max(1, math.ceil(len(reply.content) / 4))
            for start in range(0, len(text), size):
                piece = text[start : start + size]
                delta = {"item_id": item["id"], "output_index": index, "content_index": 0, "delta": piece}
                events.append(_event("response.output_text.delta", next(sequence), **delta))
        else:
            started = {**item, "status": "in_progress", "arguments": ""}
            events.append(_event("response.output_item.added", next(sequence), output_index=index, item=started))
        events.append(_event("response.output_item.done", next(sequence), output_index=index, item=item))
    done = response_object(model, items, usage, "completed")
    events.append(_event("response.completed", next(sequence), response=done))
    return events


def error_response(status: int, message: str, error_type: str | None, code: str | None) -> Response:
    body = {"error": {"message": message or f"HTTP {status}", "type": error_type, "param": None, "code": code}}
    return JSONResponse(body, status_code=status)


async def answer(
    request: Request,
    record_for: Callable[[bytes, dict[str, Any] | None, int], RecordedRequest],
    next_reply: Callable[[RecordedRequest, dict[str, Any]], Reply],
    append: Callable[[RecordedRequest], None],
) -> Response:
    """Answer one ``POST /v1/responses``: record it, take the next scripted reply, speak it."""
    raw = await request.body()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    body = parsed if isinstance(parsed, dict) else None
    record = record_for(raw, body, count_tokens(raw.decode("utf-8", "replace")))
    if body is None:
        append(record)
        return error_response(400, "request body is not a JSON object", "invalid_request_error", None)
    reply = next_reply(record, body)
    record.reply = reply
    model = str(body.get("model") or "fake-model")
    if reply.kind == "error":
        append(record)
        return error_response(reply.status, reply.message, reply.error_type, reply.error_code)
    if reply.kind != "text":
        append(record)
        return error_response(501, f"the Responses fake does not simulate {reply.kind!r} replies", "server_error", None)
    record.usage = usage_for(record.prompt_tokens, reply)
    append(record)
    if not record.stream:
        return JSONResponse(response_object(model, output_items(reply, body.get("tools")), record.usage, "completed"))
    events = stream_events(model, reply, record.usage, body.get("tools"))

    async def body_chunks() -> AsyncIterator[bytes]:
        for event in events:
            yield event

    return StreamingResponse(body_chunks(), media_type="text/event-stream", headers={"cache-control": "no-cache"})
