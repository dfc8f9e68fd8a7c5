"""Tool-argument coercion: canonical names, legacy aliases, types, ranges, and messages that say how
to fix a call. Lenient where a model's intent is unambiguous ("true", "20"), strict otherwise.

Must never: raise anything but ArgumentError for a bad argument, or touch the filesystem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from live_memory.core.errors import ArgumentError

__all__ = ["ArgumentError", "Arguments"]


class Arguments:
    """One call's arguments. `aliases` maps a legacy name to its canonical name (canonical wins)."""

    def __init__(self, tool: str, raw: Mapping[str, Any], *, known: Iterable[str], aliases: Mapping[str, str]) -> None:
        if not isinstance(raw, Mapping):
            raise ArgumentError(f"{tool}: arguments must be a JSON object, got {type(raw).__name__}")
        self.tool = tool
        self._values: dict[str, Any] = {}
        known_set = set(known)
        self.ignored: list[str] = []
        for key, value in raw.items():
            if key in known_set:
                self._values[key] = value
        for key, value in raw.items():
            canonical = aliases.get(key)
            if canonical is not None:
                self._values.setdefault(canonical, value)
            elif key not in known_set:
                self.ignored.append(str(key))

    def _present(self, name: str) -> Any:
        value = self._values.get(name)
        return None if value is None or value == "" else value

    def has(self, name: str) -> bool:
        """Whether the argument was given (null and "" count as absent)."""
        return self._present(name) is not None

    def string(self, name: str, *, required: bool = False, example: str = "") -> str | None:
        value = self._present(name)
        if value is None:
            if required:
                hint = f" (e.g. {example})" if example else ""
                raise ArgumentError(f"{self.tool}: '{name}' is required{hint}")
            return None
        if not isinstance(value, str):
            raise ArgumentError(f"{self.tool}: '{name}' must be a string, got {type(value).__name__}")
        return value

    def strings(self, name: str) -> list[str]:
        """A list of strings (one string counts as a list of one); absent: empty."""
        value = self._present(name)
        if value is None:
            return []
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ArgumentError(f"{self.tool}: '{name}' must be a list of strings, got {type(value).__name__}")
        for at, item in enumerate(items):
            if not isinstance(item, str):
                raise ArgumentError(
                    f"{self.tool}: '{name}' must be a list of strings, got {type(item).__name__} at position {at}"
                )
        return items

    def integer(self, name: str, *, default: int, minimum: int, maximum: int | None = None) -> int:
        value = self._present(name)
        if value is None:
            return default
        if isinstance(value, bool):
            raise ArgumentError(f"{self.tool}: '{name}' must be an integer, got a boolean")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise ArgumentError(f"{self.tool}: '{name}' must be an integer, got {value!r}") from None
        if not isinstance(value, int):
            raise ArgumentError(f"{self.tool}: '{name}' must be an integer, got {type(value).__name__}")
        if value < minimum:
            raise ArgumentError(f"{self.tool}: '{name}' must be at least {minimum}, got {value}")
        return value if maximum is None else min(value, maximum)

    def boolean(self, name: str, *, default: bool) -> bool:
        value = self._values.get(name)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise ArgumentError(f"{self.tool}: '{name}' must be true or false, got {value!r}")

    def choice(self, name: str, choices: tuple[str, ...], *, default: str) -> str:
        value = self._present(name)
        if value is None:
            return default
        if not isinstance(value, str) or value not in choices:
            options = ", ".join(f"'{c}'" for c in choices)
            raise ArgumentError(f"{self.tool}: '{name}' must be one of {options}, got {value!r}")
        return value

    def ignored_note(self) -> str:
        """A trailing note naming parameters this tool does not support (they were ignored)."""
        if not self.ignored:
            return ""
        names = ", ".join(sorted(self.ignored))
        return f"\n(note: ignored unsupported parameter(s): {names})"
