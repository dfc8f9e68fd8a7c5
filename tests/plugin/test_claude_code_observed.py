"""The session-bill benchmark prices the tool results Claude Code puts in its main agent's context: a Read, an
Edit and an Explore report. This checks the benchmark's renderings against the real CLI, byte for byte, so a
new Claude Code that changes them fails here rather than skewing the bill unseen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.bill_agents import edit_result, read_result, subagent_report

from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from tests.plugin.conftest import cli_env, run_cli

pytestmark = pytest.mark.slow
REPORT = "app.py:3-4 defines answer(), which returns 42.\n\n- nothing else calls it"


def results_in(body: dict[str, Any]) -> list[str]:
    """The text of every tool result in a request, in order."""
    texts = []
    for message in body.get("messages") or []:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                texts.append(inner if isinstance(inner, str) else "".join(b.get("text", "") for b in inner))
    return texts


def test_the_benchmarks_read_edit_and_explore_results_are_what_claude_code_sends(claude: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    source = project / "app.py"
    original = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(40)) + "\tindented = 1\n"
    source.write_text(original)
    steps = [
        Reply.tool_call("Read", {"file_path": str(source)}),
        Reply.tool_call("Edit", {"file_path": str(source), "old_string": "x + 7\n", "new_string": "x + 70\n"}),
        Reply.tool_call(
            "Agent",
            {
                "description": "Find answer",
                "prompt": "Where is answer()?",
                "subagent_type": "Explore",
                "run_in_background": False,
            },
        ),
    ]

    def respond(request: RecordedRequest) -> Reply:
        tools = {t.get("name") for t in request.body.get("tools") or []}
        if "Agent" not in tools:  # the Explore subagent (or a side request)
            return Reply.text(REPORT)
        done = len(results_in(request.body))
        return steps[done] if done < len(steps) else Reply.text("done")

    with FakeLLM() as model:
        model.responder = respond
        run_cli(
            claude,
            ["-p", "Where is answer()?", "--permission-mode", "acceptEdits", "--output-format", "json"],
            cwd=project,
            env=cli_env(tmp_path / "home", model.base_url),
        )
        final = [r for r in model.requests if len(results_in(r.body)) == len(steps)]

    assert final, json.dumps([results_in(r.body) for r in model.requests])[:2000]
    read, edit, report = results_in(final[-1].body)
    assert read == read_result(original)
    assert edit == edit_result(str(source))
    assert report == subagent_report(REPORT)
