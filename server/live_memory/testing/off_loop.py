"""Blocking test setup (loading settings, building an app, writing fixtures) kept off the event loop.

The blocking-call check fails any test whose event loop runs the service's blocking code; a test
helper called from an async test runs that setup in a worker thread, as the service itself would."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def off_loop(function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)`, run in a worker thread when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return function(*args, **kwargs)
    with ThreadPoolExecutor(1, thread_name_prefix="test-setup") as pool:
        return pool.submit(function, *args, **kwargs).result(timeout=60)
