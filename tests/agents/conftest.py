"""Fixtures for the other coding agents' CLIs: the real Live Memory server behind the Claude Code plugin
tests' request recorder, and their small git repository (every agent is tested against the same service)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.session import BILLING_QUESTION, build_repo, memory_service, teach_through_notify
from tests.plugin.conftest import Service

__all__ = ["BILLING_QUESTION", "teach_through_notify"]  # for the modules not on the shared session yet


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


def assert_the_memory_knew_what_was_taught(service: Service) -> None:
    """The memory's own model request for the billing question carried what `teach_through_notify` taught."""
    asked = [r for r in service.provider.requests if BILLING_QUESTION in json.dumps(r.body)]
    assert asked, "the memory never got the question"
    assert "invoices are retried 7 times, then parked" in json.dumps(asked[0].body)


def assert_read_and_edit_teed(service: Service, source: Path, teed_before_next_turn: list[bool]) -> None:
    """The agent really edited `source`, and its read and its edit each reached /notify before its next turn."""
    assert source.read_text(encoding="utf-8").endswith("return 43\n")
    assert teed_before_next_turn == [True, True]
    assert [c.answer()["accepted"] for c in service.notifies()] == [1, 1]
