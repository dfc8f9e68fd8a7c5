"""A reduced run of the load benchmark: under chaos, nothing answered is lost and nothing 5xxs."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.load import run_load


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
    )
    assert figures["questions_sent"] == 2 + 3 * 5
    assert figures["http_5xx"] == 0
    assert figures["answered_by_server"] >= figures["answers_returned"], figures
    assert figures["lost_answers"] == 0, figures  # answered = retained + summarized, exactly
    assert figures["answers_returned"] >= 0.8 * figures["questions_sent"], figures
    assert figures["notify_events"] == 600
