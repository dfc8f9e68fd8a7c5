"""Translate an endpoint's failure into the one exception tree (`live_memory.core.errors`).

Both adapters funnel HTTP statuses through `from_status()`, so the two protocols fail alike:
429 with retry-after is retryable and 429 without it is a spend cap; 529/503/5xx are transient;
prompt-too-long carries the parsed limit so compaction knows how far to shrink.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from live_memory.core.errors import (
    AuthError,
    BadRequestError,
    OverloadedError,
    PromptTooLongError,
    ProviderError,
    RateLimitedError,
)

_ANTHROPIC_TOO_LONG = re.compile(r"(\d+)\s+tokens\s*>\s*(\d+)\s+maximum", re.IGNORECASE)
_OPENAI_TOO_LONG = re.compile(r"maximum context length is\s+(\d+)", re.IGNORECASE)
_TOO_LONG_MARKERS = ("prompt is too long", "context_length_exceeded", "maximum context length", "too long")


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    for name in ("retry-after", "retry-after-ms"):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            return None
        return value / 1000.0 if name.endswith("-ms") else value
    return None


def parse_context_limit(message: str) -> int | None:
    for pattern, group in ((_ANTHROPIC_TOO_LONG, 2), (_OPENAI_TOO_LONG, 1)):
        match = pattern.search(message)
        if match:
            return int(match.group(group))
    return None


def is_prompt_too_long(status: int, message: str, code: str | None) -> bool:
    if code == "context_length_exceeded":
        return True
    lowered = message.lower()
    return status in (400, 413) and any(marker in lowered for marker in _TOO_LONG_MARKERS)


def from_status(
    *,
    provider: str,
    status: int,
    message: str,
    headers: Mapping[str, str],
    code: str | None = None,
    subscription: bool = False,
) -> ProviderError:
    """Build the exception for an HTTP error answer; messages say what the user can do."""
    detail = message.strip() or f"HTTP {status}"
    if is_prompt_too_long(status, detail, code):
        return PromptTooLongError(
            f"{provider}: prompt too long ({detail})", status=status, limit_tokens=parse_context_limit(detail)
        )
    if status in (401, 403):
        return AuthError(_auth_advice(provider, status, detail, subscription), status=status)
    if status == 402:
        return RateLimitedError(f"{provider}: billing problem ({detail}); check the account balance.", status=402)
    if status == 429:
        retry_after = parse_retry_after(headers)
        if retry_after is None:
            return RateLimitedError(
                f"{provider}: rate or spend limit reached ({detail}); no retry-after was given, "
                "so this will not clear by itself soon.",
                status=429,
            )
        return RateLimitedError(
            f"{provider}: rate limited ({detail}); retry after {retry_after:g}s.",
            status=429,
            retry_after_s=retry_after,
        )
    if status == 529 or status >= 500:
        return OverloadedError(f"{provider}: temporarily unavailable, HTTP {status} ({detail})", status=status)
    return BadRequestError(f"{provider}: request rejected, HTTP {status} ({detail})", status=status)


def _auth_advice(provider: str, status: int, detail: str, subscription: bool) -> str:
    if subscription:
        return (
            f"{provider}: the Claude subscription credential was rejected (HTTP {status}: {detail}). "
            "Configure an API key instead: set LIVE_MEMORY_API_KEY (or ANTHROPIC_API_KEY) in the "
            "server's environment, or run `live-memory config set api_key=...`; set LIVE_MEMORY_OAUTH=0 "
            "to stop trying the subscription credential."
        )
    return (
        f"{provider}: the API key was rejected (HTTP {status}: {detail}). Check LIVE_MEMORY_API_KEY "
        "(or the provider's own key variable) in the server's environment."
    )


def unreachable(provider: str, url: str, cause: str) -> str:
    """The message for an endpoint that could not be reached: which URL, and which option points there."""
    return (
        f"{provider}: connection failed to {url} ({cause}); check that the endpoint is up and that the server's "
        "LIVE_MEMORY_BASE_URL (or the provider's own base URL variable) points at it"
    )


def timed_out(provider: str, url: str) -> str:
    return f"{provider}: request to {url} timed out"
