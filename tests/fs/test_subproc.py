"""Bounded child processes: output cap, timeout and cancellation all kill the child (and its group)."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import warnings
from pathlib import Path

import pytest

from live_memory.fs.subproc import child_env, reaped, run_bounded


def _alive(pid: int) -> bool:
    """Whether pid is a live (non-zombie) process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z"


def _exit_event(pid: int) -> asyncio.Future[None]:
    """A future resolved when `pid` exits (a pidfd becomes readable then): no polling."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        done.set_result(None)
        return done
    except (AttributeError, OSError):
        pytest.skip("pidfd_open is unavailable on this kernel")

    def exited() -> None:
        loop.remove_reader(fd)
        os.close(fd)
        if not done.done():
            done.set_result(None)

    loop.add_reader(fd, exited)
    return done


async def _read_pids(fifo: Path) -> list[int]:
    """Wait (bounded) for the child to write its pids into the FIFO."""
    try:
        async with asyncio.timeout(20):
            text = await asyncio.to_thread(fifo.read_text)
    except TimeoutError:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # release the blocked reader thread
        raise
    return [int(p) for p in text.split()]


async def test_output_is_capped_and_the_child_killed(tmp_path: Path) -> None:
    script = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    result = await run_bounded([sys.executable, "-c", script], cwd=tmp_path, timeout_s=20, max_bytes=1000)
    assert result.truncated and not result.timed_out
    assert result.stdout == b"x" * 1000
    assert result.returncode is None


async def test_timeout_kills_a_silent_child(tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    # A shell child: it writes its pid within milliseconds of starting (an interpreter would take a good part of
    # the timeout, which then has to be longer), then `sleep` replaces it under the same pid.
    script = 'echo $$ > "$1"; exec sleep 60'
    argv = ["sh", "-c", script, "sh", str(fifo)]
    task = asyncio.create_task(run_bounded(argv, cwd=tmp_path, timeout_s=0.3, max_bytes=1000))
    (pid,) = await _read_pids(fifo)
    result = await task
    assert result.timed_out and result.returncode is None
    assert not _alive(pid)


def child_with_a_helper(fifo: Path) -> str:
    """A child that starts a helper of its own (same group), writes both pids to `fifo`, then waits."""
    return (
        "import os, subprocess, sys, time\n"
        "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(fifo)!r}, 'w').write(f'{{os.getpid()}} {{helper.pid}}')\n"
        "time.sleep(60)"
    )


async def test_cancellation_kills_the_child_and_its_helpers_then_propagates(tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    script = child_with_a_helper(fifo)
    task = asyncio.create_task(run_bounded([sys.executable, "-c", script], cwd=tmp_path, timeout_s=60, max_bytes=1000))
    pids = await _read_pids(fifo)
    helper_exit = _exit_event(pids[1])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not _alive(pids[0])
    async with asyncio.timeout(10):  # killed with the group (its reaping is init's job)
        await helper_exit


def _read_pids_blocking(fifo: Path, within_s: float = 20.0) -> list[int]:
    """Read the child's pids on this thread, the event loop's (bounded): nothing else runs on the loop meanwhile."""
    text: list[str] = []
    reader = threading.Thread(target=lambda: text.append(fifo.read_text()), daemon=True)
    reader.start()
    reader.join(within_s)
    if not text:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # release the blocked reader thread
        raise AssertionError(f"the child wrote no pids within {within_s} s")
    return [int(p) for p in text[0].split()]


async def test_a_cancel_while_the_child_starts_kills_it_and_its_helpers_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    script = child_with_a_helper(fifo)
    task = asyncio.create_task(run_bounded([sys.executable, "-c", script], cwd=tmp_path, timeout_s=60, max_bytes=1000))
    # Two steps of the loop: the child is started, its pipes not yet connected (that takes more steps).
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    pids = _read_pids_blocking(fifo)  # the helper runs (holding the child's pipes); the start is not complete
    helper_exit = _exit_event(pids[1])
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=10)  # not once the helper's minute is up
    assert task in done and task.cancelled()
    assert not _alive(pids[0])
    async with asyncio.timeout(10):
        await helper_exit


async def test_a_start_cancelled_again_at_every_step_still_has_its_child_killed_and_waited_for(tmp_path: Path) -> None:
    # A task group cancels its task again at every await: the start must not be cut half-way, leaving a child
    # that nobody waits for (a ResourceWarning when its handle is collected, after the loop is gone).
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    task = asyncio.create_task(
        run_bounded([sys.executable, "-c", child_with_a_helper(fifo)], cwd=tmp_path, timeout_s=60, max_bytes=1000)
    )
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    pids = _read_pids_blocking(fifo)
    async with asyncio.timeout(10):
        while not task.done():
            task.cancel()
            await asyncio.sleep(0)
    assert task.cancelled()
    await reaped(10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not _alive(pids[0])


async def test_exit_status_stdout_and_stderr_are_reported(tmp_path: Path) -> None:
    script = "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)"
    result = await run_bounded([sys.executable, "-c", script], cwd=tmp_path, timeout_s=20, max_bytes=1000)
    assert result.returncode == 3
    assert result.stdout == b"out\n"
    assert result.stderr_text() == "err"


async def test_a_missing_program_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await run_bounded(["/nonexistent/program"], cwd=tmp_path, timeout_s=5, max_bytes=10)


def test_child_env_drops_git_redirection_and_disables_pagers_and_locks() -> None:
    env = child_env({"PATH": "/bin", "GIT_DIR": "/elsewhere", "GIT_INDEX_FILE": "x", "RIPGREP_CONFIG_PATH": "/rc"})
    assert "GIT_DIR" not in env and "GIT_INDEX_FILE" not in env and "RIPGREP_CONFIG_PATH" not in env
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and env["GIT_PAGER"] == "cat" and env["PATH"] == "/bin"
