"""One scripted session of an agent's real CLI, recorded once per module and shared by that agent's end-to-end
tests: each test asserts its own behaviour on the one run, so a CLI (seconds of startup) starts once, not
once a test.

The session: another agent's hook teaches src/billing.py through /notify; then the agent's scripted model
(turn 0) reads src/app.py, (turn 1) edits it to return 43, (turn 2) asks ask_live_memory the billing question
with the repository as cwd, and (turn 3) ends. Before turns 1 and 2 it checks that the read, then the edit,
had already reached /notify. Everything runs sealed as a test is (tests/conftest.py): the module's fixture is
built before any test's own seal.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx

from live_memory.http.app import create_app
from live_memory.testing.live_server import LiveServer, settings_for
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from tests.conftest import refuse_connections_off_loopback, seal_environment
from tests.plugin.conftest import Call, Recorder, Service

BILLING = "RETRY_LIMIT = 7  # invoices are retried 7 times, then parked\n"
BILLING_FACT = "invoices are retried 7 times, then parked"
BILLING_QUESTION = "How often are invoices retried?"
MEMORY_ANSWER = "Invoices are retried 7 times, then parked: src/billing.py:1 (MEMORY-7f3a)."
ORIGINAL = "def answer() -> int:\n    return 42\n"
EDITED = "def answer() -> int:\n    return 43\n"
PROMPT = "Read src/app.py, make answer() return 43, then ask how often invoices are retried."

# (repo, the session's HOME, the agent's model, the memory) -> the CLI's JSON events
Run = Callable[[Path, Path, FakeLLM, Service], list[dict[str, Any]]]


def build_repo(root: Path) -> Path:
    """A small git repository: sources and a .gitignore (under HOME, the server's default allowed root)."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(ORIGINAL, encoding="utf-8")
    (root / "README.md").write_text("# demo\n", encoding="utf-8")
    (root / ".gitignore").write_text("dist/\n*.log\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


@contextlib.contextmanager
def memory_service(data_dir: Path) -> Iterator[Service]:
    """The real Live Memory app on loopback, every request recorded, its provider a FakeLLM answering
    MEMORY_ANSWER. Why these options: it answers at once from what it holds, and holds every teed file's
    bytes, so what a tee taught shows verbatim in its prompt for the very next question."""
    with FakeLLM() as provider:
        provider.responder = lambda request: Reply.text(MEMORY_ANSWER)
        settings = settings_for(provider.base_url, data_dir, force_explore_when_cold=0, hold_files="all")
        recorder = Recorder(create_app(settings))
        with LiveServer(recorder) as server:  # type: ignore[arg-type]
            yield Service(server.url, recorder, data_dir, provider)


def teach_through_notify(service: Service, repo: Path) -> None:
    """What another agent's hook sends when its agent reads src/billing.py."""
    billing = repo / "src" / "billing.py"
    billing.write_text(BILLING, encoding="utf-8")
    event = {"path": str(billing), "kind": "read", "content": BILLING}
    assert service.post("/notify", {"cwd": str(repo), "events": [event]}).json()["accepted"] == 1


def question(repo: Path) -> dict[str, str]:
    """The arguments of the session's ask_live_memory call."""
    return {"question": BILLING_QUESTION, "cwd": str(repo)}


def mcp_tool_calls(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.path == "/mcp" and b'"tools/call"' in c.body]


@dataclass(frozen=True)
class Session:
    """What one run left behind: the agent model's requests, the CLI's events, what the memory saw."""

    repo: Path
    turns: list[RecordedRequest]  # the agent's main conversation, one request per step
    events: list[dict[str, Any]]
    calls: list[Call]  # every request the memory service handled, in order
    taught: int  # how many of them came before the agent started
    memory_requests: list[RecordedRequest]  # the memory's own provider requests
    teed_before_next_turn: list[bool]  # [the read before turn 1, the edit before turn 2]
    held_before_turn: list[int]  # files the memory held (/stats file_contexts) at each turn
    stats: dict[str, Any]  # /stats workspace after the run

    @property
    def source(self) -> Path:
        return self.repo / "src" / "app.py"

    def agent_notifies(self) -> list[Call]:
        return [c for c in self.calls[self.taught :] if c.path == "/notify"]

    def tool_calls(self) -> list[Call]:
        return mcp_tool_calls(self.calls)


@dataclass(frozen=True)
class Outcome:
    """The session, or why the CLI failed: each test then fails showing that, rather than erroring."""

    session: Session | None
    failure: str = ""

    def result(self) -> Session:
        if self.session is None:
            pytest.fail(self.failure, pytrace=False)
        return self.session


def was_teed(service: Service, path: Path, kind: str, content: str) -> bool:
    events = [e for c in service.notifies() for e in c.json()["events"]]
    return any(e["path"] == str(path) and e["kind"] == kind and e.get("content") == content for e in events)


def record_session(
    root: Path,
    steps: Callable[[Path], list[Reply]],
    step_of: Callable[[RecordedRequest], int | None],
    run: Run,
    **model_options: Any,
) -> Outcome:
    """Run the session under `root`: `steps(repo)` are turns 0-2, `step_of` numbers an agent request by the
    tool results it carries (None: a side request, e.g. a title), `run` starts the CLI."""
    home = root / "home"
    with (
        pytest.MonkeyPatch.context() as patch,
        blockbuster_ctx("live_memory", excluded_modules=["live_memory.testing"]),
    ):
        seal_environment(patch, home)
        refuse_connections_off_loopback(patch)
        repo = build_repo(home / "src" / "repo")
        source = repo / "src" / "app.py"
        with memory_service(home / "live-memory-data") as service:
            service.load(repo)
            teach_through_notify(service, repo)
            taught = len(service.recorder.calls)
            turns = steps(repo)
            teed: list[bool] = []
            held: list[int] = []

            def respond(request: RecordedRequest) -> Reply:
                step = step_of(request)
                if step is None:
                    return Reply.text("title")
                held.append(service.stats(repo).json()["workspace"]["file_contexts"])
                if step == 1:
                    teed.append(was_teed(service, source, "read", ORIGINAL))
                if step == 2:
                    teed.append(was_teed(service, source, "write", EDITED))
                return turns[step] if step < len(turns) else Reply.text("done")

            with FakeLLM(**model_options) as model:
                model.responder = respond
                try:
                    events = run(repo, home, model, service)
                except (Exception, pytest.fail.Exception) as failed:
                    return Outcome(None, "".join(traceback.format_exception_only(failed)))
            session = Session(
                repo=repo,
                turns=[r for r in model.requests if step_of(r) is not None],
                events=events,
                calls=list(service.recorder.calls),
                taught=taught,
                memory_requests=list(service.provider.requests),
                teed_before_next_turn=teed,
                held_before_turn=held,
                stats=service.stats(repo).json()["workspace"],
            )
    return Outcome(session)


def assert_read_and_edit_teed(session: Session) -> None:
    """The agent really edited src/app.py, and its read and its edit each reached /notify before its next
    turn, each accepted."""
    assert session.source.read_text(encoding="utf-8") == EDITED
    assert session.teed_before_next_turn == [True, True]
    assert [c.answer()["accepted"] for c in session.agent_notifies()] == [1, 1]


def assert_the_memory_knew_what_was_taught(memory_requests: list[RecordedRequest]) -> None:
    """The memory's own model request for the billing question carried what `teach_through_notify` taught."""
    asked = [r for r in memory_requests if BILLING_QUESTION in json.dumps(r.body)]
    assert asked, "the memory never got the question"
    assert BILLING_FACT in json.dumps(asked[0].body)


def assert_asked_once_with_the_repository(session: Session) -> None:
    """The agent called ask_live_memory once, with the session's question and the repository as cwd, and the
    memory answered the call."""
    (call,) = session.tool_calls()
    assert call.status == 200
    assert call.json()["params"]["arguments"] == question(session.repo)


def assert_counted_under(session: Session, agent: str) -> None:
    """/stats counts the session's one question, under the agent's name."""
    assert session.stats["questions_answered"] == 1 and session.stats["agents"] == {agent: 1}
