"""Questions simulated on a bare ContextWindow (no provider, no server), for layout and window tests."""

from __future__ import annotations

import hashlib

from live_memory.constants import LONG_CACHE
from live_memory.core.messages import Message, TextPart
from live_memory.engine.prompt_layout import Prompt, build_prompt
from live_memory.memory.context_window import ContextWindow

HINT = "## Budgets\n-"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def ask(
    window: ContextWindow,
    question: str,
    answer: str,
    cites: tuple[str, ...] = (),
    *,
    sent_at: float | None = None,
    sent: list[Prompt] | None = None,
) -> Message:
    """Simulate one question: sync deltas, build the prompt (appended to `sent`, as the question loop builds it
    with the default `long_cache`), store the exchange (sent at `sent_at`)."""
    window.sync_deltas()
    question_message = Message("user", (TextPart(f"## Question\n{question}"),))
    prompt = build_prompt(window, [question_message], hint=HINT, first_of_question=True, long_cache=LONG_CACHE)
    if sent is not None:
        sent.append(prompt)
    window.add_exchange(question_message, question, answer, cites, sent_at=sent_at)
    return question_message
