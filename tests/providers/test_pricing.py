"""Per-model prices and the cost of a usage record: the figure users see as `cost=` and in /stats."""

from __future__ import annotations

import pytest

from live_memory.core.records import Usage
from live_memory.providers.pricing import PRICES, Price, PriceOverrides, cost_usd, price_for
from live_memory.providers.profiles import PROFILES

MILLION = Usage(
    input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000, cache_write_tokens=1_000_000
)


def test_pricing_applies_cache_multipliers_and_overrides() -> None:
    usage = Usage(
        input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000, cache_write_tokens=1_000_000
    )
    # Haiku 4.5: input 1.00, output 5.00, 5-minute write 1.25x input, read 0.1x input (USD per MTok)
    assert cost_usd("claude-haiku-4-5-20251001", usage) == pytest.approx(1.00 + 5.00 + 1.25 + 0.10)
    assert cost_usd("deepseek-flash", usage) == pytest.approx(0.15 + 0.60 + 0.15 + 0.003)
    assert cost_usd("my-local-model", usage) == 0.0
    overrides = PriceOverrides(input=2.0, cache_read=0.0)
    assert cost_usd("claude-haiku-4-5", usage, overrides) == pytest.approx(2.0 + 5.0 + 1.25 + 0.0)
    assert price_for("anthropic/claude-haiku-4.5") is not None  # gateway-prefixed ids find their row


@pytest.mark.parametrize(
    ("model", "row"),
    [
        ("claude-opus-4-1-20250805", Price(15.00, 75.00, 18.75, 1.50)),  # the specific row before "claude-opus"
        ("claude-opus-4-7", Price(5.00, 25.00, 6.25, 0.50)),
        ("deepseek-v4-pro", Price(0.66, 1.98, 0.66, 0.022)),  # before the generic "deepseek" row
        ("deepseek-flash", Price(0.15, 0.60, 0.15, 0.003)),
        ("GPT-5-MINI", Price(0.25, 2.00, 0.25, 0.025)),  # case does not matter
        ("google/gemini-2.5-flash", Price(0.30, 2.50, 0.30, 0.03)),
    ],
)
def test_the_most_specific_row_matches_first(model: str, row: Price) -> None:
    assert price_for(model) == row


def test_anthropic_rows_price_cache_writes_at_1_25x_and_reads_at_0_1x_input() -> None:
    for needle, price in PRICES:
        if needle.startswith("claude-"):
            assert price.cache_write == pytest.approx(price.input * 1.25), needle
            assert price.cache_read == pytest.approx(price.input * 0.10), needle


def test_every_row_reads_cached_tokens_cheaper_than_fresh_input_and_writes_no_cheaper() -> None:
    for needle, price in PRICES:
        assert 0 < price.cache_read < price.input, needle
        assert price.cache_write >= price.input, needle
        assert price.output > price.input, needle


def test_every_metered_profiles_default_model_has_a_price() -> None:
    for profile in PROFILES.values():
        if profile.needs_key:
            assert price_for(profile.default_model) is not None, profile.name


def test_no_row_is_shadowed_by_an_earlier_one() -> None:
    for index, (needle, _) in enumerate(PRICES):
        earlier = [other for other, _ in PRICES[:index] if other in needle]
        assert earlier == [], f"{needle!r} can never match: {earlier} comes first"


def test_a_small_question_costs_its_tokens_at_the_per_million_rates() -> None:
    usage = Usage(input_tokens=2_000, output_tokens=300, cache_read_tokens=40_000, cache_write_tokens=1_000)
    # gpt-5-mini: 0.25 in, 2.00 out, 0.25 write, 0.025 read
    expected = (2_000 * 0.25 + 300 * 2.00 + 1_000 * 0.25 + 40_000 * 0.025) / 1_000_000
    assert cost_usd("gpt-5-mini", usage) == pytest.approx(expected)
    assert cost_usd("gpt-5-mini", Usage()) == 0.0


def test_overrides_price_an_unknown_model_and_unset_fields_count_as_free() -> None:
    assert price_for("my-local-model") is None
    overrides = PriceOverrides(input=1.0, output=2.0)
    assert price_for("my-local-model", overrides) == Price(1.0, 2.0, 0.0, 0.0)
    assert cost_usd("my-local-model", MILLION, overrides) == pytest.approx(3.0)


def test_no_overrides_set_means_the_table_is_used_unchanged() -> None:
    assert not PriceOverrides().any()
    assert PriceOverrides(cache_write=0.0).any()  # zero is a price, only a negative value means "unset"
    assert price_for("claude-haiku-4-5", PriceOverrides()) == price_for("claude-haiku-4-5")


def test_one_hour_writes_cost_twice_the_input_price_and_five_minute_writes_a_quarter_more() -> None:
    usage = Usage(cache_write_tokens=1_000_000, cache_write_1h_tokens=400_000)
    # Haiku 4.5: $1 input; 600k five-minute writes at $1.25, 400k one-hour writes at $2.
    assert cost_usd("claude-haiku-4-5", usage) == pytest.approx(0.6 * 1.25 + 0.4 * 2.0)
    assert cost_usd("claude-haiku-4-5", Usage(cache_write_tokens=1_000_000)) == pytest.approx(1.25)
