"""End to end with the real Claude Code CLI (`claude -p`), headless and offline.

Claude Code loads the plugin with --plugin-dir and talks to a scripted FakeLLM (ANTHROPIC_BASE_URL on
loopback); Live Memory runs for real on another loopback port with its own FakeLLM as provider.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_server import FakeLLM, RecordedRequest, Reply
from tests.fakes.wire import all_text
from tests.plugin.conftest import REPO_ROOT, TOOL_NAME, Service, cli_env, run_cli

pytestmark = pytest.mark.slow
CLI_TIMEOUT_S = 120.0


def is_agent_turn(request: RecordedRequest) -> bool:
    """The main conversation's requests carry our tool; side requests (titles, summaries) do not."""
    return any(isinstance(t, dict) and t.get("name") == TOOL_NAME for t in request.body.get("tools") or [])


def tool_results(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, list):
                        inner = "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                    texts.append(str(inner))
    return texts


def scripted(turns: list[Reply]) -> Callable[[RecordedRequest], Reply]:
    """Agent turn N (N tool results so far) gets turns[N]; side requests get a short text."""

    def respond(request: RecordedRequest) -> Reply:
        if not is_agent_turn(request):
            return Reply.text("ok")
        step = len(tool_results(request.body))
        return turns[step] if step < len(turns) else Reply.text("done")

    return respond


def run_claude(
    claude: str, args: list[str], *, project: Path, home: Path, base_url: str, service: Service, stdin: str = ""
) -> list[dict[str, Any]]:
    port = service.url.rsplit(":", 1)[1]
    done = run_cli(
        claude,
        ["-p", *args, "--plugin-dir", str(REPO_ROOT), "--output-format", "stream-json", "--verbose"],
        cwd=project,
        env=cli_env(home, base_url, LIVE_MEMORY_PORT=port),  # the plugin's default URL follows LIVE_MEMORY_PORT
        stdin=stdin,
        timeout_s=CLI_TIMEOUT_S,
        shown_chars=3000,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_claude_reads_a_file_the_hook_tees_it_then_asks_live_memory(
    claude: str, service: Service, repo: Path, tmp_path: Path
) -> None:
    service.load(repo)
    source = repo / "src" / "app.py"
    question = {"question": "What does answer() return?", "cwd": str(repo)}
    with FakeLLM() as model:
        read, ask = Reply.tool_call("Read", {"file_path": str(source)}), Reply.tool_call(TOOL_NAME, question)
        model.responder = scripted([read, ask])
        events = run_claude(
            claude,
            ["Where is answer() defined?", "--permission-mode", "acceptEdits", "--allowedTools", TOOL_NAME],
            project=repo,
            home=tmp_path / "home",
            base_url=model.base_url,
            service=service,
        )
        agent = [r for r in model.requests if is_agent_turn(r)]

    init = next(e for e in events if e.get("subtype") == "init")
    assert {"name": "plugin:live-memory:live-memory", "status": "connected", "source": "plugin"} in init["mcp_servers"]
    # alwaysLoad: the full schema is in the very first request, so no ToolSearch round trip is needed.
    (schema,) = [t for t in agent[0].body["tools"] if t.get("name") == TOOL_NAME]
    assert {"question", "cwd"} <= set(schema["input_schema"]["properties"])
    # SessionStart put one line of context in front of the model.
    assert f'ask {TOOL_NAME} with cwd="{repo}"' in all_text(agent[0].body["messages"])

    # The Read hook teed the file's bytes from disk, and the loaded workspace accepted them.
    calls = service.recorder.wait_for(lambda calls: any(c.path == "/notify" for c in calls))
    tees = [c for c in calls if c.path == "/notify" and c.json()["events"][0]["kind"] == "read"]
    assert len(tees) == 1
    assert tees[0].json()["cwd"] == str(repo)
    assert tees[0].json()["events"] == [
        {"path": str(source), "kind": "read", "content": source.read_text(encoding="utf-8")}
    ]
    assert tees[0].answer()["accepted"] == 1

    # The tool call reached the server with the project header, and its answer reached the model.
    calls = service.recorder.wait_for(lambda calls: any(b'"tools/call"' in c.body for c in calls))
    (call,) = [c for c in calls if c.path == "/mcp" and b'"tools/call"' in c.body]
    assert b"ask_live_memory" in call.body and call.status == 200
    assert call.headers["x-live-memory-project"] == str(repo)
    (after,) = [r for r in agent if len(tool_results(r.body)) == 2]
    assert "[live-memory] model=claude-haiku-4-5" in tool_results(after.body)[-1]
    assert service.stats(repo).json()["workspace"]["questions_answered"] == 1


def test_stats_command_is_shown_to_the_user_and_never_sent_to_the_model(
    claude: str, service: Service, repo: Path, tmp_path: Path
) -> None:
    service.load(repo)
    prompts = [
        {"type": "user", "message": {"role": "user", "content": text}} for text in ("/live-memory:stats", "Say hi")
    ]
    with FakeLLM() as model:
        model.responder = scripted([])
        events = run_claude(
            claude,
            ["--input-format", "stream-json"],
            project=repo,
            home=tmp_path / "home",
            base_url=model.base_url,
            service=service,
            stdin="".join(json.dumps(p) + "\n" for p in prompts),
        )
        sent = [all_text(r.body) for r in model.requests]

    shown = [
        e["content"] for e in events if e.get("subtype") == "informational" and "Live Memory ·" in e.get("content", "")
    ]
    assert len(shown) == 1 and "context   [" in shown[0] and "compacted never" in shown[0]
    assert service.recorder.find("/stats")  # the hook really asked the server
    assert any("Say hi" in body for body in sent)  # the session went on to a real model turn...
    for body in sent:  # ...and no request to the model ever carried the stats
        assert "context   [" not in body and "Live Memory ·" not in body
        assert "compacted never" not in body


def test_an_edit_reaches_the_memory_before_the_next_model_request_and_survives_the_run_ending(
    claude: str, service: Service, repo: Path, tmp_path: Path
) -> None:
    """The edit tee is synchronous: a question asked right after an Edit sees the new text, and a `-p` run
    that ends right after the Edit does not cancel the tee."""
    service.load(repo)
    source = repo / "src" / "app.py"
    read = Reply.tool_call("Read", {"file_path": str(source)})
    edit = Reply.tool_call("Edit", {"file_path": str(source), "old_string": "return 42", "new_string": "return 43"})
    teed_before_next_turn: list[bool] = []

    def teed_edit() -> bool:
        writes = [c.json()["events"][0] for c in service.notifies() if c.json()["events"][0]["kind"] == "write"]
        return bool(writes) and "return 43" in str(writes[-1].get("content"))

    def respond(request: RecordedRequest) -> Reply:
        if not is_agent_turn(request):
            return Reply.text("ok")
        step = len(tool_results(request.body))
        if step == 2:  # the model's first request after the Edit
            teed_before_next_turn.append(teed_edit())
        return [read, edit][step] if step < 2 else Reply.text("done")

    with FakeLLM() as model:
        model.responder = respond
        run_claude(
            claude,
            ["Make answer() return 43.", "--permission-mode", "acceptEdits"],
            project=repo,
            home=tmp_path / "home",
            base_url=model.base_url,
            service=service,
        )
    assert source.read_text(encoding="utf-8").endswith("return 43\n")  # Claude Code really edited it
    assert teed_before_next_turn == [True]
    assert teed_edit()  # and nothing was cancelled when the run ended
