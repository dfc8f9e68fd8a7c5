"""File events applied to a workspace's memory: what is held, named, marked stale or deleted, and what
is refused with a reason. The `Ingestor` is driven directly (and through the service where the next
prompt is the point), with a scripted provider and no server."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from live_memory.constants import DEFAULT_SECRET_GLOBS
from live_memory.core.messages import Message, TextPart
from live_memory.core.records import FileEvent
from live_memory.engine.admission import AdmissionLimits
from live_memory.memory.cited_lines import Citation, cut
from live_memory.memory.hot_set import FileUse
from live_memory.memory.ledger import LedgerFact
from live_memory.settings.options import HoldFiles
from live_memory.testing.scripted_provider import ScriptedProvider
from live_memory.workspaces.ingest import Ingestor, IngestPolicy, in_scope
from live_memory.workspaces.workspace import Location, WorkspacePolicy, WorkspaceState, new_state
from tests.fakes.engine import engine_for
from tests.fakes.repo_builder import small_repo
from tests.memory.test_context_window import observations

APP = "def main():\n    return 'v1'\n"

POLICY = IngestPolicy(
    passive_ingestion=True,
    hold_files="all",
    max_file_bytes=1024,
    file_globs=(),
    secret_globs=DEFAULT_SECRET_GLOBS,
    echo_grace_s=2.0,
)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return small_repo(tmp_path, {"src/app.py": APP, "src/db.py": "URL = 'sqlite://'\n", ".env": "API_TOKEN=hunter2\n"})


def state_for(root: Path) -> WorkspaceState:
    admission = AdmissionLimits(mode="parallel", max_parallel=4, max_waiting=8, retry_after_s=5.0)
    policy = WorkspacePolicy(budget_tokens=100_000, distill_min_interval_s=60.0, admission=admission)
    return new_state(Location(root, root), policy)


def read(path: str, content: str = APP) -> FileEvent:
    return FileEvent(path, "read", content)


async def test_a_teed_read_is_held_verbatim_when_every_file_is_held(workspace: Path) -> None:
    state = state_for(workspace)
    result = await Ingestor(POLICY).apply(state, workspace, [read("src/app.py")])
    assert (result.accepted, result.ignored) == (1, 0)
    held = state.window.files["src/app.py"]
    assert (held.content, held.sha256, held.size) == (APP, sha(APP), len(APP))


async def test_an_absolute_path_inside_the_workspace_is_stored_relative(workspace: Path) -> None:
    state = state_for(workspace)
    await Ingestor(POLICY).apply(state, workspace, [read(str(workspace / "src" / "app.py"))])
    assert list(state.window.files) == ["src/app.py"]


async def test_by_default_a_first_read_is_named_and_a_cited_file_is_held(workspace: Path) -> None:
    state = state_for(workspace)
    ingest = Ingestor(replace(POLICY, hold_files="earned"))
    await ingest.apply(state, workspace, [read("src/app.py")])
    assert state.window.files["src/app.py"].content is None  # named, not copied
    state.window.ledger.facts = [LedgerFact("main lives in src/db.py", {"src/db.py": sha("old")})]
    await ingest.apply(state, workspace, [read("src/db.py", "URL = 'x'\n")])
    assert state.window.files["src/db.py"].content == "URL = 'x'\n"  # a fact came from it: it earned its bytes


async def test_with_holding_off_even_a_cited_file_is_only_named(workspace: Path) -> None:
    state = state_for(workspace)
    state.window.ledger.facts = [LedgerFact("db in src/db.py", {"src/db.py": sha("old")})]
    await Ingestor(replace(POLICY, hold_files="none")).apply(state, workspace, [read("src/db.py", "URL = 2\n")])
    assert state.window.files["src/db.py"].content is None
    assert state.window.ledger.facts[0].stale  # a different version than the fact was distilled from


async def test_a_file_over_the_per_file_cap_is_recorded_without_its_bytes(workspace: Path) -> None:
    state = state_for(workspace)
    big = "y = 1  # padding\n" * 100
    result = await Ingestor(POLICY).apply(state, workspace, [read("src/big.py", big)])
    assert result.accepted == 1
    known = state.window.files["src/big.py"]
    assert (known.content, known.size, known.sha256) == (None, len(big), sha(big))


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (FileEvent("src/blob.bin", "read", "a\x00b"), "src/blob.bin: binary content is not kept"),
        (FileEvent(".", "unlink"), ".: the workspace root itself is not a file"),
        (FileEvent(".", "change"), ".: the workspace root itself is not a file"),  # named, not quoted as ''
        (FileEvent("src/never_read.py", "change"), "src/never_read.py: not in memory"),
        (FileEvent("src/never_read.py", "unlink"), "src/never_read.py: not in memory"),
    ],
)
async def test_an_event_that_cannot_be_used_is_ignored_with_its_reason(
    workspace: Path, event: FileEvent, reason: str
) -> None:
    state = state_for(workspace)
    result = await Ingestor(POLICY).apply(state, workspace, [event])
    assert (result.accepted, result.ignored, result.reasons) == (0, 1, [reason])
    assert state.window.files == {}


async def test_with_passive_ingestion_off_a_tee_is_refused_but_an_edit_of_a_known_file_is_hinted(
    workspace: Path,
) -> None:
    state = state_for(workspace)
    state.window.record_read("src/app.py", sha(APP), len(APP))
    ingest = Ingestor(replace(POLICY, passive_ingestion=False))
    result = await ingest.apply(
        state,
        workspace,
        [read("src/db.py"), FileEvent("src/app.py", "write", "def main(): ...\n"), FileEvent("src/db.py", "write")],
    )
    assert (result.accepted, result.reasons) == (1, ["src/db.py: passive ingestion is off", "src/db.py: not in memory"])
    assert state.window.files["src/app.py"].content is None  # no bytes kept
    assert state.window.drain_recently_modified() == ["src/app.py"]  # named on the next question instead


async def test_a_change_marks_a_known_file_stale_and_demotes_the_facts_citing_it(workspace: Path) -> None:
    state = state_for(workspace)
    ingest = Ingestor(POLICY, clock=Clock())
    await ingest.apply(state, workspace, [read("src/db.py", "URL = 'sqlite://'\n")])
    state.window.ledger.facts = [LedgerFact("the database URL is in src/db.py", {"src/db.py": sha("x")})]
    (workspace / "src" / "db.py").write_text("URL = 'postgres://'\n")
    result = await ingest.apply(state, workspace, [FileEvent("src/db.py", "change")])
    assert result.accepted == 1
    known = state.window.files["src/db.py"]
    assert (known.state, known.content) == ("changed", None)
    assert state.window.ledger.facts[0].stale


async def test_an_unlink_marks_a_known_file_deleted(workspace: Path) -> None:
    state = state_for(workspace)
    state.window.record_read("src/db.py", sha("db"), 18)
    (workspace / "src" / "db.py").unlink()
    result = await Ingestor(POLICY).apply(state, workspace, [FileEvent("src/db.py", "unlink")])
    assert result.accepted == 1 and state.window.files["src/db.py"].state == "deleted"


async def test_the_echo_of_a_tee_is_ignored_within_the_grace_window_only(workspace: Path) -> None:
    clock = Clock()
    state = state_for(workspace)
    ingest = Ingestor(POLICY, clock=clock)
    await ingest.apply(state, workspace, [read("src/app.py")])  # the same bytes as on disk
    echo = await ingest.apply(state, workspace, [FileEvent("src/app.py", "change")])
    assert echo.reasons == ["src/app.py: echo of a tee just received"]
    assert state.window.files["src/app.py"].content == APP
    clock.now += POLICY.echo_grace_s + 0.1
    late = await ingest.apply(state, workspace, [FileEvent("src/app.py", "change")])
    assert late.accepted == 1 and state.window.files["src/app.py"].state == "changed"


async def test_a_change_with_other_bytes_on_disk_is_not_taken_for_an_echo(workspace: Path) -> None:
    state = state_for(workspace)
    ingest = Ingestor(POLICY, clock=Clock())
    await ingest.apply(state, workspace, [read("src/app.py")])
    (workspace / "src" / "app.py").write_text("def main():\n    return 'v2'\n")
    result = await ingest.apply(state, workspace, [FileEvent("src/app.py", "change")])
    assert result.accepted == 1 and state.window.files["src/app.py"].state == "changed"


def test_file_globs_use_fnmatch_where_a_star_crosses_directories() -> None:
    assert in_scope("src/deep/a.py", ("src/*.py",))
    assert not in_scope("docs/a.md", ("src/*",))
    assert in_scope("anything/at/all", ())


# --- moved from the /notify tests: the same rules, driven through the service ---------------------


async def test_a_link_out_of_the_workspace_is_refused_between_files_of_its_directory(
    tmp_path: Path, workspace: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "src" / "out").symlink_to(outside, target_is_directory=True)
    (workspace / "src" / "pkg").mkdir()
    state = state_for(workspace)
    events = [read("src/app.py"), read("src/out/passwd", "root:x:0:0"), read("src/pkg/mod.py"), read("src/db.py")]
    result = await Ingestor(POLICY).apply(state, workspace, events)
    assert (result.accepted, result.ignored) == (3, 1)
    assert "src/out/passwd" in result.reasons[0] and "resolves outside the workspace" in result.reasons[0]
    assert sorted(state.window.files) == ["src/app.py", "src/db.py", "src/pkg/mod.py"]


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (FileEvent("../../etc/passwd", "read", "root:x:0:0"), "'..' is not allowed"),
        (FileEvent("/etc/passwd", "read", "root:x:0:0"), "outside the workspace"),
        (FileEvent(".env", "read", "API_TOKEN=hunter2"), "secret-file guard"),
        (FileEvent("src/blob.bin", "read", "a\u0000b"), "binary content"),
        (FileEvent(".git/config", "read", "[core]"), "inside .git"),
        (FileEvent("src/never_read.py", "change"), "not in memory"),
    ],
)
async def test_refused_events_are_ignored_with_a_reason_and_change_nothing(
    tmp_path: Path, workspace: Path, event: FileEvent, reason: str
) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, hold_files="all")
    await engine.answerer.ask(str(workspace), "warm up")
    answer, _ = await engine.service.notify(str(workspace), [event])
    assert answer.accepted == 0 and answer.ignored == 1
    assert reason in answer.reasons[0]
    await engine.answerer.ask(str(workspace), "again")
    prompt = str(provider.requests[-1])
    assert "hunter2" not in prompt and "root:x:0:0" not in prompt and "[core]" not in prompt


async def test_file_globs_limit_the_monitoring_scope(tmp_path: Path, workspace: Path) -> None:
    engine = engine_for(tmp_path, ScriptedProvider(), file_globs="docs/*")
    await engine.answerer.ask(str(workspace), "warm up")
    events = [FileEvent("src/app.py", "read", "x = 1"), FileEvent("docs/guide/intro.md", "read", "# Intro")]
    answer, _ = await engine.service.notify(str(workspace), events)
    assert answer.accepted == 1 and answer.reasons == ["src/app.py: outside file_globs"]


async def test_a_file_over_the_per_file_cap_is_kept_manifest_only(tmp_path: Path, workspace: Path) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, hold_files="all")
    await engine.answerer.ask(str(workspace), "warm up")
    big = "y = 1  # padding\n" * 20_000  # ~340 KB, over the 256 KiB cap
    answer, _ = await engine.service.notify(str(workspace), [read("src/big.py", big)])
    assert answer.accepted == 1
    [state] = engine.service.states()
    assert len(state.window.files) == 1 and state.window.files["src/big.py"].content is None
    await engine.answerer.ask(str(workspace), "q")
    assert "padding" not in str(provider.requests[-1])


async def test_by_default_a_teed_file_is_named_not_copied(tmp_path: Path, workspace: Path) -> None:
    """The default holding policy keeps knowledge, not bytes: the next prompt names the file the agent read,
    and says to Read it, without carrying a copy (measured cheaper by bench/session_bill.py)."""
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider)
    await engine.service.notify(str(workspace), [read("src/app.py")])
    await engine.answerer.ask(str(workspace), "where is main?")
    edited = FileEvent("src/app.py", "write", "def main():\n    return 'v2'\n")
    (workspace / "src/app.py").write_text(edited.content or "")
    await engine.service.notify(str(workspace), [edited])
    await engine.answerer.ask(str(workspace), "and now?")
    first, last = (str(r) for r in (provider.requests[0], provider.requests[-1]))
    assert "src/app.py" in first and "return 'v1'" not in first
    assert "return 'v2'" not in last and "src/app.py: EDITED by an agent" in last


async def test_a_file_read_then_edited_before_the_memory_hears_of_it_is_named_once(workspace: Path) -> None:
    """Nothing was learned from it in between: one line naming it, no notice to re-read what was never read."""
    state = state_for(workspace)
    ingest = Ingestor(replace(POLICY, hold_files="none"))
    edited = APP.replace("'v1'", "'v2'")
    await ingest.apply(state, workspace, [read("src/app.py"), FileEvent("src/app.py", "write", edited)])
    state.window.sync_deltas()
    [line] = observations(state.window)
    assert line.endswith("read or edited (not shown here): src/app.py") and "EDITED" not in line
    # Once named to the model, a later edit is news: its notice follows.
    await ingest.apply(state, workspace, [FileEvent("src/app.py", "write", APP)])
    state.window.sync_deltas()
    assert "src/app.py: EDITED by an agent" in observations(state.window)[-1]


async def test_a_file_an_answer_cited_still_gets_its_notice_when_edited_before_the_memory_hears_of_it(
    workspace: Path,
) -> None:
    state = state_for(workspace)
    ingest = Ingestor(replace(POLICY, hold_files="none"))
    await ingest.apply(state, workspace, [read("src/app.py")])
    asked = Message("user", (TextPart("## Question\nwhere is main?"),))
    state.window.add_exchange(asked, "where is main?", "src/app.py:1-2", ["src/app.py"])
    await ingest.apply(state, workspace, [FileEvent("src/app.py", "write", APP.replace("'v1'", "'v2'"))])
    state.window.sync_deltas()
    notice = observations(state.window)[-1]
    assert "src/app.py: EDITED by an agent" in notice and "out of date: src/app.py." in notice


async def test_each_teed_read_or_write_counts_one_use_of_the_file(workspace: Path) -> None:
    state = state_for(workspace)
    ingest = Ingestor(replace(POLICY, hold_files="used"))
    await ingest.apply(state, workspace, [read("src/app.py")])
    assert state.window.file_uses == {"src/app.py": FileUse(1, 0, 0)}
    assert state.window.files["src/app.py"].content is None  # the hot set holds cited lines, not teed files
    edited = "def main():\n    return 'v2'\n"
    await ingest.apply(state, workspace, [FileEvent("src/app.py", "write", edited), read("src/db.py", "URL = 1\n")])
    assert state.window.file_uses == {"src/app.py": FileUse(2, 0, 0), "src/db.py": FileUse(1, 0, 0)}


@pytest.mark.parametrize("hold_files", ["used", "all"])
async def test_an_edit_above_held_cited_lines_keeps_them_renumbered(workspace: Path, hold_files: HoldFiles) -> None:
    state = state_for(workspace)
    ingest = Ingestor(replace(POLICY, hold_files=hold_files))
    await ingest.apply(state, workspace, [read("src/app.py")])
    lines = cut(APP, sha(APP), Citation("src/app.py", 2, 2))
    assert lines is not None and state.window.hold_cited(lines)
    edited = "import os\n" + APP
    await ingest.apply(state, workspace, [FileEvent("src/app.py", "write", edited)])
    [moved] = state.window.cited.values()
    assert (moved.first, moved.last, moved.sha256, moved.text) == (3, 3, sha(edited), "3\t    return 'v1'")
    state.window.sync_deltas()
    assert any("### src/app.py:3-3" in t.message.text for t in state.window.history)


async def test_an_edit_of_held_cited_lines_drops_them(workspace: Path) -> None:
    state = state_for(workspace)
    ingest = Ingestor(replace(POLICY, hold_files="used"))
    await ingest.apply(state, workspace, [read("src/app.py")])
    lines = cut(APP, sha(APP), Citation("src/app.py", 2, 2))
    assert lines is not None and state.window.hold_cited(lines)
    state.window.sync_deltas()
    edited = APP.replace("'v1'", "'v2'")
    await ingest.apply(state, workspace, [FileEvent("src/app.py", "write", edited)])
    assert state.window.cited == {}
    state.window.sync_deltas()
    assert "src/app.py: EDITED by an agent" in state.window.history[-2].message.text
