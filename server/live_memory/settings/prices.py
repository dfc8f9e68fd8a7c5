"""What the configured prices are for the answering model: the `price_*` overrides as the pricing table's
`PriceOverrides`, and a cached token's read and write prices as shares of an uncached one's.

Built here, at the settings' floor, because `PriceOverrides` sits below it (in `providers/`): the spend
tally, the hot set and the summarizer's fold estimate all read their prices through these.
"""

from __future__ import annotations

from live_memory.constants import CACHE_READ_SHARE
from live_memory.providers.pricing import PriceOverrides, price_for
from live_memory.settings.config import Settings


def price_overrides(settings: Settings) -> PriceOverrides:
    return PriceOverrides(
        settings.price_input, settings.price_output, settings.price_cache_write, settings.price_cache_read
    )


def cache_read_share(settings: Settings) -> float:
    """A cached input token's price as a share of an uncached one's, for the answering model."""
    price = price_for(settings.model, price_overrides(settings))
    return price.cache_read / price.input if price is not None and price.input > 0 else CACHE_READ_SHARE


def cache_write_share(settings: Settings) -> float:
    """A token written to the cache, priced as a share of an uncached one (1.0 where writes cost nothing more)."""
    price = price_for(settings.model, price_overrides(settings))
    if price is None or price.input <= 0 or settings.profile.cache_style != "explicit":
        return 1.0
    return price.cache_write / price.input
