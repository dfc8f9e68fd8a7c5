"""The background-question registry: results are handed out once, expire, are bounded, and end at shutdown."""

from __future__ import annotations

import anyio
import pytest

from live_memory.core.errors import BusyError, InputError
from live_memory.http.jobs import RUNNING, JobRegistry


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_finished_job_is_handed_out_once_then_forgotten() -> None:
    jobs = JobRegistry(ttl_s=60, max_jobs=4)
    done = anyio.Event()

    async def work() -> str:
        await done.wait()
        return "the answer"

    async with anyio.create_task_group() as tasks:
        jobs.attach(tasks)
        job_id = jobs.submit(work)
        assert jobs.result(job_id) == (RUNNING, False)
        done.set()
    assert jobs.result(job_id) == ("the answer", False)
    with pytest.raises(InputError, match="unknown job id"):
        jobs.result(job_id)


async def test_failures_become_the_jobs_error_text_without_internals() -> None:
    jobs = JobRegistry(ttl_s=60, max_jobs=4)

    async def refused() -> str:
        raise InputError("the workspace is outside the allowed roots")

    async def broken() -> str:
        raise RuntimeError("secret internals")

    async with anyio.create_task_group() as tasks:
        jobs.attach(tasks)
        first, second = jobs.submit(refused), jobs.submit(broken)
    assert jobs.result(first) == ("the workspace is outside the allowed roots", True)
    text, failed = jobs.result(second)
    assert failed and "internal error" in text and "secret" not in text


async def test_unclaimed_results_expire_and_the_registry_is_bounded() -> None:
    clock = Clock()
    jobs = JobRegistry(ttl_s=10, max_jobs=2, clock=clock)

    async def quick() -> str:
        return "ok"

    async with anyio.create_task_group() as tasks:
        jobs.attach(tasks)
        jobs.submit(quick)
        jobs.submit(quick)
    with pytest.raises(BusyError, match="too many pending jobs"):
        jobs.submit(quick)
    clock.now += 11  # both results unclaimed past their time to live
    assert jobs.sweep() == 2 and len(jobs) == 0


async def test_shutdown_cancels_running_jobs_with_a_clear_message() -> None:
    jobs = JobRegistry(ttl_s=60, max_jobs=4)
    started = anyio.Event()

    async def forever() -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    with anyio.fail_after(5):
        job_id = jobs.submit(forever)  # before attach(): held by the registry itself
        await started.wait()
        await jobs.aclose()
    text, failed = jobs.result(job_id)
    assert failed and "cancelled" in text
