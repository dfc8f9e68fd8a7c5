"""The Gemini API for :class:`~live_memory.testing.llm_server.FakeLLM`: ``POST /v1beta/models/<model>:<method>``.

Gemini CLI, pointed at a gateway (``GOOGLE_GEMINI_BASE_URL``), speaks this protocol through Google's genai
SDK, so the fake answers it with the same scripted replies as its other endpoints.

What it speaks
    ``:streamGenerateContent?alt=sse`` (what the CLI's agent loop sends) gets server-sent events, each a
    ``GenerateContentResponse`` chunk (``data: {...}`` with no event name): the text in a few pieces, then
    one chunk with every ``functionCall`` part, the last chunk carrying ``finishReason`` and
    ``usageMetadata``. ``:generateContent`` (the CLI's side requests, e.g. its next-speaker check) gets the
    whole response object; ``:countTokens`` gets ``{"totalTokens": n}``. A tool call's ``args`` is the
    scripted call's input object; a call is named exactly as scripted (the CLI names MCP tools
    ``mcp_<server>_<tool>``). ``Reply.error`` answers in Google's error shape (``error.code``,
    ``error.message``, ``error.status``); the other reply kinds (stalls, drops, overflows) are not simulated
    here and answer 501, so a test that needs them notices.

Recording
    Each generate request is appended to ``FakeLLM.requests`` with protocol ``"gemini"`` and its path (tell
    the streamed call from a side request by ``path.endswith(":streamGenerateContent")``); ``countTokens``
    goes to ``FakeLLM.other_requests``. There is no prompt cache simulation: ``cachedContentTokenCount`` is
    never reported.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from live_memory.testing.prompt_blocks import count_tokens

if TYPE_CHECKING:
    from live_memory.testing.llm_replies import RecordedRequest, Reply

PATH = "/v1beta/models/{target:path}"  # target = "<model>:<method>"
STREAM, GENERATE, COUNT = "streamGenerateContent", "generateContent", "countTokens"
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
}


def split_target(target: str) -> tuple[str, str]:
    """``("gemini-2.5-flash", "streamGenerateContent")`` from ``"gemini-2.5-flash:streamGenerateContent"``."""
    model, _, method = target.rpartition(":")
    return model, method


def parts_for(reply: Reply) -> list[dict[str, Any]]:
    """The model turn's parts: the text (when there is text or nothing else), then each function call."""
    parts: list[dict[str, Any]] = []
    if reply.content or not reply.calls:
        parts.append({"text": reply.content})
    for call in reply.calls:
        function_call: dict[str, Any] = {"name": call.name, "args": call.input}
        if call.call_id:
            function_call["id"] = call.call_id
        parts.append({"functionCall": function_call})
    return parts


def usage_for(prompt_tokens: int, reply: Reply) -> dict[str, Any]:
    output_tokens = reply.produced_tokens()
    return {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens,
    }


def chunk(model: str, response_id: str, parts: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    """One ``GenerateContentResponse``; the one with ``usage`` is the last and says why it stopped."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": response_id}
    if usage is not None:
        candidate["finishReason"] = "STOP"
        body["usageMetadata"] = usage
    return body


def stream_chunks(model: str, reply: Reply, usage: dict[str, Any]) -> list[dict[str, Any]]:
    """The whole stream for a reply: the text in about four pieces, then the calls, the usage on the last."""
    response_id = uuid.uuid4().hex[:24]
    text, calls = reply.content, [p for p in parts_for(reply) if "functionCall" in p]
    size = max(1, math.ceil(len(text) / 4))
    pieces: list[list[dict[str, Any]]] = [[{"text": text[i : i + size]}] for i in range(0, len(text), size)]
    if calls:
        pieces.append(calls)
    if not pieces:
        pieces.append([{"text": ""}])
    last = len(pieces) - 1
    return [chunk(model, response_id, p, usage if i == last else None) for i, p in enumerate(pieces)]


def error_response(status: int, message: str) -> Response:
    body = {"error": {"code": status, "message": message or f"HTTP {status}", "status": _STATUS_NAMES.get(status)}}
    return JSONResponse(body, status_code=status)


async def answer(
    request: Request,
    record_for: Callable[[bytes, bool], RecordedRequest],
    next_reply: Callable[[RecordedRequest, dict[str, Any]], Reply],
    append: Callable[[RecordedRequest], None],
    note_other: Callable[[Request], None],
) -> Response:
    """Answer one ``POST /v1beta/models/<model>:<method>``: record it, take the next scripted reply, speak it."""
    model, method = split_target(str(request.path_params["target"]))
    raw = await request.body()
    if method == COUNT:
        note_other(request)
        return JSONResponse({"totalTokens": count_tokens(raw.decode("utf-8", "replace"))})
    if method not in (STREAM, GENERATE):
        note_other(request)
        return error_response(404, f"FakeLLM has no Gemini method {method!r}")
    record = record_for(raw, method == STREAM)
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        append(record)
        return error_response(400, "request body is not a JSON object")
    reply = next_reply(record, parsed)
    record.reply = reply
    if reply.kind == "error":
        append(record)
        return error_response(reply.status, reply.message)
    if reply.kind != "text":
        append(record)
        return error_response(501, f"the Gemini fake does not simulate {reply.kind!r} replies")
    record.usage = usage_for(record.prompt_tokens, reply)
    append(record)
    if not record.stream:
        return JSONResponse(chunk(model, uuid.uuid4().hex[:24], parts_for(reply), record.usage))
    chunks = stream_chunks(model, reply, record.usage)

    async def body_chunks() -> AsyncIterator[bytes]:
        for piece in chunks:
            yield f"data: {json.dumps(piece)}\r\n\r\n".encode()

    return StreamingResponse(body_chunks(), media_type="text/event-stream", headers={"cache-control": "no-cache"})
