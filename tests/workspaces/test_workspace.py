"""Which memory a directory belongs to: git roots, worktrees, submodules, plain directories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from live_memory.core.errors import InputError
from live_memory.core.messages import Message, TextPart
from live_memory.engine.admission import AdmissionLimits
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.history import Turn
from live_memory.settings.options import RepoRootMode
from live_memory.workspaces.workspace import Location, WorkspacePolicy, WorkspaceState, locate, new_state, validate_cwd

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
}


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, env=env, check=True, capture_output=True
    )


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    (path / "src").mkdir()
    (path / "src" / "a.py").write_text("A = 1\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def where(cwd: Path, *, mode: RepoRootMode = "nearest", canonicalize: bool = True, share: bool = True) -> Location:
    return locate(cwd.resolve(), canonicalize=canonicalize, mode=mode, share_worktrees=share)


def test_subdirectory_and_root_share_one_memory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo").resolve()
    assert where(repo / "src") == Location(repo, repo)
    assert where(repo) == Location(repo, repo)


def test_a_plain_directory_is_its_own_workspace(tmp_path: Path) -> None:
    plain = (tmp_path / "notes").resolve()
    plain.mkdir()
    assert where(plain) == Location(plain, plain)


def test_canonicalization_can_be_switched_off(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo").resolve()
    assert where(repo / "src", canonicalize=False) == Location(repo / "src", repo / "src")


def test_linked_worktrees_share_a_memory_but_keep_their_own_jail(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo").resolve()
    git(repo, "worktree", "add", "-q", str(tmp_path / "feature"), "-b", "feature")
    feature = (tmp_path / "feature").resolve()
    assert where(feature / "src") == Location(key=repo, root=feature)
    assert where(feature, share=False) == Location(feature, feature)


def test_submodule_modes(tmp_path: Path) -> None:
    library = make_repo(tmp_path / "library")
    app = make_repo(tmp_path / "app").resolve()
    git(app, "submodule", "add", "-q", str(library), "vendor/library")
    sub = (app / "vendor" / "library").resolve()
    assert where(sub / "src") == Location(sub, sub)  # nearest: the submodule is its own memory
    assert where(sub / "src", mode="outermost") == Location(app, app)  # folded into the superproject


@pytest.mark.parametrize(
    ("cwd", "message"),
    [
        ("", "cwd is required"),
        ("rel/path", "must be an absolute path"),
        ("/no/such/dir", "not an existing directory"),
        ("/tmp/" + "x" * 300, "path component longer than 255 bytes"),
        ("/" + "a/" * 3000, "cwd is too long"),
        ("/tmp/a\x00b", "NUL byte"),
    ],
)
def test_bad_cwd_is_refused_with_a_clear_message(cwd: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        validate_cwd(cwd)


# --- commits: rebase, never drop -------------------------------------------------------------------------------
def _state() -> WorkspaceState:
    policy = WorkspacePolicy(
        budget_tokens=100_000,
        distill_min_interval_s=0.0,
        admission=AdmissionLimits(mode="parallel", max_parallel=8, max_waiting=8, retry_after_s=1.0),
    )
    return new_state(Location(Path("/repo"), Path("/repo")), policy)


def _answer(window: ContextWindow, question: str) -> None:
    """What a question's loop leaves in its fork: a read recorded, the exchange appended."""
    window.sync_deltas()
    window.record_read(f"{question}.py", question * 8, 10)
    message = Message("user", (TextPart(f"## Question\n{question}"),))
    window.add_exchange(message, question, f"answer {question}", (f"{question}.py",))


def _compact(window: ContextWindow) -> None:
    """A compaction as the engine does it: all but the last two exchanges folded into the ledger."""
    questions = [t for t in window.history if t.kind == "question"]
    doomed = {t.question for t in questions[:-2]}
    if not doomed:
        return
    window.history = [t for t in window.history if _question_of(window, t) not in doomed]
    merged = [f.text for f in window.ledger.facts] + [f"summarized {q}" for q in sorted(doomed)]  # the summary merges
    window.ledger.set_from_summary("\n".join(merged), {})
    window.summarized_pairs += len(doomed)
    window.freeze()


def _question_of(window: ContextWindow, turn: Turn) -> str:
    """The question an exchange turn belongs to (its answer names it)."""
    if turn.kind == "question":
        return turn.question
    text = turn.message.text
    return text.removeprefix("answer ") if turn.kind == "answer" else ""


def _remembered(window: ContextWindow) -> set[str]:
    kept = {t.question for t in window.history if t.kind == "question"}
    summarized = {f.text.removeprefix("summarized ") for f in window.ledger.facts}
    return kept | summarized


@given(
    forks=st.integers(min_value=2, max_value=6).flatmap(
        lambda n: st.tuples(
            st.permutations([*(("take", i) for i in range(n)), *(("commit", i) for i in range(n))]),
            st.lists(st.booleans(), min_size=n, max_size=n),
        )
    ),
    earlier=st.integers(min_value=0, max_value=5),
)
@settings(max_examples=300, deadline=None)
def test_concurrent_commits_in_any_order_keep_every_answered_exchange(
    forks: tuple[list[tuple[str, int]], list[bool]], earlier: int
) -> None:
    events, compacts = forks
    state = _state()
    for index in range(earlier):
        _answer(state.window, f"e{index}")
    taken: dict[int, tuple[int, ContextWindow]] = {}
    committed_order: list[int] = []
    history_before = list(state.window.history)
    epoch_before = state.window.epoch
    for kind, index in events:
        if kind == "take" or index not in taken:  # a commit needs its fork first: take it now
            if index not in taken:
                taken[index] = state.fork()
                if compacts[index]:
                    _compact(taken[index][1])
                _answer(taken[index][1], f"q{index}")
            if kind == "take":
                continue
        fork_id, fork = taken[index]
        if index in committed_order:
            continue
        state.commit(fork_id, fork)
        committed_order.append(index)
        window = state.window
        if window.epoch == epoch_before:  # no compaction adopted: the history only grew
            assert window.history[: len(history_before)] == history_before
        history_before, epoch_before = list(window.history), window.epoch
    window = state.window
    asked = {f"e{i}" for i in range(earlier)} | {f"q{i}" for i in range(len(compacts))}
    assert _remembered(window) == asked  # a serial replay would remember exactly these
    assert window.qa_count() + window.summarized_pairs == len(asked)  # and each exactly once


def test_a_raced_commit_is_replayed_after_the_committed_exchange() -> None:
    state = _state()
    _answer(state.window, "e0")
    first_id, first = state.fork()
    second_id, second = state.fork()
    _answer(first, "q1")
    _answer(second, "q2")
    assert not state.commit(first_id, first)  # linear
    committed = list(state.window.history)
    assert state.commit(second_id, second)  # raced: rebased, not dropped
    assert state.window.history[: len(committed)] == committed
    assert [t.question for t in state.window.history if t.kind == "question"] == ["e0", "q1", "q2"]
    assert "q2.py" in state.window.files and state.stats.rebased_commits == 1
