"""The request a window produces: where the cache breakpoints go, the lookback anchor, the hint.

    system[0]  system prompt + directory tree          bp1  (stable; survives compaction)
    system[1]  frozen volatile block                   bp2  (ledger + held file content + manifest)
    messages   Q&A turns + observation deltas          bp3  (append-only between compactions)
    tail       this question + its tool turns          bp4  (moves with the tool loop)
    last block per-question hint                            (volatile, never cached, never stored)

Must never mutate what the window holds (only a copy of a message gets a breakpoint flag), so the
bytes of every request's prefix are exactly the bytes the next request repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from live_memory.constants import LOOKBACK_ANCHOR_BLOCKS
from live_memory.core.messages import Message, TextPart
from live_memory.memory.context_window import ContextWindow
from live_memory.settings.options import LongCache

Prompt = tuple[tuple[TextPart, ...], tuple[Message, ...]]
# Which breakpoints ask for the provider's longer cache lifetime: none, bp1/bp2 (the prefix that only a
# compaction changes), or also the history's (every breakpoint before the current question's tail).


def build_prompt(
    window: ContextWindow,
    tail: Sequence[Message],
    *,
    hint: str = "",
    first_of_question: bool = False,
    mark_tail: bool = True,
    lag_tail: bool = False,
    long_cache: LongCache = "off",
) -> Prompt:
    """System parts and messages for the next request, breakpoints marked.

    `tail` is the current question's transcript (the question, then tool turns); `hint` (the
    per-question budgets) is appended as the last block, so it is never cached and never stored.
    bp1/bp2 sit on the two system parts, bp3 on the last history block, bp4 on the tail's last
    block (moving with the tool loop, so each iteration, and the next question, read it back).
    On a question's first request, if many history blocks were added since the last cached
    request (a provider looks back only ~20 blocks), bp4's slot marks that older position instead.
    `lag_tail` puts bp4 one message earlier: the newest tool results are sent but not written to the
    cache, for when no later request is likely to read them (they would cost a quarter more to write).
    `long_cache` gives the prefix's (and the history's) breakpoints the longer lifetime, so a pause of
    5-60 minutes between questions reads them instead of writing them again; the tail's stay short
    (a provider takes long-lived breakpoints only before short-lived ones).
    """
    if window.frozen_volatile is None:
        window.freeze()
    assert window.frozen_volatile is not None
    long_prefix, long_history = long_cache != "off", long_cache == "history"
    system = (
        TextPart(window.stable_prefix, cache=True, long_cache=long_prefix),
        TextPart(window.frozen_volatile, cache=True, long_cache=long_prefix),
    )
    messages = [t.message for t in window.history]
    if messages:
        messages[-1] = with_breakpoint(messages[-1], long=long_history)
    anchor = window.sent_history_len
    anchored = first_of_question and 0 < anchor < len(messages) - LOOKBACK_ANCHOR_BLOCKS
    if anchored:
        messages[anchor - 1] = with_breakpoint(messages[anchor - 1], long=long_history)
    rest = list(tail)
    if rest:
        if mark_tail and not anchored:
            at = len(rest) - 2 if lag_tail and len(rest) > 1 else len(rest) - 1
            rest[at] = with_breakpoint(rest[at])
        if hint:
            rest[-1] = Message(rest[-1].role, (*rest[-1].parts, TextPart(hint)))
    return system, (*messages, *rest)


def with_breakpoint(message: Message, *, long: bool = False) -> Message:
    """A copy of `message` whose last part ends a cacheable prefix (`long`: for the longer lifetime)."""
    if not message.parts:
        return message
    last = replace(message.parts[-1], cache=True, long_cache=long)
    return replace(message, parts=(*message.parts[:-1], last))
