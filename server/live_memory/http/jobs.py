"""Opt-in asynchronous questions (`LIVE_MEMORY_ASYNC_TOOLS`): submit now, collect the answer later.

MCP has no native background tool calls, so `ask_live_memory_submit` starts the question in a held
task and returns a job id; `ask_live_memory_result` returns the answer once (then forgets it) or
`[running]`. Finished jobs nobody collects are swept after a TTL; the number of jobs is bounded.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc

from live_memory.core.errors import BusyError, InputError, ReportedError

logger = logging.getLogger(__name__)

RUNNING = "[running]"


@dataclass
class Job:
    created_at: float
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    finished_at: float | None = None
    outcome: str | None = None
    failed: bool = False


class JobRegistry:
    """Jobs run in the task group given to `attach()` (the lifespan owns it); before that they are
    held here. Failures are logged and handed to the caller as the job's error text."""

    def __init__(self, *, ttl_s: float, max_jobs: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.max_jobs = max_jobs
        self.clock = clock
        self._jobs: dict[str, Job] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._held: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._jobs)

    def attach(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group

    def submit(self, work: Callable[[], Awaitable[str]]) -> str:
        self.sweep()
        if len(self._jobs) >= self.max_jobs:
            raise BusyError(f"too many pending jobs ({self.max_jobs}); collect results or retry later", 5.0)
        job_id = "job_" + secrets.token_urlsafe(12)
        job = Job(created_at=self.clock())
        self._jobs[job_id] = job
        if self._group is not None:
            self._group.start_soon(self._run, job_id, job, work, name=f"live-memory {job_id}")
        else:
            task = asyncio.get_running_loop().create_task(self._run(job_id, job, work), name=f"live-memory {job_id}")
            self._held.add(task)
            task.add_done_callback(self._held.discard)
        return job_id

    async def _run(self, job_id: str, job: Job, work: Callable[[], Awaitable[str]]) -> None:
        try:
            with job.scope:
                job.outcome = await work()
        except ReportedError as exc:
            job.outcome, job.failed = str(exc), True
        except Exception:
            logger.exception("background question %s failed", job_id)
            job.outcome, job.failed = "Live Memory hit an internal error answering this question", True
        finally:
            if job.outcome is None:  # cancelled (shutdown)
                job.outcome, job.failed = "the question was cancelled (server shutting down)", True
            job.finished_at = self.clock()

    def result(self, job_id: str) -> tuple[str, bool]:
        """(text, is_error); a finished job is handed out once and then forgotten."""
        self.sweep()
        job = self._jobs.get(job_id)
        if job is None:
            raise InputError(
                f"unknown job id {job_id!r} (results are collected once and expire after {self.ttl_s:.0f} s)"
            )
        if job.finished_at is None:
            return RUNNING, False
        del self._jobs[job_id]
        assert job.outcome is not None
        return job.outcome, job.failed

    def sweep(self) -> int:
        now = self.clock()
        expired = [k for k, j in self._jobs.items() if j.finished_at is not None and now - j.finished_at > self.ttl_s]
        for key in expired:
            del self._jobs[key]
        return len(expired)

    async def aclose(self) -> None:
        for job in self._jobs.values():
            job.scope.cancel()
        if self._held:
            await asyncio.gather(*self._held, return_exceptions=True)
