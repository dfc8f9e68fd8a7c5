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


def price_for(model: str) -> Price | None:
    lowered = model.lower()
    for needle, price in PRICES:
        if needle in lowered:
            return price
    return None


def cost_usd(model: str, usage: Usage) -> float:
    """0.0 for unknown models (a local model costs nothing we can know)."""
    price = price_for(model)
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
    ) / 1_000_000
