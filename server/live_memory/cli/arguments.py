"""Argument types of the `live-memory` command: a bad value is refused by argparse naming the option it came
from (`--port`, not LIVE_MEMORY_PORT) and the values it takes."""

from __future__ import annotations

import argparse
import math

from live_memory.constants import MAX_ANSWER_TOKENS


def port_number(raw: str) -> int:
    """`--port`: a TCP port (1-65535), named as the option it came from when it is not one."""
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not 0 < port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {raw!r}")
    return port


def answer_tokens(raw: str) -> int:
    """`--max-answer-tokens`: 0 (the server's max_answer_tokens) or a positive count."""
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_ANSWER_TOKENS:
        raise argparse.ArgumentTypeError(f"must be 0 (the server's default) to {MAX_ANSWER_TOKENS}, got {raw!r}")
    return value


def wait_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, got {raw!r}")
    return value
