"""Endpoint knowledge as data: one row per provider profile, no behaviour.

`LIVE_MEMORY_PROVIDER` names a row; `LIVE_MEMORY_BASE_URL`, `LIVE_MEMORY_MODEL` and
`LIVE_MEMORY_API_KEY` override it. A row's `key_envs` are honoured only while the base URL is
the row's own (or came from the row's `base_url_env`), so a custom endpoint never receives
another provider's key by accident.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

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


PROFILES: dict[ProviderName, ProviderProfile] = {
    p.name: p
    for p in (
        ProviderProfile(
            name="anthropic",
            protocol="anthropic",
            base_url="https://api.anthropic.com",
            default_model="claude-haiku-4-5",
            context_tokens=200_000,
            cache_style="explicit",
            key_envs=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
            base_url_env="ANTHROPIC_BASE_URL",
            keep_warm_interval_s=240.0,
            description="Anthropic Messages API (also Bedrock/Vertex gateways speaking it)",
        ),
        ProviderProfile(
            name="openai",
            protocol="openai",
            base_url="https://api.openai.com/v1",
            default_model="gpt-5-mini",
            context_tokens=272_000,
            cache_style="implicit",
            routes_by_cache_key=True,
            key_envs=("OPENAI_API_KEY",),
            base_url_env="OPENAI_BASE_URL",
            keep_warm_interval_s=240.0,
            description="OpenAI Chat Completions",
        ),
        ProviderProfile(
            name="deepseek",
            protocol="openai",
            base_url="https://api.deepseek.com",
            default_model="deepseek-flash",
            context_tokens=1_000_000,
            cache_style="implicit",
            key_envs=("DEEPSEEK_API_KEY",),
            base_url_env=None,
            keep_warm_interval_s=6 * 3600.0,
            description="DeepSeek (OpenAI-compatible, disk prefix cache lasting hours)",
        ),
        ProviderProfile(
            name="openrouter",
            protocol="openai",
            base_url="https://openrouter.ai/api/v1",
            default_model="anthropic/claude-haiku-4.5",
            context_tokens=200_000,
            cache_style="implicit",
            key_envs=("OPENROUTER_API_KEY",),
            base_url_env=None,
            keep_warm_interval_s=240.0,
            description="OpenRouter gateway (OpenAI-compatible)",
        ),
        ProviderProfile(
            name="ollama",
            protocol="openai",
            base_url="http://127.0.0.1:11434/v1",
            default_model="qwen3-coder",
            context_tokens=128_000,
            cache_style="implicit",
            key_envs=(),
            base_url_env="OLLAMA_HOST",
            keep_warm_interval_s=6 * 3600.0,
            needs_key=False,
            description="A local model server (Ollama, llama.cpp, vLLM) speaking OpenAI's protocol",
        ),
        ProviderProfile(
            name="gateway",
            protocol="anthropic",
            base_url="",
            default_model="claude-haiku-4-5",
            context_tokens=200_000,
            cache_style="explicit",
            key_envs=(),
            base_url_env=None,
            keep_warm_interval_s=240.0,
            description="Any Anthropic-protocol gateway; set LIVE_MEMORY_BASE_URL and LIVE_MEMORY_API_KEY",
        ),
    )
}

if tuple(PROFILES) != PROVIDER_NAMES:
    raise TypeError(f"provider rows {tuple(PROFILES)} differ from ProviderName {PROVIDER_NAMES} (one row per name)")

# Context sizes of well-known models, by substring of the model id (first match wins).
MODEL_CONTEXT_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-sonnet-4-6", 1_000_000),
    ("claude-sonnet-5", 1_000_000),
    ("claude-opus-4-6", 1_000_000),
    ("claude-opus-4-7", 1_000_000),
    ("claude-opus-4-8", 1_000_000),
    ("claude-opus-5", 1_000_000),
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 272_000),
    ("deepseek", 1_000_000),
    ("gemini", 1_048_576),
)


# The shortest prefix a model caches, by substring of the model id with dots read as dashes (first match
# wins): a breakpoint on a shorter prefix is silently not written (providers' caching docs, 2026-11). Sonnet,
# the older Opus and OpenAI's automatic caching take 1,024.
MODEL_MIN_CACHEABLE_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-haiku-4-5", 4_096),
    ("claude-opus-4-5", 4_096),
    ("claude-opus-4-6", 4_096),
    ("claude-opus-4-7", 2_048),
    ("claude-opus-4-8", 1_024),
    ("claude-opus-5", 512),
    ("claude-3-5-haiku", 2_048),
    ("claude-3-haiku", 2_048),
    ("gemini-2-5", 2_048),
    ("gemini-3", 4_096),
)
DEFAULT_MIN_CACHEABLE_TOKENS = 1_024


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
