"""A reduced run of the load benchmark: under chaos, nothing answered is lost and nothing 5xxs."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.load import run_load

from live_memory.settings.config import load_settings
from live_memory.testing.live_server import live_server


@contextlib.contextmanager
def serve_in_this_process(env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """The benchmark's server, configured by the same environment, in a thread of this process: a process of
    its own would add seconds of start-up CPU (the SDKs' imports) and nothing this test checks. (The server as
    a process: tests/cli/test_main.py, tests/workspaces/test_store.py; `python -m bench.load` runs it so.)"""
    settings = load_settings(env=env, data_dir=Path(env["LIVE_MEMORY_DATA_DIR"]))
    with live_server(settings) as server:
        yield server.url, os.getpid()


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", ["parallel", "serial"])
def test_reduced_load_under_chaos_loses_no_answer_and_never_5xx(tmp_path: Path, concurrency: str) -> None:
    figures = run_load(
        tmp_path,
        sessions=3,
        workspaces=2,
        questions=5,
        notifiers=2,
        events=600,
        concurrency=concurrency,
        retry_base_s=0.01,  # the same retries, without the production backoff's idle seconds
        serve=serve_in_this_process,
    )
    assert figures["questions_sent"] == 2 + 3 * 5
    assert figures["http_5xx"] == 0
    assert figures["answered_by_server"] >= figures["answers_returned"], figures
    assert figures["lost_answers"] == 0, figures  # answered = retained + summarized, exactly
    assert figures["answers_returned"] >= 0.8 * figures["questions_sent"], figures
    assert figures["notify_events"] == 600
