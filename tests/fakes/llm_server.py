"""A scripted fake LLM provider: a real loopback HTTP server speaking the Anthropic Messages API and the
OpenAI Chat Completions API, with a simulation of each provider's prompt caching.

Usage (tests)::

    with FakeLLM(min_cacheable_tokens=64) as fake:
        fake.script(Reply.text("hello"), Reply.tool_call("grep", {"pattern": "x"}))
        client = AsyncAnthropic(base_url=fake.base_url, api_key="test", max_retries=0)
        ...
        assert fake.requests[0].usage["cache_read_input_tokens"] == 0

Usage (by hand)::

    python -m tests.fakes.llm_server --port 8089 [--rules anthropic|openai|deepseek|none] [--host 127.0.0.1]

Endpoints
    ``POST /v1/messages`` (also ``?beta=true``; a ``role: "system"`` message inside ``messages`` is accepted),
    ``POST /v1/messages/count_tokens`` → ``{"input_tokens": n}``, ``POST /v1/chat/completions`` (also
    ``/chat/completions``), ``GET /v1/models`` and ``GET /v1/models/{id}`` (one shape that both SDKs parse).
    Anything else gets a JSON 404.

Replies
    Model requests consume the FIFO filled by :meth:`FakeLLM.script`, then ask :attr:`FakeLLM.responder`,
    then fall back to ``Reply.text("fake answer: " + <first 200 chars of the last user text>)``.
    Two automatic errors do not consume a scripted reply: more than 4 ``cache_control`` breakpoints
    (Anthropic endpoint) and a prompt over ``context_limit_tokens``.

Token counting (``CHARS_PER_TOKEN`` = 4)
    The prompt is an ordered list of blocks; a block counts ``ceil(len(serialization) / 4)`` tokens and the
    prompt total is the sum over its blocks.

    * Anthropic: each tool definition (``json.dumps(tool, sort_keys=True)`` without its ``cache_control``),
      each system text block (a string ``system`` is one block), then every content block of every message
      in order: ``text`` → its text; ``tool_use`` → name + ``json.dumps(input, sort_keys=True)``;
      ``tool_result`` → the text of its content; a string content is one block; any other block type →
      ``json.dumps(block, sort_keys=True)`` without ``cache_control``.
    * OpenAI: each tool (``json.dumps(tool, sort_keys=True)``), then each message as
      ``role + "\\n" + content text`` (+ ``"\\n" + json.dumps(tool_calls, sort_keys=True)`` when present).

Prompt caching (``cache_rules``; applies to the responses of both endpoints)
    The key of a position is a rolling sha256 over the model name and every block up to and including it
    (the block's section/role/type and its serialization; never ``cache_control`` itself, so moving a
    breakpoint does not change any key).

    * ``"anthropic"`` (Anthropic endpoint): only blocks carrying ``cache_control`` are breakpoints (at
      most 4, else 400 ``invalid_request_error``; a top-level ``cache_control`` adds one on the last block
      unless that block already has one).
      Read: for each breakpoint, from the last backwards, check that position and walk back one block at a
      time, at most 20 positions including the breakpoint itself, for an entry written by an earlier request
      and not expired; the read is the largest cumulative prefix among those hits, and the hit's TTL is
      refreshed.
      Write: every breakpoint whose cumulative prefix is at least the minimum cacheable length is
      (re)written; ``cache_creation_input_tokens`` = tokens from the read point up to the last written
      breakpoint (0 if none lies beyond the read); ``input_tokens`` = total - read - creation.
      TTL: ``cache_ttl_s`` (default 300 s), or 3600 s for ``"ttl": "1h"`` breakpoints, whose share of the
      creation is reported in ``ephemeral_1h_input_tokens``.
      Minimum, by the request's model: haiku-4-5 / opus-4-5 / opus-4-6 → 4096, haiku-3-5 / opus-4-7 → 2048,
      anything else → 1024 (``min_cacheable_tokens`` overrides).
      On the OpenAI endpoint these rules report ``cached_tokens`` 0.
    * ``"openai"``: every prompt's prefix keys are remembered (TTL ``cache_ttl_s``, refreshed on reuse);
      cached = the longest whole-block prefix matching an earlier prompt, rounded down to a multiple of 128,
      and 0 unless the prompt and the match are both >= 1024 tokens (``min_cacheable_tokens`` overrides 1024).
    * ``"deepseek"``: the same, rounded down to 64-token units, with no minimum. On the OpenAI endpoint the
      usage carries ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens`` instead of
      ``prompt_tokens_details``.
    * ``"none"``: nothing is cached.

    With ``"openai"`` or ``"deepseek"`` rules the Anthropic endpoint reports the hit as
    ``cache_read_input_tokens`` (creation always 0).

Cost per request
    A conversation resends its whole prefix with every request. The fake remembers (bounded, see ``_Memo``)
    each block's identity and token count, each step of the key chain, each tool's serialization and the
    latest request's messages with the blocks they made (see ``_Resent``), so a request costs little more
    than parsing its JSON and handling its new messages; the figures are those a fake recomputing everything
    would give (``memo_limit=0`` does that).

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
import copy
import hashlib
import http
import itertools
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

import pydantic_core
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.fakes.quick_server import QuickServer

__all__ = [
    "CHARS_PER_TOKEN",
    "CacheRules",
    "FakeLLM",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "count_tokens",
]

CHARS_PER_TOKEN = 4
MAX_CACHE_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
ONE_HOUR_TTL_S = 3600.0
OPENAI_CACHE_MIN_TOKENS = 1024
OPENAI_CACHE_STEP_TOKENS = 128
DEEPSEEK_CACHE_STEP_TOKENS = 64
DEFAULT_CONTEXT_LIMIT = {"anthropic": 200_000, "openai": 128_000}
STALL_POLL_S = 0.01
MEMO_LIMIT = 200_000  # blocks / chain steps the fake remembers (see _Memo)
MEMO_LIMIT_CHARS = 64_000_000  # and the characters of those blocks
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
STOP_GRACE_S = 3.0  # in-flight responses get this long at a stop; stalled ones are then cut

CacheRules = Literal["anthropic", "openai", "deepseek", "none"]
Protocol = Literal["anthropic", "openai"]
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


HINT_PREFIX = "## Budgets for this question"  # Live Memory's per-question hint (see last_user_text)

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

    protocol: Protocol
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


# --------------------------------------------------------------------------------------------------- prompts


def count_tokens(text: str) -> int:
    """The fake's token count of one serialized block."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


_SORTED_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)  # what json.dumps would build per call


def _dumps(value: object) -> str:
    return _SORTED_JSON.encode(value)


def _without_cache_control(value: object) -> object:
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if key != "cache_control"}
    return value


@dataclass(frozen=True, slots=True)
class _Block:
    identity: str
    tokens: int


@dataclass(frozen=True, slots=True)
class _Breakpoint:
    index: int
    one_hour: bool


class _Memo:
    """What the fake would otherwise recompute for every block of a conversation's unchanged prefix on every
    request: each block's identity and token count, and each step of the cache-key chain (sha256 of the
    previous key and the block). Both are functions of content alone, so a hit gives exactly what the
    computation would; a request then costs little more than its new blocks. Bounded: cleared when full."""

    def __init__(self, limit: int = MEMO_LIMIT, limit_chars: int = MEMO_LIMIT_CHARS) -> None:
        self.limit = limit
        self.limit_chars = limit_chars
        self.chars = 0
        self.blocks: dict[tuple[str, str], _Block] = {}
        self.chain: dict[tuple[bytes, str], bytes] = {}
        # (protocol, index) -> (tool, its serialization, whether == tells that tool from others: see _plain)
        self.tools: dict[tuple[str, int], tuple[object, str, bool]] = {}
        self.resent: dict[str, _Resent] = {}  # by protocol: see _Resent
        self.latest_keys: tuple[str, list[_Block], list[bytes]] | None = None  # model, blocks, their keys

    def block(self, kind: str, serialized: str) -> _Block:
        key = (kind, serialized)
        block = self.blocks.get(key)
        if block is None:
            if len(self.blocks) >= self.limit or self.chars >= self.limit_chars:
                self.blocks.clear()
                self.chain.clear()
                self.chars = 0
            block = self.blocks[key] = _new_block(kind, serialized)
            self.chars += len(serialized)
        return block

    def tool(self, protocol: str, index: int, tool: object, serialize: Callable[[object], str]) -> str:
        """A tool definition's serialization, reused while the tool at that index stays the same JSON (a
        comparison is much cheaper than a sorted dump)."""
        seen = self.tools.get((protocol, index))
        if seen is not None and seen[0] == tool and (seen[2] or _same_json(seen[0], tool)):
            return seen[1]
        serialized = serialize(tool)
        self.tools[(protocol, index)] = (copy.deepcopy(tool), serialized, _plain(tool))
        return serialized

    def step(self, digest: bytes, identity: str) -> bytes:
        key = (digest, identity)
        following = self.chain.get(key)
        if following is None:
            if len(self.chain) >= self.limit:
                self.chain.clear()
            following = self.chain[key] = _chain_step(digest, identity)
        return following


_NO_MEMO: dict[Any, Any] = {}  # the lookup table of a prompt without a memo: always a miss


def _new_block(kind: str, serialized: str) -> _Block:
    return _Block(identity=f"{kind}\x1f{serialized}", tokens=count_tokens(serialized))


def _chain_step(digest: bytes, identity: str) -> bytes:
    return hashlib.sha256(digest + identity.encode()).digest()


@dataclass
class _Prompt:
    blocks: list[_Block] = field(default_factory=list)  # only ever appended to (see running_totals)
    breakpoints: list[_Breakpoint] = field(default_factory=list)
    memo: _Memo | None = None  # optional: reuse the work done for blocks seen before
    _sums: list[int] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def total(self) -> int:
        sums = self.running_totals()
        return sums[-1] if sums else 0

    def add(self, kind: str, serialized: str, cache_control: object = None) -> None:
        memo = self.memo
        self.blocks.append(_new_block(kind, serialized) if memo is None else memo.block(kind, serialized))
        if isinstance(cache_control, dict):
            one_hour = cache_control.get("ttl") == "1h"
            self.breakpoints.append(_Breakpoint(len(self.blocks) - 1, one_hour))

    def running_totals(self) -> list[int]:
        """cumulative(), computed once per length of the prompt (a request asks for the total several times);
        the caller must not change it."""
        if len(self._sums) != len(self.blocks):
            self._sums = list(itertools.accumulate([block.tokens for block in self.blocks]))
        return self._sums

    def cumulative(self) -> list[int]:
        return list(self.running_totals())

    def keys(self, model: str) -> list[bytes]:
        memo = self.memo
        if memo is None:
            digest = hashlib.sha256(model.encode()).digest()
            keys: list[bytes] = []
            for block in self.blocks:
                digest = _chain_step(digest, block.identity)
                keys.append(digest)
            return keys
        # The keys of the blocks this prompt shares with the latest one are that prompt's (memo blocks are
        # shared objects: the comparison is mostly identity checks); the chain continues from there.
        start, keys = 0, []
        latest = memo.latest_keys
        if latest is not None and latest[0] == model:
            start = _common_prefix(self.blocks, latest[1])
            keys = latest[2][:start]
        digest = keys[-1] if keys else hashlib.sha256(model.encode()).digest()
        known, step = memo.chain, memo.step
        append = keys.append
        for position in range(start, len(self.blocks)):
            identity = self.blocks[position].identity
            following = known.get((digest, identity))  # a hit skips the call
            digest = step(digest, identity) if following is None else following
            append(digest)
        memo.latest_keys = (model, list(self.blocks), keys)
        return keys


def _content_text(content: object) -> str:
    """Text of a message content (string or list of blocks); tool results contribute their content text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if part.get("type") == "text" or ("text" in part and "type" not in part):
                    parts.append(str(part.get("text", "")))
                elif part.get("type") == "tool_result":
                    parts.append(_content_text(part.get("content")))
                else:
                    parts.append(_dumps(_without_cache_control(part)))
        return "\n".join(parts)
    return _dumps(content)


def _anthropic_block(block: object) -> tuple[str, str]:
    """(kind, serialization) of one Anthropic content block."""
    if not isinstance(block, dict):
        return "raw", _dumps(block)
    block_type = str(block.get("type", ""))
    if block_type == "text":
        return block_type, str(block.get("text", ""))
    if block_type == "tool_use":
        return block_type, str(block.get("name", "")) + _dumps(block.get("input", {}))
    if block_type == "tool_result":
        return block_type, _content_text(block.get("content"))
    return block_type, _dumps(_without_cache_control(block))


def _anthropic_tool(tool: object) -> str:
    return _dumps(_without_cache_control(tool))


def _tool_serialization(protocol: Protocol, index: int, tool: object, memo: _Memo | None) -> str:
    serialize = _anthropic_tool if protocol == "anthropic" else _dumps
    return serialize(tool) if memo is None else memo.tool(protocol, index, tool, serialize)


def _anthropic_prompt(body: dict[str, Any], memo: _Memo | None = None) -> tuple[_Prompt, int]:
    """The prompt's blocks and breakpoints, and the number of cache_control breakpoints requested."""
    prompt = _Prompt(memo=memo)
    for index, tool in enumerate(body.get("tools") or []):
        cache_control = tool.get("cache_control") if isinstance(tool, dict) else None
        prompt.add("tool", _tool_serialization("anthropic", index, tool, memo), cache_control)
    system = body.get("system")
    if isinstance(system, str):
        if system:
            prompt.add("system:text", system)  # the same block as [{"type": "text", "text": system}]
    elif isinstance(system, list):
        for block in system:
            kind, serialized = _anthropic_block(block)
            cache_control = block.get("cache_control") if isinstance(block, dict) else None
            prompt.add(f"system:{kind}", serialized, cache_control)
    messages = _message_list(body)
    blocks, breakpoints = prompt.blocks, prompt.breakpoints
    offset, start, ends, inexact = _reuse_resent(prompt, "anthropic", messages)
    # The messages are most of a long conversation: prompt.add inlined, with the memo's hits looked up here.
    new_block = _new_block if memo is None else memo.block
    known = _NO_MEMO if memo is None else memo.blocks
    for position in range(start, len(messages)):
        message = messages[position]
        if isinstance(message, dict):
            role = message.get("role", "")
            exact = isinstance(role, str)  # see _Resent
            role = str(role)
            content = message.get("content")
            if not isinstance(content, list):
                exact = exact and (content is None or isinstance(content, str))
                prompt.add(f"{role}:text", _content_text(content))
            else:
                text_kind = role + ":text"
                for part in content:
                    if not isinstance(part, dict):
                        kind, serialized = _anthropic_block(part)
                        kind = f"{role}:{kind}"
                        cache_control = None
                        exact = exact and _plain(part)
                    else:
                        text = part.get("text") if part.get("type") == "text" else None
                        if isinstance(text, str):  # the common case, as _anthropic_block would give it
                            kind, serialized = text_kind, text
                        else:
                            kind, serialized = _anthropic_block(part)
                            kind = f"{role}:{kind}"
                            exact = exact and _plain(part)
                        cache_control = part.get("cache_control")
                    found = known.get((kind, serialized))
                    blocks.append(new_block(kind, serialized) if found is None else found)
                    if isinstance(cache_control, dict):
                        breakpoints.append(_Breakpoint(len(blocks) - 1, cache_control.get("ttl") == "1h"))
            if not exact:
                inexact.append(position)
        ends.append(len(blocks) - offset)
    _remember_resent(prompt, "anthropic", messages, offset, ends, inexact)
    requested = len(prompt.breakpoints)
    automatic = body.get("cache_control")
    if isinstance(automatic, dict) and prompt.blocks:
        last = len(prompt.blocks) - 1
        if all(point.index != last for point in prompt.breakpoints):
            prompt.breakpoints.append(_Breakpoint(last, automatic.get("ttl") == "1h"))
            requested += 1
    return prompt, requested


def _openai_prompt(body: dict[str, Any], memo: _Memo | None = None) -> _Prompt:
    prompt = _Prompt(memo=memo)
    for index, tool in enumerate(body.get("tools") or []):
        prompt.add("tool", _tool_serialization("openai", index, tool, memo))
    messages = _message_list(body)
    blocks = prompt.blocks
    offset, start, ends, inexact = _reuse_resent(prompt, "openai", messages)
    new_block = _new_block if memo is None else memo.block
    known = _NO_MEMO if memo is None else memo.blocks
    for position in range(start, len(messages)):
        message = messages[position]
        if isinstance(message, dict):
            role = message.get("role", "")
            content = message.get("content")
            tool_calls = message.get("tool_calls")
            if isinstance(content, str):
                text, exact = content, isinstance(role, str)
            else:
                text, exact = _content_text(content), isinstance(role, str) and _plain(content)
            serialized = f"{role}\n{text}"
            if tool_calls:
                serialized += "\n" + _dumps(tool_calls)
                exact = exact and _plain(tool_calls)
            found = known.get(("message", serialized))
            blocks.append(new_block("message", serialized) if found is None else found)
            if not exact:
                inexact.append(position)
        ends.append(len(blocks) - offset)
    _remember_resent(prompt, "openai", messages, offset, ends, inexact)
    return prompt


def _message_list(body: dict[str, Any]) -> list[object]:
    messages = body.get("messages") or []
    # Anything else is iterated as it always was (a non-iterable raises the same TypeError).
    return messages if isinstance(messages, list) else list(messages)


# A conversation resends its messages with every request. The memo keeps the latest request's messages (per
# protocol) with the blocks they made; a request whose leading messages equal those reuses their blocks,
# found by comparing list slices (in C) instead of walking every block in Python.


@dataclass
class _Resent:
    """The messages of the latest request of one protocol, and what they made. Equal messages make the same
    blocks, except that == also matches 1, 1.0 and true (and 0.0 with -0.0), which serialize differently:
    a message holding a number or boolean where its blocks come from is listed in ``inexact`` and reused
    only when it is the same in type too (:func:`_same_json`)."""

    messages: list[object]
    ends: list[int]  # how many blocks messages[: i + 1] made
    blocks: list[_Block]  # the blocks the messages made
    points: list[_Breakpoint]  # the breakpoints among them (indices into blocks)
    inexact: list[int]  # ascending message indices


def _reuse_resent(prompt: _Prompt, protocol: str, messages: list[object]) -> tuple[int, int, list[int], list[int]]:
    """Append the blocks (and breakpoints) of the messages this request shares with the memo's latest one;
    returns the offset of the messages' first block, how many messages were reused, and their ends and
    inexact lists, to be continued by the caller."""
    offset = len(prompt.blocks)
    resent = None if prompt.memo is None else prompt.memo.resent.get(protocol)
    if resent is None:
        return offset, 0, [], []
    start = _common_prefix(messages, resent.messages)
    for index in resent.inexact:
        if index >= start:
            break
        if not _same_json(messages[index], resent.messages[index]):
            start = index
            break
    if start == 0:
        return offset, 0, [], []
    made = resent.ends[start - 1]
    prompt.blocks += resent.blocks[:made]
    prompt.breakpoints += [_Breakpoint(offset + p.index, p.one_hour) for p in resent.points if p.index < made]
    return offset, start, resent.ends[:start], [index for index in resent.inexact if index < start]


def _remember_resent(
    prompt: _Prompt, protocol: str, messages: list[object], offset: int, ends: list[int], inexact: list[int]
) -> None:
    if prompt.memo is None:
        return
    points = [_Breakpoint(p.index - offset, p.one_hour) for p in prompt.breakpoints if p.index >= offset]
    prompt.memo.resent[protocol] = _Resent(messages, ends, prompt.blocks[offset:], points, inexact)


def _common_prefix(new: Sequence[object], old: Sequence[object]) -> int:
    """How many leading items two lists share (==): a bisection comparing slices, each comparison in C."""
    size = min(len(new), len(old))
    if new[:size] == old[:size]:
        return size
    low, high = 0, size  # new[:low] == old[:low], new[:high] != old[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if new[low:middle] == old[low:middle]:
            low = middle
        else:
            high = middle
    return low


def _plain(value: object) -> bool:
    """Whether a JSON value holds no number or boolean (== then implies the same JSON, up to key order)."""
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):
        return all(_plain(item) for item in value.values())
    return False


def _same_json(a: object, b: object) -> bool:
    """Equality that also tells 1, 1.0 and true apart (and 0.0 from -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(cast("list[object]", b)) and all(map(_same_json, a, cast("list[object]", b)))
    if isinstance(a, dict):
        other = cast("dict[str, object]", b)
        return a.keys() == other.keys() and all(_same_json(item, other[key]) for key, item in a.items())
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def _default_min_cacheable(model: str) -> int:
    name = model.lower()
    if any(tag in name for tag in ("haiku-4-5", "haiku-4.5", "opus-4-5", "opus-4.5", "opus-4-6", "opus-4.6")):
        return 4096
    if any(tag in name for tag in ("haiku-3-5", "haiku-3.5", "opus-4-7", "opus-4.7")):
        return 2048
    return 1024


# ----------------------------------------------------------------------------------------------------- cache


@dataclass
class _Entry:
    expires_at: float
    ttl: float
    request_seq: int


@dataclass(frozen=True)
class _CacheOutcome:
    read: int = 0
    creation_5m: int = 0
    creation_1h: int = 0

    @property
    def creation(self) -> int:
        return self.creation_5m + self.creation_1h


class _AnthropicCache:
    def __init__(self) -> None:
        self.entries: dict[bytes, _Entry] = {}
        self._earliest = math.inf  # no entry expires before this (a lower bound): sweep only once it passes

    def _sweep(self, now: float) -> None:
        """Forget the entries expired at `now` (skipped while none can be: each request would otherwise pay
        for every entry of the run)."""
        if now < self._earliest:
            return
        self.entries = {key: entry for key, entry in self.entries.items() if entry.expires_at > now}
        self._earliest = min((entry.expires_at for entry in self.entries.values()), default=math.inf)

    def process(
        self, prompt: _Prompt, model: str, *, seq: int, now: float, min_tokens: int, ttl_s: float
    ) -> _CacheOutcome:
        self._sweep(now)
        if not prompt.breakpoints:
            return _CacheOutcome()
        keys = prompt.keys(model)
        cumulative = prompt.running_totals()
        read, hit = 0, None
        for point in sorted(prompt.breakpoints, key=lambda p: p.index, reverse=True):
            for position in range(point.index, max(point.index - LOOKBACK_BLOCKS, -1), -1):
                entry = self.entries.get(keys[position])
                if entry is not None and entry.request_seq < seq:
                    if cumulative[position] > read:
                        read, hit = cumulative[position], entry
                    break
        if hit is not None:
            hit.expires_at = now + hit.ttl
        creation_5m = creation_1h = 0
        covered = read
        for point in sorted(prompt.breakpoints, key=lambda p: p.index):
            prefix = cumulative[point.index]
            if prefix < min_tokens:
                continue
            ttl = ONE_HOUR_TTL_S if point.one_hour else ttl_s
            old = self.entries.get(keys[point.index])
            expires_at = max(now + ttl, old.expires_at if old else 0.0)
            self.entries[keys[point.index]] = _Entry(expires_at, max(ttl, old.ttl if old else 0.0), seq)
            self._earliest = min(self._earliest, expires_at)
            if prefix > covered:
                if point.one_hour:
                    creation_1h += prefix - covered
                else:
                    creation_5m += prefix - covered
                covered = prefix
        return _CacheOutcome(read=read, creation_5m=creation_5m, creation_1h=creation_1h)


class _PrefixCache:
    """Automatic prefix caching (OpenAI / DeepSeek): remembers every prefix of earlier prompts."""

    def __init__(self) -> None:
        self.expiry: dict[bytes, float] = {}
        self._earliest = math.inf  # as in _AnthropicCache

    def process(self, prompt: _Prompt, model: str, *, now: float, ttl_s: float) -> int:
        if now >= self._earliest:
            self.expiry = {key: expires for key, expires in self.expiry.items() if expires > now}
            self._earliest = min(self.expiry.values(), default=math.inf)
        keys = prompt.keys(model)
        cumulative = prompt.running_totals()
        matched = 0
        for position in range(len(keys) - 1, -1, -1):
            if keys[position] in self.expiry:
                matched = cumulative[position]
                break
        expires = now + ttl_s
        self.expiry.update(dict.fromkeys(keys, expires))
        if keys:
            self._earliest = min(self._earliest, expires)
        return matched


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
        cache_ttl_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        host: str = "127.0.0.1",
        memo_limit: int = MEMO_LIMIT,
    ) -> None:
        if cache_rules not in ("anthropic", "openai", "deepseek", "none"):
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
        self._anthropic_cache = _AnthropicCache()
        self._prefix_cache = _PrefixCache()
        # Content-determined work, kept across reset_cache; memo_limit=0 recomputes every block each time.
        self._memo = _Memo(memo_limit) if memo_limit > 0 else None
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
            self._anthropic_cache = _AnthropicCache()
            self._prefix_cache = _PrefixCache()

    @staticmethod
    def last_user_text(body: dict[str, Any]) -> str:
        """Text of the last user message of either protocol (tool_result blocks give their content text).

        Live Memory sends its per-question hint as a user message of its own on the OpenAI protocol; a
        message holding only that hint is skipped, so both protocols yield the question or tool output.
        """
        for message in reversed(body.get("messages") or []):
            if isinstance(message, dict) and message.get("role") == "user":
                text = _content_text(message.get("content"))
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
        prompt, _ = _anthropic_prompt(body, self._memo)
        return JSONResponse({"input_tokens": prompt.total})

    async def _anthropic_messages(self, request: Request) -> Response:
        return await self._model_request(request, "anthropic")

    async def _chat_completions(self, request: Request) -> Response:
        return await self._model_request(request, "openai")

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
            prompt, breakpoints = _anthropic_prompt(body, self._memo)
        else:
            prompt, breakpoints = _openai_prompt(body, self._memo), 0
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

    def _automatic_reply(self, protocol: Protocol, prompt: _Prompt, breakpoints: int) -> Reply | None:
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
        prompt: _Prompt,
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
                record.usage = _anthropic_usage(prompt.total, outcome, answer.output_tokens)
                if record.stream:
                    response = _anthropic_stream(model, answer, record.usage)
                else:
                    response = JSONResponse(_anthropic_message(model, answer, record.usage), headers=_req_id())
            else:
                record.usage = self._openai_usage(prompt.total, outcome, answer.output_tokens)
                if record.stream:
                    options = body.get("stream_options")
                    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
                    response = _openai_stream(model, answer, record.usage if include_usage else None)
                else:
                    response = JSONResponse(_openai_completion(model, answer, record.usage), headers=_req_id())
        if not appended:
            self._append(record)
        return response

    def _prompt_too_long(self, protocol: Protocol, prompt: _Prompt, reply: Reply) -> Response:
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

    def _min_tokens(self, default: int) -> int:
        return self.min_cacheable_tokens if self.min_cacheable_tokens is not None else default

    def _simulate_cache(self, protocol: Protocol, prompt: _Prompt, model: str, seq: int) -> _CacheOutcome:
        now = self.clock()
        rules = self.cache_rules
        if rules == "anthropic":
            if protocol != "anthropic":
                return _CacheOutcome()
            return self._anthropic_cache.process(
                prompt,
                model,
                seq=seq,
                now=now,
                min_tokens=self._min_tokens(_default_min_cacheable(model)),
                ttl_s=self.cache_ttl_s,
            )
        if rules == "none":
            return _CacheOutcome()
        matched = self._prefix_cache.process(prompt, model, now=now, ttl_s=self.cache_ttl_s)
        if rules == "openai":
            minimum = self._min_tokens(OPENAI_CACHE_MIN_TOKENS)
            cached = matched // OPENAI_CACHE_STEP_TOKENS * OPENAI_CACHE_STEP_TOKENS
            if prompt.total < minimum or cached < minimum:
                cached = 0
        else:
            cached = matched // DEEPSEEK_CACHE_STEP_TOKENS * DEEPSEEK_CACHE_STEP_TOKENS
            if cached < self._min_tokens(0):
                cached = 0
        return _CacheOutcome(read=cached)

    def _openai_usage(self, total: int, outcome: _CacheOutcome, output_tokens: int) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": total,
            "completion_tokens": output_tokens,
            "total_tokens": total + output_tokens,
        }
        if self.cache_rules == "deepseek":
            usage["prompt_cache_hit_tokens"] = outcome.read
            usage["prompt_cache_miss_tokens"] = total - outcome.read
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": outcome.read}
        return usage


# --------------------------------------------------------------------------------------------- wire helpers


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        return None
    return cast("dict[str, Any]", body) if isinstance(body, dict) else None


def _request_object(raw: bytes) -> dict[str, Any] | None:
    """What _json_object gives, faster: pydantic's parser takes well under half the time of json.loads on a
    long conversation and gives the same values; whatever it rejects (json.loads also accepts lone
    surrogates, a BOM, UTF-16, deeper nesting) goes to json.loads, so the outcome is the same."""
    try:
        body = pydantic_core.from_json(raw)
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
        produced = text + "".join(call.name + _dumps(call.input) for _, call in calls)
        output_tokens = count_tokens(produced)
    return _Answer(text, calls, stop, output_tokens, reply.drop_after_chars)


def _anthropic_usage(total: int, outcome: _CacheOutcome, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": total - outcome.read - outcome.creation,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": outcome.creation,
        "cache_read_input_tokens": outcome.read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": outcome.creation_5m,
            "ephemeral_1h_input_tokens": outcome.creation_1h,
        },
        "service_tier": "standard",
    }


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
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.llm_server", description=__doc__.split("\n")[0])
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
