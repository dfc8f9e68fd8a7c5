"""Logging: stderr (journald-friendly: no timestamps when systemd captures it) plus an optional
rotating file. One line per question; never file contents or secrets (only paths and figures).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
from collections.abc import Mapping
from pathlib import Path

from live_memory.constants import LOG_FILE_BACKUPS, LOG_FILE_MAX_BYTES

PLAIN = "%(levelname)s %(name)s: %(message)s"
STAMPED = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUESTION_LOGGER = "live_memory.questions"


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Log files hold workspace paths and questions: each new file is created 0600."""

    def _open(self):  # type: ignore[no-untyped-def]
        stream = super()._open()
        os.chmod(self.baseFilename, 0o600)
        return stream


def configure_logging(level: str, log_file: str = "", env: Mapping[str, str] | None = None) -> None:
    env = os.environ if env is None else env
    root = logging.getLogger()
    root.setLevel(level.upper())
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    stderr = logging.StreamHandler()
    # journald stamps each line itself; a second timestamp is noise.
    stderr.setFormatter(logging.Formatter(PLAIN if env.get("JOURNAL_STREAM") else STAMPED))
    root.addHandler(stderr)
    if log_file:
        path = Path(log_file).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # private from its first byte
        os.chmod(path, 0o600)
        rotating = PrivateRotatingFileHandler(
            path, maxBytes=LOG_FILE_MAX_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8"
        )
        rotating.setFormatter(logging.Formatter(STAMPED))
        root.addHandler(rotating)
    # Request lines from HTTP clients would repeat every provider call; keep them at debug.
    for noisy in ("httpx", "httpx2", "httpcore", "anthropic", "openai", "watchfiles"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def log_question(
    *,
    workspace: str,
    latency_s: float,
    prompt_tokens: int,
    output_tokens: int,
    cache_read_tokens: int,
    cost_usd: float | None,
    outcome: str,
) -> None:
    share = cache_read_tokens / prompt_tokens if prompt_tokens else 0.0
    cost = "n/a" if cost_usd is None else f"${cost_usd:.4f}"
    logging.getLogger(QUESTION_LOGGER).info(
        "question workspace=%s latency=%.2fs tokens=%d/%d cache_share=%.0f%% cost=%s outcome=%s",
        workspace,
        latency_s,
        prompt_tokens,
        output_tokens,
        share * 100,
        cost,
        outcome,
    )
