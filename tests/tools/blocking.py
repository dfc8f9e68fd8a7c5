"""Bounding calls that could block forever on a FIFO: a test that would hang fails by its timeout
instead, and any reader left blocked in open() is released so no thread stays stuck."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

_T = TypeVar("_T")
TIMEOUT_S = 10.0


def release_readers(fifo: Path) -> None:
    """Open the FIFO for writing and close it: a reader blocked opening it gets EOF and returns."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ENOENT):  # no reader waiting, or gone
            return
        raise
    os.close(fd)


@contextlib.contextmanager
def releasing(*fifos: Path) -> Iterator[None]:
    """On exit, take these FIFOs out of the way and release whatever is blocked opening them: each is
    renamed aside first (later opens of its path fail at once instead of blocking), then opened for
    writing under its new name, then removed."""
    try:
        yield
    finally:
        for fifo in fifos:
            aside = fifo.with_name(fifo.name + ".released")
            try:
                os.rename(fifo, aside)
            except FileNotFoundError:
                continue
            release_readers(aside)
            os.unlink(aside)


def call_within(fn: Callable[[], _T], *fifos: Path, timeout_s: float = TIMEOUT_S) -> _T:
    """Run a blocking call in a daemon thread; fail the test if it has not returned in time."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed back to the test below
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    with releasing(*fifos):
        worker.start()
        worker.join(timeout_s)
        if worker.is_alive():
            pytest.fail(f"the call blocked for more than {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
