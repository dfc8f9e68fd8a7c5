"""Fixtures for the other coding agents' CLIs: the real Live Memory server behind the Claude Code plugin
tests' request recorder, and their small git repository (every agent is tested against the same service)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.session import build_repo, memory_service
from tests.plugin.conftest import Service


@pytest.fixture
def service(sealed_environment: Path) -> Iterator[Service]:
    """As the plugin tests' service, except that the memory answers at once from what it holds and keeps
    every file it is told about in its prompt (tests/agents/session.py), so a test sees a taught file in the
    very next question."""
    with memory_service(Path(os.environ["LIVE_MEMORY_DATA_DIR"])) as service:
        yield service


@pytest.fixture
def repo(sealed_environment: Path) -> Path:
    return build_repo(sealed_environment / "src" / "repo")


@pytest.fixture
def loaded_repo(service: Service, repo: Path) -> Path:
    """`repo`, its workspace already loaded by the service (/notify applies to a loaded one)."""
    service.load(repo)
    return repo
