"""Per-model USD prices (per million tokens) and the cost of a usage record.

Rows match by substring of the model id, first match wins, so dated ids (`...-20251001`) and
gateway prefixes (`anthropic/...`) find their row. The rows live in the packaged data file
(`live_memory/data/providers.json`, snapshot 2026-11), which the benchmarks price their bills with too.
"""

from __future__ import annotations

from dataclasses import dataclass

from live_memory.core.records import Usage
from live_memory.providers.catalog import provider_data


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


# By substring of the lowercased model id, first match wins (rows from the packaged data file, `catalog.py`).
PRICES: tuple[tuple[str, Price], ...] = tuple(
    (str(row["match"]), Price(**{key: float(value) for key, value in row.items() if key != "match"}))
    for row in provider_data()["prices"]
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
