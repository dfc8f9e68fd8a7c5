"""End to end with the real Claude Code CLI (`claude -p`), headless and offline.

Claude Code loads the plugin with --plugin-dir and talks to a scripted FakeLLM (ANTHROPIC_BASE_URL on
loopback); Live Memory runs for real on another loopback port with its own FakeLLM as provider.

One session, recorded once for the module (a Claude Code run costs a second of CPU): the user runs
`/live-memory:stats`, then asks a question; the model reads a file, asks Live Memory, then edits the file,
and the run ends right after the edit. Each test reads what it checks from that record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx

from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from tests.conftest import refuse_connections_off_loopback, seal_environment
from tests.fakes.agent_clis import require_cli
from tests.fakes.wire import all_text
from tests.plugin.conftest import (
    CLI_CANDIDATE,
    REPO_ROOT,
    TOOL_NAME,
    Call,
    Service,
    cli_env,
    make_repo,
    recorded_service,
    run_cli,
)
from tests.plugin.test_manifest import hook_groups

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


ORIGINAL = "def answer() -> int:\n    return 42\n"  # src/app.py as the repository holds it before the edit
PROMPTS = ("/live-memory:stats", "Where is answer() defined? Then make it return 43.")


@dataclass(frozen=True)
class Session:
    """What one recorded session left: Claude Code's output events, its model's requests, the server's
    exchanges, the repository, and what was checked while the run went on."""

    repo: Path
    events: list[dict[str, Any]]
    requests: list[RecordedRequest]  # every request to Claude Code's model, side requests included
    calls: list[Call]  # every request the server handled, in order
    stats: dict[str, Any]  # the server's /stats of the repository once the run ended
    teed_before_next_turn: list[bool]  # at the model's first request after the Edit: was the edit teed?
    teed_when_the_run_ended: bool

    @property
    def source(self) -> Path:
        return self.repo / "src" / "app.py"

    @property
    def agent(self) -> list[RecordedRequest]:
        return [r for r in self.requests if is_agent_turn(r)]

    def notified(self, kind: str) -> list[Call]:
        return [c for c in self.calls if c.path == "/notify" and c.json()["events"][0]["kind"] == kind]


def teed_edit(service: Service) -> bool:
    writes = [c.json()["events"][0] for c in service.notifies() if c.json()["events"][0]["kind"] == "write"]
    return bool(writes) and "return 43" in str(writes[-1].get("content"))


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The session, run once under what the autouse fixtures give every test (they are per test, so they are
    set up here again): a sealed environment, loopback only, no blocking call on the server's event loop."""
    claude = require_cli(CLI_CANDIDATE, "claude", "scripts/install-claude-cli.sh")
    home = tmp_path_factory.mktemp("home")
    with (
        pytest.MonkeyPatch.context() as patch,
        blockbuster_ctx("live_memory", excluded_modules=["live_memory.testing"]),
    ):
        seal_environment(patch, home)
        refuse_connections_off_loopback(patch)
        with recorded_service(home / "live-memory-data") as service:
            repo = make_repo(home)
            service.load(repo)
            source = repo / "src" / "app.py"
            read = Reply.tool_call("Read", {"file_path": str(source)})
            ask = Reply.tool_call(TOOL_NAME, {"question": "What does answer() return?", "cwd": str(repo)})
            edit_args = {"file_path": str(source), "old_string": "return 42", "new_string": "return 43"}
            turns = [read, ask, Reply.tool_call("Edit", edit_args)]
            teed_before_next_turn: list[bool] = []

            def respond(request: RecordedRequest) -> Reply:
                if not is_agent_turn(request):
                    return Reply.text("ok")
                step = len(tool_results(request.body))
                if step == len(turns):  # the model's first request after the Edit
                    teed_before_next_turn.append(teed_edit(service))
                return turns[step] if step < len(turns) else Reply.text("done")

            with FakeLLM() as model:
                model.responder = respond
                events = run_claude(
                    claude,
                    ["--input-format", "stream-json", "--permission-mode", "acceptEdits", "--allowedTools", TOOL_NAME],
                    project=repo,
                    home=home / "cli-home",
                    base_url=model.base_url,
                    service=service,
                    stdin="".join(
                        json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
                        for text in PROMPTS
                    ),
                )
                requests = list(model.requests)
            teed_when_the_run_ended = teed_edit(service)  # nothing was cancelled when the run ended
            # The Read hook's tee may still be on its way: the record is taken once it and the question are in.
            calls = service.recorder.wait_for(
                lambda calls: any(c.path == "/notify" for c in calls) and any(b'"tools/call"' in c.body for c in calls)
            )
            stats = service.stats(repo).json()
    return Session(repo, events, requests, calls, stats, teed_before_next_turn, teed_when_the_run_ended)


def test_claude_reads_a_file_the_hook_tees_it_then_asks_live_memory(session: Session) -> None:
    repo, agent = session.repo, session.agent
    init = next(e for e in session.events if e.get("subtype") == "init")
    assert {"name": "plugin:live-memory:live-memory", "status": "connected", "source": "plugin"} in init["mcp_servers"]
    # alwaysLoad: the full schema is in the very first request, so no ToolSearch round trip is needed.
    (schema,) = [t for t in agent[0].body["tools"] if t.get("name") == TOOL_NAME]
    assert {"question", "cwd"} <= set(schema["input_schema"]["properties"])
    # SessionStart put one line of context in front of the model.
    assert f'ask {TOOL_NAME} with cwd="{repo}"' in all_text(agent[0].body["messages"])

    # The Read hook teed the file's bytes from disk, and the loaded workspace accepted them.
    tees = session.notified("read")
    assert len(tees) == 1
    assert tees[0].json()["cwd"] == str(repo)
    assert tees[0].json()["events"] == [{"path": str(session.source), "kind": "read", "content": ORIGINAL}]
    assert tees[0].answer()["accepted"] == 1

    # The tool call reached the server with the project header, and its answer reached the model.
    (call,) = [c for c in session.calls if c.path == "/mcp" and b'"tools/call"' in c.body]
    assert b"ask_live_memory" in call.body and call.status == 200
    assert call.headers["x-live-memory-project"] == str(repo)
    (after,) = [r for r in agent if len(tool_results(r.body)) == 2]
    assert "[live-memory] model=claude-haiku-4-5" in tool_results(after.body)[-1]
    assert session.stats["workspace"]["questions_answered"] == 1
    assert session.stats["workspace"]["agents"] == {"claude-code": 1}  # its MCP client's name


def test_stats_command_is_shown_to_the_user_and_never_sent_to_the_model(session: Session) -> None:
    shown = [
        e["content"]
        for e in session.events
        if e.get("subtype") == "informational" and "Live Memory ·" in e.get("content", "")
    ]
    assert len(shown) == 1 and "context   [" in shown[0] and "compacted never" in shown[0]
    assert any(c.path == "/stats" for c in session.calls)  # the hook really asked the server
    sent = [all_text(r.body) for r in session.requests]
    assert any(PROMPTS[1] in body for body in sent)  # the session went on to a real model turn...
    for body in sent:  # ...and no request to the model ever carried the stats
        assert "context   [" not in body and "Live Memory ·" not in body
        assert "compacted never" not in body


def test_an_edit_reaches_the_memory_before_the_next_model_request_and_survives_the_run_ending(
    session: Session,
) -> None:
    """The edit tee is synchronous: a question asked right after an Edit sees the new text, and a `-p` run
    that ends right after the Edit does not cancel the tee."""
    assert session.source.read_text(encoding="utf-8").endswith("return 43\n")  # Claude Code really edited it
    assert session.teed_before_next_turn == [True]
    assert session.teed_when_the_run_ended  # and nothing was cancelled when the run ended


def test_tool_matchers_name_tools_the_claude_cli_has(session: Session) -> None:
    """The plugin's PostToolUse matchers against the real CLI's own tool list (its `system/init` event), so a
    renamed tool fails here."""
    tools = set(next(e for e in session.events if e.get("subtype") == "init")["tools"])
    matched = {name for g in hook_groups("PostToolUse") for name in g["matcher"].split("|")}
    assert matched <= tools, f"matchers name tools the CLI does not have: {sorted(matched - tools)}"
