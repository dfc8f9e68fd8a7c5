"""Logging: private log files, a repeat filter that keeps an error storm out of the log, one
configuration that can be applied again (reload) without doubling anything, and the per-question line."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from live_memory.settings.logging_setup import (
    PLAIN,
    QUESTION_LOGGER,
    STAMPED,
    PrivateRotatingFileHandler,
    RepeatFilter,
    configure_logging,
    log_question,
)

_TOUCHED = ("", "asyncio", "uvicorn.error", "httpx", "anthropic", "openai", "watchfiles", "httpcore", "httpx2")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def restored_logging() -> Iterator[logging.Logger]:
    """configure_logging changes process-wide loggers: put every one it touches back afterwards."""
    saved = {
        name: (
            logging.getLogger(name).level,
            list(logging.getLogger(name).handlers),
            list(logging.getLogger(name).filters),
        )
        for name in _TOUCHED
    }
    yield logging.getLogger()
    for name, (level, handlers, filters) in saved.items():
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if handler not in handlers:
                handler.close()
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.filters[:] = filters


def record(msg: str, *args: object, name: str = "asyncio", level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_repeated_log_lines_are_let_through_a_few_times_a_minute_then_counted() -> None:
    now = [1000.0]
    repeat = RepeatFilter(burst=3, window_s=60.0, clock=lambda: now[0])

    def record(msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, args, None)

    passed = [repeat.filter(record("accept failed: %s", "Too many open files")) for _ in range(10)]
    assert passed == [True] * 3 + [False] * 7
    assert repeat.filter(record("another message"))  # a different message has its own budget
    now[0] += 61
    summary = record("accept failed: %s", "Too many open files")
    assert repeat.filter(summary)
    assert "(7 more like this in the last 60 s were not logged)" in summary.getMessage()


def test_log_files_are_private_also_after_a_rotation(tmp_path: Path) -> None:
    log = tmp_path / "live-memory.log"
    previous = os.umask(0o022)
    try:
        handler = PrivateRotatingFileHandler(log, maxBytes=200, backupCount=2, encoding="utf-8")
        try:
            for index in range(20):
                handler.emit(logging.makeLogRecord({"msg": f"question {index} about /home/someone/repo"}))
        finally:
            handler.close()
    finally:
        os.umask(previous)
    files = sorted(tmp_path.glob("live-memory.log*"))
    assert len(files) == 3 and all(mode_of(f) == 0o600 for f in files)


def test_one_record_seen_by_several_handlers_is_counted_once() -> None:
    repeat = RepeatFilter(burst=1, window_s=60.0, clock=lambda: 0.0)
    first = record("accept failed")
    assert repeat.filter(first) and repeat.filter(first)  # stderr and the log file both pass it
    assert not repeat.filter(record("accept failed"))


def test_the_same_message_at_another_level_or_logger_has_its_own_budget() -> None:
    repeat = RepeatFilter(burst=1, window_s=60.0, clock=lambda: 0.0)
    assert repeat.filter(record("boom"))
    assert repeat.filter(record("boom", level=logging.WARNING))
    assert repeat.filter(record("boom", name="uvicorn.error"))
    assert not repeat.filter(record("boom"))


def test_a_quiet_window_lets_the_message_through_again_without_a_summary() -> None:
    now = [0.0]
    repeat = RepeatFilter(burst=1, window_s=10.0, clock=lambda: now[0])
    assert repeat.filter(record("tick %d", 1))
    now[0] = 10.0
    again = record("tick %d", 2)
    assert repeat.filter(again)
    assert again.getMessage() == "tick 2"  # nothing was dropped, so nothing is said


def test_a_log_file_is_private_from_its_first_byte_and_lines_are_stamped(
    tmp_path: Path, restored_logging: logging.Logger
) -> None:
    log = tmp_path / "logs" / "live-memory.log"
    previous = os.umask(0o022)
    try:
        configure_logging("info", str(log), env={})
    finally:
        os.umask(previous)
    assert mode_of(log) == 0o600
    files = [h for h in restored_logging.handlers if isinstance(h, PrivateRotatingFileHandler)]
    assert len(files) == 1 and files[0].formatter is not None and files[0].formatter._fmt == STAMPED
    logging.getLogger("live_memory.test").info("hello %s", "there")
    files[0].flush()
    assert log.read_text().rstrip().endswith("INFO live_memory.test: hello there")


def test_under_journald_stderr_lines_carry_no_second_timestamp(restored_logging: logging.Logger) -> None:
    configure_logging("warning", env={"JOURNAL_STREAM": "8:1234"})
    (stderr,) = restored_logging.handlers
    assert stderr.formatter is not None and stderr.formatter._fmt == PLAIN
    assert restored_logging.level == logging.WARNING
    configure_logging("info", env={})
    (stderr,) = restored_logging.handlers
    assert stderr.formatter is not None and stderr.formatter._fmt == STAMPED


def test_configuring_again_replaces_handlers_and_filters_instead_of_adding_more(
    restored_logging: logging.Logger,
) -> None:
    for _ in range(3):
        configure_logging("info", env={})
    assert len(restored_logging.handlers) == 1
    for name in ("asyncio", "uvicorn.error"):
        assert sum(isinstance(f, RepeatFilter) for f in logging.getLogger(name).filters) == 1


def test_http_client_request_lines_stay_out_of_an_info_log(restored_logging: logging.Logger) -> None:
    configure_logging("info", env={})
    for name in ("httpx2", "httpcore2", "anthropic", "openai", "watchfiles"):
        assert logging.getLogger(name).level == logging.WARNING, name
    configure_logging("error", env={})
    assert logging.getLogger("httpx2").level == logging.ERROR


def test_each_question_is_one_line_of_figures(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=QUESTION_LOGGER):
        log_question(
            workspace="a1b2c3",
            latency_s=1.234,
            prompt_tokens=10_000,
            output_tokens=150,
            cache_read_tokens=9_000,
            cost_usd=0.00321,
            outcome="ok",
        )
        log_question(
            workspace="a1b2c3",
            latency_s=0.5,
            prompt_tokens=0,
            output_tokens=0,
            cache_read_tokens=0,
            cost_usd=None,
            outcome="error",
        )
    assert [r.getMessage() for r in caplog.records] == [
        "question workspace=a1b2c3 latency=1.23s tokens=10000/150 cache_share=90% cost=$0.0032 outcome=ok",
        "question workspace=a1b2c3 latency=0.50s tokens=0/0 cache_share=0% cost=n/a outcome=error",
    ]
