"""The neutral summarizer: folds retired material into the knowledge ledger with one model call,
answered with the ledger's changes (`Ledger.apply_summary`).

It is fed only the material being retired plus the current ledger, never the current or recent
questions, so the ledger cannot drift toward whatever was asked last. Output is capped.
"""

from __future__ import annotations

from dataclasses import dataclass

from live_memory.constants import MAX_TRANSCRIPT_CHARS, SUMMARY_MAX_TOKENS
from live_memory.prompts import NEUTRAL_SUMMARY_SYSTEM_PROMPT, summary_request_text
from live_memory.providers.base import ChatProvider, ChatRequest, Message, TextPart
from live_memory.records import Usage


@dataclass(frozen=True)
class Summary:
    changes: str  # the model's changes to the ledger (see `Ledger.apply_summary`)
    usage: Usage
    model: str


class Summarizer:
    def __init__(self, provider: ChatProvider, *, model: str | None = None, max_tokens: int = SUMMARY_MAX_TOKENS):
        self.provider = provider
        self.model = model or None
        self.max_tokens = max_tokens

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
