"""The neutral summarizer: folds retired material into the knowledge ledger with one model call,
answered with the ledger's changes (`Ledger.apply_summary`).

It is fed only the material being retired plus the current ledger, never the current or recent
questions, so the ledger cannot drift toward whatever was asked last. Output is capped.

Retired Q&A is folded by continuing the answering conversation where possible (`fold_history`):
the request repeats, byte for byte, the prefix the oldest kept question was sent with (tools,
system, frozen block, the history before it), which the provider has cached, and asks for the
ledger's changes instead of an answer. The material is then read from the cache (at a tenth of the
price on Anthropic) instead of being sent again in full. The kept questions are not in that prefix, so the fold
stays as neutral as a standalone call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from live_memory.constants import CACHE_READ_SHARE, CACHE_TTL_S, MAX_TRANSCRIPT_CHARS, SUMMARY_MAX_TOKENS
from live_memory.core.messages import ChatRequest, Message, TextPart
from live_memory.core.prompts import NEUTRAL_SUMMARY_SYSTEM_PROMPT, fold_request_text, summary_request_text
from live_memory.core.records import Usage
from live_memory.engine.prompt_layout import build_prompt
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.history import Turn, message_text
from live_memory.providers.base import ChatProvider
from live_memory.settings.options import LongCache

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Conversation:
    """How the answering conversation is sent (a fold that repeats it byte for byte reads its cache)."""

    tool_schemas: tuple[Mapping[str, Any], ...]
    long_cache: LongCache = "off"
    lifetime_s: float = CACHE_TTL_S  # how long the provider keeps a prefix after the request that read it
    clock: Callable[[], float] = time.monotonic
    read_share: float = CACHE_READ_SHARE  # a cached input token's price as a share of an uncached one's

    def holds(self, window: ContextWindow, cut: int) -> bool:
        """Whether the provider likely still caches the prompt the question at `cut` was sent with: sent
        after exactly this history, with the window's current frozen block, less than a cache lifetime ago."""
        sent = window.history[cut].sent if cut < len(window.history) else None
        return (
            sent is not None
            and (sent.epoch, sent.position) == (window.epoch, cut)
            and self.clock() - sent.at < self.lifetime_s
        )

    def pays(self, window: ContextWindow, cut: int, material: str) -> bool:
        """Whether reading the whole prompt up to `cut` from the cache costs less than sending the material
        (and the ledger) again: not when the frozen block holds many files, or the cache's discount is small."""
        prefix = window.tokens(window.stable_prefix) + window.tokens(window.frozen_volatile or "")
        prefix += sum(window.tokens(message_text(t.message)) for t in window.history[:cut])
        fold = prefix * self.read_share + window.tokens(window.ledger_for_fold())
        return fold < window.tokens(material) + window.tokens(window.ledger.text_for_summary())


@dataclass(frozen=True)
class Summary:
    changes: str  # the model's changes to the ledger (see `Ledger.apply_summary`)
    usage: Usage
    model: str


class Summarizer:
    def __init__(
        self,
        provider: ChatProvider,
        *,
        model: str | None = None,
        max_tokens: int = SUMMARY_MAX_TOKENS,
        conversation: Conversation | None = None,
    ):
        self.provider = provider
        self.model = model or None
        self.max_tokens = max_tokens
        # A separate summary model has no cache of the answering conversation: it gets standalone calls.
        self.conversation = conversation if self.model is None else None

    async def fold_history(
        self,
        window: ContextWindow,
        cut: int,
        material: str,
        files_read: Sequence[str],
        *,
        cache_key: str | None = None,
    ) -> Summary:
        """The ledger's changes for the history before `cut` (the oldest kept question's turn), by
        continuing the conversation; a standalone call on `material` when there is no cached conversation
        to continue (it would be written again, dearer than the material), when the material is cheaper to
        send than the cached prompt is to read, or when the model did not answer with changes. Raises
        ProviderError."""
        conversation = self.conversation
        if conversation is None or not conversation.holds(window, cut) or not conversation.pays(window, cut, material):
            return await self.summarize(window.ledger.text_for_summary(), material)
        request = self._fold_request(window, window.history[:cut], files_read, conversation, cache_key)
        response = await self.provider.chat(request)
        if response.text.strip() and not response.tool_calls:
            return Summary(response.text.strip(), response.usage, response.model)
        logger.info("the fold answered with tool calls or nothing, not ledger changes: summarizing standalone")
        fallback = await self.summarize(window.ledger.text_for_summary(), material)
        return Summary(fallback.changes, response.usage + fallback.usage, fallback.model)

    def _fold_request(
        self,
        window: ContextWindow,
        retired: Sequence[Turn],
        files_read: Sequence[str],
        conversation: Conversation,
        cache_key: str | None,
    ) -> ChatRequest:
        view = window.clone()  # the prompt as the oldest kept question saw it, without touching the window
        view.history = list(retired)
        view.sent_history_len = 0
        instruction = fold_request_text(window.ledger_for_fold(), self.max_tokens, files_read)
        system, messages = build_prompt(
            view, [Message("user", (TextPart(instruction),))], mark_tail=False, long_cache=conversation.long_cache
        )
        return ChatRequest(
            system=system,
            messages=messages,
            max_tokens=self.max_tokens,
            tools=conversation.tool_schemas,
            cache_key=cache_key,
        )

    async def summarize(self, ledger_text: str, material: str) -> Summary:
        """Raises ProviderError on failure; callers decide whether to shed or keep the material."""
        if len(material) > MAX_TRANSCRIPT_CHARS:
            material = material[:MAX_TRANSCRIPT_CHARS] + "\n[material truncated]"
        request = ChatRequest(
            system=(TextPart(NEUTRAL_SUMMARY_SYSTEM_PROMPT.format(max_tokens=self.max_tokens)),),
            messages=(Message("user", (TextPart(summary_request_text(ledger_text, material)),)),),
            max_tokens=self.max_tokens,
            model=self.model,
        )
        response = await self.provider.chat(request)
        return Summary(response.text.strip(), response.usage, response.model)
