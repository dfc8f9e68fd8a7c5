"""Per-model USD prices (per million tokens) and the cost of a usage record.

Rows match by substring of the model id, first match wins, so dated ids (`...-20251001`) and
gateway prefixes (`anthropic/...`) find their row. Prices snapshot: 2026-11 (see docs).
"""

from __future__ import annotations

from dataclasses import dataclass

from live_memory.records import Usage


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_write: float  # 5-minute write (Anthropic 1.25x input); OpenAI pre-5.6 and DeepSeek: input rate
    cache_read: float
    cache_write_1h: float = -1.0  # 1-hour write (Anthropic 2x input); negative: twice the input rate

    @property
    def hour_write(self) -> float:
        return self.cache_write_1h if self.cache_write_1h >= 0 else 2 * self.input


PRICES: tuple[tuple[str, Price], ...] = (
    ("claude-haiku-4-5", Price(1.00, 5.00, 1.25, 0.10)),
    ("claude-haiku-4.5", Price(1.00, 5.00, 1.25, 0.10)),
    ("claude-sonnet-5", Price(2.00, 10.00, 2.50, 0.20)),
    ("claude-sonnet-4", Price(3.00, 15.00, 3.75, 0.30)),
    ("claude-opus-4-1", Price(15.00, 75.00, 18.75, 1.50)),
    ("claude-opus", Price(5.00, 25.00, 6.25, 0.50)),
    ("gpt-5-nano", Price(0.05, 0.40, 0.05, 0.005)),
    ("gpt-5-mini", Price(0.25, 2.00, 0.25, 0.025)),
    ("gpt-4.1-nano", Price(0.10, 0.40, 0.10, 0.025)),
    ("gpt-4.1-mini", Price(0.40, 1.60, 0.40, 0.10)),
    ("deepseek-v4-pro", Price(0.66, 1.98, 0.66, 0.022)),
    ("deepseek", Price(0.15, 0.60, 0.15, 0.003)),
    ("gemini-2.5-flash", Price(0.30, 2.50, 0.30, 0.03)),
)


def price_for(model: str, overrides: PriceOverrides | None = None) -> Price | None:
    """The table row for `model` with any configured overrides applied (None when unknown and not set)."""
    lowered = model.lower()
    found = next((price for needle, price in PRICES if needle in lowered), None)
    if overrides is None or not overrides.any():
        return found
    base = found or Price(0.0, 0.0, 0.0, 0.0)
    return Price(
        input=overrides.input if overrides.input >= 0 else base.input,
        output=overrides.output if overrides.output >= 0 else base.output,
        cache_write=overrides.cache_write if overrides.cache_write >= 0 else base.cache_write,
        cache_read=overrides.cache_read if overrides.cache_read >= 0 else base.cache_read,
    )


@dataclass(frozen=True)
class PriceOverrides:
    """`LIVE_MEMORY_PRICE_*` (USD per million tokens); a negative value means "use the table"."""

    input: float = -1.0
    output: float = -1.0
    cache_write: float = -1.0
    cache_read: float = -1.0

    def any(self) -> bool:
        return max(self.input, self.output, self.cache_write, self.cache_read) >= 0


def cost_usd(model: str, usage: Usage, overrides: PriceOverrides | None = None) -> float:
    """0.0 for unknown models without overrides (a local model costs nothing we can know)."""
    price = price_for(model, overrides)
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + (usage.cache_write_tokens - usage.cache_write_1h_tokens) * price.cache_write
        + usage.cache_write_1h_tokens * price.hour_write
        + usage.cache_read_tokens * price.cache_read
    ) / 1_000_000
