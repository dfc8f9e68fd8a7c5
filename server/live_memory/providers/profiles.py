"""Endpoint knowledge as data: one row per provider profile, no behaviour.

The rows, the per-model tables and the providers' cache rules come from the packaged data file
(`catalog.py`), shared with the fake provider of the tests and the benchmarks; here they become frozen
objects.

`LIVE_MEMORY_PROVIDER` names a row; `LIVE_MEMORY_BASE_URL`, `LIVE_MEMORY_MODEL` and
`LIVE_MEMORY_API_KEY` override it. A row's `key_envs` are honoured only while the base URL is
the row's own (or came from the row's `base_url_env`), so a custom endpoint never receives
another provider's key by accident.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from live_memory.providers.catalog import provider_data

Protocol = Literal["anthropic", "openai"]
CacheStyle = Literal["explicit", "implicit", "none"]
# The rows' names, in table order: the `provider` option's choices (a row per name, checked below).
ProviderName: TypeAlias = Literal["anthropic", "openai", "deepseek", "openrouter", "ollama", "gateway"]
PROVIDER_NAMES: tuple[ProviderName, ...] = get_args(ProviderName)


@dataclass(frozen=True)
class ProviderProfile:
    name: ProviderName
    protocol: Protocol
    base_url: str
    default_model: str
    context_tokens: int
    cache_style: CacheStyle
    key_envs: tuple[str, ...]  # provider-native key variables, honoured as fallbacks
    base_url_env: str | None  # provider-native base-URL variable (e.g. ANTHROPIC_BASE_URL)
    keep_warm_interval_s: float  # under the cache TTL; effectively never where caches live for hours
    needs_key: bool = True
    description: str = ""
    routes_by_cache_key: bool = False  # accepts `prompt_cache_key` to keep one workspace on one cache shard


@dataclass(frozen=True)
class ExplicitCacheRules:
    """Breakpoint caching (Anthropic): a read looks back a bounded number of blocks for an earlier write."""

    max_breakpoints: int  # more in one request is a 400
    lookback_blocks: int  # positions a read checks, the breakpoint's own included
    ttl_s: float  # the default lifetime, refreshed by every hit
    long_ttl_s: float  # `"ttl": "1h"` breakpoints


@dataclass(frozen=True)
class ImplicitCacheRules:
    """Automatic prefix caching (OpenAI, DeepSeek): hits are whole units of `step_tokens`, none below `min_tokens`."""

    min_tokens: int
    step_tokens: int


def _profile(row: dict[str, Any]) -> ProviderProfile:
    return ProviderProfile(**{**row, "key_envs": tuple(row["key_envs"])})


def _by_model(rows: list[dict[str, Any]]) -> tuple[tuple[str, int], ...]:
    return tuple((str(row["match"]), int(row["tokens"])) for row in rows)


_DATA = provider_data()

PROFILES: dict[ProviderName, ProviderProfile] = {p.name: p for p in map(_profile, _DATA["profiles"])}

if tuple(PROFILES) != PROVIDER_NAMES:
    raise TypeError(f"provider rows {tuple(PROFILES)} differ from ProviderName {PROVIDER_NAMES} (one row per name)")

# Context sizes of well-known models, by substring of the model id (first match wins).
MODEL_CONTEXT_TOKENS: tuple[tuple[str, int], ...] = _by_model(_DATA["model_context_tokens"])

# The shortest prefix a model caches, by substring of the model id with dots read as dashes (first match
# wins): a breakpoint on a shorter prefix is silently not written. Models not listed take the default
# (Sonnet, the older Opus, OpenAI's automatic caching).
MODEL_MIN_CACHEABLE_TOKENS: tuple[tuple[str, int], ...] = _by_model(_DATA["model_min_cacheable_tokens"])
DEFAULT_MIN_CACHEABLE_TOKENS: int = int(_DATA["default_min_cacheable_tokens"])

EXPLICIT_CACHE = ExplicitCacheRules(**_DATA["cache_rules"]["explicit"])
# By the cache rules' name: "openai" (128-token units from 1,024) and "deepseek" (64-token units).
IMPLICIT_CACHE: dict[str, ImplicitCacheRules] = {
    name: ImplicitCacheRules(**rules) for name, rules in _DATA["cache_rules"]["implicit"].items()
}


def min_cacheable_tokens_for(model: str) -> int:
    name = model.lower().replace(".", "-")  # `anthropic/claude-haiku-4.5` is `claude-haiku-4-5`
    sizes = (size for needle, size in MODEL_MIN_CACHEABLE_TOKENS if needle in name)
    return next(sizes, DEFAULT_MIN_CACHEABLE_TOKENS)


def context_tokens_for(model: str, profile: ProviderProfile) -> int:
    lowered = model.lower()
    for needle, size in MODEL_CONTEXT_TOKENS:
        if needle in lowered:
            return size
    return profile.context_tokens
