"""Loading a workspace's memory on first use: the snapshot re-validated against the disk, the directory
tree, the preload documents, and one freeze; driven directly with a real store on a temporary disk."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from live_memory.core.messages import Message, TextPart
from live_memory.core.prompts import DIRECTORY_TREE_HEADING, OUTLINE_HEADING, PRELOADED_HEADING
from live_memory.memory.ledger import LedgerFact
from live_memory.settings.config import Settings, load_settings
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider
from live_memory.tools import TOOL_SCHEMAS
from live_memory.workspaces.loading import load_workspace, restore_workspace
from live_memory.workspaces.snapshot import snapshot_payload
from live_memory.workspaces.store import SnapshotStore
from live_memory.workspaces.workspace import Location, WorkspaceState, WorkspaceStats, new_state, workspace_policy
from tests.fakes.engine import engine_for
from tests.fakes.repo_builder import docs_repo, small_repo, wide_repo

APP = "VALUE = 1\n"
DB = "URL = 'sqlite://'\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = docs_repo(tmp_path)
    (root / "app.py").write_text(APP)
    (root / "db.py").write_text(DB)
    return root


def settings_for(tmp_path: Path, **options: str) -> Settings:
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_API_KEY": "x"}
    env.update({f"LIVE_MEMORY_{k.upper()}": v for k, v in options.items()})
    return load_settings(env=env, data_dir=tmp_path / "data")


def state_for(root: Path, settings: Settings) -> WorkspaceState:
    return new_state(Location(root, root), off_loop(workspace_policy, settings))  # it resolves paths


async def save_earlier_memory(store: SnapshotStore, root: Path, settings: Settings) -> WorkspaceState:
    """What an earlier run remembered: two held files, a fact from db.py, one answered question."""
    earlier = state_for(root, settings)
    window = earlier.window
    window.observe("app.py", APP, sha(APP))
    window.observe("db.py", DB, sha(DB))
    window.ledger.facts = [LedgerFact("the database URL is in db.py", {"db.py": sha(DB)})]
    window.sync_deltas()
    window.add_exchange(Message("user", (TextPart("## Question\nwhere?"),)), "where?", "in db.py", ["db.py"])
    earlier.stats = WorkspaceStats(questions=1, cost_usd=0.25)
    payload = snapshot_payload(str(root), window, earlier.stats)
    assert await store.save(earlier.id, lambda: (1, payload))
    return earlier


async def test_a_new_workspace_gets_its_tree_and_one_freeze(tmp_path: Path, workspace: Path) -> None:
    settings = off_loop(settings_for, tmp_path)
    state = state_for(workspace, settings)
    await load_workspace(state, SnapshotStore(settings.data_dir), settings)
    window = state.window
    assert (state.restored, state.loaded, window.epoch) == (True, True, 1)
    assert DIRECTORY_TREE_HEADING in window.stable_prefix and "intro.md" in window.stable_prefix
    assert window.frozen_volatile is not None and window.qa_count() == 0 and window.files == {}


async def loaded_prefix(root: Path, settings: Settings) -> str:
    state = state_for(root, settings)
    await load_workspace(state, SnapshotStore(settings.data_dir), settings)
    return state.window.stable_prefix


async def test_the_tree_grows_until_the_prompt_s_head_clears_the_model_s_cache_minimum(
    tmp_path: Path, workspace: Path
) -> None:
    wide = wide_repo(tmp_path)
    haiku, sonnet = (off_loop(settings_for, tmp_path, model=m) for m in ("claude-haiku-4-5", "claude-sonnet-4-5"))
    on_haiku, on_sonnet = await loaded_prefix(wide, haiku), await loaded_prefix(wide, sonnet)
    head_tokens = (len(json.dumps(TOOL_SCHEMAS)) + len(on_haiku)) / 4
    assert 4096 <= head_tokens <= 4096 * 1.1  # Haiku 4.5 caches no shorter prefix; not much more is sent
    assert (len(json.dumps(TOOL_SCHEMAS)) + len(on_sonnet)) / 4 < 4096  # Sonnet caches from 1,024: the set budget
    assert len(on_sonnet.split(DIRECTORY_TREE_HEADING)[1]) <= sonnet.directory_tree_tokens * 4
    # A repository whose whole listing fits shows it whole either way; with no class or function to list
    # (these files hold constants), nothing follows it.
    assert await loaded_prefix(workspace, haiku) == await loaded_prefix(workspace, sonnet)


async def test_a_small_repository_s_head_lists_its_definitions_where_the_tree_leaves_it_uncacheable(
    tmp_path: Path,
) -> None:
    root = small_repo(tmp_path, {"app.py": "class App:\n    pass\n\n\ndef main():\n    App()\n"})
    haiku, sonnet = (off_loop(settings_for, tmp_path, model=m) for m in ("claude-haiku-4-5", "claude-sonnet-4-5"))
    on_haiku, on_sonnet = await loaded_prefix(root, haiku), await loaded_prefix(root, sonnet)
    assert f"{OUTLINE_HEADING}\napp.py: App, main" in on_haiku  # under Haiku's 4,096-token minimum without it
    assert OUTLINE_HEADING not in on_sonnet  # the head clears Sonnet's 1,024 without it


async def test_concurrent_first_questions_load_the_workspace_once(tmp_path: Path, workspace: Path) -> None:
    settings = off_loop(settings_for, tmp_path)
    state = state_for(workspace, settings)
    store = SnapshotStore(settings.data_dir)
    await asyncio.gather(*(load_workspace(state, store, settings) for _ in range(5)))
    assert state.window.epoch == 1  # frozen once: the cached prefix is written once


async def test_a_restart_restores_the_memory_and_holds_unchanged_files_again(tmp_path: Path, workspace: Path) -> None:
    settings = off_loop(settings_for, tmp_path)
    store = SnapshotStore(settings.data_dir)
    await save_earlier_memory(store, workspace, settings)
    (workspace / "db.py").write_text("URL = 'postgres://'\n")  # edited while the server was down
    state = state_for(workspace, settings)
    await load_workspace(state, store, settings)
    window = state.window
    assert window.qa_count() == 1 and (state.stats.questions, state.stats.cost_usd) == (1, 0.25)
    assert window.files["app.py"].content == APP  # unchanged: held again, read from the disk
    assert (window.files["db.py"].state, window.files["db.py"].content) == ("changed", None)
    assert window.ledger.facts[0].stale  # the fact came from the old db.py
    assert "VALUE = 1" in (window.frozen_volatile or "") and "sqlite" not in (window.frozen_volatile or "")


async def test_a_file_deleted_while_down_is_forgotten_and_the_others_held_again(
    tmp_path: Path, workspace: Path
) -> None:
    settings = off_loop(settings_for, tmp_path)
    store = SnapshotStore(settings.data_dir)
    await save_earlier_memory(store, workspace, settings)
    (workspace / "app.py").unlink()
    state = state_for(workspace, settings)
    await load_workspace(state, store, settings)
    assert "app.py" not in state.window.files  # vanished: forgotten, not held
    assert state.window.files["db.py"].content == DB


async def test_restoring_alone_reads_the_snapshot_without_building_the_tree(tmp_path: Path, workspace: Path) -> None:
    settings = off_loop(settings_for, tmp_path)
    store = SnapshotStore(settings.data_dir)
    await save_earlier_memory(store, workspace, settings)
    state = state_for(workspace, settings)
    await restore_workspace(state, store, settings)
    assert (state.restored, state.loaded) == (True, False)
    assert state.window.qa_count() == 1 and DIRECTORY_TREE_HEADING not in state.window.stable_prefix
    await restore_workspace(state, store, settings)  # a second restore changes nothing
    assert state.window.qa_count() == 1
    await load_workspace(state, store, settings)  # the first question finishes the job
    assert state.loaded and DIRECTORY_TREE_HEADING in state.window.stable_prefix
    assert state.window.qa_count() == 1


async def test_preloaded_documents_are_held_and_marked_as_preloaded(tmp_path: Path, workspace: Path) -> None:
    settings = off_loop(settings_for, tmp_path, preload_globs="docs/intro.md,docs/api/*.md")
    state = state_for(workspace, settings)
    await load_workspace(state, SnapshotStore(settings.data_dir), settings)
    files = state.window.files
    assert sorted(files) == ["docs/api/auth.md", "docs/intro.md"]
    assert all(f.preloaded and f.content is not None for f in files.values())
    frozen = state.window.frozen_volatile or ""
    assert PRELOADED_HEADING in frozen and "Tokens expire after 1h." in frozen


async def test_the_directory_tree_stays_within_its_share_of_a_small_window(tmp_path: Path, workspace: Path) -> None:
    for index in range(150):
        (workspace / "src" / f"pkg{index % 10}").mkdir(parents=True, exist_ok=True)
        (workspace / "src" / f"pkg{index % 10}" / f"module_with_a_long_name_{index}.py").write_text("")
    settings = off_loop(settings_for, tmp_path, max_context_tokens="4000")
    state = state_for(workspace, settings)
    await load_workspace(state, SnapshotStore(settings.data_dir), settings)
    tree = state.window.stable_prefix.split(DIRECTORY_TREE_HEADING, 1)[1]
    assert len(tree) <= 0.10 * 4000 * state.window.chars_per_token + 200  # 10% of the window, plus framing
    assert "pkg0/ (15 files)" in tree  # too many files: directories are shown with their file counts
    assert "module_with_a_long_name_0.py" not in tree


async def test_preload_total_is_clamped_to_the_compaction_floor(tmp_path: Path, workspace: Path) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, preload_globs="docs/*.md", max_context_tokens="2000")
    await engine.answerer.ask(str(workspace), "hi")
    frozen = provider.requests[0].system[1].text
    assert "Welcome." in frozen and "x" * 100 not in frozen  # big.md would overflow 0.6 x 2000 tokens
    [state] = engine.service.states()
    assert state.stats.compactions == 0
