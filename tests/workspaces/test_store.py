"""Snapshots: atomic, private, validated on load; memory survives restarts and kills."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from live_memory.core.errors import SnapshotNotSaved
from live_memory.testing.live_server import ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from live_memory.testing.ports import free_port
from live_memory.workspaces.snapshot import SCHEMA_VERSION, EncodedHistory, SnapshotIn
from live_memory.workspaces.store import SnapshotStore
from live_memory.workspaces.workspace import workspace_id
from tests.cli.test_main import ServeProcess, cli_env, openai_env
from tests.fakes.repo_builder import one_file_repo


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(min_cacheable_tokens=64) as server:
        server.responder = lambda request: Reply.text(f"answer to {FakeLLM.last_user_text(request.body)[:40]}")
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return one_file_repo(tmp_path)


async def test_snapshot_round_trip_is_private_and_atomic(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert await store.save("ws", lambda: (1, {"window": {"history": []}}))
    path = store.path_for("ws")
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "data" / "workspaces").stat().st_mode & 0o777 == 0o700
    loaded = await asyncio.to_thread(store.load, "ws")
    assert loaded is not None and loaded.schema_ == 1 and loaded.window.history == []
    assert not await store.save("ws", lambda: (1, {"window": {"version": 7}}))  # an older/equal generation
    again = await asyncio.to_thread(store.load, "ws")
    assert again is not None and again.window.version == 0
    assert list(path.parent.iterdir()) == [path]  # no temp files left behind


@pytest.mark.parametrize(
    "garbage", [b"", b'{"schema": 1, "window": ', b"\x00\xff garbage", b"[1, 2]", b'{"schema": 99}']
)
def test_corrupt_snapshot_is_quarantined(tmp_path: Path, garbage: bytes) -> None:
    store = SnapshotStore(tmp_path / "data")
    store.dir.mkdir(parents=True)
    store.path_for("ws").write_bytes(garbage)
    assert store.load("ws") is None
    quarantined = [p.name for p in store.dir.iterdir()]
    assert len(quarantined) == 1 and quarantined[0].startswith("ws.json.corrupt-")


async def test_a_wiped_workspace_is_not_resurrected_by_a_late_save(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    await store.save("ws", lambda: (1, {"window": {}}))
    dropped = True
    assert await store.delete("ws")
    assert not await store.save("ws", lambda: (2, {"window": {}}), still_wanted=lambda: not dropped)
    assert not store.path_for("ws").exists()


async def test_memory_survives_a_restart(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    with live_server(settings) as server:
        _, is_error = await ask_via_mcp(server.mcp_url, {"question": "What is VERSION?", "cwd": str(workspace)})
        assert not is_error
    with live_server(settings) as server:
        await ask_via_mcp(server.mcp_url, {"question": "And now?", "cwd": str(workspace)})
    messages = str(fake.requests[-1].body["messages"])
    assert "What is VERSION?" in messages and "answer to" in messages


async def test_a_file_changed_while_down_is_detected_on_load(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.script(Reply.tool_call("Read", {"file_path": "app.py"}), Reply.text("VERSION is 1"))
    settings = settings_for(fake.base_url, tmp_path / "data")
    with live_server(settings) as server:
        await ask_via_mcp(server.mcp_url, {"question": "What is VERSION?", "cwd": str(workspace)})
    (workspace / "app.py").write_text("VERSION = 2\n")
    with live_server(settings) as server:
        await ask_via_mcp(server.mcp_url, {"question": "And now?", "cwd": str(workspace)})
    frozen = fake.requests[-1].body["system"][1]["text"]
    assert "- app.py — CHANGED since you read it" in frozen


async def test_garbage_snapshot_is_quarantined_and_the_workspace_still_answers(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)
    snapshots = tmp_path / "data" / "workspaces"
    snapshots.mkdir(parents=True)
    (snapshots / f"{workspace_id(workspace)}.json").write_text('{"schema": 1, "window": {"history": [{"kind"')
    with live_server(settings) as server:
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "hello?", "cwd": str(workspace)})
    assert not is_error, text
    names = sorted(p.name for p in snapshots.iterdir())
    assert any(".corrupt-" in n for n in names) and f"{workspace_id(workspace)}.json" in names


def test_answers_returned_before_a_sigkill_are_all_remembered(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    env = cli_env(tmp_path, free_port(), **openai_env(fake))
    env["LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD"] = "0"
    env["LIVE_MEMORY_CONCURRENCY"] = "serial"  # parallel mode drops the Q&A of forks that lose a race
    env["LIVE_MEMORY_DATA_DIR"] = str(tmp_path / "data")
    server = ServeProcess(env)
    url = f"http://127.0.0.1:{env['LIVE_MEMORY_PORT']}/mcp"
    answered: list[str] = []
    halfway = asyncio.Event()

    async def one(index: int) -> None:
        question = f"burst question {index}"
        _, is_error = await ask_via_mcp(url, {"question": question, "cwd": str(workspace)})
        if not is_error:
            answered.append(question)
            if len(answered) >= 5:
                halfway.set()

    async def burst() -> None:
        tasks = [asyncio.create_task(one(i)) for i in range(16)]
        await asyncio.wait_for(halfway.wait(), 60)
        server.proc.send_signal(signal.SIGKILL)  # mid-burst, with questions in flight
        await asyncio.gather(*tasks, return_exceptions=True)

    try:
        asyncio.run(burst())
    finally:
        server.close()
    assert len(answered) >= 5
    settings = settings_for(fake.base_url, tmp_path / "data", protocol="openai", force_explore_when_cold=0)

    async def after_restart() -> None:
        with live_server(settings) as restarted:
            await ask_via_mcp(restarted.mcp_url, {"question": "what did I ask?", "cwd": str(workspace)})

    asyncio.run(after_restart())
    remembered = str(fake.requests[-1].body["messages"])
    missing = [q for q in answered if q not in remembered]
    assert not missing, missing


def run(coroutine: Coroutine[Any, Any, bool]) -> bool:
    """One store call on a fresh event loop (the test inspects the files between calls, off any loop)."""
    return asyncio.run(coroutine)


def stage(store: SnapshotStore, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, bool]:
    """A write on the answer path: only journaled."""
    return store.save(*args, journal=True, **kwargs)


def journal_of(store: SnapshotStore, workspace: str) -> list[Path]:
    return store.journal_paths(workspace)


def test_a_staged_state_loads_after_a_restart_and_the_next_save_supersedes_its_journal(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert run(store.save("ws", lambda: (1, {"window": {"version": 1}})))
    assert run(stage(store, "ws", lambda: (2, {"window": {"version": 2}})))
    assert run(stage(store, "ws", lambda: (3, {"window": {"version": 3}})))
    assert not run(stage(store, "ws", lambda: (3, {"window": {"version": 99}})))  # nothing newer
    [journal] = journal_of(store, "ws")
    assert journal.stat().st_mode & 0o777 == 0o600
    restarted = SnapshotStore(tmp_path / "data")  # as after a kill: the snapshot still says version 1
    loaded = restarted.load("ws")
    assert loaded is not None and loaded.window.version == 3
    assert run(stage(restarted, "ws", lambda: (1, {"window": {"version": 4}})))  # appends to that journal
    assert journal_of(restarted, "ws") == [journal]
    assert run(restarted.save("ws", lambda: (2, {"window": {"version": 5}})))
    assert journal_of(restarted, "ws") == []
    again = SnapshotStore(tmp_path / "data").load("ws")
    assert again is not None and again.window.version == 5


def test_staging_recreates_a_snapshot_directory_removed_between_answers(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert run(stage(store, "ws", lambda: (1, {"window": {"version": 1}})))
    shutil.rmtree(store.dir)  # e.g. the user cleared the data dir while the server runs
    assert run(stage(store, "ws", lambda: (2, {"window": {"version": 2}})))
    assert store.dir.stat().st_mode & 0o777 == 0o700
    loaded = SnapshotStore(tmp_path / "data").load("ws")
    assert loaded is not None and loaded.window.version == 2


def test_a_record_torn_by_a_kill_is_skipped_for_the_one_before_it(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert run(stage(store, "ws", lambda: (1, {"window": {"version": 1}})))
    [journal] = journal_of(store, "ws")
    with journal.open("ab") as torn:
        torn.write(b'\n{"schema":1,"saved_at":1,"window":{"version":2,"hist')
    assert store.exists("ws")
    loaded = SnapshotStore(tmp_path / "data").load("ws")
    assert loaded is not None and loaded.window.version == 1
    assert run(stage(store, "ws", lambda: (2, {"window": {"version": 3}})))  # fenced: the torn tail spoils nothing
    loaded = SnapshotStore(tmp_path / "data").load("ws")
    assert loaded is not None and loaded.window.version == 3


def test_a_journal_left_by_a_kill_after_its_snapshot_was_written_is_ignored(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert run(stage(store, "ws", lambda: (1, {"window": {"version": 1}})))
    [journal] = journal_of(store, "ws")
    kept = journal.read_bytes()
    assert run(store.save("ws", lambda: (2, {"window": {"version": 2}})))
    journal.write_bytes(kept)  # as if the kill came between the snapshot's rename and the journal's removal
    loaded = SnapshotStore(tmp_path / "data").load("ws")
    assert loaded is not None and loaded.window.version == 2


def test_a_wipe_removes_the_journal_too(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert run(stage(store, "ws", lambda: (1, {"window": {}})))
    assert run(store.delete("ws"))
    assert not store.exists("ws") and list(store.dir.iterdir()) == []
    assert not run(stage(store, "ws", lambda: (2, {"window": {}}), still_wanted=lambda: False))
    assert not store.exists("ws")


def turns(*questions: str) -> tuple[str, ...]:
    """Encoded question turns, as a workspace's HistoryEncoder gives them."""
    return tuple(
        json.dumps(
            {"kind": "question", "message": {"role": "user", "parts": [{"type": "text", "text": q}]}, "question": q},
            separators=(",", ":"),
        )
        for q in questions
    )


def with_history(items: tuple[str, ...], version: int) -> dict[str, Any]:
    return {"window": {"version": version, "history": EncodedHistory(items)}}


def questions_of(loaded: SnapshotIn | None) -> list[str]:
    assert loaded is not None
    return [turn.question for turn in loaded.window.history]


def records_of(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.read_bytes().split(b"\n") if line.strip()]


def test_a_journal_record_carries_only_the_turns_added_since_the_one_before(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    history = turns("q1", "q2", "q3", "q4")
    assert run(stage(store, "ws", lambda: (1, with_history(history[:2], 1))))
    assert run(stage(store, "ws", lambda: (2, with_history(history[:3], 2))))
    assert run(stage(store, "ws", lambda: (3, with_history(history, 3))))
    [journal] = journal_of(store, "ws")
    first, second, third = records_of(journal)
    assert [t["question"] for t in first["window"]["history"]] == ["q1", "q2"]  # a journal starts whole
    assert [t["question"] for t in second["window"]["history"]] == ["q3"]
    assert [t["question"] for t in third["window"]["history"]] == ["q4"]
    assert questions_of(SnapshotStore(tmp_path / "data").load("ws")) == ["q1", "q2", "q3", "q4"]


def test_a_rewritten_history_is_journaled_whole_and_loads_as_rewritten(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert run(stage(store, "ws", lambda: (1, with_history(turns("q1", "q2", "q3"), 1))))
    compacted = turns("summary", "q4")  # a compaction replaced the turns
    assert run(stage(store, "ws", lambda: (2, with_history(compacted, 2))))
    [journal] = journal_of(store, "ws")
    assert "history_from" not in records_of(journal)[-1]["window"]
    assert questions_of(SnapshotStore(tmp_path / "data").load("ws")) == ["summary", "q4"]


def test_after_a_failed_append_the_next_record_is_whole(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    history = turns("q1", "q2", "q3")
    assert run(stage(store, "ws", lambda: (1, with_history(history[:1], 1))))
    [journal] = journal_of(store, "ws")
    journal.unlink()
    journal.mkdir()  # the next append fails (as a full disk would, part-way through a record)
    with pytest.raises(SnapshotNotSaved):
        run(stage(store, "ws", lambda: (2, with_history(history[:2], 2))))
    journal.rmdir()
    assert run(stage(store, "ws", lambda: (3, with_history(history, 3))))
    assert "history_from" not in records_of(journal)[-1]["window"]
    assert questions_of(SnapshotStore(tmp_path / "data").load("ws")) == ["q1", "q2", "q3"]


def test_deltas_after_an_unreadable_record_are_not_applied_to_an_older_base(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    assert run(stage(store, "ws", lambda: (1, with_history(turns("q1", "q2", "q3"), 1))))
    assert run(stage(store, "ws", lambda: (2, with_history(turns("summary", "q4"), 2))))  # compacted: whole
    assert run(stage(store, "ws", lambda: (3, with_history(turns("summary", "q4", "q5"), 3))))  # delta from 2
    [journal] = journal_of(store, "ws")
    lines = journal.read_bytes().split(b"\n")
    middle = next(i for i, line in enumerate(lines) if b'"version":2' in line)
    lines[middle] = lines[middle][: len(lines[middle]) // 2]  # the compacted record is unreadable
    journal.write_bytes(b"\n".join(lines))
    # q5's delta belongs after the compacted turns, not after q1 q2: the last state that is sure loads
    assert questions_of(SnapshotStore(tmp_path / "data").load("ws")) == ["q1", "q2", "q3"]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_a_journal_held_open_between_answers_is_closed_once_a_snapshot_supersedes_it(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "data")
    history = turns(*(f"q{n}" for n in range(40)))

    def open_descriptors() -> int:
        return len(list(Path("/proc/self/fd").iterdir()))

    before = open_descriptors()
    for n in range(1, 40, 2):  # an answer journaled, then its snapshot written behind: many times over
        assert run(stage(store, "ws", lambda n=n: (n, with_history(history[:n], n))))
        assert run(store.save("ws", lambda n=n: (n + 1, with_history(history[: n + 1], n + 1))))  # type: ignore[misc]
    assert open_descriptors() <= before + 1  # not one per journal
    assert run(stage(store, "ws", lambda: (99, with_history(history, 99))))
    store.close()
    assert open_descriptors() <= before
    assert questions_of(SnapshotStore(tmp_path / "data").load("ws")) == [f"q{n}" for n in range(40)]


def test_a_delta_record_names_a_schema_an_older_server_refuses_so_it_loads_the_last_whole_record(
    tmp_path: Path,
) -> None:
    store = SnapshotStore(tmp_path / "data")
    history = turns("q1", "q2", "q3")
    for n in (1, 2, 3):
        assert run(stage(store, "ws", lambda n=n: (n, with_history(history[:n], n))))
    [journal] = journal_of(store, "ws")
    whole, *deltas = records_of(journal)
    assert whole["schema"] == SCHEMA_VERSION
    # A server without deltas reads the newest record whose schema it knows: the whole one, never a delta's
    # few turns taken for the whole history.
    assert deltas and all(record["schema"] > SCHEMA_VERSION for record in deltas)
    assert questions_of(SnapshotStore(tmp_path / "data").load("ws")) == ["q1", "q2", "q3"]
