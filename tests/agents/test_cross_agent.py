"""One memory for every agent, proven with two real CLIs offline: a file Claude Code reads, teed by its
plugin's hook, answers a question Codex asks. (Claude Code, because the question a user asks from Codex is
answered from what the memory learned while Claude Code worked; it also starts in about a second.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from live_memory.cli.agents import codex
from live_memory.testing.llm_server import FakeLLM, Reply
from tests.agents.session import BILLING, BILLING_QUESTION, assert_the_memory_knew_what_was_taught, question
from tests.agents.test_codex import TOOL, codex_bin, run_codex
from tests.agents.test_codex import step_of as codex_step
from tests.fakes.agent_clis import scripted
from tests.plugin.conftest import Service, claude
from tests.plugin.test_claude_code_e2e import run_claude
from tests.plugin.test_claude_code_e2e import scripted as claude_turns

__all__ = ["claude", "codex_bin"]  # the CLIs' fixtures, found here by pytest


@pytest.mark.agent_cli
def test_a_file_claude_code_read_answers_a_question_asked_from_codex(
    claude: str, codex_bin: str, service: Service, loaded_repo: Path, tmp_path: Path
) -> None:
    repo = loaded_repo
    billing = repo / "src" / "billing.py"
    billing.write_text(BILLING, encoding="utf-8")
    with FakeLLM() as model:  # Claude Code reads the file
        model.responder = claude_turns([Reply.tool_call("Read", {"file_path": str(billing)})])
        run_claude(
            claude,
            ["Read src/billing.py"],
            project=repo,
            home=tmp_path / "claude",
            base_url=model.base_url,
            service=service,
        )
    calls = service.recorder.wait_for(lambda calls: any(c.path == "/notify" for c in calls))
    (tee,) = [c for c in calls if c.path == "/notify"]  # the plugin's hook teed it, and the memory took it
    assert tee.json()["events"] == [{"path": str(billing), "kind": "read", "content": BILLING}]
    assert tee.answer()["accepted"] == 1
    with FakeLLM() as model:  # then Codex asks
        model.responder = scripted([Reply.tool_call(TOOL, question(repo))], codex_step)
        run_codex(codex_bin, model, service, repo, tmp_path / "codex", BILLING_QUESTION, instructions=False)
    assert_the_memory_knew_what_was_taught(service.provider.requests)
    agents = service.stats(repo).json()["workspace"]["agents"]
    assert agents == {codex.AGENT_NAME: 1}  # one question, Codex's: Claude Code asked none
