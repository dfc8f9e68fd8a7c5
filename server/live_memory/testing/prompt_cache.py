"""A simulation of the providers' prompt caches: what a request's prompt reads from the cache, writes to it
and pays in full, reported in each provider's usage fields.

In the spirit of pydantic-ai's ``TestModel``: one public, typed simulator that the fake provider of the
tests (``server/live_memory/testing/llm_server.py``), the benchmarks and ``live-memory demo`` share, so their figures
follow the same rules. The rules' numbers (breakpoint limit, lookback, lifetimes, minimum cacheable
prefixes, hit units) come from the service's packaged provider data (``live_memory.providers.profiles``).

Rules (``CacheRules``), over a :class:`~live_memory.testing.prompt_blocks.Prompt`:

* ``"anthropic"`` (explicit breakpoints; Anthropic protocol only, 0 on the OpenAI one). Read: for each
  breakpoint, from the last backwards, check that position and walk back one block at a time, at most
  ``lookback_blocks`` positions including the breakpoint itself, for an entry written by an *earlier*
  request (a lower ``seq``) and not expired; the read is the largest cumulative prefix among those hits,
  and the hit's lifetime is refreshed. Write: every breakpoint whose cumulative prefix is at least the
  model's minimum cacheable length is (re)written; the creation is the tokens from the read point up to
  the last written breakpoint (0 if none lies beyond the read), split into 5-minute and 1-hour shares.
  Lifetime: ``ttl_s`` (5 minutes by default), or the long lifetime for ``"ttl": "1h"`` breakpoints.
* ``"openai"``: every prompt's prefix keys are remembered (``ttl_s``, refreshed on reuse); the hit is the
  longest whole-block prefix matching an earlier prompt, rounded down to the rules' unit (128 tokens), and
  0 under the minimum (1,024).
* ``"deepseek"``: the same in 64-token units, with no minimum.
* ``"none"``: nothing is cached.

``min_cacheable_tokens`` overrides the minimum of whichever rules apply (tests use small prompts). Not
thread-safe: a concurrent server holds a lock around :meth:`PromptCache.process`. Standard library only;
the service never imports it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from live_memory.providers.profiles import EXPLICIT_CACHE, IMPLICIT_CACHE, Protocol, min_cacheable_tokens_for
from live_memory.testing.prompt_blocks import Prompt

__all__ = ["AnthropicCache", "AutomaticCache", "CacheOutcome", "CacheRules", "PromptCache"]

CacheRules = Literal["anthropic", "openai", "deepseek", "none"]
CACHE_RULES: tuple[CacheRules, ...] = ("anthropic", "openai", "deepseek", "none")


@dataclass
class _Entry:
    expires_at: float
    ttl: float
    request_seq: int


@dataclass(frozen=True)
class CacheOutcome:
    """What one request read from the cache and wrote to it, in tokens."""

    read: int = 0
    creation_5m: int = 0
    creation_1h: int = 0

    @property
    def creation(self) -> int:
        return self.creation_5m + self.creation_1h

    def anthropic_usage(self, total: int, output_tokens: int) -> dict[str, Any]:
        """The Messages API ``usage`` of a prompt of ``total`` tokens."""
        return {
            "input_tokens": total - self.read - self.creation,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": self.creation,
            "cache_read_input_tokens": self.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.creation_5m,
                "ephemeral_1h_input_tokens": self.creation_1h,
            },
            "service_tier": "standard",
        }

    def openai_usage(self, total: int, output_tokens: int, *, deepseek_fields: bool = False) -> dict[str, Any]:
        """The Chat Completions ``usage``: OpenAI's ``prompt_tokens_details.cached_tokens``, or DeepSeek's
        ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``."""
        usage: dict[str, Any] = {
            "prompt_tokens": total,
            "completion_tokens": output_tokens,
            "total_tokens": total + output_tokens,
        }
        if deepseek_fields:
            usage["prompt_cache_hit_tokens"] = self.read
            usage["prompt_cache_miss_tokens"] = total - self.read
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": self.read}
        return usage


class AnthropicCache:
    """Explicit breakpoints (see the module docstring): entries keyed by prefix, each with its lifetime."""

    def __init__(self, lookback_blocks: int = EXPLICIT_CACHE.lookback_blocks) -> None:
        self.lookback_blocks = lookback_blocks
        self.entries: dict[bytes, _Entry] = {}
        self._earliest = math.inf  # no entry expires before this (a lower bound): sweep only once it passes

    def _sweep(self, now: float) -> None:
        """Forget the entries expired at `now` (skipped while none can be: each request would otherwise pay
        for every entry of the run)."""
        if now < self._earliest:
            return
        self.entries = {key: entry for key, entry in self.entries.items() if entry.expires_at > now}
        self._earliest = min((entry.expires_at for entry in self.entries.values()), default=math.inf)

    def process(
        self,
        prompt: Prompt,
        model: str,
        *,
        seq: int,
        now: float,
        min_tokens: int,
        ttl_s: float,
        long_ttl_s: float = EXPLICIT_CACHE.long_ttl_s,
    ) -> CacheOutcome:
        """One request, number ``seq`` (it reads only what lower numbers wrote), arriving at ``now``."""
        self._sweep(now)
        if not prompt.breakpoints:
            return CacheOutcome()
        keys = prompt.keys(model)
        cumulative = prompt.running_totals()
        read, hit = 0, None
        for point in sorted(prompt.breakpoints, key=lambda p: p.index, reverse=True):
            for position in range(point.index, max(point.index - self.lookback_blocks, -1), -1):
                entry = self.entries.get(keys[position])
                if entry is not None and entry.request_seq < seq:
                    if cumulative[position] > read:
                        read, hit = cumulative[position], entry
                    break
        if hit is not None:
            hit.expires_at = now + hit.ttl
        creation_5m = creation_1h = 0
        covered = read
        for point in sorted(prompt.breakpoints, key=lambda p: p.index):
            prefix = cumulative[point.index]
            if prefix < min_tokens:
                continue
            ttl = long_ttl_s if point.one_hour else ttl_s
            old = self.entries.get(keys[point.index])
            expires_at = max(now + ttl, old.expires_at if old else 0.0)
            self.entries[keys[point.index]] = _Entry(expires_at, max(ttl, old.ttl if old else 0.0), seq)
            self._earliest = min(self._earliest, expires_at)
            if prefix > covered:
                if point.one_hour:
                    creation_1h += prefix - covered
                else:
                    creation_5m += prefix - covered
                covered = prefix
        return CacheOutcome(read=read, creation_5m=creation_5m, creation_1h=creation_1h)


class AutomaticCache:
    """Automatic prefix caching (OpenAI, DeepSeek): remembers every prefix of earlier prompts."""

    def __init__(self) -> None:
        self.expiry: dict[bytes, float] = {}
        self._earliest = math.inf  # as in AnthropicCache

    def process(self, prompt: Prompt, model: str, *, now: float, ttl_s: float) -> int:
        """The longest whole-block prefix an earlier prompt left in the cache, in tokens (not yet rounded)."""
        if now >= self._earliest:
            self.expiry = {key: expires for key, expires in self.expiry.items() if expires > now}
            self._earliest = min(self.expiry.values(), default=math.inf)
        keys = prompt.keys(model)
        cumulative = prompt.running_totals()
        matched = 0
        for position in range(len(keys) - 1, -1, -1):
            if keys[position] in self.expiry:
                matched = cumulative[position]
                break
        expires = now + ttl_s
        self.expiry.update(dict.fromkeys(keys, expires))
        if keys:
            self._earliest = min(self._earliest, expires)
        return matched


class PromptCache:
    """One provider's prompt cache, by its rules (see the module docstring).

    Usage::

        cache = PromptCache("anthropic")
        prompt, _ = anthropic_prompt(body)
        outcome = cache.process(prompt, body["model"], protocol="anthropic", seq=1, now=clock())
        usage = outcome.anthropic_usage(prompt.total, output_tokens=12)
    """

    def __init__(
        self,
        rules: CacheRules = "anthropic",
        *,
        min_cacheable_tokens: int | None = None,
        ttl_s: float = EXPLICIT_CACHE.ttl_s,
    ) -> None:
        if rules not in CACHE_RULES:
            raise ValueError(f"unknown cache rules {rules!r}: expected one of {', '.join(CACHE_RULES)}")
        self.rules: CacheRules = rules
        self.min_cacheable_tokens = min_cacheable_tokens
        self.ttl_s = ttl_s
        self.anthropic = AnthropicCache()
        self.automatic = AutomaticCache()

    def reset(self) -> None:
        """Forget every entry."""
        self.anthropic = AnthropicCache()
        self.automatic = AutomaticCache()

    def min_tokens(self, model: str) -> int:
        """The shortest prefix these rules cache for ``model``."""
        if self.min_cacheable_tokens is not None:
            return self.min_cacheable_tokens
        if self.rules == "anthropic":
            return min_cacheable_tokens_for(model)
        if self.rules == "none":
            return 0
        return IMPLICIT_CACHE[self.rules].min_tokens

    def process(self, prompt: Prompt, model: str, *, protocol: Protocol, seq: int, now: float) -> CacheOutcome:
        """Request number ``seq`` (numbered in arrival order), sent with ``protocol`` at ``now``."""
        if self.rules == "none":
            return CacheOutcome()
        if self.rules == "anthropic":
            if protocol != "anthropic":  # explicit breakpoints exist only on the Messages API
                return CacheOutcome()
            return self.anthropic.process(
                prompt, model, seq=seq, now=now, min_tokens=self.min_tokens(model), ttl_s=self.ttl_s
            )
        matched = self.automatic.process(prompt, model, now=now, ttl_s=self.ttl_s)
        step = IMPLICIT_CACHE[self.rules].step_tokens
        cached = matched // step * step
        # A hit never exceeds the prompt, so a hit under the minimum also covers a prompt under it.
        return CacheOutcome(read=cached if cached >= self.min_tokens(model) else 0)
