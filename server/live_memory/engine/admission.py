"""Who may run now, per workspace: questions (serial FIFO or parallel up to N) and the summarizer.

`Admission`: callers beyond the running limit wait in FIFO order; a bounded number may wait, and
beyond that the caller is told at once to retry later. Different workspaces have separate
admissions, so they never wait on each other. Cancellation while waiting (or right after being
granted) never leaks a slot. A reload hands in new limits with `reconfigure()`, which wakes the
waiters a raised limit now admits.

`DistillGate`: the per-workspace summarizer reservation shared by every fork of that workspace.
The reservation is taken before the summarizer is awaited, so racing forks see it and shed instead.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from live_memory.constants import BUSY_RETRY_AFTER_S
from live_memory.core.errors import BusyError
from live_memory.settings.config import Settings
from live_memory.settings.options import Concurrency


@dataclass(frozen=True)
class AdmissionLimits:
    mode: Concurrency
    max_parallel: int
    max_waiting: int
    retry_after_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> AdmissionLimits:
        return cls(
            mode=settings.concurrency,
            max_parallel=settings.max_parallel_queries,
            max_waiting=settings.max_waiting_queries,
            retry_after_s=BUSY_RETRY_AFTER_S,
        )

    @property
    def running_limit(self) -> int:
        return 1 if self.mode == "serial" else self.max_parallel


class Admission:
    def __init__(self, limits: AdmissionLimits) -> None:
        self.limits = limits
        self.running = 0
        self.closed = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def reconfigure(self, limits: AdmissionLimits) -> None:
        """Adopt new limits (hot reload); waiters a raised limit admits start at once."""
        self.limits = limits
        self._grant()

    def close(self) -> None:
        """Stop admitting (shutdown); questions already running finish."""
        self.closed = True

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        if self.closed:
            raise BusyError("Live Memory is shutting down; retry in a few seconds", self.limits.retry_after_s)
        if self.running < self.limits.running_limit and not self._waiters:
            self.running += 1
        else:
            await self._wait()
        try:
            yield
        finally:
            self.running -= 1
            self._grant()

    async def _wait(self) -> None:
        limits = self.limits
        if len(self._waiters) >= limits.max_waiting:
            raise BusyError(
                f"Live Memory is busy with {self.running} question(s) for this workspace and "
                f"{len(self._waiters)} waiting; retry in {limits.retry_after_s:.0f} s",
                limits.retry_after_s,
            )
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.running -= 1  # granted and cancelled in the same instant: hand the slot on
                self._grant()
            else:
                self._waiters.remove(waiter)
            raise

    def _grant(self) -> None:
        while self._waiters and self.running < self.limits.running_limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.running += 1
                waiter.set_result(None)


class DistillGate:
    def __init__(self, min_interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.busy = False
        self.last_started: float | None = None
        self.qa_failed_at: float | None = None

    def try_reserve(self) -> bool:
        now = self.clock()
        if self.busy or (self.last_started is not None and now - self.last_started < self.min_interval_s):
            return False
        self.busy = True
        self.last_started = now
        return True

    def release(self) -> None:
        self.busy = False

    def qa_retry_allowed(self) -> bool:
        return self.qa_failed_at is None or self.clock() - self.qa_failed_at >= self.min_interval_s
