"""Argument types of the `live-memory` command: a bad value is refused by argparse naming the option it came
from (`--port`, not LIVE_MEMORY_PORT) and the values it takes."""

from __future__ import annotations

import argparse
import sys

from live_memory.constants import MAX_ANSWER_TOKENS


def _bounded(raw: str, cast: type[int] | type[float], low: float, high: float, what: str) -> float:
    try:
        value = cast(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be {what}, got {raw!r}")
    return value


def port_number(raw: str) -> int:
    """`--port`: a TCP port (1-65535)."""
    return int(_bounded(raw, int, 1, 65535, "a port number from 1 to 65535"))


def answer_tokens(raw: str) -> int:
    """`--max-answer-tokens`: 0 (the server's max_answer_tokens) or a positive count."""
    return int(_bounded(raw, int, 0, MAX_ANSWER_TOKENS, f"0 (the server's default) to {MAX_ANSWER_TOKENS}"))


def wait_seconds(raw: str) -> float:
    """`--wait`: seconds, 0 or more."""
    return _bounded(raw, float, 0.0, sys.float_info.max, "a number of seconds, 0 or more")
