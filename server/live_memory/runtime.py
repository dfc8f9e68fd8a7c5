"""The settings snapshot and the provider built from it, handed down as one immutable value.

A question, a compaction or a keep-warm ping takes the current `Runtime` once and uses it to the end,
so a hot reload that lands meanwhile never mixes old and new values within one piece of work.
"""

from __future__ import annotations

from dataclasses import dataclass

from live_memory.config import Settings
from live_memory.providers.base import ChatProvider


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    provider: ChatProvider | None  # None: no credential was found (questions get a clear error)
