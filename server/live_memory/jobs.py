"""Opt-in asynchronous questions (`LIVE_MEMORY_ASYNC_TOOLS`): submit now, collect the answer later.

MCP has no native background tool calls, so `ask_live_memory_submit` starts the question in a held
task and returns a job id; `ask_live_memory_result` returns the answer once (then forgets it) or
`[running]`. Finished jobs nobody collects are swept after a TTL; the number of jobs is bounded.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from live_memory.errors import BusyError, InputError, LiveMemoryError

RUNNING = "[running]"


@dataclass
class Job:
    task: asyncio.Task[str]
    created_at: float
    finished_at: float | None = None
    outcome: str | None = None
    failed: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class JobRegistry:
    def __init__(self, *, ttl_s: float, max_jobs: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.max_jobs = max_jobs
        self.clock = clock
        self._jobs: dict[str, Job] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def submit(self, work: Callable[[], Awaitable[str]]) -> str:
        self.sweep()
        if len(self._jobs) >= self.max_jobs:
            raise BusyError(f"too many pending jobs ({self.max_jobs}); collect results or retry later", 5.0)
        job_id = "job_" + secrets.token_urlsafe(12)

        async def run() -> str:
            return await work()

        task = asyncio.create_task(run(), name=f"live-memory {job_id}")
        job = Job(task=task, created_at=self.clock())
        self._jobs[job_id] = job
        task.add_done_callback(lambda t: self._finish(job, t))
        return job_id

    def _finish(self, job: Job, task: asyncio.Task[str]) -> None:
        job.finished_at = self.clock()
        if task.cancelled():
            job.outcome, job.failed = "the question was cancelled (server shutting down)", True
        elif isinstance(task.exception(), LiveMemoryError):
            job.outcome, job.failed = str(task.exception()), True
        elif task.exception() is not None:
            job.outcome, job.failed = "Live Memory hit an internal error answering this question", True
        else:
            job.outcome = task.result()
        job.done.set()

    def result(self, job_id: str) -> tuple[str, bool]:
        """(text, is_error); a finished job is handed out once and then forgotten."""
        self.sweep()
        job = self._jobs.get(job_id)
        if job is None:
            raise InputError(
                f"unknown job id {job_id!r} (results are collected once and expire after {self.ttl_s:.0f} s)"
            )
        if job.outcome is None:
            return RUNNING, False
        del self._jobs[job_id]
        return job.outcome, job.failed

    def sweep(self) -> int:
        now = self.clock()
        expired = [k for k, j in self._jobs.items() if j.finished_at is not None and now - j.finished_at > self.ttl_s]
        for key in expired:
            del self._jobs[key]
        return len(expired)

    async def aclose(self) -> None:
        for job in self._jobs.values():
            job.task.cancel()
        await asyncio.gather(*(j.task for j in self._jobs.values()), return_exceptions=True)
        self._jobs.clear()
