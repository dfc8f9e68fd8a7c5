"""Deterministic fixture git repositories, built with the real `git` (fixed identity, dates and config;
no network, no user or system git config). Reusable by any test or benchmark.

    RepoBuilder(root).write("a.py", "...").commit("message")   # low level
    build_history_repo(base, hostile=True)                      # the tools' fixture: see its docstring

Markers are planted in files no tool may reveal (secrets, files outside the workspace, .git/config,
ignored files, a secret deleted from history); tests assert they never appear in any output.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from live_memory.testing.git_env import git_env

__all__ = [
    "GITCONFIG_MARKER",
    "HISTORY_SECRET_MARKER",
    "IGNORED_MARKER",
    "OUTSIDE_MARKER",
    "RENAMED_SECRET_MARKER",
    "SECRET_MARKER",
    "HistoryRepo",
    "RepoBuilder",
    "build_history_repo",
    "git_env",
]

SECRET_MARKER = "PLANTED-SECRET-5f1c9e"
OUTSIDE_MARKER = "OUTSIDE-MARKER-77ab3d"
GITCONFIG_MARKER = "GITCONFIG-MARKER-41d0"
IGNORED_MARKER = "IGNORED-MARKER-c0ffee"
HISTORY_SECRET_MARKER = "HISTORY-SECRET-aa91"
RENAMED_SECRET_MARKER = "RENAMED-SECRET-6b2e"

_EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z; each commit is one hour later


class RepoBuilder:
    """A git repository under construction. Every commit gets the next fixed timestamp."""

    def __init__(self, root: Path, *, branch: str = "main") -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._home = root.parent / f".{root.name}-git-home"
        self._home.mkdir(exist_ok=True)
        self.env = git_env(self._home)
        self._tick = 0
        self.git("init", "-q", "-b", branch)
        self.git("config", "commit.gpgsign", "false")
        self.git("config", "core.autocrlf", "false")

    def git(self, *args: str) -> str:
        env = dict(self.env)
        stamp = f"@{_EPOCH + self._tick * 3600} +0000"
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = stamp
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=env, check=True, capture_output=True, text=True, timeout=60
        )
        return done.stdout

    def write(self, rel: str, content: str | bytes) -> RepoBuilder:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
        return self

    def remove(self, rel: str) -> RepoBuilder:
        (self.root / rel).unlink()
        return self

    def commit(self, message: str, *paths: str) -> str:
        """Stage `paths` (everything when none) and commit; returns the full hash."""
        self._tick += 1
        self.git("add", "-A", *(["--", *paths] if paths else []))
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


@dataclass(frozen=True)
class HistoryRepo:
    root: Path  # the workspace (a git repository)
    outside: Path  # a sibling directory with planted content that must never leak
    commits: dict[str, str] = field(default_factory=dict)  # label -> full hash
    hostile: bool = False


_MAIN_PY = """\
\"\"\"Entry point of the demo app.\"\"\"

from app.helpers import retry


class RateLimiter:
    def __init__(self, rate: int) -> None:
        self.rate = rate

    def allow(self) -> bool:
        return self.rate > 0


def main() -> None:
    limiter = RateLimiter(5)
    retry(limiter.allow)
"""

_UTIL_PY = """\
def retry(fn, attempts=3):
    for _ in range(attempts):
        if fn():
            return True
    return False
"""


def build_history_repo(base: Path, *, hostile: bool = False) -> HistoryRepo:
    """A small repository with history, under base/repo, plus base/outside.

    History: initial skeleton; docs; a rename (src/app/util.py -> src/app/helpers.py); a bug fix;
    a secret committed (deploy/.env) then deleted; a secret renamed to a non-secret name with its
    secret removed (config/app.env -> config/app-settings.txt).
    Working tree: README.md modified (unstaged), src/app/feature.py added (staged), notes/todo.txt
    untracked, ignored build/ debug.log node_modules/, a binary, a 5000-line file, a 600-byte line,
    CRLF and non-ASCII text, nested .gitignore with a negation, and secret files (.env, keys...).
    hostile=True adds symlinks escaping the workspace (file, directory, chains, /etc,
    /proc/self/root), symlinks into .git and to a secret, a symlink loop and a FIFO.
    """
    outside = base / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "passwd").write_text(f"root:x:0:0:{OUTSIDE_MARKER}\n")
    (outside / "notes.txt").write_text(f"outside notes {OUTSIDE_MARKER}\n")
    repo = RepoBuilder(base / "repo")
    repo.git("config", "livememory.marker", GITCONFIG_MARKER)
    commits: dict[str, str] = {}

    repo.write("README.md", "# Demo\n\nA demo project for Live Memory tests.\n")
    repo.write(".gitignore", "build/\n*.log\nnode_modules/\n!keep.log\n")
    repo.write("src/app/__init__.py", "")
    repo.write("src/app/main.py", _MAIN_PY)
    repo.write("src/app/util.py", _UTIL_PY)
    commits["initial"] = repo.commit("Initial commit: app skeleton with RateLimiter")

    repo.write("docs/guide.md", "# Guide\n\nThe RateLimiter caps calls per second.\n")
    repo.write(
        "data/big.txt",
        "".join(f"line {i}: filler text{' needle' if i % 500 == 0 else ''}\n" for i in range(1, 5001)),
    )
    repo.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR RateLimiter \x00\x01\x02needle\x00")
    commits["docs"] = repo.commit("Add guide docs and sample data\n\nExplains the rate limiter design.")

    repo.git("mv", "src/app/util.py", "src/app/helpers.py")
    commits["rename"] = repo.commit("Rename util module to helpers")

    repo.write("src/app/helpers.py", _UTIL_PY.replace("attempts=3", "attempts=5"))
    commits["fix"] = repo.commit("Fix retry bug: allow five attempts")

    repo.write("deploy/.env", f"DEPLOY_TOKEN={HISTORY_SECRET_MARKER}\n")
    repo.write("deploy/run.sh", "#!/bin/sh\necho deploy\n")
    commits["leak"] = repo.commit("Add deploy config")
    repo.remove("deploy/.env")
    commits["unleak"] = repo.commit("Remove leaked deploy env")

    settings = "".join(f"option_{i} = value {i}\n" for i in range(20))
    repo.write("config/app.env", settings + f"api_key = {RENAMED_SECRET_MARKER}\n")
    commits["env"] = repo.commit("Add app settings")
    repo.remove("config/app.env")
    repo.write("config/app-settings.txt", settings + "api_key = (from the vault)\n")
    commits["env_rename"] = repo.commit("Move app settings out of the env file")

    repo.write("src/app/long_line.js", "var RateLimiter = '" + "x" * 600 + "';\n")
    repo.write("src/app/crlf.txt", "first RateLimiter line\r\nsecond line\r\n")
    repo.write("src/app/unicode.txt", "Grüße vom RateLimiter — ünïcödé\n")
    repo.write("src/nested/.gitignore", "*.tmp\n!keep.tmp\n")
    repo.write("src/nested/keep.tmp", "kept despite *.tmp needle\n")
    repo.write("src/nested/drop.tmp", f"dropped {IGNORED_MARKER} needle\n")
    repo.write("keep.log", "kept log needle\n")
    commits["extras"] = repo.commit("Add fixtures for edge cases")

    # Secrets present in the working tree (committed and untracked alike).
    repo.write(".env", f"API_TOKEN={SECRET_MARKER}\nneedle\n")
    repo.write("config/.env.production", f"DB_PASSWORD={SECRET_MARKER} needle\n")
    repo.write("keys/server.pem", f"-----BEGIN PRIVATE KEY-----\n{SECRET_MARKER} needle\n")
    repo.write(".aws/credentials", f"[default]\naws_secret_access_key={SECRET_MARKER} needle\n")
    repo.write("deploy/service-account-prod.json", f'{{"private_key": "{SECRET_MARKER} needle"}}\n')
    commits["secrets"] = repo.commit("Add local configuration", ".env", "keys/server.pem")

    # Ignored files.
    repo.write("build/out.txt", f"{IGNORED_MARKER} needle\n")
    repo.write("debug.log", f"{IGNORED_MARKER} needle\n")
    repo.write("node_modules/pkg/index.js", f"// {IGNORED_MARKER} needle\n")
    # Working-tree changes.
    repo.write("README.md", "# Demo\n\nA demo project for Live Memory tests.\n\nNow with a feature.\n")
    repo.write("src/app/feature.py", "FEATURE = 'needle'\n")
    repo.git("add", "src/app/feature.py")
    repo.write("notes/todo.txt", "todo: ship it needle\n")

    if hostile:
        root = repo.root
        links = {
            "escape_file": "../outside/passwd",
            "escape_dir": "../outside",
            "chain_a": "chain_b",
            "chain_b": "chain_c",
            "chain_c": "../outside/passwd",
            "etc_link": "/etc",
            "passwd_link": "/etc/passwd",
            "proc_root": "/proc/self/root",
            "to_git_config": ".git/config",
            "to_git_dir": ".git",
            "alias_env": ".env",
            "ok_link.py": "src/app/main.py",
            "loop_a": "loop_b",
            "loop_b": "loop_a",
        }
        for name, target in links.items():
            (root / name).symlink_to(target)
        (root / "src" / "escape_sub").symlink_to("../../outside")
        os.mkfifo(root / "pipe.fifo")
    return HistoryRepo(root=repo.root, outside=outside, commits=commits, hostile=hostile)


def docs_repo(tmp_path: Path) -> Path:
    """A repository with a docs/ tree to preload: two small documents and one past the per-file cap."""
    root = tmp_path / "repo"
    (root / "docs" / "api").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "docs" / "intro.md").write_text("# Intro\nWelcome.\n")
    (root / "docs" / "api" / "auth.md").write_text("# Auth\nTokens expire after 1h.\n")
    (root / "docs" / "big.md").write_text("# Big\n" + "x" * 5000)
    return root


def preload_repo(tmp_path: Path) -> Path:
    """`docs_repo` plus what preloading must skip: a secret, a binary file named .md, and code."""
    root = docs_repo(tmp_path)
    (root / "docs" / ".env").write_text("SECRET=1\n")
    (root / "docs" / "logo.md").write_bytes(b"\x89PNG\x00\x00")
    (root / "app.py").write_text("VALUE = 1\n")
    return root


def small_repo(tmp_path: Path, files: Mapping[str, str]) -> Path:
    """A git root (`tmp_path/repo`) holding `files`: relative path -> text."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def one_file_repo(tmp_path: Path, name: str = "app.py", text: str = "VERSION = 1\n") -> Path:
    """The smallest workspace: a git root holding one source file."""
    return small_repo(tmp_path, {name: text})


def wide_repo(tmp_path: Path, directories: int = 60, files: int = 20) -> Path:
    """A repository whose full listing is far past any tree budget: `directories` x `files` small modules."""
    root = tmp_path / "wide"
    (root / ".git").mkdir(parents=True)
    for d in range(directories):
        folder = root / f"component_{d:02d}_services"
        folder.mkdir()
        for f in range(files):
            (folder / f"module_{f:02d}_handler.py").write_text(f"def handle_{d}_{f}():\n    return {f}\n")
    return root
