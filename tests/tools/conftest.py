"""Fixtures for the tools tests: one hostile fixture repository per session (read-only for tests),
and toolboxes over it with ripgrep and without it (Glob and find_paths then use the walker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from live_memory.tools import Toolbox, ToolLimits
from tests.fakes.repo_builder import HistoryRepo, build_history_repo


@pytest.fixture(scope="session")
def history_repo(tmp_path_factory: pytest.TempPathFactory) -> HistoryRepo:
    """Shared by every test in the session: tests must not modify it (build their own instead)."""
    return build_history_repo(tmp_path_factory.mktemp("history"), hostile=True)


@pytest.fixture
def repo_root(history_repo: HistoryRepo) -> Path:
    return history_repo.root


@pytest.fixture
def toolbox(history_repo: HistoryRepo) -> Toolbox:
    box = Toolbox(history_repo.root)
    assert box.ripgrep is not None, "the ripgrep wheel must be installed (it is a declared dependency)"
    return box


@pytest.fixture
def py_toolbox(history_repo: HistoryRepo) -> Toolbox:
    box = Toolbox(history_repo.root, ToolLimits(use_ripgrep=False))
    assert box.ripgrep is None
    return box


@pytest.fixture(params=["ripgrep", "python"])
def any_toolbox(request: pytest.FixtureRequest, history_repo: HistoryRepo) -> Toolbox:
    """Both listing engines (ripgrep and the walker): tests using this must pass identically with either."""
    limits = ToolLimits(use_ripgrep=request.param == "ripgrep")
    return Toolbox(history_repo.root, limits)
