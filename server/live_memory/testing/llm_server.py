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
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from live_memory.providers.profiles import EXPLICIT_CACHE, Protocol
from live_memory.testing import gemini_wire, responses_wire
from live_memory.testing.llm_replies import (
    RecordedRequest,
    Reply,
    ToolCall,
    WireProtocol,
    request_object,
)
from live_memory.testing.llm_wire import (
    DropResponse,
    RawChannels,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    error_response,
    fit_answer,
    openai_completion,
    openai_error,
    openai_stream,
    req_id,
)
from live_memory.testing.prompt_blocks import (
    CHARS_PER_TOKEN,
    MEMO_LIMIT,
    Memo,
    Prompt,
    anthropic_prompt,
    content_text,
    count_tokens,
    openai_prompt,
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
HINT_PREFIX = "## Budgets"  # Live Memory's per-question hint (see last_user_text)
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
STOP_GRACE_S = 3.0  # in-flight responses get this long at a stop; stalled ones are then cut

logger = logging.getLogger(__name__)


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
        self.app: ASGIApp = RawChannels(self._build_app())

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
        return anthropic_error(404, None, f"FakeLLM has no route {request.method} {request.url.path}")

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
        body = request_object(await request.body())
        if body is None:
            return anthropic_error(400, None, "request body is not a JSON object")
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
        body = request_object(raw)  # this request's own parse: the record parses again only if it is read
        headers = {key.lower(): value for key, value in request.headers.items()}
        if body is None:
            record = RecordedRequest(
                protocol, request.url.path, headers, raw, False, None, 0, self.clock(), query=request.url.query
            )
            self._append(record)
            return error_response(protocol, Reply.error(400, "request body is not a JSON object"))
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
            response = DropResponse()
        elif reply.kind == "error":
            response = error_response(protocol, reply)
        elif reply.kind == "prompt_too_long":
            response = self._prompt_too_long(protocol, prompt, reply)
        else:
            answer = fit_answer(protocol, reply, body)
            model = str(body.get("model") or self.model)
            with self._lock:
                outcome = self._simulate_cache(protocol, prompt, model, seq)
            if protocol == "anthropic":
                record.usage = outcome.anthropic_usage(prompt.total, answer.output_tokens)
                if record.stream:
                    response = anthropic_stream(model, answer, record.usage)
                else:
                    response = JSONResponse(anthropic_message(model, answer, record.usage), headers=req_id())
            else:
                deepseek = self.cache_rules == "deepseek"
                record.usage = outcome.openai_usage(prompt.total, answer.output_tokens, deepseek_fields=deepseek)
                if record.stream:
                    options = body.get("stream_options")
                    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
                    response = openai_stream(model, answer, record.usage if include_usage else None)
                else:
                    response = JSONResponse(openai_completion(model, answer, record.usage), headers=req_id())
        if not appended:
            self._append(record)
        return response

    def _prompt_too_long(self, protocol: Protocol, prompt: Prompt, reply: Reply) -> Response:
        tokens = prompt.total
        limit = reply.limit_tokens or self.context_limit_tokens or DEFAULT_CONTEXT_LIMIT[protocol]
        limit = max(0, min(limit, tokens - 1))
        if protocol == "anthropic":
            message = f"prompt is too long: {tokens} tokens > {limit} maximum"
            return error_response(protocol, Reply.error(400, message, error_type="invalid_request_error"))
        message = (
            f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
            f"{tokens} tokens. Please reduce the length of the messages."
        )
        return openai_error(
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
