"""The messages the engine and the providers exchange: a ChatRequest of neutral messages and parts, a
ChatResponse, and the ChatProvider contract every wire adapter (`providers/`) implements.

A part marked `cache=True` ends a cacheable prefix (an Anthropic `cache_control` breakpoint); `long_cache=True`
asks for the provider's longer cache lifetime there (Anthropic's 1 hour). Providers with implicit prefix
caching ignore both flags, which is harmless because the engine keeps the same byte order for every provider.
Nothing here knows a wire format or imports an SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from live_memory.core.records import ToolCall, Usage


@dataclass(frozen=True, kw_only=True)
class _Breakpoint:
    """Any part may end a cached prefix: `cache` marks a breakpoint, `long_cache` asks for the 1-hour one."""

    cache: bool = False
    long_cache: bool = False


@dataclass(frozen=True)
class TextPart(_Breakpoint):
    text: str


@dataclass(frozen=True)
class ToolUsePart(_Breakpoint):
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class ToolResultPart(_Breakpoint):
    tool_use_id: str
    content: str
    is_error: bool = False


Part = TextPart | ToolUsePart | ToolResultPart


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


@dataclass(frozen=True)
class ChatRequest:
    system: tuple[TextPart, ...]
    messages: tuple[Message, ...]
    max_tokens: int
    tools: tuple[Mapping[str, Any], ...] = ()
    model: str | None = None  # overrides the provider's model (e.g. a separate summary model)
    cache_key: str | None = None  # stable per workspace: sticky routing on implicit-cache providers


@dataclass(frozen=True)
class ChatResponse:
    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str
    usage: Usage
    model: str

    def as_message(self) -> Message:
        """The assistant turn exactly as it must be replayed to the provider."""
        parts: list[Part] = []
        if self.text:
            parts.append(TextPart(self.text))
        parts.extend(ToolUsePart(c.id, c.name, c.arguments) for c in self.tool_calls)
        return Message("assistant", tuple(parts) or (TextPart("(no answer)"),))


@dataclass(frozen=True)
class ProviderInfo:
    """What the rest of the service may know about the configured endpoint."""

    name: str
    protocol: Literal["anthropic", "openai"]
    model: str
    base_url: str
    explicit_cache_control: bool
    subscription: bool = False  # billed against a subscription, not metered
    prewarm_with_zero_tokens: bool = False  # a max_tokens=0 request writes the cache (Anthropic pre-warming)
    routes_by_cache_key: bool = False  # send the workspace id as `prompt_cache_key` (OpenAI)
