"""Logging: stderr (journald-friendly: no timestamps when systemd captures it) plus an optional
rotating file. One line per question; never file contents or secrets (only paths and figures).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from live_memory.constants import LOG_FILE_BACKUPS, LOG_FILE_MAX_BYTES, LOG_REPEAT_BURST, LOG_REPEAT_WINDOW_S
from live_memory.settings.options import LogLevel

PLAIN = "%(levelname)s %(name)s: %(message)s"
STAMPED = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUESTION_LOGGER = "live_memory.questions"


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Log files hold workspace paths and questions: each new file is created 0600."""

    def _open(self):  # type: ignore[no-untyped-def]
        stream = super()._open()
        os.chmod(self.baseFilename, 0o600)
        return stream


class RepeatFilter(logging.Filter):
    """Lets the first `burst` records with the same logger, level and message template through per
    `window_s`, then counts the rest; the first one let through in a later window says how many were
    dropped. Out of file descriptors, the same accept error with its traceback once filled the log at
    6-13 MB/s."""

    def __init__(
        self,
        burst: int = LOG_REPEAT_BURST,
        window_s: float = LOG_REPEAT_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window_s = window_s
        self.clock = clock
        self._lock = threading.Lock()  # records arrive from worker threads too
        # key -> [window start, records let through in it, records dropped in it]
        self._seen: dict[tuple[str, int, str], list[float]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        verdict = getattr(record, "_repeat_verdict", None)  # one record can pass several handlers
        if verdict is not None:
            return bool(verdict)
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        with self._lock:
            entry = self._seen.get(key)
            dropped = 0
            if entry is None or now - entry[0] >= self.window_s:
                dropped = int(entry[2]) if entry is not None else 0
                entry = self._seen[key] = [now, 0, 0]
                if len(self._seen) > 1024:  # forget the oldest keys; memory stays bounded
                    for stale in [k for k, v in self._seen.items() if now - v[0] >= self.window_s]:
                        del self._seen[stale]
            verdict = entry[1] < self.burst
            entry[1 if verdict else 2] += 1
        if verdict and dropped:
            record.msg = (
                f"{record.getMessage()} ({dropped} more like this in the last {self.window_s:.0f} s were not logged)"
            )
            record.args = None
        record._repeat_verdict = verdict
        return verdict


def configure_logging(level: LogLevel, log_file: str = "", env: Mapping[str, str] | None = None) -> None:
    env = os.environ if env is None else env
    root = logging.getLogger()
    root.setLevel(level.upper())
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    stderr = logging.StreamHandler()
    # journald stamps each line itself; a second timestamp is noise.
    stderr.setFormatter(logging.Formatter(PLAIN if env.get("JOURNAL_STREAM") else STAMPED))
    repeat = RepeatFilter()
    stderr.addFilter(repeat)
    root.addHandler(stderr)
    # asyncio's own accept errors and uvicorn's error log are filtered too (uvicorn's logger has its own handler).
    for name in ("asyncio", "uvicorn.error"):
        logging.getLogger(name).filters[:] = [
            f for f in logging.getLogger(name).filters if not isinstance(f, RepeatFilter)
        ]
        logging.getLogger(name).addFilter(repeat)
    if log_file:
        path = Path(log_file).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # private from its first byte
        os.chmod(path, 0o600)
        rotating = PrivateRotatingFileHandler(
            path, maxBytes=LOG_FILE_MAX_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8"
        )
        rotating.setFormatter(logging.Formatter(STAMPED))
        rotating.addFilter(repeat)
        root.addHandler(rotating)
    # Request lines from HTTP clients would repeat every provider call; keep them at debug.
    for noisy in ("httpx2", "httpcore2", "anthropic", "openai", "watchfiles"):
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
