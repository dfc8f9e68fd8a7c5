"""What every tool handler shares: the limits, ripgrep discovery, path resolution through the jail,
the output cap that says how to narrow, and opening things off the event loop without leaking them."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from live_memory import constants as C
from live_memory.core.errors import JailRefusal
from live_memory.fs.jail import Jail
from live_memory.tools.context import (
    ToolContext,
    ToolLimits,
    bound_text,
    find_ripgrep,
    opened_off_loop,
    resolve_path,
)


async def context(root: Path) -> ToolContext:
    """Built in a thread, as Toolbox.create does: the jail resolves its root on the filesystem."""
    return await asyncio.to_thread(lambda: ToolContext(jail=Jail(root.resolve())))


def test_ripgrep_discovery_is_done_once_per_process(tmp_path: Path) -> None:
    fake_rg = tmp_path / "rg"
    fake_rg.write_text("#!/bin/sh\nexit 2\n")
    fake_rg.chmod(0o755)
    limits = ToolLimits(ripgrep_path=str(fake_rg))
    assert find_ripgrep(limits) == str(fake_rg)
    fake_rg.unlink()  # no longer there: a cached answer does not look again
    assert find_ripgrep(limits) == str(fake_rg)
    assert find_ripgrep(ToolLimits(use_ripgrep=False)) is None


def test_an_explicit_ripgrep_path_that_is_not_executable_means_no_ripgrep(tmp_path: Path) -> None:
    not_executable = tmp_path / "rg"
    not_executable.write_text("")
    not_executable.chmod(0o644)
    assert find_ripgrep(ToolLimits(ripgrep_path=str(not_executable))) is None


def test_the_default_limits_are_the_documented_constants() -> None:
    limits = ToolLimits()
    assert limits.max_output_bytes == C.MAX_TOOL_OUTPUT_BYTES
    assert limits.secret_globs == C.DEFAULT_SECRET_GLOBS
    assert limits.subprocess_timeout_s == C.TOOL_SUBPROCESS_TIMEOUT_S
    assert (limits.max_read_lines, limits.max_line_chars) == (C.READ_DEFAULT_LINES, C.READ_MAX_LINE_CHARS)
    assert limits.hash_max_bytes == C.TOOL_HASH_MAX_BYTES
    assert limits.use_ripgrep and limits.ripgrep_path is None


def test_text_within_the_cap_is_returned_unchanged() -> None:
    assert bound_text("a\nb\n", 4, "narrow it") == "a\nb\n"


def test_text_over_the_cap_is_cut_at_a_line_and_says_how_to_narrow() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    bounded = bound_text(text, 80, "pass a narrower path")
    assert len(bounded.encode()) <= 80
    head, note = bounded.split("\n[", 1)
    kept = head.split("\n")
    assert kept == [f"line {i}" for i in range(len(kept))] and len(kept) >= 2  # whole lines, from the top
    assert note == "output truncated at 80 bytes; pass a narrower path]"


def test_a_cut_never_splits_a_multibyte_character() -> None:
    bounded = bound_text("é" * 200, 120, "narrow")
    assert len(bounded.encode()) <= 120
    assert bounded.startswith("é" * 10) and "\ufffd" not in bounded


def test_undecodable_file_names_show_a_replacement_mark_instead_of_failing() -> None:
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    assert bound_text(name, 100, "narrow") == "caf?.txt"


async def test_paths_resolve_to_their_kind_and_workspace_relative_form(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x")
    os.mkfifo(tmp_path / "pipe")
    ctx = await context(tmp_path)
    resolved = {arg: await resolve_path(ctx, arg) for arg in ("src/app.py", "src", "missing.txt", "pipe")}
    assert {arg: (r.rel, r.kind) for arg, r in resolved.items()} == {
        "src/app.py": ("src/app.py", "file"),
        "src": ("src", "dir"),
        "missing.txt": ("missing.txt", "missing"),
        "pipe": ("pipe", "other"),
    }
    assert resolved["src/app.py"].real == ctx.root / "src" / "app.py"


@pytest.mark.parametrize("path", [None, "", "."])
async def test_no_path_means_the_workspace_root(tmp_path: Path, path: str | None) -> None:
    ctx = await context(tmp_path)
    root = await resolve_path(ctx, path)
    assert (root.rel, root.kind, root.real) == ("", "dir", ctx.root)


async def test_a_directory_where_a_file_is_required_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(JailRefusal, match="is a directory, not a file"):
        await resolve_path(await context(tmp_path), "src", allow_dir=False)


async def test_a_path_escaping_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "out").symlink_to(tmp_path)
    with pytest.raises(JailRefusal):
        await resolve_path(await context(workspace), "../secret.txt")
    with pytest.raises(JailRefusal, match="resolves outside the workspace"):
        await resolve_path(await context(workspace), "out")


async def test_something_opened_off_the_loop_is_returned_to_the_caller() -> None:
    closed: list[int] = []
    assert await opened_off_loop(lambda: 7, closed.append) == 7
    assert closed == []


async def test_something_opened_for_a_cancelled_caller_is_closed_not_leaked() -> None:
    started, release = threading.Event(), threading.Event()
    closed: asyncio.Queue[int] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def slow_open() -> int:
        started.set()
        release.wait(5)
        return 42

    task = asyncio.create_task(opened_off_loop(slow_open, lambda fd: loop.call_soon_threadsafe(closed.put_nowait, fd)))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()  # the open finishes after its caller gave up
    async with asyncio.timeout(5):
        assert await closed.get() == 42
