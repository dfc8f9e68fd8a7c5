"""The neutral request both wire adapters are tested with: one tool, a long cacheable system prompt, a
volatile system block and a question (with an optional transcript after it)."""

from __future__ import annotations

from typing import Any

from live_memory.core.messages import ChatRequest, Message, TextPart

TOOL: dict[str, Any] = {
    "name": "Grep",
    "description": "search",
    "input_schema": {
        "type": "object",
        "properties": {"pattern": {"type": "string"}},
        "required": ["pattern"],
    },
}
STABLE = "You are a test system prompt. " * 60


def request(question: str = "where?", *, transcript: tuple[Message, ...] = ()) -> ChatRequest:
    return ChatRequest(
        system=(TextPart(STABLE, cache=True), TextPart("volatile block", cache=True)),
        messages=(Message("user", (TextPart(question),)), *transcript),
        max_tokens=512,
        tools=(TOOL,),
        cache_key="ws1",
    )
