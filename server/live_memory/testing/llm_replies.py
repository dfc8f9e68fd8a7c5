"""The fake model endpoint's script and records (llm_server.py): a scripted `Reply` (text, tool calls, an error,
a stall, a dropped connection) with its `ToolCall`s, and each `RecordedRequest` as it arrived."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import pydantic

from live_memory.providers.profiles import Protocol
from live_memory.testing.prompt_blocks import (
    count_tokens,
    sorted_json,
)

# The service's protocols, and the wires only other agents' CLIs speak (their modules, below).
WireProtocol = Protocol | Literal["gemini"]
ReplyKind = Literal["text", "error", "prompt_too_long", "stall", "drop"]


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


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        return None
    return cast("dict[str, Any]", body) if isinstance(body, dict) else None


_ANY_JSON: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Any)  # pydantic's own JSON parser, no model


def request_object(raw: bytes) -> dict[str, Any] | None:
    """What _json_object gives, faster: pydantic's parser takes well under half the time of json.loads on a
    long conversation and gives the same values; whatever it rejects (json.loads also accepts lone
    surrogates, a BOM, UTF-16, deeper nesting) goes to json.loads, so the outcome is the same."""
    try:
        body = _ANY_JSON.validate_json(raw)
    except ValueError:
        return _json_object(raw)
    return cast("dict[str, Any]", body) if isinstance(body, dict) else None
