"""Which memory a directory belongs to: git roots, worktrees, submodules, plain directories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from live_memory.errors import InputError
from live_memory.workspace import Location, locate, validate_cwd

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


def where(cwd: Path, *, mode: str = "nearest", canonicalize: bool = True, share: bool = True) -> Location:
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
    [("", "cwd is required"), ("rel/path", "must be an absolute path"), ("/no/such/dir", "not an existing directory")],
)
def test_bad_cwd_is_refused_with_a_clear_message(cwd: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        validate_cwd(cwd)
