"""One memory for every agent, proven with two real CLIs offline: a file OpenCode reads, teed by its plugin,
answers a question Codex asks."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tests.agents.test_codex import TOOL, codex_bin, run_codex
from tests.agents.test_codex import scripted as codex_turns
from tests.agents.test_opencode import Memory, opencode_bin, run_opencode
from tests.agents.test_opencode import scripted as opencode_turns
from tests.fakes.llm_server import FakeLLM, Reply
from tests.plugin.conftest import Service

__all__ = ["codex_bin", "opencode_bin"]  # the CLIs' fixtures, found here by pytest

QUESTION = "How often are invoices retried?"


@pytest.mark.agent_cli
def test_a_file_opencode_read_answers_a_question_asked_from_codex(
    opencode_bin: str, codex_bin: str, service: Service, loaded_repo: Path, tmp_path: Path
) -> None:
    repo = loaded_repo
    billing = repo / "src" / "billing.py"
    billing.write_text("RETRY_LIMIT = 7  # invoices are retried 7 times, then parked\n", encoding="utf-8")
    with FakeLLM(cache_rules="openai", model="fake-model") as model:  # OpenCode reads the file
        model.responder = opencode_turns([Reply.tool_call("read", {"filePath": str(billing)})])
        memory = Memory(service.url, service.recorder, service.provider)
        run_opencode(opencode_bin, "Read src/billing.py", repo=repo, home=tmp_path / "oc", model=model, memory=memory)
    assert [c.answer()["accepted"] for c in service.notifies()] == [1]  # the plugin's tee reached the memory
    with FakeLLM() as model:  # then Codex asks
        model.responder = codex_turns([Reply.tool_call(TOOL, {"question": QUESTION, "cwd": str(repo)})])
        run_codex(codex_bin, model, service, repo, tmp_path, QUESTION)
    asked = [r for r in service.provider.requests if QUESTION in json.dumps(r.body)]
    assert asked, "the memory never got Codex's question"
    assert "invoices are retried 7 times, then parked" in json.dumps(asked[0].body)
    agents = httpx2.get(service.url + "/stats", params={"cwd": str(repo)}, timeout=10).json()["workspace"]["agents"]
    assert len(agents) == 1 and sum(agents.values()) == 1  # one question, from Codex's MCP client
