"""The 1-hour cache option (`long_cache`): which breakpoints ask for it, what reaches the wire, what it costs."""

from __future__ import annotations

import asyncio

import pytest

from live_memory.context_window import ContextWindow
from live_memory.prompt_layout import LongCache, build_prompt
from live_memory.providers.anthropic import AnthropicProvider
from live_memory.providers.base import ChatRequest, Message, ProviderInfo, TextPart
from live_memory.providers.pricing import cost_usd
from live_memory.records import Usage
from tests.fakes.llm_server import FakeLLM, Reply

PAUSE_S = 600.0  # a ten-minute pause between questions: past the 5-minute lifetime, within the hour


def window_with_one_exchange() -> ContextWindow:
    window = ContextWindow(budget_tokens=10_000)
    window.set_directory_tree("src/\n  app.py")
    question = Message("user", (TextPart("## Question\nfirst?"),))
    build_prompt(window, [question], first_of_question=True)
    window.add_exchange(question, "first?", "first answer", ())
    return window


@pytest.mark.parametrize(
    ("scope", "prefix_long", "history_long"),
    [("off", False, False), ("prefix", True, False), ("history", True, True)],
)
def test_long_cache_marks_the_prefix_and_history_breakpoints_but_never_the_questions_tail(
    scope: LongCache, prefix_long: bool, history_long: bool
) -> None:
    window = window_with_one_exchange()
    question = Message("user", (TextPart("## Question\nsecond?"),))
    system, messages = build_prompt(window, [question], hint="## Budgets", long_cache=scope)
    assert [(p.cache, p.long_cache) for p in system] == [(True, prefix_long)] * 2
    history_bp = messages[-2].parts[-1]
    assert history_bp.cache and history_bp.long_cache is history_long
    tail_bp = messages[-1].parts[0]
    assert tail_bp.cache and not tail_bp.long_cache  # long-lived breakpoints must come before short ones
    assert not any(p.long_cache and not p.cache for m in messages for p in m.parts)


def anthropic(fake: FakeLLM) -> AnthropicProvider:
    info = ProviderInfo("anthropic", "anthropic", "claude-haiku-4-5", fake.base_url, explicit_cache_control=True)
    return AnthropicProvider(info, api_key="test")


def request(stable: str, *, long: bool) -> ChatRequest:
    return ChatRequest(
        system=(TextPart(stable, cache=True, long_cache=long),),
        messages=(Message("user", (TextPart("where is the parser?"),)),),
        max_tokens=64,
    )


async def test_a_one_hour_prefix_is_read_after_a_ten_minute_pause_and_a_five_minute_one_is_written_again() -> None:
    now = [1_000.0]
    with FakeLLM(min_cacheable_tokens=64, clock=lambda: now[0]) as fake:
        fake.script(*(Reply.text("answer") for _ in range(4)))
        provider = await asyncio.to_thread(anthropic, fake)  # the SDK's first client reads package metadata
        try:
            outcomes = {}
            for long in (True, False):
                stable = f"system prompt and tree ({'hour' if long else 'minutes'}) " + "word " * 400
                first = await provider.chat(request(stable, long=long))
                now[0] += PAUSE_S
                second = await provider.chat(request(stable, long=long))
                outcomes[long] = (first.usage, second.usage)
        finally:
            await provider.aclose()
    wire = [r.body["system"][0]["cache_control"] for r in fake.requests]
    assert wire[:2] == [{"type": "ephemeral", "ttl": "1h"}] * 2 and wire[2:] == [{"type": "ephemeral"}] * 2
    hour_first, hour_second = outcomes[True]
    assert hour_first.cache_write_1h_tokens == hour_first.cache_write_tokens > 0
    assert hour_second.cache_read_tokens == hour_first.cache_write_tokens  # read back after the pause
    short_first, short_second = outcomes[False]
    assert short_first.cache_write_1h_tokens == 0
    assert short_second.cache_read_tokens == 0 and short_second.cache_write_tokens == short_first.cache_write_tokens


def test_one_hour_writes_cost_twice_the_input_price_and_five_minute_writes_a_quarter_more() -> None:
    usage = Usage(cache_write_tokens=1_000_000, cache_write_1h_tokens=400_000)
    # Haiku 4.5: $1 input; 600k five-minute writes at $1.25, 400k one-hour writes at $2.
    assert cost_usd("claude-haiku-4-5", usage) == pytest.approx(0.6 * 1.25 + 0.4 * 2.0)
    assert cost_usd("claude-haiku-4-5", Usage(cache_write_tokens=1_000_000)) == pytest.approx(1.25)
