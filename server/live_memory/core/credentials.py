"""Does this text hold a credential? Asked of every question, answer and fact before it may leave the machine.

Two nets, and a text caught by either stays here:
- Yelp's detect-secrets, line by line, with its default detectors and false-positive filters: AWS keys,
  URLs with a password (basic auth), Stripe (`sk_live_`, `rk_live_`), JWTs, private keys, GitHub, GitLab,
  Slack, npm, PyPI, OpenAI and other vendors' tokens, and `password=`/`secret:` assignments. Each line is
  read as a YAML file's line would be, where its keyword detector also catches unquoted values (`password=
  hunter2`). Its plugins' network verification is never called: nothing is sent anywhere.
- Our own rules, kept from before and widened: common key prefixes, private key headers, long runs of
  base64-like characters mixing case and digits, a URL's user info with a password (`redis://:pw@host`),
  and a standalone 40-character run shaped like an AWS secret access key.

Blocking (about half a millisecond a line): call it off the event loop. detect-secrets is imported on first
use, so a server without a team store never loads it.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable

_CREDENTIAL = re.compile(
    r"sk-[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    # A URL's user info with a password: scheme://user:password@host (the user may be empty).
    r"|[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:[^\s/@]{3,}@"
)
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
# An AWS secret access key: exactly 40 characters of base64, standing alone.
_AWS_SECRET_SHAPE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
MIN_SECRET_ENTROPY = 4.0  # bits per character: 40 random base64 characters have ~4.6
_SCANNED_AS = "shared.yaml"  # detect-secrets picks its keyword rules by file type: YAML's are the broadest


def looks_like_credential(text: str) -> bool:
    """Whether `text` (any number of lines) holds something either net takes for a credential."""
    return _ours(text) or _detect_secrets()(text.splitlines())


def _ours(text: str) -> bool:
    if _CREDENTIAL.search(text):
        return True
    for run in _TOKEN_LIKE.findall(text):
        digits = sum(c.isdigit() for c in run)
        if digits >= 4 and any(c.isupper() for c in run) and any(c.islower() for c in run):
            return True
    for run in _AWS_SECRET_SHAPE.findall(text):
        digits = sum(c.isdigit() for c in run)
        # Mixed case and digits, and not a long name: a slash or a plus (no identifier has one), or digits.
        shaped = any(c.isupper() for c in run) and any(c.islower() for c in run) and digits
        if shaped and ("/" in run or "+" in run or digits >= 3) and _entropy(run) >= MIN_SECRET_ENTROPY:
            return True
    return False


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


@functools.cache
def _detect_secrets() -> Callable[[Iterable[str]], bool]:
    """detect-secrets' line scan, loaded once. Its settings are process-wide: one scan at a time."""
    # Its documented entry points scan files on disk or a whole string as one secret; the line-based scan
    # behind them is what a file scan runs on each line (pinned to 1.5 in pyproject.toml, and the credential
    # corpus in tests/core/test_credentials.py fails if a release changes what it finds).
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    lock = threading.Lock()

    def scan(lines: Iterable[str]) -> bool:
        numbered = list(enumerate((line for line in lines if line.strip()), 1))
        if not numbered:
            return False
        with lock, default_settings():
            return any(True for _ in _process_line_based_plugins(numbered, filename=_SCANNED_AS))

    return scan
