"""An in-process ChatProvider that answers from a script and records every request.

For behaviour tests of the engine (compaction, the loop) where the wire format is not the point;
wire-level tests use the HTTP fake provider (`llm_server.py`) through the real SDKs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from live_memory.core.errors import ProviderError
from live_memory.core.messages import ChatRequest, ChatResponse, ProviderInfo
from live_memory.core.records import ToolCall, Usage

Responder = Callable[[ChatRequest], ChatResponse | ProviderError]


def text_response(text: str, *, tool_calls: tuple[ToolCall, ...] = (), usage: Usage | None = None) -> ChatResponse:
    return ChatResponse(
        text=text,
        tool_calls=tool_calls,
        stop_reason="tool_use" if tool_calls else "end_turn",
        usage=usage or Usage(input_tokens=10, output_tokens=5),
        model="scripted-model",
    )


class ScriptedProvider:
    def __init__(self, *replies: ChatResponse | ProviderError, responder: Responder | None = None) -> None:
        self.info = ProviderInfo("scripted", "anthropic", "scripted-model", "http://scripted", True)
        self.script: deque[ChatResponse | ProviderError] = deque(replies)
        self.responder = responder
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if self.script:
            reply = self.script.popleft()
        elif self.responder is not None:
            reply = self.responder(request)
        else:
            reply = text_response("scripted answer")
        if isinstance(reply, ProviderError):
            raise reply
        return reply

    async def aclose(self) -> None:
        return None
