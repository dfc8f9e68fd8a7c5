"""The prompt-cache simulator: Anthropic breakpoints (minimum prefix, lookback, lifetimes, earlier requests
only) and automatic prefix caching (OpenAI's 128-token units from 1,024, DeepSeek's 64-token units)."""

from __future__ import annotations

import pytest

from live_memory.providers.profiles import EXPLICIT_CACHE
from live_memory.testing.prompt_blocks import Prompt
from live_memory.testing.prompt_cache import CacheOutcome, PromptCache

EPHEMERAL = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
SONNET = "claude-sonnet-4-5"  # 1,024-token minimum
HAIKU = "claude-haiku-4-5"  # 4,096-token minimum


def prompt(*blocks: tuple[str, int, object]) -> Prompt:
    """Blocks of (text, tokens, cache_control): each block's text is `tokens` * 4 characters."""
    built = Prompt()
    for text, tokens, mark in blocks:
        built.add("user:text", (text * tokens * 4)[: tokens * 4], mark)
    return built


def test_a_breakpoint_is_written_once_then_read_by_the_next_request() -> None:
    cache = PromptCache("anthropic")
    first = cache.process(prompt(("s", 2000, EPHEMERAL), ("a", 50, None)), SONNET, protocol="anthropic", seq=1, now=0)
    assert first == CacheOutcome(read=0, creation_5m=2000)
    second = cache.process(prompt(("s", 2000, EPHEMERAL), ("b", 60, None)), SONNET, protocol="anthropic", seq=2, now=1)
    assert second == CacheOutcome(read=2000)


def test_a_prefix_under_the_models_minimum_is_not_written() -> None:
    cache = PromptCache("anthropic")
    for seq in (1, 2):
        outcome = cache.process(prompt(("s", 2000, EPHEMERAL)), HAIKU, protocol="anthropic", seq=seq, now=seq)
        assert outcome == CacheOutcome()  # 2,000 tokens: under Haiku 4.5's 4,096
    assert PromptCache("anthropic", min_cacheable_tokens=64).min_tokens(HAIKU) == 64


def test_an_entry_expires_after_its_lifetime_and_each_hit_refreshes_it() -> None:
    cache = PromptCache("anthropic", ttl_s=300)
    cached = prompt(("s", 2000, EPHEMERAL))
    cache.process(cached, SONNET, protocol="anthropic", seq=1, now=0)
    assert cache.process(cached, SONNET, protocol="anthropic", seq=2, now=299).read == 2000
    assert cache.process(cached, SONNET, protocol="anthropic", seq=3, now=598).read == 2000  # refreshed at 299
    assert cache.process(cached, SONNET, protocol="anthropic", seq=4, now=1000).read == 0


def test_one_hour_breakpoints_report_their_share_and_outlive_five_minutes() -> None:
    cache = PromptCache("anthropic")
    both = prompt(("h", 1500, ONE_HOUR), ("m", 500, EPHEMERAL))
    assert cache.process(both, SONNET, protocol="anthropic", seq=1, now=0) == CacheOutcome(
        creation_5m=500, creation_1h=1500
    )
    later = cache.process(
        prompt(("h", 1500, ONE_HOUR), ("x", 500, None)), SONNET, protocol="anthropic", seq=2, now=1800
    )
    assert later.read == 1500


def test_a_read_looks_back_only_so_many_blocks_from_a_breakpoint() -> None:
    lookback = EXPLICIT_CACHE.lookback_blocks
    head = ("s", 2000, EPHEMERAL)
    cache = PromptCache("anthropic")
    cache.process(prompt(head), SONNET, protocol="anthropic", seq=1, now=0)
    near = [head, *[(str(i % 10), 10, None) for i in range(lookback - 2)], ("q", 10, EPHEMERAL)]
    assert cache.process(prompt(*near), SONNET, protocol="anthropic", seq=2, now=1).read == 2000
    cache = PromptCache("anthropic")
    cache.process(prompt(head), SONNET, protocol="anthropic", seq=1, now=0)
    far = [("s", 2000, None), *[(str(i % 10), 10, None) for i in range(lookback)], ("q", 10, EPHEMERAL)]
    assert cache.process(prompt(*far), SONNET, protocol="anthropic", seq=2, now=1).read == 0


def test_a_request_reads_only_what_earlier_requests_wrote() -> None:
    """Two requests in flight together: the later-numbered one's write is not visible to the earlier one."""
    cache = PromptCache("anthropic")
    shared = prompt(("s", 2000, EPHEMERAL))
    assert cache.process(shared, SONNET, protocol="anthropic", seq=2, now=0).creation == 2000
    assert cache.process(shared, SONNET, protocol="anthropic", seq=1, now=0) == CacheOutcome(creation_5m=2000)


def test_breakpoint_rules_cache_nothing_on_the_openai_protocol() -> None:
    cache = PromptCache("anthropic")
    for seq in (1, 2):
        assert cache.process(prompt(("s", 2000, EPHEMERAL)), SONNET, protocol="openai", seq=seq, now=0).read == 0


@pytest.mark.parametrize(
    ("rules", "shared", "expected"), [("openai", 1100, 1024), ("openai", 1000, 0), ("deepseek", 100, 64)]
)
def test_automatic_caching_reads_the_shared_prefix_in_whole_units_above_the_minimum(
    rules: str, shared: int, expected: int
) -> None:
    cache = PromptCache(rules)  # type: ignore[arg-type]
    cache.process(prompt(("s", shared, None), ("a", 300, None)), "gpt-5-mini", protocol="openai", seq=1, now=0)
    outcome = cache.process(
        prompt(("s", shared, None), ("b", 300, None)), "gpt-5-mini", protocol="openai", seq=2, now=1
    )
    assert outcome == CacheOutcome(read=expected)


def test_no_rules_cache_nothing_and_reset_forgets_every_entry() -> None:
    none = PromptCache("none")
    for seq in (1, 2):
        assert none.process(prompt(("s", 2000, EPHEMERAL)), SONNET, protocol="anthropic", seq=seq, now=0).read == 0
    cache = PromptCache("anthropic")
    cache.process(prompt(("s", 2000, EPHEMERAL)), SONNET, protocol="anthropic", seq=1, now=0)
    cache.reset()
    assert cache.process(prompt(("s", 2000, EPHEMERAL)), SONNET, protocol="anthropic", seq=2, now=1).read == 0


def test_unknown_rules_are_refused_with_the_known_ones_named() -> None:
    with pytest.raises(ValueError, match="anthropic, openai, deepseek, none"):
        PromptCache("gemini")  # type: ignore[arg-type]


def test_usage_fields_split_the_prompt_as_each_provider_reports_it() -> None:
    outcome = CacheOutcome(read=1000, creation_5m=200, creation_1h=300)
    anthropic = outcome.anthropic_usage(2000, output_tokens=7)
    assert (
        anthropic["input_tokens"] + anthropic["cache_read_input_tokens"] + anthropic["cache_creation_input_tokens"]
        == 2000
    )
    assert anthropic["cache_creation"] == {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 300}
    assert CacheOutcome(read=1024).openai_usage(1500, 9)["prompt_tokens_details"] == {"cached_tokens": 1024}
    deepseek = CacheOutcome(read=64).openai_usage(100, 9, deepseek_fields=True)
    assert (deepseek["prompt_cache_hit_tokens"], deepseek["prompt_cache_miss_tokens"]) == (64, 36)
