"""Bounded child processes for the tools (ripgrep, git) and the directory tree.

Owns the only `asyncio.create_subprocess_exec` call of the tools: output is read incrementally and
capped, the child (its whole process group) is killed on the cap, on the timeout and on cancellation,
and its pipes are drained so asyncio can close the transport (no leaked processes, no ResourceWarning).
Also owns the sanitised environment children run with, and pinning a child's working directory to an
open directory descriptor (`cwd_fd`), so a directory swapped for a link after it was checked is not
where the child runs.

Must never: run a shell, block the event loop, let a child outlive the call that started it, or
swallow asyncio.CancelledError.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from live_memory.constants import MAX_CONCURRENT_SUBPROCESSES, TOOL_STDERR_MAX_BYTES

__all__ = ["ProcessResult", "child_env", "pinned_cwd_supported", "reaped", "run_bounded"]

_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
_REAPING: set[asyncio.Future[None]] = set()  # reaps that outlived a cancelled caller, held until they finish
_CHUNK = 256 * 1024
# After a kill, pipes reach EOF at once; this only guards against a grandchild that escaped the group.
_DRAIN_TIMEOUT_S = 5.0

# Variables that would redirect git to another repository or index, or load a user's ripgrep config.
_STRIPPED_PREFIXES = ("GIT_", "RIPGREP_")


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for tool children: no inherited GIT_*/RIPGREP_* redirection, no pager, no
    prompts, no optional index locks (git status must not write to the repository), stable messages."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith(_STRIPPED_PREFIXES)}
    env.update(
        {
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "LC_ALL": "C",
        }
    )
    return env


# Whether a child can start in a directory given by descriptor: on Linux the child changes to
# /proc/self/fd/N, the directory the descriptor holds (no path lookup, so no link followed). Elsewhere
# the directory's path is used and callers re-check what the child reports. Checked once, at import.
_PINNED_CWD = os.path.isdir("/proc/self/fd")


def pinned_cwd_supported() -> bool:
    return _PINNED_CWD


@dataclass(frozen=True)
class ProcessResult:
    """What a bounded child produced. `returncode` is None only when it was killed before exiting."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    truncated: bool = False  # stdout reached max_bytes and the child was killed
    timed_out: bool = False

    def stderr_text(self, max_lines: int = 6) -> str:
        lines = self.stderr.decode("utf-8", "replace").strip().splitlines()
        return "\n".join(lines[:max_lines])


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own session: its helpers die too
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Kill the child's group if it is alive, then drain the pipes (asyncio only reports the exit once both
    reach EOF) and collect the exit status, bounded."""
    _kill_group(proc)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_DRAIN_TIMEOUT_S):
            await asyncio.gather(_drain(proc.stdout), _drain(proc.stderr))
            await proc.wait()


async def _reap_even_if_cancelled(proc: asyncio.subprocess.Process) -> None:
    """`_reap`, in a task of its own, so that it finishes even when the caller is cancelled again while it waits
    (a task group's cancellation is delivered at every await, not once): the child is killed at once, and the
    reaping goes on by itself (bounded) while the cancellation propagates."""
    _kill_group(proc)
    await _see_through(asyncio.ensure_future(_reap(proc)))


async def _reap_once_started(spawn: asyncio.Future[asyncio.subprocess.Process]) -> None:
    with contextlib.suppress(OSError):  # it could not be started: nothing to clean up
        await _reap(await spawn)


async def _see_through(reaping: asyncio.Future[None]) -> None:
    """Wait for a reap running in a task of its own; cancelled again, leave it to finish by itself, held until it
    does (`reaped` waits for those)."""
    try:
        await asyncio.shield(reaping)
    except asyncio.CancelledError:
        _REAPING.add(reaping)
        reaping.add_done_callback(_REAPING.discard)
        raise


async def reaped(timeout_s: float) -> None:
    """Wait, at most `timeout_s`, for the reaps that outlived their cancelled callers (a stopping server's
    searches and index build): an event loop closed before them leaves the children's pipes to the garbage
    collector, and the children unwaited for."""
    pending = list(_REAPING)
    if pending:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await asyncio.gather(*pending, return_exceptions=True)


async def _drain(stream: asyncio.StreamReader | None) -> None:
    if stream is None:
        return
    while await stream.read(_CHUNK):
        pass


async def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    max_bytes: int,
    env: Mapping[str, str] | None = None,
    stderr_max_bytes: int = TOOL_STDERR_MAX_BYTES,
    cwd_fd: int | None = None,
    stdin_fd: int | None = None,
    slot: bool = True,
) -> ProcessResult:
    """Run argv (no shell) and return at most `max_bytes` of its stdout.

    `cwd_fd`: an open directory the child starts in (see `pinned_cwd_supported`; `cwd` is the
    fallback). `stdin_fd`: an open file the child reads as its standard input (else /dev/null).
    Both stay the caller's to close. Raises OSError when the program cannot be started;
    CancelledError propagates after the child is killed and reaped. At most
    MAX_CONCURRENT_SUBPROCESSES run at once per event loop; others wait. `slot=False`: a long background child
    (the symbol index's build) that must not hold one of those slots for minutes.
    """
    if not slot:
        return await _run_bounded(argv, cwd, timeout_s, max_bytes, env, stderr_max_bytes, cwd_fd, stdin_fd)
    async with _slots():  # the one caller of the unbounded run: its arguments in their order
        return await _run_bounded(argv, cwd, timeout_s, max_bytes, env, stderr_max_bytes, cwd_fd, stdin_fd)


def _slots() -> asyncio.Semaphore:
    """One semaphore per event loop (asyncio primitives must not cross loops)."""
    loop = asyncio.get_running_loop()
    slots = _SLOTS.get(loop)
    if slots is None:
        slots = _SLOTS[loop] = asyncio.Semaphore(MAX_CONCURRENT_SUBPROCESSES)
    return slots


async def _run_bounded(
    argv: Sequence[str],
    cwd: Path,
    timeout_s: float,
    max_bytes: int,
    env: Mapping[str, str] | None,
    stderr_max_bytes: int,
    cwd_fd: int | None,
    stdin_fd: int | None,
) -> ProcessResult:
    start_dir: str | Path = cwd
    pass_fds: tuple[int, ...] = ()
    if cwd_fd is not None and pinned_cwd_supported():
        # The child chdirs before it closes inherited descriptors; pass_fds keeps this one open anyway.
        start_dir, pass_fds = f"/proc/self/fd/{cwd_fd}", (cwd_fd,)
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=start_dir,
            pass_fds=pass_fds,
            env=dict(env) if env is not None else child_env(),
            stdin=stdin_fd if stdin_fd is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    )
    try:
        proc = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        # Cancelled while the child starts: it runs already, maybe with helpers of its own that hold its pipes
        # (asyncio's own cleanup kills the child alone, then waits for those pipes). Once it is ours, its group
        # goes like on any other way out, in a task of its own: a task group cancels its caller again at every
        # await, and an await of the start itself would cancel the start half-way (a child never waited for).
        await _see_through(asyncio.ensure_future(_reap_once_started(spawn)))
        raise
    out = bytearray()
    err = bytearray()
    truncated = False
    timed_out = False

    async def pump_stdout() -> None:
        nonlocal truncated
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(_CHUNK):
            room = max_bytes - len(out)
            if len(chunk) > room:
                out.extend(chunk[: max(room, 0)])
                truncated = True
                _kill_group(proc)  # enough: the rest would be thrown away anyway
                return
            out.extend(chunk)

    async def pump_stderr() -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(_CHUNK):
            if len(err) < stderr_max_bytes:
                err.extend(chunk[: stderr_max_bytes - len(err)])

    try:
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.gather(pump_stdout(), pump_stderr())
                if not truncated:
                    await proc.wait()  # EOF can precede the exit; let it finish rather than kill it
        except TimeoutError:
            timed_out = True
    finally:
        await _reap_even_if_cancelled(proc)  # every path (done, cap, timeout, cancellation) ends here
    killed = truncated or timed_out
    return ProcessResult(
        returncode=None if killed else proc.returncode,
        stdout=bytes(out),
        stderr=bytes(err),
        truncated=truncated,
        timed_out=timed_out,
    )
