"""Token and cache accounting for the session bill: prompts as labelled blocks, the Anthropic cache rules,
prices, and the per-kind / never-read bookkeeping (see bench/session_bill.py).

One simulator for every arm: the simulated requests (the main agent, the Explore subagent) go through the
package's prompt-cache simulator (`live_memory.testing.prompt_cache`), the one the fake provider answering
the real server runs too (blocks counted at ceil(chars/4), breakpoints where the client marks them, 20-block
lookback, 5-minute TTL refreshed on hit, the model's minimum cacheable prefix). The real server's recorded
requests are re-read with the same block parser (`live_memory.testing.prompt_blocks`), so every arm's usage
is split by block kind and cache state in one way. Prices and cache rules are the service's provider data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_memory.providers.pricing import Price, price_for
from live_memory.providers.profiles import EXPLICIT_CACHE, min_cacheable_tokens_for
from live_memory.testing.prompt_blocks import Prompt, anthropic_prompt, count_tokens
from live_memory.testing.prompt_cache import AnthropicCache

TTL_S = EXPLICIT_CACHE.ttl_s
EPHEMERAL = {"type": "ephemeral"}

CACHE_MODEL = {"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5"}


def _priced(model: str) -> Price:
    price = price_for(model)
    if price is None:
        raise LookupError(f"no price for {model} in the provider data")
    return price


# The service's own rows (USD per million tokens), the ones `cost=` and /stats use.
PRICES: dict[str, Price] = {name: _priced(model) for name, model in CACHE_MODEL.items()}


def bill_usd(price: Price, uncached: int, write: int, read: int, output: int, write_1h: int = 0) -> float:
    """USD of a bill; `write` counts every cache write, `write_1h` the part of it written for an hour."""
    writes = (write - write_1h) * price.cache_write + write_1h * price.hour_write
    return (uncached * price.input + writes + read * price.cache_read + output * price.output) / 1e6


def price_dict(price: Price) -> dict[str, float]:
    """A price as the results file shows it."""
    return {
        "input": price.input,
        "cache_write": price.cache_write,
        "cache_write_1h": price.hour_write,
        "cache_read": price.cache_read,
        "output": price.output,
    }


class VirtualClock:
    """The clock every cache sees: think time, generation time and session gaps advance it. With `publish`,
    each step is written to that file, so the server under test (`bench.virtual_serve`) keeps the same time."""

    def __init__(self, start: float = 1_000.0, publish: Path | None = None) -> None:
        self.now = start
        self.publish = publish
        self._write()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._write()

    def _write(self) -> None:
        if self.publish is None:
            return
        partial = self.publish.with_name(self.publish.name + ".tmp")
        partial.write_text(repr(self.now), encoding="ascii")
        os.replace(partial, self.publish)  # the reader never sees half a number


# -- blocks ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """One prompt block: its wire kind (`role:type`), serialization (what the cache keys and counts) and the
    kind of spend it is reported under."""

    wire: str
    text: str
    label: str

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)


@dataclass
class Call:
    """One model request, accounted: per-block labels and tokens, and the usage the cache rules gave."""

    actor: str  # main | memory | subagent
    task: int
    labels: list[list[tuple[str, int]]]  # per block: (label, tokens) pieces summing to the block's tokens
    tokens: list[int]
    keys: list[bytes]
    read: int
    write: int
    output: int
    output_label: str = "output"
    reads: tuple[str, ...] = ()  # files this request's reply asked to Read (memory arm)
    write_1h: int = 0  # the first part of `write` (1-hour breakpoints come before 5-minute ones)

    @property
    def prompt(self) -> int:
        return sum(self.tokens)

    @property
    def uncached(self) -> int:
        return self.prompt - self.read - self.write

    def cost(self, price: Price) -> float:
        return bill_usd(price, self.uncached, self.write, self.read, self.output, self.write_1h)


class CacheSim:
    """The Anthropic cache rules of the fake provider, run in-process for one client's requests."""

    def __init__(self, clock: VirtualClock, model: str) -> None:
        self.clock = clock
        self.model = CACHE_MODEL[model]
        self.cache = AnthropicCache()
        self.seq = 0
        self.min_tokens = min_cacheable_tokens_for(self.model)

    def run(self, blocks: Sequence[Block], breakpoints: Iterable[int]) -> tuple[int, int, list[bytes]]:
        """(cache read, cache write, keys) of one request; breakpoints are block indexes."""
        marks = set(breakpoints)
        prompt = Prompt()
        for i, block in enumerate(blocks):
            prompt.add(block.wire, block.text, EPHEMERAL if i in marks else None)
        self.seq += 1
        outcome = self.cache.process(
            prompt, self.model, seq=self.seq, now=self.clock(), min_tokens=self.min_tokens, ttl_s=TTL_S
        )
        return outcome.read, outcome.creation, prompt.keys(self.model)


def simulated_call(
    actor: str,
    task: int,
    blocks: Sequence[Block],
    read: int,
    write: int,
    keys: list[bytes],
    output: int,
    output_label: str = "output",
) -> Call:
    return Call(
        actor,
        task,
        [[(b.label, b.tokens)] for b in blocks],
        [b.tokens for b in blocks],
        keys,
        read,
        write,
        output,
        output_label,
    )


def recorded_call(
    actor: str,
    task: int,
    body: dict[str, Any],
    usage: Mapping[str, Any],
    model: str,
    classify: Callable[[dict[str, Any]], list[list[tuple[str, int]]]],
    reads: tuple[str, ...] = (),
) -> Call:
    """A request the fake provider recorded (Anthropic shape); `classify` gives each block's kinds by chars."""
    prompt, _ = anthropic_prompt(body)
    pieces = classify(body)  # per block: (kind, chars)
    tokens = [b.tokens for b in prompt.blocks]
    if len(pieces) != len(tokens):  # the classifier lost track of the layout: report it as one kind
        pieces = [[("unclassified", 1)] for _ in tokens]
    labels = [split_tokens(t, p) for t, p in zip(tokens, pieces, strict=True)]
    return Call(
        actor,
        task,
        labels,
        tokens,
        prompt.keys(model),
        int(usage.get("cache_read_input_tokens") or 0),
        int(usage.get("cache_creation_input_tokens") or 0),
        int(usage.get("output_tokens") or 0),
        reads=reads,
        write_1h=int((usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0),
    )


def split_tokens(tokens: int, pieces: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Share a block's `tokens` among labels in proportion to their character counts (largest remainder)."""
    total = sum(chars for _, chars in pieces)
    if total <= 0:
        return [(pieces[0][0] if pieces else "unclassified", tokens)]
    shares = [(label, tokens * chars / total) for label, chars in pieces]
    out = [(label, int(share)) for label, share in shares]
    missing = tokens - sum(t for _, t in out)
    order = sorted(range(len(shares)), key=lambda i: shares[i][1] - int(shares[i][1]), reverse=True)
    for i in order[:missing]:
        out[i] = (out[i][0], out[i][1] + 1)
    return [(label, t) for label, t in out if t]


# -- bookkeeping -------------------------------------------------------------------------------------------
@dataclass
class KindSpend:
    uncached: int = 0
    write: int = 0
    read: int = 0
    output: int = 0
    write_1h: int = 0

    def add(self, uncached: int = 0, write: int = 0, read: int = 0, output: int = 0, write_1h: int = 0) -> None:
        self.uncached += uncached
        self.write += write
        self.read += read
        self.output += output
        self.write_1h += write_1h

    def cost(self, price: Price) -> float:
        return bill_usd(price, self.uncached, self.write, self.read, self.output, self.write_1h)


@dataclass
class Ledger:
    """Every call of one actor (in order), with totals per kind and per task, and never-read cache writes."""

    actor: str
    calls: list[Call] = field(default_factory=list)

    def add(self, call: Call) -> None:
        self.calls.append(call)

    def by_kind(self) -> dict[str, KindSpend]:
        kinds: dict[str, KindSpend] = {}
        for call in self.calls:
            position = 0
            for pieces in call.labels:
                for label, tokens in pieces:
                    start, end = position, position + tokens
                    read = max(0, min(end, call.read) - start)
                    write = max(0, min(end, call.read + call.write) - max(start, call.read))
                    write_1h = max(0, min(end, call.read + call.write_1h) - max(start, call.read))
                    kinds.setdefault(label, KindSpend()).add(
                        uncached=tokens - read - write, write=write, read=read, write_1h=write_1h
                    )
                    position = end
            kinds.setdefault(call.output_label, KindSpend()).add(output=call.output)
        return kinds

    def totals(self) -> KindSpend:
        total = KindSpend()
        for call in self.calls:
            total.add(call.uncached, call.write, call.read, call.output, call.write_1h)
        return total

    def per_task(self, tasks: int, price: Price) -> list[float]:
        out = [0.0] * tasks
        for call in self.calls:
            out[call.task] += call.cost(price)
        return out

    def never_read_writes(self) -> int:
        """Cache-written tokens that no later request of this client read back (expired or never reused)."""
        pending: dict[bytes, int] = {}
        wasted = 0
        for call in self.calls:
            cumulative = 0
            ends: list[int] = []
            for t in call.tokens:
                cumulative += t
                ends.append(cumulative)
            if call.read:
                hit = ends.index(call.read) if call.read in ends else -1
                for key in call.keys[: hit + 1]:
                    pending.pop(key, None)
            if call.write:
                for i, end in enumerate(ends):
                    start = end - call.tokens[i]
                    if start >= call.read and end <= call.read + call.write:
                        if call.keys[i] in pending:
                            wasted += pending[call.keys[i]]
                        pending[call.keys[i]] = call.tokens[i]
        return wasted + sum(pending.values())
