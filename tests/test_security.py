"""Nobody gets in: Host/Origin guards on every route, the bearer token, allowed roots, bind rules,
and fuzzed /notify bodies and tool arguments that never produce a 5xx or a jail escape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from live_memory.app import create_app
from live_memory.config import load_settings
from live_memory.errors import ConfigError
from live_memory.security import check_bind
from live_memory.tools import Toolbox
from tests.fakes.live_server import LiveServer, ask_via_mcp, live_server, settings_for
from tests.fakes.llm_server import FakeLLM, Reply

SECRET_MARK = "TOP-SECRET-OUTSIDE"


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        server.responder = lambda request: Reply.text("ok")
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    (tmp_path / "outside.txt").write_text(SECRET_MARK)
    return root


@pytest.fixture
def server(fake: FakeLLM, tmp_path: Path) -> Iterator[LiveServer]:
    with live_server(settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)) as running:
        yield running


def raw(server: LiveServer, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> httpx.Response:
    with httpx.Client(base_url=server.url) as client:
        return client.request(method, path, headers=headers, content=body)


@pytest.mark.parametrize("path", ["/health", "/stats", "/notify", "/reset", "/mcp"])
def test_a_foreign_host_is_refused_on_every_route(server: LiveServer, path: str) -> None:
    method = "GET" if path in ("/health", "/stats") else "POST"
    response = raw(server, method, path, {"host": "evil.example:7711", "content-type": "application/json"}, b"{}")
    assert response.status_code == 421
    assert "Host" in response.json()["error"]


@pytest.mark.parametrize("path", ["/stats", "/notify", "/mcp"])
def test_a_foreign_origin_is_refused(server: LiveServer, path: str) -> None:
    method = "GET" if path == "/stats" else "POST"
    headers = {"origin": "https://evil.example", "content-type": "application/json"}
    response = raw(server, method, path, headers, b"{}")
    assert response.status_code == 403


def test_loopback_origins_are_accepted(server: LiveServer) -> None:
    assert raw(server, "GET", "/stats", {"origin": "http://localhost:3000"}).status_code == 200


async def test_token_guards_everything_but_health(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data", auth_token="s3cret-token", force_explore_when_cold=0)
    with live_server(settings) as running:
        async with httpx.AsyncClient(base_url=running.url) as client:
            assert (await client.get("/health")).status_code == 200
            missing = await client.get("/stats")
            wrong = await client.get("/stats", headers={"authorization": "Bearer nope"})
            right = await client.get("/stats", headers={"authorization": "Bearer s3cret-token"})
        text, is_error = await ask_via_mcp(
            running.mcp_url,
            {"question": "q", "cwd": str(workspace)},
            headers={"Authorization": "Bearer s3cret-token"},
        )
    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert right.status_code == 200
    assert not is_error, text


def test_mcp_without_the_token_is_refused(fake: FakeLLM, tmp_path: Path) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data", auth_token="s3cret-token")
    with live_server(settings) as running:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        response = raw(running, "POST", "/mcp", headers, body)
    assert response.status_code == 401


def test_non_loopback_bind_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="LIVE_MEMORY_AUTH_TOKEN"):
        check_bind("0.0.0.0", "")
    check_bind("0.0.0.0", "token")
    check_bind("127.0.0.1", "")


async def test_cwd_outside_the_allowed_roots_is_refused_naming_the_setting(
    fake: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "allowed-only-here"
    elsewhere.mkdir()
    settings = settings_for(fake.base_url, tmp_path / "data", allowed_roots=str(elsewhere))
    with live_server(settings) as running:
        text, is_error = await ask_via_mcp(running.mcp_url, {"question": "q", "cwd": str(workspace)})
    assert is_error and "LIVE_MEMORY_ALLOWED_ROOTS" in text
    assert fake.requests == []


def test_default_allowed_root_is_the_home_directory(tmp_path: Path) -> None:
    from live_memory.service import allowed_roots

    settings = load_settings(env={"HOME": str(tmp_path)}, data_dir=tmp_path / "d")
    assert allowed_roots(settings) == (tmp_path.resolve(),)


@pytest.mark.parametrize(
    "cwd",
    ["/tmp/../etc", "/etc/../..", "/proc/self/root", "\u202e/etc", "/etc\u0000/x", "C:\\Windows"],
)
def test_unicode_and_traversal_tricks_in_cwd_get_a_4xx_and_change_nothing(server: LiveServer, cwd: str) -> None:
    response = raw(server, "POST", "/reset", {"content-type": "application/json"}, json.dumps({"cwd": cwd}).encode())
    assert response.status_code == 400
    assert raw(server, "GET", "/stats", {}).json()["workspaces"] == []


JAIL_TRICKS = ["a.py", "src/new.py", "../outside.txt", "/etc/passwd", "..", ".env", "a.py/../../outside.txt", "./a.py"]
notify_event = st.fixed_dictionaries(
    {
        "path": st.one_of(st.sampled_from(JAIL_TRICKS), st.text(max_size=40)),
        "kind": st.sampled_from(["read", "write", "change", "add", "unlink", "zap"]),
    },
    optional={"content": st.one_of(st.text(max_size=200), st.none(), st.integers())},
)
notify_body = st.one_of(
    st.fixed_dictionaries(
        {"cwd": st.one_of(st.just("WS"), st.text(max_size=30)), "events": st.lists(notify_event, max_size=5)}
    ),
    st.dictionaries(st.text(max_size=8), st.one_of(st.text(max_size=8), st.integers(), st.none()), max_size=3),
    st.lists(st.integers(), max_size=3),
    st.text(max_size=20),
)


@pytest.fixture
def in_process(tmp_path: Path, workspace: Path) -> Iterator[TestClient]:
    """The app in this process (no provider is called): the workspace is loaded, so events reach ingestion."""
    app = create_app(settings_for("http://127.0.0.1:9", tmp_path / "data", force_explore_when_cold=0))
    with TestClient(app, base_url="http://127.0.0.1:8088") as client:
        assert client.post("/reset", json={"cwd": str(workspace)}).status_code == 200
        yield client


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=notify_body)
def test_fuzzed_notify_bodies_get_a_precise_answer_and_nothing_outside_the_jail_is_kept(
    in_process: TestClient, workspace: Path, body: Any
) -> None:
    if isinstance(body, dict) and body.get("cwd") == "WS":
        body["cwd"] = str(workspace)
    response = in_process.post("/notify", content=json.dumps(body), headers={"content-type": "application/json"})
    data = response.json()
    if response.status_code == 200:  # every event is accounted for, accepted or ignored with a reason
        assert data["accepted"] + data["ignored"] == len(body["events"]), data
    else:
        assert 400 <= response.status_code < 500 and data["error"], response.text
        assert "Traceback" not in response.text
    [state] = in_process.app.state.service.states()  # type: ignore[attr-defined]
    root = workspace.resolve()
    for rel in state.window.files:
        assert (root / rel).resolve().is_relative_to(root), rel


tool_args = st.dictionaries(
    st.sampled_from(["file_path", "path", "pattern", "glob", "offset", "limit", "name", "type", "regex", "x"]),
    st.one_of(
        st.text(max_size=60),
        st.sampled_from(["../outside.txt", "/etc/passwd", "..", "../*", "**/../../*", "/proc/self/root/etc/hostname"]),
        st.integers(min_value=-5, max_value=10**9),
        st.none(),
        st.booleans(),
    ),
    max_size=4,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["Read", "Grep", "Glob", "find_paths", "get_changed_files", "git_search", "Nope"]),
    args=tool_args,
)
def test_fuzzed_tool_arguments_never_escape_the_jail(workspace: Path, name: str, args: dict[str, Any]) -> None:
    outcome = asyncio.run(Toolbox(workspace.resolve()).run(name, args))
    assert SECRET_MARK not in outcome.text
    assert "root:x:0:0" not in outcome.text
