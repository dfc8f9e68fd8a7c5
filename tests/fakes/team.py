"""What the team store's end-to-end tests share: a clone of the team's repository, the service run with its
background work (the team store's sync and listener among it), and its first pull from the team."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from live_memory.core.messages import ChatRequest, ChatResponse, ToolResultPart
from live_memory.core.records import ToolCall
from live_memory.providers.base import ChatProvider
from live_memory.team.sync import TeamSync
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.fakes.engine import Engine, engine_for

REMOTE = "git@example.com:Team/App.git"
REPO_ID = "example.com/team/app"  # its identity, as the servers name it
APP = "VERSION = 1\n\ndef serve():\n    return VERSION\n"
FRESH_S = 5.0  # the bound: a teammate's answer usable this long after it is written


def checkout(home: Path, app: str = APP, files: Mapping[str, str] | None = None) -> Path:
    """A clone of the team's repository: the same remote, its own path (and `files`, path -> text, beside)."""
    root = home / "src" / "app"
    root.mkdir(parents=True)
    (root / "app.py").write_text(app)
    (root / "README.md").write_text("# App\n")
    for path, text in (files or {}).items():
        (root / path).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "remote", "add", "origin", REMOTE], cwd=root, check=True)
    return root


@asynccontextmanager
async def running(engine: Engine) -> AsyncIterator[Engine]:
    """The service with its background work (the team store's sync among it), as the lifespan runs it."""
    async with anyio.create_task_group() as tasks:
        engine.service.start(tasks)
        try:
            yield engine
        finally:
            tasks.cancel_scope.cancel()
    await engine.service.aclose()


def team_engine(home: Path, provider: ChatProvider, url: str, **options: str) -> Engine:
    return engine_for(home, provider, team_store=url, history_max_tokens="1500", **options)


async def first_pull(engine: Engine, root: Path) -> None:
    """The workspace is open and its first pull from the team is done (a first question waits for it only
    briefly, beside the tree scan)."""
    opened = await engine.service.open(str(root))
    await opened.state.team_pulled.wait()


def reader(answer: str, path: str = "app.py") -> ScriptedProvider:
    """A model that reads `path` for each question, then gives `answer` (grounded on that file: it may be shared)."""

    def reply(request: ChatRequest) -> ChatResponse:
        if any(isinstance(part, ToolResultPart) for part in request.messages[-1].parts):
            return text_response(answer)
        return text_response("", tool_calls=(ToolCall("r", "Read", {"file_path": path}),))

    return ScriptedProvider(responder=reply)


def sync(engine: Engine) -> TeamSync:
    assert engine.service.team is not None
    return engine.service.team


async def arrives(engine: Engine, root: Path, question: str, timeout_s: float = FRESH_S) -> None:
    """Wait, batch by batch of the store's announcements and bounded, until the workspace holds an answer to
    `question` from a teammate."""
    state = await engine.service.find(str(root))
    assert state is not None
    async with asyncio.timeout(timeout_s):
        while True:
            arrival = sync(engine).news.next_arrival()
            if " ".join(question.casefold().split()) in state.team_answers:
                return
            await arrival.wait()
