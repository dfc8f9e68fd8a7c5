"""Provider construction: the configured profile and credential pick the adapter, and a missing
credential yields no provider (the server still starts) plus a message saying what to set."""

from __future__ import annotations

import asyncio
from pathlib import Path

from live_memory.providers.anthropic import AnthropicProvider
from live_memory.providers.base import ChatProvider
from live_memory.providers.openai_compat import OpenAICompatProvider
from live_memory.providers.profiles import PROFILES
from live_memory.settings.config import Settings, load_settings
from live_memory.settings.provider_factory import build_provider, provider_info
from live_memory.settings.runtime import missing_credential_message


def settings(tmp_path: Path, **env: str) -> Settings:
    return load_settings(env={"HOME": str(tmp_path), **env}, data_dir=tmp_path / "data")


async def build(tmp_path: Path, **env: str) -> ChatProvider | None:
    """Off the event loop, as the server does: loading settings and discovering credentials read files."""
    return await asyncio.to_thread(lambda: build_provider(settings(tmp_path, **env)))


async def built(tmp_path: Path, **env: str) -> ChatProvider:
    provider = await build(tmp_path, **env)
    assert provider is not None
    await provider.aclose()
    return provider


async def test_an_anthropic_key_builds_the_messages_adapter_with_breakpoints_and_prewarming(tmp_path: Path) -> None:
    provider = await built(tmp_path, LIVE_MEMORY_API_KEY="sk-ant-1")
    assert isinstance(provider, AnthropicProvider)
    info = provider.info
    assert (info.name, info.protocol, info.model, info.base_url) == (
        "anthropic",
        "anthropic",
        "claude-haiku-4-5",
        "https://api.anthropic.com",
    )
    assert info.explicit_cache_control and info.prewarm_with_zero_tokens
    assert not info.subscription and not info.routes_by_cache_key


async def test_anthropics_own_bearer_token_variable_is_accepted_as_the_credential(tmp_path: Path) -> None:
    provider = await built(tmp_path, ANTHROPIC_AUTH_TOKEN="tok-1", LIVE_MEMORY_OAUTH="0")
    assert isinstance(provider, AnthropicProvider)
    assert not provider.info.subscription


async def test_an_openai_key_builds_the_compatible_adapter_routing_by_cache_key(tmp_path: Path) -> None:
    provider = await built(tmp_path, LIVE_MEMORY_PROVIDER="openai", OPENAI_API_KEY="sk-1")
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.info.routes_by_cache_key
    assert not provider.info.explicit_cache_control and not provider.info.prewarm_with_zero_tokens


async def test_a_local_model_server_needs_no_key(tmp_path: Path) -> None:
    provider = await built(tmp_path, LIVE_MEMORY_PROVIDER="ollama")
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.info.base_url == "http://127.0.0.1:11434/v1"


async def test_no_key_for_a_hosted_openai_protocol_provider_builds_nothing(tmp_path: Path) -> None:
    assert await build(tmp_path, LIVE_MEMORY_PROVIDER="deepseek") is None


async def test_no_key_and_the_subscription_credential_turned_off_builds_nothing(tmp_path: Path) -> None:
    assert await build(tmp_path, LIVE_MEMORY_OAUTH="0") is None


async def test_no_key_and_no_subscription_credential_on_disk_builds_nothing(tmp_path: Path) -> None:
    assert await build(tmp_path) is None


def test_the_summary_of_the_endpoint_marks_subscription_billing(tmp_path: Path) -> None:
    configured = settings(tmp_path, LIVE_MEMORY_API_KEY="k", LIVE_MEMORY_MODEL="claude-sonnet-5")
    assert provider_info(configured, subscription=True).subscription
    assert provider_info(configured).model == "claude-sonnet-5"


def test_the_missing_credential_message_names_the_variables_and_every_provider(tmp_path: Path) -> None:
    message = missing_credential_message(settings(tmp_path, LIVE_MEMORY_PROVIDER="deepseek"))
    assert "no credential for provider 'deepseek' at https://api.deepseek.com." in message
    assert "Set LIVE_MEMORY_API_KEY (or DEEPSEEK_API_KEY)" in message
    assert "live-memory config set api_key=..." in message
    assert "(" + ", ".join(PROFILES) + ")" in message  # the list stays in step with the profiles
    assert "subscription" not in message


def test_the_missing_credential_message_mentions_the_subscription_only_where_it_was_tried(tmp_path: Path) -> None:
    tried = missing_credential_message(settings(tmp_path))
    assert "Set LIVE_MEMORY_API_KEY (or ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN)" in tried
    assert "No Claude Code subscription credential was found either." in tried
    not_tried = missing_credential_message(settings(tmp_path, LIVE_MEMORY_OAUTH="0"))
    assert "subscription" not in not_tried


def test_a_provider_without_native_key_variables_gets_no_empty_hint(tmp_path: Path) -> None:
    message = missing_credential_message(
        settings(tmp_path, LIVE_MEMORY_PROVIDER="gateway", LIVE_MEMORY_BASE_URL="https://gw.test")
    )
    assert "Set LIVE_MEMORY_API_KEY in the server's environment" in message
    assert "()" not in message
