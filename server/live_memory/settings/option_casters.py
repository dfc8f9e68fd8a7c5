"""Strict casters for option values: text (the environment, `config set`) or a JSON value (config.json) -> the
declared type. Each raises ValueError saying what it expected; the loader adds the key and the source."""

from __future__ import annotations

import math
import os
from collections.abc import Callable

Caster = Callable[[object], object]


def as_bool(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true/false (1/0), got {raw!r}")


def as_int(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise ValueError(f"expected an integer, got {raw!r}")
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"expected an integer, got {raw!r}") from None


def as_float(raw: object) -> float:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(f"expected a number, got {raw!r}")
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValueError(f"expected a number, got {raw!r}") from None
    if not math.isfinite(value):  # nan passes every bound check, inf every lower one
        raise ValueError(f"expected a finite number, got {raw!r}")
    return value


def as_str(raw: object) -> str:
    if not isinstance(raw, str | int | float) or isinstance(raw, bool):
        raise ValueError(f"expected a string, got {raw!r}")
    return str(raw).strip()


def as_list(raw: object) -> tuple[str, ...]:
    """Lists come as JSON arrays in config.json and comma- or path-separated strings in env."""
    if isinstance(raw, list | tuple):
        if not all(isinstance(x, str) for x in raw):
            raise ValueError(f"expected a list of strings, got {raw!r}")
        items = [x.strip() for x in raw]
    elif isinstance(raw, str):
        separator = "," if "," in raw else os.pathsep
        items = [x.strip() for x in raw.split(separator)]
    else:
        raise ValueError(f"expected a list of strings, got {raw!r}")
    return tuple(x for x in items if x)


def choice(allowed: tuple[str, ...]) -> Caster:
    def cast(raw: object) -> str:
        value = as_str(raw).lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {raw!r}")
        return value

    return cast


def bounded(caster: Caster, low: float | None, high: float | None) -> Caster:
    def cast(raw: object) -> object:
        value = caster(raw)
        if not isinstance(value, int | float):  # `options._row` only bounds int and float options
            raise TypeError(f"bounds apply to numbers, not {value!r}")
        if low is not None and value < low:
            raise ValueError(f"must be >= {low}, got {value}")
        if high is not None and value > high:
            raise ValueError(f"must be <= {high}, got {value}")
        return value

    return cast
