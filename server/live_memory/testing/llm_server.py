"""A scripted fake LLM provider: a real loopback HTTP server speaking the Anthropic Messages API and the
OpenAI Chat Completions API, with a simulation of each provider's prompt caching.

Usage (tests)::

    with FakeLLM(min_cacheable_tokens=64) as fake:
        fake.script(Reply.text("hello"), Reply.tool_call("grep", {"pattern": "x"}))
        client = AsyncAnthropic(base_url=fake.base_url, api_key="test", max_retries=0)
        ...
        assert fake.requests[0].usage["cache_read_input_tokens"] == 0

Usage (by hand)::

    python -m live_memory.testing.llm_server --port 8089 [--rules anthropic|openai|deepseek|none] [--host 127.0.0.1]

Endpoints
    ``POST /v1/messages`` (also ``?beta=true``; a ``role: "system"`` message inside ``messages`` is accepted),
    ``POST /v1/messages/count_tokens`` → ``{"input_tokens": n}``, ``POST /v1/chat/completions`` (also
    ``/chat/completions``), ``POST /v1/responses`` (also ``/responses``; the OpenAI Responses API, in
    :mod:`live_memory.testing.responses_wire`), ``POST /v1beta/models/<model>:streamGenerateContent`` (also
    ``:generateContent`` and ``:countTokens``; the Gemini API, in :mod:`live_memory.testing.gemini_wire`),
    ``GET /v1/models`` and ``GET /v1/models/{id}`` (one shape that both SDKs parse).
    Anything else gets a JSON 404.

Replies
    Model requests consume the FIFO filled by :meth:`FakeLLM.script`, then ask :attr:`FakeLLM.responder`,
    then fall back to ``Reply.text("fake answer: " + <first 200 chars of the last user text>)``.
    Two automatic errors do not consume a scripted reply: more ``cache_control`` breakpoints than Anthropic
    allows (4; Anthropic endpoint) and a prompt over ``context_limit_tokens``.

Prompts and prompt caching
    Both live in the package's public testing modules, shared with the benchmarks and ``live-memory demo``:
    :mod:`live_memory.testing.prompt_blocks` (how a body becomes blocks and tokens, ``CHARS_PER_TOKEN`` = 4,
    the cache keys, and the memo that keeps a long conversation cheap to parse; ``memo_limit=0`` parses
    without it) and :mod:`live_memory.testing.prompt_cache` (``cache_rules``: ``"anthropic"`` breakpoints
    with the model's minimum cacheable prefix from the service's provider data, ``"openai"`` and
    ``"deepseek"`` automatic prefix caching, ``"none"``; ``min_cacheable_tokens`` overrides the minimum,
    ``cache_ttl_s`` the lifetime). The rules apply to the responses of both endpoints: with ``"anthropic"``
    rules the OpenAI endpoint reports ``cached_tokens`` 0; with ``"openai"`` or ``"deepseek"`` rules the
    Anthropic endpoint reports the hit as ``cache_read_input_tokens`` (creation always 0), and the
    ``"deepseek"`` OpenAI endpoint reports ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``
    instead of ``prompt_tokens_details``.

Recording
    Every model request (``/v1/messages`` and chat completions, including errors and drops) is appended to
    :attr:`FakeLLM.requests` before it is answered. A record keeps the bytes received (``raw_body``);
    ``body`` parses them on first read (``{}`` when they are not a JSON object). ``usage`` is what the fake
    computed for a successful answer (a mid-stream drop keeps it; errors and plain drops leave None). For a
    stalled request the record is appended when it arrives and its ``usage`` filled in when the stall ends.
    ``count_tokens`` and ``models`` calls go to :attr:`FakeLLM.other_requests` so that ``requests`` indexes
    model calls only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http
import json
import logging
import math
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import pydantic
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from live_memory.providers.profiles import EXPLICIT_CACHE, Protocol
from live_memory.testing import gemini_wire, responses_wire
from live_memory.testing.prompt_blocks import (
    CHARS_PER_TOKEN,
    MEMO_LIMIT,
    Memo,
    Prompt,
    anthropic_prompt,
    content_text,
    count_tokens,
    openai_prompt,
    sorted_json,
)
from live_memory.testing.prompt_cache import CACHE_RULES, CacheOutcome, CacheRules, PromptCache
from live_memory.testing.quick_server import QuickServer

__all__ = [
    "CHARS_PER_TOKEN",
    "CacheRules",
    "FakeLLM",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "count_tokens",
]

MAX_CACHE_BREAKPOINTS = EXPLICIT_CACHE.max_breakpoints
DEFAULT_CONTEXT_LIMIT = {"anthropic": 200_000, "openai": 128_000}
STALL_POLL_S = 0.01
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
STOP_GRACE_S = 3.0  # in-flight responses get this long at a stop; stalled ones are then cut

# The service's protocols, and the wires only other agents' CLIs speak (their modules, below).
WireProtocol = Protocol | Literal["gemini"]
ReplyKind = Literal["text", "error", "prompt_too_long", "stall", "drop"]

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

logger = logging.getLogger(__name__)


HINT_PREFIX = "## Budgets"  # Live Memory's per-question hint (see last_user_text)

# --------------------------------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a scripted reply."""

    name: str
    input: dict[str, Any]
    call_id: str | None = None


@dataclass(frozen=True)
class Reply:
    """What the fake answers to one model request. Build it with the classmethods."""

    kind: ReplyKind
    content: str = ""
    calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None
    output_tokens: int | None = None
    drop_after_chars: int | None = None
    status: int = 200
    message: str = ""
    error_type: str | None = None
    error_code: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    limit_tokens: int | None = None
    release: threading.Event | None = None
    stall_seconds: float = 30.0
    then: Reply | None = None

    def produced_tokens(self) -> int:
        """The output tokens this reply is billed: as scripted, else counted from its text and tool calls."""
        if self.output_tokens is not None:
            return self.output_tokens
        return count_tokens(self.content + "".join(call.name + sorted_json(call.input) for call in self.calls))

    @classmethod
    def text(
        cls,
        text: str,
        *,
        stop_reason: str | None = None,
        output_tokens: int | None = None,
        drop_after_chars: int | None = None,
    ) -> Reply:
        """A text answer. ``stop_reason`` defaults to "end_turn" / "stop" (either vocabulary is translated to
        the endpoint's). ``drop_after_chars``: when streaming, close the connection after that many characters
        of text (after all of it, before the end of the message, when the text is shorter); when not
        streaming, close it without a response."""
        return cls(
            kind="text",
            content=text,
            stop_reason=stop_reason,
            output_tokens=output_tokens,
            drop_after_chars=drop_after_chars,
        )

    @classmethod
    def tool_call(cls, name: str, input: dict[str, Any], *, text: str = "", call_id: str | None = None) -> Reply:
        """One tool call (``tool_use`` block / ``tool_calls`` entry), optionally preceded by text."""
        return cls(kind="text", content=text, calls=(ToolCall(name, dict(input), call_id),))

    @classmethod
    def tool_calls(cls, calls: list[tuple[str, dict[str, Any]]], *, text: str = "") -> Reply:
        """Several parallel tool calls, optionally preceded by text."""
        return cls(kind="text", content=text, calls=tuple(ToolCall(name, dict(args)) for name, args in calls))

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "",
        *,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ) -> Reply:
        """An HTTP error in the endpoint's error shape. ``code`` is the OpenAI ``error.code`` and, on the
        Anthropic endpoint, ``error.details.error_code``."""
        return cls(
            kind="error",
            status=status,
            message=message,
            error_type=error_type,
            error_code=code,
            headers=tuple((headers or {}).items()),
        )

    @classmethod
    def prompt_too_long(cls, *, limit_tokens: int | None = None) -> Reply:
        """The provider's context-overflow 400, with the prompt's real token count N. The stated limit is
        ``limit_tokens``, else the fake's ``context_limit_tokens``, else 200k (Anthropic) / 128k (OpenAI),
        capped at N - 1 so the message always reads as an overflow."""
        return cls(kind="prompt_too_long", status=400, limit_tokens=limit_tokens)

    @classmethod
    def stall(
        cls, release: threading.Event | None = None, *, seconds: float = 30.0, then: Reply | None = None
    ) -> Reply:
        """Hold the request open until ``release`` is set, ``seconds`` pass or the fake stops, then answer
        with ``then`` (default: ``Reply.text("stalled answer")``)."""
        return cls(kind="stall", release=release, stall_seconds=seconds, then=then)

    @classmethod
    def drop(cls) -> Reply:
        """Close the TCP connection without any HTTP response."""
        return cls(kind="drop")


@dataclass
class RecordedRequest:
    """One model request as the fake received it.

    The body is kept as the bytes received (``raw_body``) and parsed when :attr:`body` is first read: a test
    reads a few requests of a run, and keeping every parsed body alive would make the collector walk all of
    them again and again as a long conversation goes on."""

    protocol: WireProtocol
    path: str
    headers: dict[str, str]
    raw_body: bytes
    stream: bool
    usage: dict[str, Any] | None
    prompt_tokens: int
    received_at: float
    reply: Reply | None = None  # the reply the fake chose (after automatic errors, script and responder)
    query: str = ""  # the raw query string, e.g. "beta=true"
    _parsed: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def body(self) -> dict[str, Any]:
        """The parsed JSON body (``{}`` when it was not a JSON object); parsed once, then the same dict."""
        parsed = self._parsed
        if parsed is None:
            with _PARSE_LOCK:  # two threads reading it first get the same dict
                parsed = self._parsed
                if parsed is None:
                    parsed = self._parsed = _json_object(self.raw_body) or {}
        return parsed


_PARSE_LOCK = threading.Lock()


# -------------------------------------------------------------------------------------------------- responses


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


class _DropResponse(Response):
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


class _RawChannels:
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


# ------------------------------------------------------------------------------------------------------ fake


class FakeLLM:
    """A scripted loopback provider for both wire protocols. See the module docstring."""

    def __init__(
        self,
        *,
        cache_rules: CacheRules = "anthropic",
        model: str = "claude-haiku-4-5",
        context_limit_tokens: int | None = None,
        min_cacheable_tokens: int | None = None,
        cache_ttl_s: float = EXPLICIT_CACHE.ttl_s,
        clock: Callable[[], float] = time.monotonic,
        host: str = "127.0.0.1",
        memo_limit: int = MEMO_LIMIT,
    ) -> None:
        if cache_rules not in CACHE_RULES:
            raise ValueError(f"unknown cache_rules {cache_rules!r}")
        self.cache_rules: CacheRules = cache_rules
        self.model = model
        self.context_limit_tokens = context_limit_tokens
        self.min_cacheable_tokens = min_cacheable_tokens
        self.cache_ttl_s = cache_ttl_s
        self.clock = clock
        self.host = host
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        self.other_requests: list[tuple[str, str]] = []  # (method, path) of count_tokens / models calls
        self.stalled = threading.Event()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._script: deque[Reply] = deque()
        self._seq = 0
        self._active_stalls = 0
        self._cache = self._new_cache()
        # Content-determined work, kept across reset_cache; memo_limit=0 recomputes every block each time.
        self._memo = Memo(memo_limit) if memo_limit > 0 else None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: QuickServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._port: int | None = None
        self.app: ASGIApp = _RawChannels(self._build_app())

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> FakeLLM:
        """Serve on ``host``:<free port> in a daemon thread; returns once the server accepts connections."""
        if self._thread is not None:
            raise RuntimeError("FakeLLM is already running")
        self._stopping.clear()
        # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose proto is TCP, and
        # without it every keep-alive response stalls ~40 ms (Nagle against the client's delayed ACK).
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((self.host, 0))
        except OSError:
            sock.close()
            raise
        port = int(sock.getsockname()[1])
        ready = threading.Event()
        failure: list[BaseException] = []
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=port,
            http="h11",
            ws="none",
            lifespan="off",
            interface="asgi3",
            proxy_headers=False,
            access_log=False,
            log_config=None,
            log_level="warning",
        )

        def serve() -> None:
            async def main() -> None:
                self._loop = asyncio.get_running_loop()
                self._server = QuickServer(config, ready.set, grace_s=STOP_GRACE_S)
                await self._server.serve(sockets=[sock])

            try:
                asyncio.run(main())
            except BaseException as exc:
                failure.append(exc)
            finally:
                sock.close()
                ready.set()

        thread = threading.Thread(target=serve, name=f"FakeLLM:{port}", daemon=True)
        self._thread = thread
        thread.start()
        if not ready.wait(START_TIMEOUT_S) or failure or not thread.is_alive():
            self.stop()
            raise RuntimeError(f"FakeLLM did not start on {self.host}:{port}") from (failure[0] if failure else None)
        self._port = port
        return self

    def stop(self) -> None:
        """Release stalls, stop serving and join the server thread (bounded). Idempotent."""
        self._stopping.set()
        thread, server, loop = self._thread, self._server, self._loop
        if server is not None and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop may already be closed
                loop.call_soon_threadsafe(server.exit_event.set)
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_TIMEOUT_S)
            if thread.is_alive():
                logger.warning("FakeLLM server thread did not stop within %.0f s", STOP_TIMEOUT_S)
        self._thread = self._server = self._loop = None
        self._port = None
        self.stalled.clear()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeLLM is not running; call start() first")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the Anthropic SDK's base_url."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``base_url + "/v1"``: the OpenAI SDK's base_url."""
        return self.base_url + "/v1"

    # ---------------------------------------------------------------- scripting

    def script(self, *replies: Reply) -> None:
        """Append replies to the FIFO; each model request consumes one."""
        with self._lock:
            self._script.extend(replies)

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> bool:
        """Block until at least ``n`` model requests were recorded; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.requests) >= n, timeout)

    def reset_cache(self) -> None:
        """Forget every simulated cache entry."""
        with self._lock:
            self._cache = self._new_cache()

    @staticmethod
    def last_user_text(body: dict[str, Any]) -> str:
        """Text of the last user message of either protocol (tool_result blocks give their content text).

        Live Memory sends its per-question hint as a user message of its own on the OpenAI protocol; a
        message holding only that hint is skipped, so both protocols yield the question or tool output.
        """
        for message in reversed(body.get("messages") or []):
            if isinstance(message, dict) and message.get("role") == "user":
                text = content_text(message.get("content"))
                if not text.startswith(HINT_PREFIX):
                    return text
        return ""

    # ---------------------------------------------------------------- app

    def _build_app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/messages", self._anthropic_messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/chat/completions", self._chat_completions, methods=["POST"]),
                *(Route(path, self._responses, methods=["POST"]) for path in responses_wire.PATHS),
                Route(gemini_wire.PATH, self._gemini, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/models/{model_id:path}", self._model, methods=["GET"]),
                Route(
                    "/{path:path}",
                    self._not_found,
                    methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
                ),
            ]
        )

    async def _not_found(self, request: Request) -> Response:
        return _anthropic_error(404, None, f"FakeLLM has no route {request.method} {request.url.path}")

    def _model_entry(self, model_id: str) -> dict[str, Any]:
        return {
            "id": model_id,
            "type": "model",
            "object": "model",
            "display_name": model_id,
            "created_at": "2025-01-01T00:00:00Z",
            "created": 1735689600,
            "owned_by": "fake-llm",
        }

    async def _models(self, request: Request) -> Response:
        with self._lock:
            self.other_requests.append((request.method, request.url.path))
        names = list(dict.fromkeys([self.model, "claude-sonnet-4-6", "gpt-4o-mini", "deepseek-chat"]))
        data = [self._model_entry(name) for name in names]
        return JSONResponse(
            {"object": "list", "data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}
        )

    async def _model(self, request: Request) -> Response:
        with self._lock:
            self.other_requests.append((request.method, request.url.path))
        return JSONResponse(self._model_entry(str(request.path_params["model_id"])))

    async def _count_tokens(self, request: Request) -> Response:
        with self._lock:
            self.other_requests.append((request.method, request.url.path))
        body = _request_object(await request.body())
        if body is None:
            return _anthropic_error(400, None, "request body is not a JSON object")
        prompt, _ = anthropic_prompt(body, self._memo)
        return JSONResponse({"input_tokens": prompt.total})

    async def _anthropic_messages(self, request: Request) -> Response:
        return await self._model_request(request, "anthropic")

    async def _chat_completions(self, request: Request) -> Response:
        return await self._model_request(request, "openai")

    async def _responses(self, request: Request) -> Response:
        def record_for(raw: bytes, body: dict[str, Any] | None, tokens: int) -> RecordedRequest:
            return self._record(request, "openai", raw, bool(body and body.get("stream")), tokens)

        return await responses_wire.answer(request, record_for, self._next_reply, self._append)

    async def _gemini(self, request: Request) -> Response:
        def record_for(raw: bytes, stream: bool) -> RecordedRequest:
            return self._record(request, "gemini", raw, stream, count_tokens(raw.decode("utf-8", "replace")))

        return await gemini_wire.answer(request, record_for, self._next_reply, self._append, self._note_other)

    def _note_other(self, request: Request) -> None:
        with self._lock:
            self.other_requests.append((request.method, request.url.path))

    def _record(
        self, request: Request, protocol: WireProtocol, raw: bytes, stream: bool, tokens: int
    ) -> RecordedRequest:
        headers = {key.lower(): value for key, value in request.headers.items()}
        path, query = request.url.path, request.url.query
        return RecordedRequest(protocol, path, headers, raw, stream, None, tokens, self.clock(), query=query)

    def _next_reply(self, record: RecordedRequest, body: dict[str, Any]) -> Reply:
        """The next scripted reply, else the responder's."""
        with self._lock:
            reply = self._script.popleft() if self._script else None
        return reply if reply is not None else self._responder_reply(record, body)

    # ---------------------------------------------------------------- model requests

    async def _model_request(self, request: Request, protocol: Protocol) -> Response:
        raw = await request.body()
        body = _request_object(raw)  # this request's own parse: the record parses again only if it is read
        headers = {key.lower(): value for key, value in request.headers.items()}
        if body is None:
            record = RecordedRequest(
                protocol, request.url.path, headers, raw, False, None, 0, self.clock(), query=request.url.query
            )
            self._append(record)
            return _error_response(protocol, Reply.error(400, "request body is not a JSON object"))
        if protocol == "anthropic":
            prompt, breakpoints = anthropic_prompt(body, self._memo)
        else:
            prompt, breakpoints = openai_prompt(body, self._memo), 0
        record = RecordedRequest(
            protocol=protocol,
            path=request.url.path,
            headers=headers,
            raw_body=raw,
            stream=bool(body.get("stream")),
            usage=None,
            prompt_tokens=prompt.total,
            received_at=self.clock(),
            query=request.url.query,
        )
        with self._lock:
            self._seq += 1
            seq = self._seq
            reply = self._automatic_reply(protocol, prompt, breakpoints)
            if reply is None and self._script:
                reply = self._script.popleft()
        if reply is None:
            reply = self._responder_reply(record, body)
        record.reply = reply

        if reply.kind == "stall":
            self._append(record)
            reply = await self._stall(reply)
            return self._answer(protocol, body, prompt, record, reply, seq=seq, appended=True)
        return self._answer(protocol, body, prompt, record, reply, seq=seq, appended=False)

    def _automatic_reply(self, protocol: Protocol, prompt: Prompt, breakpoints: int) -> Reply | None:
        if breakpoints > MAX_CACHE_BREAKPOINTS:
            return Reply.error(
                400,
                f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}.",
                error_type="invalid_request_error",
            )
        if self.context_limit_tokens is not None and prompt.total > self.context_limit_tokens:
            return Reply.prompt_too_long()
        return None

    def _responder_reply(self, record: RecordedRequest, body: dict[str, Any]) -> Reply:
        responder = self.responder
        if responder is None:
            return Reply.text("fake answer: " + self.last_user_text(body)[:200])
        try:
            return responder(record)
        except Exception as exc:
            logger.exception("FakeLLM responder raised")
            return Reply.error(500, f"FakeLLM responder raised {type(exc).__name__}: {exc}")

    async def _stall(self, reply: Reply) -> Reply:
        while reply.kind == "stall":
            with self._lock:
                self._active_stalls += 1
                self.stalled.set()
            try:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + reply.stall_seconds
                release = reply.release
                while not (release is not None and release.is_set()) and not self._stopping.is_set():
                    if loop.time() >= deadline:
                        break
                    await asyncio.sleep(STALL_POLL_S)
            finally:
                with self._lock:
                    self._active_stalls -= 1
                    if self._active_stalls == 0:
                        self.stalled.clear()
            reply = reply.then if reply.then is not None else Reply.text("stalled answer")
        return reply

    def _append(self, record: RecordedRequest) -> None:
        with self._changed:
            self.requests.append(record)
            self._changed.notify_all()

    def _answer(
        self,
        protocol: Protocol,
        body: dict[str, Any],
        prompt: Prompt,
        record: RecordedRequest,
        reply: Reply,
        *,
        seq: int,
        appended: bool,
    ) -> Response:
        response: Response
        if reply.kind == "drop" or (reply.kind == "text" and reply.drop_after_chars is not None and not record.stream):
            response = _DropResponse()
        elif reply.kind == "error":
            response = _error_response(protocol, reply)
        elif reply.kind == "prompt_too_long":
            response = self._prompt_too_long(protocol, prompt, reply)
        else:
            answer = _fit_answer(protocol, reply, body)
            model = str(body.get("model") or self.model)
            with self._lock:
                outcome = self._simulate_cache(protocol, prompt, model, seq)
            if protocol == "anthropic":
                record.usage = outcome.anthropic_usage(prompt.total, answer.output_tokens)
                if record.stream:
                    response = _anthropic_stream(model, answer, record.usage)
                else:
                    response = JSONResponse(_anthropic_message(model, answer, record.usage), headers=_req_id())
            else:
                deepseek = self.cache_rules == "deepseek"
                record.usage = outcome.openai_usage(prompt.total, answer.output_tokens, deepseek_fields=deepseek)
                if record.stream:
                    options = body.get("stream_options")
                    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
                    response = _openai_stream(model, answer, record.usage if include_usage else None)
                else:
                    response = JSONResponse(_openai_completion(model, answer, record.usage), headers=_req_id())
        if not appended:
            self._append(record)
        return response

    def _prompt_too_long(self, protocol: Protocol, prompt: Prompt, reply: Reply) -> Response:
        tokens = prompt.total
        limit = reply.limit_tokens or self.context_limit_tokens or DEFAULT_CONTEXT_LIMIT[protocol]
        limit = max(0, min(limit, tokens - 1))
        if protocol == "anthropic":
            message = f"prompt is too long: {tokens} tokens > {limit} maximum"
            return _error_response(protocol, Reply.error(400, message, error_type="invalid_request_error"))
        message = (
            f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
            f"{tokens} tokens. Please reduce the length of the messages."
        )
        return _openai_error(
            400,
            error_type="invalid_request_error",
            message=message,
            code="context_length_exceeded",
            headers={},
            param="messages",
        )

    def _new_cache(self) -> PromptCache:
        return PromptCache(self.cache_rules, min_cacheable_tokens=self.min_cacheable_tokens, ttl_s=self.cache_ttl_s)

    def _simulate_cache(self, protocol: Protocol, prompt: Prompt, model: str, seq: int) -> CacheOutcome:
        cache = self._cache
        # The settings are plain attributes a test may change between requests; the entries stay.
        cache.rules, cache.ttl_s = self.cache_rules, self.cache_ttl_s
        cache.min_cacheable_tokens = self.min_cacheable_tokens
        return cache.process(prompt, model, protocol=protocol, seq=seq, now=self.clock())


# --------------------------------------------------------------------------------------------- wire helpers


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        return None
    return cast("dict[str, Any]", body) if isinstance(body, dict) else None


_ANY_JSON: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Any)  # pydantic's own JSON parser, no model


def _request_object(raw: bytes) -> dict[str, Any] | None:
    """What _json_object gives, faster: pydantic's parser takes well under half the time of json.loads on a
    long conversation and gives the same values; whatever it rejects (json.loads also accepts lone
    surrogates, a BOM, UTF-16, deeper nesting) goes to json.loads, so the outcome is the same."""
    try:
        body = _ANY_JSON.validate_json(raw)
    except ValueError:
        return _json_object(raw)
    return cast("dict[str, Any]", body) if isinstance(body, dict) else None


def _req_id() -> dict[str, str]:
    request_id = _new_id("req_")
    return {"request-id": request_id, "x-request-id": request_id}


def _anthropic_error(
    status: int, error_type: str | None, message: str, headers: Iterable[tuple[str, str]] = ()
) -> Response:
    request_id = _new_id("req_")
    body = {
        "type": "error",
        "error": {"type": error_type or _ANTHROPIC_ERROR_TYPES.get(status, "api_error"), "message": message},
        "request_id": request_id,
    }
    return JSONResponse(body, status_code=status, headers={"request-id": request_id, **dict(headers)})


def _openai_error(
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


def _error_response(protocol: Protocol, reply: Reply) -> Response:
    message = reply.message or _reason(reply.status)
    if protocol == "anthropic":
        response = _anthropic_error(reply.status, reply.error_type, message, reply.headers)
        if reply.error_code is not None:
            payload = json.loads(bytes(response.body))
            payload["error"]["details"] = {"error_code": reply.error_code}
            return JSONResponse(payload, status_code=reply.status, headers=dict(response.headers))
        return response
    return _openai_error(
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


def _fit_answer(protocol: Protocol, reply: Reply, body: dict[str, Any]) -> _Answer:
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


def _anthropic_message(model: str, answer: _Answer, usage: dict[str, Any]) -> dict[str, Any]:
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


def _anthropic_stream(model: str, answer: _Answer, usage: dict[str, Any]) -> Response:
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
                return _EventStreamResponse(events, _req_id())
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
        return _EventStreamResponse(events, _req_id())
    final_usage = {key: value for key, value in usage.items() if key not in ("cache_creation", "service_tier")}
    delta = {"stop_reason": answer.stop_reason, "stop_sequence": None}
    events.append(_anthropic_event("message_delta", delta=delta, usage=final_usage))
    events.append(_anthropic_event("message_stop"))
    return _EventStreamResponse(events, _req_id())


def _openai_tool_calls(answer: _Answer) -> list[dict[str, Any]]:
    return [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.input)},
        }
        for call_id, call in answer.calls
    ]


def _openai_completion(model: str, answer: _Answer, usage: dict[str, Any]) -> dict[str, Any]:
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


def _openai_stream(model: str, answer: _Answer, usage: dict[str, Any] | None) -> Response:
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
        return _EventStreamResponse(events, _req_id())
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
    return _EventStreamResponse(events, _req_id())


# ------------------------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a FakeLLM with the default responder until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m live_memory.testing.llm_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--rules", choices=["anthropic", "openai", "deepseek", "none"], default="anthropic")
    args = parser.parse_args(argv)
    fake = FakeLLM(cache_rules=cast("CacheRules", args.rules), host=args.host)
    print(f"FakeLLM ({args.rules} cache rules) on http://{args.host}:{args.port}", flush=True)
    print(f"  anthropic base_url: http://{args.host}:{args.port}", flush=True)
    print(f"  openai base_url:    http://{args.host}:{args.port}/v1", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(
            fake.app,
            host=args.host,
            port=args.port,
            http="h11",
            ws="none",
            lifespan="off",
            interface="asgi3",
            log_level="info",
        )


if __name__ == "__main__":
    main()
