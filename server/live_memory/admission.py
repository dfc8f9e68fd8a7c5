"""Per-workspace admission of questions: serial (a FIFO of one) or parallel (up to N at once).

Callers beyond the running limit wait in FIFO order; a bounded number may wait, and beyond that
the caller is told at once to retry later. Different workspaces have separate admissions, so
they never wait on each other. Cancellation while waiting (or right after being granted) never
leaks a slot.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from live_memory.errors import BusyError


class Admission:
    def __init__(self, *, mode: str, max_parallel: int, max_waiting: int, retry_after_s: float) -> None:
        self.mode = mode
        self.max_parallel = max_parallel
        self.max_waiting = max_waiting
        self.retry_after_s = retry_after_s
        self.running = 0
        self.closed = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def limit(self) -> int:
        return 1 if self.mode == "serial" else self.max_parallel

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def close(self) -> None:
        """Stop admitting (shutdown); questions already running finish."""
        self.closed = True

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        if self.closed:
            raise BusyError("Live Memory is shutting down; retry in a few seconds", self.retry_after_s)
        if self.running < self.limit and not self._waiters:
            self.running += 1
        else:
            await self._wait()
        try:
            yield
        finally:
            self._release()

    async def _wait(self) -> None:
        if len(self._waiters) >= self.max_waiting:
            raise BusyError(
                f"Live Memory is busy with {self.running} question(s) for this workspace and "
                f"{len(self._waiters)} waiting; retry in {self.retry_after_s:.0f} s",
                self.retry_after_s,
            )
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release()  # granted and cancelled in the same instant: hand the slot on
            else:
                self._waiters.remove(waiter)
            raise

    def _release(self) -> None:
        self.running -= 1
        while self._waiters and self.running < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.running += 1
                waiter.set_result(None)
