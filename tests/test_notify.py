"""POST /notify end to end: tees reach the next prompt, changes and deletes arrive as deltas."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from live_memory.testing.live_server import LiveServer, ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from tests.fakes.repo_builder import small_repo
from tests.kv_invariants import assert_prefix_invariant


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    files = {
        "src/app.py": "def main():\n    return 'v1'\n",
        "src/db.py": "URL = 'sqlite://'\n",
        ".env": "API_TOKEN=hunter2\n",
    }
    return small_repo(tmp_path, files)


@pytest.fixture
def server(fake: FakeLLM, tmp_path: Path) -> Iterator[LiveServer]:
    fake.responder = lambda request: Reply.text("ok")
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0, hold_files="all")
    with live_server(settings) as running:
        yield running


async def post(server: LiveServer, route: str, body: Any, **kwargs: Any) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=server.url) as client:
        return await client.post(route, json=body, **kwargs)


async def ask(server: LiveServer, workspace: Path, question: str) -> str:
    text, is_error = await ask_via_mcp(server.mcp_url, {"question": question, "cwd": str(workspace)})
    assert not is_error, text
    return text


async def test_a_tee_reaches_the_next_prompt_without_a_read(server: LiveServer, fake: FakeLLM, workspace: Path) -> None:
    await ask(server, workspace, "warm up")
    body = {
        "cwd": str(workspace),
        "events": [{"path": "src/app.py", "kind": "read", "content": "def main():\n    return 'v1'\n"}],
    }
    answer = (await post(server, "/notify", body)).json()
    assert answer == {"accepted": 1, "ignored": 0, "workspace_loaded": True, "reasons": []}
    await ask(server, workspace, "what does main return?")
    prompt = str(fake.requests[-1].body)
    assert "return 'v1'" in prompt
    assert "tool_use" not in str(fake.requests[-1].body["messages"])


async def test_change_and_unlink_arrive_as_deltas_with_the_prefix_intact(
    server: LiveServer, fake: FakeLLM, workspace: Path
) -> None:
    await ask(server, workspace, "warm up")
    for path in ("src/app.py", "src/db.py"):
        content = (workspace / path).read_text()
        await post(
            server, "/notify", {"cwd": str(workspace), "events": [{"path": path, "kind": "read", "content": content}]}
        )
    await ask(server, workspace, "q2")
    (workspace / "src" / "app.py").write_text("def main():\n    return 'v2'\n")
    events = [{"path": str(workspace / "src/app.py"), "kind": "change"}, {"path": "src/db.py", "kind": "unlink"}]
    assert (await post(server, "/notify", {"cwd": str(workspace), "events": events})).json()["accepted"] == 2
    await ask(server, workspace, "q3")
    last = str(fake.requests[-1].body["messages"])
    assert "src/app.py: CHANGED since you read it" in last
    assert "src/db.py: DELETED or moved/renamed" in last
    assert_prefix_invariant([r.body for r in fake.requests], compactions=0)


async def test_a_tee_before_any_question_reaches_the_first_request(
    server: LiveServer, fake: FakeLLM, workspace: Path
) -> None:
    event = {"path": "src/app.py", "kind": "read", "content": "def main():\n    return 'v1'\n"}
    answer = (await post(server, "/notify", {"cwd": str(workspace), "events": [event]})).json()
    assert answer["accepted"] == 1 and answer["workspace_loaded"] is False  # it was not in memory: now it is
    await ask(server, workspace, "what does main return?")
    first = next(r for r in fake.requests if "what does main return?" in str(r.body["messages"]))
    assert "return 'v1'" in str(first.body)


async def test_a_flood_of_events_for_many_repositories_stays_within_the_workspace_cap(
    fake: FakeLLM, tmp_path: Path
) -> None:
    fake.responder = lambda request: Reply.text("ok")
    settings = settings_for(fake.base_url, tmp_path / "data", max_loaded_workspaces=3)
    roots = []
    for index in range(8):
        root = tmp_path / f"repo{index}"
        (root / ".git").mkdir(parents=True)
        (root / "a.py").write_text("A = 1\n")
        roots.append(root)
    with live_server(settings) as running:
        for root in roots:
            event = {"path": "a.py", "kind": "read", "content": "A = 1\n"}
            assert (await post(running, "/notify", {"cwd": str(root), "events": [event]})).status_code == 200
        async with httpx2.AsyncClient(base_url=running.url) as client:
            listed = (await client.get("/stats")).json()
    assert len(listed["workspaces"]) == 3  # the least recently used ones were unloaded


async def test_after_a_restart_stats_and_held_files_come_back_before_any_question(
    fake: FakeLLM, tmp_path: Path, workspace: Path
) -> None:
    fake.responder = lambda request: Reply.text("ok")
    settings = settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0, hold_files="all")
    tees = [
        {"path": "src/app.py", "kind": "read", "content": (workspace / "src/app.py").read_text()},
        {"path": "src/db.py", "kind": "read", "content": (workspace / "src/db.py").read_text()},
    ]
    with live_server(settings) as running:
        await post(running, "/notify", {"cwd": str(workspace), "events": tees})
        await ask(running, workspace, "first question")
        async with httpx2.AsyncClient(base_url=running.url) as client:
            before = (await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"]
    (workspace / "src" / "db.py").write_text("URL = 'postgres://'\n")  # changed while the server was down
    with live_server(settings) as running:
        async with httpx2.AsyncClient(base_url=running.url) as client:
            listed = (await client.get("/stats")).json()
            after = (await client.get("/stats", params={"cwd": str(workspace)})).json()["workspace"]
        await ask(running, workspace, "second question")
    assert [m["workspace"] for m in listed["on_disk"]] == [str(workspace)]  # shown before it is loaded
    assert before["files_with_content"] == 2
    for key in ("questions_answered", "qa_retained", "ledger_facts", "cost_usd"):
        assert after[key] == before[key], key
    assert after["files_with_content"] == 1 and after["stale_files"] == 1  # app.py held again; db.py changed
    prompt = str(fake.requests[-1].body)
    assert "return 'v1'" in prompt and "postgres" not in prompt


@pytest.mark.parametrize(
    ("send", "status", "message"),
    [
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, 400, "malformed JSON"),
        ({"json": {"cwd": "relative", "events": []}}, 400, "cwd must be an absolute path"),
        ({"json": {"cwd": "/tmp", "events": [{"path": "a", "kind": "explode"}]}}, 422, "invalid request body"),
        ({"json": {"cwd": "/tmp", "events": "nope"}}, 422, "invalid request body"),
        ({"json": {"cwd": "/tmp", "events": [{"path": "a", "kind": "read"}] * 501}}, 422, "invalid request body"),
        ({"content": b"{}", "headers": {"content-type": "text/plain"}}, 415, "Content-Type: application/json"),
    ],
)
async def test_malformed_notify_requests_get_precise_4xx(
    server: LiveServer, send: dict[str, Any], status: int, message: str
) -> None:
    async with httpx2.AsyncClient(base_url=server.url) as client:
        response = await client.post("/notify", **send)
    assert response.status_code == status
    assert message in response.json()["error"]


async def test_oversized_body_is_refused_with_413(server: LiveServer, workspace: Path) -> None:
    big = "x" * (9 * 1024 * 1024)
    body = {"cwd": str(workspace), "events": [{"path": "src/app.py", "kind": "read", "content": big}]}
    response = await post(server, "/notify", body)
    assert response.status_code == 413
    assert "too large" in response.json()["error"]


async def test_concurrent_clients_lose_no_update(server: LiveServer, fake: FakeLLM, workspace: Path) -> None:
    """8 clients post at once while questions run; each owns 5 files and sends 25 versions of them in
    order, so the memory must end holding each client's last version of each file: a lost or
    reordered update leaves an older one."""
    await ask(server, workspace, "warm up")
    clients, posts, owned = 8, 25, 5

    def path(client_id: int, k: int) -> str:
        return f"src/c{client_id}_f{k}.py"

    async def client_burst(client_id: int) -> list[dict[str, Any]]:
        replies = []
        async with httpx2.AsyncClient(base_url=server.url, timeout=30) as client:
            for version in range(posts):
                events = [
                    {"path": path(client_id, k), "kind": "read", "content": f"v = {client_id}.{version}"}
                    for k in range(owned)
                ]
                response = await client.post("/notify", json={"cwd": str(workspace), "events": events})
                assert response.status_code == 200, response.text
                replies.append(response.json())
        return replies

    bursts = asyncio.gather(*(client_burst(i) for i in range(clients)))
    questions = asyncio.gather(*(ask(server, workspace, f"while busy {i}") for i in range(3)))
    replies, _ = await asyncio.gather(bursts, questions)
    assert sum(r["accepted"] for batch in replies for r in batch) == clients * posts * owned
    [state] = server.app.state.service.states()
    held = {rel: f.content for rel, f in state.window.files.items()}
    expected = {path(c, k): f"v = {c}.{posts - 1}" for c in range(clients) for k in range(owned)}
    assert {rel: held.get(rel) for rel in expected} == expected
    await ask(server, workspace, "after the burst")
    prompt = str(fake.requests[-1].body)
    assert all(content in prompt for content in expected.values())  # and the next question sees them


async def test_an_over_long_path_component_in_cwd_is_a_precise_400(server: LiveServer) -> None:
    body = {"cwd": "/tmp/" + "x" * 300, "events": [{"path": "a.py", "kind": "change"}]}
    response = await post(server, "/notify", body)
    assert response.status_code == 400 and "longer than 255 bytes" in response.json()["error"]
    async with httpx2.AsyncClient(base_url=server.url) as client:
        stats = await client.get("/stats", params={"cwd": "/tmp/" + "y" * 300})
    assert stats.status_code == 400 and "Traceback" not in stats.text


async def test_knowledge_ingested_after_the_last_answer_is_written_at_shutdown(
    fake: FakeLLM, tmp_path: Path, workspace: Path
) -> None:
    fake.responder = lambda request: Reply.text("ok")
    data = tmp_path / "data"
    with live_server(settings_for(fake.base_url, data, force_explore_when_cold=0)) as running:
        await ask(running, workspace, "first question")
        event = {"path": "src/db.py", "kind": "read", "content": (workspace / "src/db.py").read_text()}
        assert (await post(running, "/notify", {"cwd": str(workspace), "events": [event]})).json()["accepted"] == 1
    [snapshot] = (data / "workspaces").glob("*.json")
    assert '"path":"src/db.py"' in snapshot.read_text()  # flushed by the shutdown, no question needed
