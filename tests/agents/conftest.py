"""Fixtures for the other coding agents' CLIs: the real Live Memory server behind the Claude Code plugin
tests' request recorder, and their small git repository (every agent is tested against the same service)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from live_memory.http.app import create_app
from tests.fakes.live_server import LiveServer, settings_for
from tests.fakes.llm_server import FakeLLM
from tests.plugin.conftest import Recorder, Service, repo

__all__ = ["loaded_repo", "repo", "service"]

BILLING = "RETRY_LIMIT = 7  # invoices are retried 7 times, then parked\n"
BILLING_QUESTION = "How often are invoices retried?"


@pytest.fixture
def service(tmp_path: Path, sealed_environment: Path) -> Iterator[Service]:
    """As the plugin tests' service, except that the memory keeps every file it is told about in its prompt
    (hold_files=all), so a test sees a taught file in the very next question."""
    data_dir = Path(os.environ["LIVE_MEMORY_DATA_DIR"])
    with FakeLLM() as provider:
        recorder = Recorder(create_app(settings_for(provider.base_url, data_dir, hold_files="all")))
        with LiveServer(recorder) as server:  # type: ignore[arg-type]
            yield Service(server.url, recorder, data_dir, provider)


@pytest.fixture
def loaded_repo(service: Service, repo: Path) -> Path:
    """`repo`, its workspace already loaded by the service (/notify applies to a loaded one)."""
    service.load(repo)
    return repo


def teach_through_notify(service: Service, repo: Path) -> None:
    """What another agent's hook sends when its agent reads src/billing.py."""
    billing = repo / "src" / "billing.py"
    billing.write_text(BILLING, encoding="utf-8")
    event = {"path": str(billing), "kind": "read", "content": BILLING}
    assert service.post("/notify", {"cwd": str(repo), "events": [event]}).json()["accepted"] == 1


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
