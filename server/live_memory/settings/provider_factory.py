"""Provider construction: pick the adapter for the configured profile and credential.

`build_provider()` returns None (never raises) when no credential exists, so the server still
starts and `/health` answers; questions then explain which variables to set.
"""

from __future__ import annotations

from live_memory.constants import OAUTH_BETA_HEADER
from live_memory.core.messages import ProviderInfo
from live_memory.providers.anthropic import AnthropicProvider
from live_memory.providers.base import ChatProvider
from live_memory.providers.oauth import SubscriptionCredential
from live_memory.providers.openai_compat import OpenAICompatProvider
from live_memory.settings.config import Settings


def provider_info(settings: Settings, *, subscription: bool = False) -> ProviderInfo:
    return ProviderInfo(
        name=settings.profile.name,
        protocol=settings.profile.protocol,
        model=settings.model,
        base_url=settings.base_url,
        explicit_cache_control=settings.profile.cache_style == "explicit",
        subscription=subscription,
        prewarm_with_zero_tokens=settings.profile.cache_style == "explicit",
        routes_by_cache_key=settings.profile.routes_by_cache_key,
    )


def build_provider(settings: Settings) -> ChatProvider | None:
    profile = settings.profile
    if profile.protocol == "openai":
        if not settings.api_key and profile.needs_key:
            return None
        return OpenAICompatProvider(provider_info(settings), api_key=settings.api_key)
    if settings.api_key:
        if settings.api_key_source == "env ANTHROPIC_AUTH_TOKEN":  # a bearer token, not an x-api-key
            return AnthropicProvider(provider_info(settings), auth_token=settings.api_key)
        return AnthropicProvider(provider_info(settings), api_key=settings.api_key)
    if not settings.oauth:
        return None
    credential = SubscriptionCredential.discover(settings.env, settings.data_dir, refresh=settings.oauth_refresh)
    if credential is None:
        return None
    return AnthropicProvider(
        provider_info(settings, subscription=True),
        credentials=credential,
        extra_headers={"anthropic-beta": OAUTH_BETA_HEADER},
    )
