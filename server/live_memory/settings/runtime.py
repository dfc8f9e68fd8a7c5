"""The settings snapshot and the provider built from it, handed down as one immutable value.

A question, a compaction or a keep-warm ping takes the current `Runtime` once and uses it to the end,
so a hot reload that lands meanwhile never mixes old and new values within one piece of work.
"""

from __future__ import annotations

from dataclasses import dataclass

from live_memory.providers.base import ChatProvider
from live_memory.settings.config import Settings


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    provider: ChatProvider | None  # None: no credential was found (questions get a clear error)


def missing_credential_message(settings: Settings) -> str:
    """Why a runtime has no provider, and what to set: said by the answer path, the log and `doctor`."""
    profile = settings.profile
    native = " or ".join(profile.key_envs)
    hint = f" (or {native})" if native else ""
    oauth = (
        " No Claude Code subscription credential was found either."
        if profile.protocol == "anthropic" and settings.oauth
        else ""
    )
    return (
        f"Live Memory has no credential for provider {profile.name!r} at {settings.base_url}.{oauth} "
        f"Set LIVE_MEMORY_API_KEY{hint} in the server's environment (or `live-memory config set "
        "api_key=...`), or choose another provider with LIVE_MEMORY_PROVIDER "
        "(anthropic, openai, deepseek, openrouter, ollama, gateway), then restart or POST /reload."
    )
