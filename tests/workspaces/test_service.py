"""The workspace service, driven without HTTP: one memory per repository, loading on first use, file
events, forgetting, wipes, persistence, the loaded-workspace cap, reloads and shutdown."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from live_memory.core.errors import InputError, WorkspaceLoadError
from live_memory.core.records import FileEvent, ToolCall
from live_memory.http.app import default_tool_factory
from live_memory.memory.ledger import LedgerFact
from live_memory.settings.config import Settings, load_settings
from live_memory.settings.runtime import Runtime
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.tools import TOOL_SCHEMAS, Toolbox
from live_memory.workspaces.answerer import Answerer
from live_memory.workspaces.service import WorkspaceService
from live_memory.workspaces.workspace import workspace_id
from tests.fakes.engine import Engine, engine_for, until


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def repo(tmp_path: Path, name: str = "repo") -> Path:
    root = tmp_path / name
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "src" / "app.py").write_text("VALUE = 1\n")
    return root


def settings_for(tmp_path: Path, **options: str) -> Settings:
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_API_KEY": "x", "LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD": "0"}
    env.update({f"LIVE_MEMORY_{k.upper()}": v for k, v in options.items()})
    return load_settings(env=env, data_dir=tmp_path / "data")


def snapshot_files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "data" / "workspaces").glob("*.json"))


def journal_files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "data" / "workspaces").glob("*.journal"))


async def test_a_subdirectory_and_its_repository_root_share_one_loaded_memory(tmp_path: Path) -> None:
    root = repo(tmp_path)
    engine = engine_for(tmp_path, ScriptedProvider())
    top = await engine.service.open(str(root))
    nested = await engine.service.open(str(root / "src"))
    assert top.state is nested.state and top.root == nested.root == root
    assert top.state.loaded and top.tools is nested.tools  # one toolbox per checkout
    assert isinstance(top.tools, Toolbox) and top.tools.root == root
    assert engine.service.states() == [top.state]


async def test_a_cwd_outside_the_allowed_roots_is_refused_with_the_knob_to_change(tmp_path: Path) -> None:
    engine = engine_for(tmp_path / "home", ScriptedProvider())
    elsewhere = repo(tmp_path, "elsewhere")
    with pytest.raises(InputError, match=r"outside the allowed roots .* LIVE_MEMORY_ALLOWED_ROOTS"):
        await engine.service.open(str(elsewhere))
    assert engine.service.states() == []


async def test_a_workspace_that_fails_to_load_says_which_and_is_retried_next_time(tmp_path: Path) -> None:
    root = repo(tmp_path)
    attempts: list[Path] = []

    def flaky_tools(path: Path, settings: Settings) -> Toolbox:
        attempts.append(path)
        if len(attempts) == 1:
            raise RuntimeError("disk on fire")
        return default_tool_factory(path, settings)

    settings = off_loop(settings_for, tmp_path)
    service = off_loop(WorkspaceService, Runtime(settings, ScriptedProvider()), tool_factory=flaky_tools)
    with pytest.raises(WorkspaceLoadError) as failed:
        await service.open(str(root))
    assert str(failed.value) == f"the workspace {root} could not be loaded: disk on fire"
    assert service.states() == []  # the broken state is not kept
    opened = await service.open(str(root))
    assert opened.state.loaded and len(attempts) == 2


async def test_find_returns_nothing_for_a_workspace_never_asked_or_taught(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, ScriptedProvider())
    assert await engine.service.find(str(repo(tmp_path))) is None
    assert engine.service.states() == []


async def test_a_file_event_before_any_question_creates_the_workspace_without_loading_it(tmp_path: Path) -> None:
    root = repo(tmp_path)
    engine = engine_for(tmp_path, ScriptedProvider(), hold_files="all")
    result, was_loaded = await engine.service.notify(str(root), [FileEvent("src/app.py", "read", "VALUE = 1\n")])
    assert (result.accepted, was_loaded) == (1, False)
    [state] = engine.service.states()
    assert (state.restored, state.loaded) == (True, False)  # no tree scan until a question comes
    assert state.window.files["src/app.py"].content == "VALUE = 1\n"
    _, again = await engine.service.notify(str(root), [FileEvent("src/app.py", "change")])
    assert again is True


async def test_an_answered_workspace_is_persisted_and_found_again_after_a_restart(tmp_path: Path) -> None:
    root = repo(tmp_path)
    engine = engine_for(tmp_path, ScriptedProvider(text_response("VALUE is 1")))
    await engine.answerer.ask(str(root), "what is VALUE?")
    assert snapshot_files(tmp_path) == []  # journaled before the answer returned; the snapshot is written behind
    assert len(journal_files(tmp_path)) == 1
    restarted = engine_for(tmp_path, ScriptedProvider())
    [meta] = off_loop(restarted.service.on_disk)  # listed before it is loaded (it reads the disk)
    assert (meta.workspace, meta.questions_answered, meta.qa_retained) == (str(root), 1, 1)
    state = await restarted.service.find(str(root))
    assert state is not None and state.window.qa_count() == 1 and not state.loaded
    assert off_loop(restarted.service.on_disk) == []  # in memory now


async def test_forgetting_removes_matching_facts_and_persists(tmp_path: Path) -> None:
    root = repo(tmp_path)
    engine = engine_for(tmp_path, ScriptedProvider())
    assert await engine.service.forget(str(root), "anything") is None  # never seen: nothing to forget
    opened = await engine.service.open(str(root))
    opened.state.window.ledger.facts = [LedgerFact("Uses Postgres 15"), LedgerFact("VALUE is in src/app.py")]
    found = await engine.service.forget(str(root), "postgres")
    assert found is not None and found[1] == 1
    assert [f.text for f in opened.state.window.ledger.facts] == ["VALUE is in src/app.py"]
    restarted = engine_for(tmp_path, ScriptedProvider())
    state = await restarted.service.find(str(root))
    assert state is not None and [f.text for f in state.window.ledger.facts] == ["VALUE is in src/app.py"]


async def test_a_wipe_drops_the_memory_and_its_snapshot_and_a_reset_reloads_at_once(tmp_path: Path) -> None:
    root = repo(tmp_path)
    engine = engine_for(tmp_path, ScriptedProvider())
    await engine.answerer.ask(str(root), "remember me")
    old = engine.service.states()[0]
    old.window.record_read("src/app.py", sha("VALUE = 1\n"), 10)
    report = await engine.service.wipe(str(root), reload_now=True)
    assert report == {
        "workspace": str(root),
        "dropped": {"qa_pairs": 1, "ledger_facts": 0, "file_contexts": 1},
        "snapshot_deleted": True,
        "reloaded": True,
    }
    assert old.dropped and snapshot_files(tmp_path) == []
    [fresh] = engine.service.states()
    assert fresh is not old and fresh.loaded and fresh.window.qa_count() == 0
    emptied = await engine.service.wipe(str(root), reload_now=False)
    assert emptied["reloaded"] is False and engine.service.states() == []


async def test_idle_workspaces_beyond_the_cap_are_unloaded_and_restore_later(tmp_path: Path) -> None:
    provider = ScriptedProvider(responder=lambda request: text_response("ok"))
    engine = engine_for(tmp_path, provider, max_loaded_workspaces="2")
    repos = [repo(tmp_path, name) for name in ("one", "two", "three")]
    for root in repos:
        await engine.answerer.ask(str(root), f"about {root.name}")
    loaded = [str(s.root) for s in engine.service.states()]
    await engine.answerer.ask(str(repos[0]), "again")
    assert str(repos[0]) not in loaded and len(loaded) == 2
    assert "about one" in str(provider.requests[-1].messages)  # restored from its snapshot


async def test_a_busy_workspace_is_never_unloaded_to_make_room(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, ScriptedProvider(), max_loaded_workspaces="1")
    first = await engine.service.open(str(repo(tmp_path, "one")))
    first.state.in_flight = 1  # a question is running there
    await engine.service.open(str(repo(tmp_path, "two")))
    assert sorted(s.root.name for s in engine.service.states()) == ["one", "two"]


async def test_a_reload_keeps_workspaces_applies_new_limits_and_retires_the_old_provider(tmp_path: Path) -> None:
    class Closing(ScriptedProvider):
        closed = False

        async def aclose(self) -> None:
            self.closed = True

    old, new = Closing(), Closing()
    engine: Engine = engine_for(tmp_path, old)
    opened = await engine.service.open(str(repo(tmp_path)))
    settings = off_loop(settings_for, tmp_path, max_context_tokens="50000", model="claude-sonnet-4-5")
    changed = await engine.service.reload(Runtime(settings, new))
    assert {"max_context_tokens", "model"} <= set(changed)
    assert engine.service.states() == [opened.state] and opened.state.window.budget_tokens == 50_000
    assert engine.service.runtime.provider is new and not old.closed  # running questions may still use it
    await engine.service.aclose()
    assert old.closed and new.closed


async def test_after_shutdown_begins_the_memory_is_flushed_to_disk(tmp_path: Path) -> None:
    root = repo(tmp_path)
    engine = engine_for(tmp_path, ScriptedProvider(), hold_files="all")
    await engine.service.notify(str(root), [FileEvent("src/app.py", "read", "VALUE = 1\n")])
    assert snapshot_files(tmp_path) == []  # a tee alone is not written at once
    engine.service.begin_shutdown()
    assert engine.service.stopping
    await engine.service.flush()
    assert snapshot_files(tmp_path) == [f"{workspace_id(root)}.json"]


async def test_answers_are_journaled_and_their_snapshot_written_behind_once_for_a_burst(tmp_path: Path) -> None:
    root = repo(tmp_path)
    responses = (text_response(f"VALUE is {i}") for i in range(3))
    engine = engine_for(tmp_path, ScriptedProvider(*responses), price_input="1000", price_output="1000")
    engine.service.write_behind_s = 0.0
    spend = tmp_path / "data" / "spend.json"
    for index in range(3):  # a burst, before the writer gets its turn
        await engine.answerer.ask(str(root), f"what is VALUE? ({index})")
    assert len(journal_files(tmp_path)) == 1 and snapshot_files(tmp_path) == []
    assert not await anyio.Path(spend).exists()  # the day's spend is written behind too
    async with anyio.create_task_group() as tasks:
        engine.service.start(tasks)
        await until(lambda: snapshot_files(tmp_path) == [f"{workspace_id(root)}.json"])
        await until(lambda: journal_files(tmp_path) == [])  # superseded by the snapshot, then removed
        tally = json.loads(await anyio.Path(spend).read_text())
        assert tally["foreground_usd"] == pytest.approx(3 * (10 + 5) * 1000 / 1e6)  # all three answers
        writes = engine.service.store.path_for(workspace_id(root)).stat().st_mtime_ns
        await engine.service.flush()  # nothing new since: the snapshot is not rewritten
        assert engine.service.store.path_for(workspace_id(root)).stat().st_mtime_ns == writes
        tasks.cancel_scope.cancel()
    restarted = engine_for(tmp_path, ScriptedProvider())
    state = await restarted.service.find(str(root))
    assert state is not None and state.window.qa_count() == 3


# --- the symbol index and file events -------------------------------------------------------------------------
MODELS = "class Card:\n    pass\n\n\ndef load(path):\n    return Card()\n"


def _indexed_service(tmp_path: Path, provider: ScriptedProvider, **options: str) -> tuple[WorkspaceService, Answerer]:
    settings = off_loop(settings_for, tmp_path, **options)
    service = off_loop(WorkspaceService, Runtime(settings, provider), tool_factory=_tools)
    return service, Answerer(service, TOOL_SCHEMAS)


def _tools(root: Path, settings: Settings) -> Toolbox:
    """The service's own toolbox, its index built by the child (whatever the size) through `python` in `tmp/bin`
    when one is there (a gate the test opens)."""
    box = default_tool_factory(root, settings)
    gate = settings.data_dir.parent / "bin" / "python"
    if box.index is not None and gate.exists():
        box.index.python, box.index.update_max_files = str(gate), 0
    return box


def _gated_python(tmp_path: Path) -> Path:
    """A python that starts only once the test writes a line into `go` (a FIFO)."""
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    gate = tmp_path / "bin" / "python"
    gate.parent.mkdir()
    gate.write_text(f'#!/bin/sh\nread go < "{fifo}"\nexec "{sys.executable}" "$@"\n')
    gate.chmod(0o755)
    return fifo


async def test_the_first_answer_never_waits_for_the_symbol_index_being_built(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "src" / "models.py").write_text(MODELS)
    fifo = _gated_python(tmp_path)
    provider = ScriptedProvider(responder=lambda request: text_response("ok"))
    service, answerer = _indexed_service(tmp_path, provider)
    async with anyio.create_task_group() as tasks:
        service.start(tasks)
        tools = (await service.open(str(root))).tools
        assert tools.index_status() == {"state": "starting", "ready_after_s": None, "detail": ""}  # waits: an answer
        await answerer.ask(str(root), "How does `load` work?")  # answered by the scan
        await until(lambda: (tools.index_status() or {}).get("state") == "building")  # the child waits at the gate
        scanned = provider.requests[-1].messages[-1].text
        assert "src/models.py:5-6" in scanned
        await anyio.to_thread.run_sync(fifo.write_text, "go\n")
        await until(lambda: (tools.index_status() or {}).get("state") == "ready", timeout_s=60)
        await answerer.ask(str(root), "And how does `load` work now?")
        assert (
            provider.requests[-1].messages[-1].text.split("## The question's names")[1]
            == scanned.split("## The question's names")[1]
        )  # the index's answer is the scan's
        assert service.index_statuses()[str(root)]["state"] == "ready"
        tasks.cancel_scope.cancel()


async def test_a_restart_takes_the_tree_back_from_disk_when_nothing_it_rests_on_moved(tmp_path: Path) -> None:
    root = repo(tmp_path)
    for path in [root, *root.rglob("*")]:  # written an hour ago: a tree listed now can be proven current later
        os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    kept = tmp_path / "data" / "workspaces" / f"{workspace_id(root)}.tree.json"
    service, answerer = _indexed_service(tmp_path, ScriptedProvider(responder=lambda request: text_response("ok")))
    async with anyio.create_task_group() as tasks:
        service.start(tasks)
        opened = await service.open(str(root))
        await answerer.ask(str(root), "What is here?")
        await until(kept.exists)
        tasks.cancel_scope.cancel()
    assert opened.state.window.paths.files == ("src/app.py",)
    # A file slipped in with every stamp the tree rests on left as it was: a restart that scanned would list it,
    # one that takes the tree back from disk does not (a real change moves its directory's stamp).
    stamp = (root / "src").stat()
    await anyio.to_thread.run_sync((root / "src" / "slipped.py").write_text, "X = 2\n")
    os.utime(root / "src", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    restarted, _ = _indexed_service(tmp_path, ScriptedProvider())
    again = await restarted.open(str(root))
    assert again.state.window.paths.files == ("src/app.py",)


async def test_notified_files_reach_the_index_even_those_the_memory_does_not_know(tmp_path: Path) -> None:
    root = repo(tmp_path)
    service, answerer = _indexed_service(tmp_path, ScriptedProvider(responder=lambda request: text_response("ok")))
    async with anyio.create_task_group() as tasks:
        service.start(tasks)
        await answerer.ask(str(root), "What is here?")  # the index starts once an answer is out
        tools = (await service.open(str(root))).tools
        await until(lambda: (tools.index_status() or {}).get("state") == "ready", timeout_s=30)
        await anyio.to_thread.run_sync((root / "src" / "fresh.py").write_text, "def fresh():\n    pass\n")
        result, _ = await service.notify(str(root), [FileEvent("src/fresh.py", "add")])
        assert result.accepted == 0  # not a file the memory knows
        found = await tools.run("find_symbol", {"name": "fresh", "kind": "definition"})
        assert "src/fresh.py:1-2  fresh (function)" in found.text
        tasks.cancel_scope.cancel()


async def test_the_watcher_tells_the_index_of_every_file_and_the_memory_of_the_files_it_knows(tmp_path: Path) -> None:
    root = repo(tmp_path)
    provider = ScriptedProvider(
        text_response("", tool_calls=(ToolCall("r1", "Read", {"file_path": "src/app.py"}),)), text_response("1")
    )
    service, answerer = _indexed_service(tmp_path, provider, watch="true")
    async with anyio.create_task_group() as tasks:
        service.start(tasks)
        await answerer.ask(str(root), "What is VALUE?")
        state = (await service.open(str(root))).state
        tools = (await service.open(str(root))).tools
        await until(lambda: service.watcher.status(root) == "on", timeout_s=30)
        await until(lambda: (tools.index_status() or {}).get("state") == "ready", timeout_s=30)
        await anyio.to_thread.run_sync((root / "src" / "app.py").write_text, "VALUE = 2\n")
        await anyio.to_thread.run_sync((root / "src" / "other.py").write_text, "def other():\n    pass\n")
        await until(lambda: state.window.files["src/app.py"].state == "changed", timeout_s=30)
        assert "src/other.py" not in state.window.files
        found = await tools.run("find_symbol", {"name": "other", "kind": "definition"})
        assert "src/other.py:1-2  other (function)" in found.text
        tasks.cancel_scope.cancel()
