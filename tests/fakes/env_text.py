"""How a user writes an option's value in the environment (LIVE_MEMORY_* variables)."""

from __future__ import annotations


def env_text(value: object) -> str:
    """How a user writes `value` in the environment."""
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
