"""Nobody gets in: Host/Origin guards on every route, the bearer token, allowed roots, bind rules,
and fuzzed /notify bodies and tool arguments that never produce a 5xx or a jail escape."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from starlette.types import Message

from live_memory.core.errors import ConfigError
from live_memory.http.app import create_app
from live_memory.http.security import SecurityMiddleware, SecurityPolicy, check_bind, split_authority
from live_memory.settings.config import load_settings
from live_memory.testing.live_server import LiveServer, ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, Reply
from live_memory.tools import Toolbox

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


def raw(server: LiveServer, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> httpx2.Response:
    with httpx2.Client(base_url=server.url) as client:
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


# -- strict Host / Origin parsing ------------------------------------------------------------------
POLICY = SecurityPolicy.build(bind_host="127.0.0.1", extra_hosts=("myhost.internal", "fe80::1"), token="")

HOSTS: list[tuple[str, bool]] = [
    ("127.0.0.1", True),
    ("127.0.0.1:7711", True),
    ("localhost:7711", True),
    ("LOCALHOST:7711", True),
    ("[::1]:7711", True),
    ("[::1]", True),
    ("myhost.internal:80", True),
    ("[fe80::1]:7711", True),
    ("localhost:65535", True),
    # an allowed prefix followed by anything else
    ("127.0.0.1:7711.evil.example", False),
    ("[::1]evil.example:7711", False),
    ("localhost:7711@evil.example", False),
    ("127.0.0.1:7711,evil.example", False),
    ("localhost:7711/path", False),
    ("localhost:7711 ", False),
    ("localhost :7711", False),
    ("user@localhost:7711", False),
    ("localhost.:7711", False),
    ("localhost.evil.example", False),
    ("evil.example", False),
    ("evil.example:7711", False),
    # malformed ports and brackets
    ("localhost:", False),
    ("localhost:abc", False),
    ("localhost:+80", False),
    ("localhost:0", False),
    ("localhost:65536", False),
    ("localhost:123456", False),
    ("localhost:٣", False),  # a non-ASCII digit
    ("[::1", False),
    ("[::1]:", False),
    ("[::1]]:7711", False),
    ("[[::1]]", False),
    ("::1", False),  # IPv6 in a Host header needs brackets
    ("::1:7711", False),
    ("fe80::1", False),
    ("", False),
]

ORIGINS: list[tuple[str, bool]] = [
    ("http://localhost:3000", True),
    ("https://127.0.0.1", True),
    ("http://[::1]:7711", True),
    ("HTTP://LocalHost:3000", True),
    ("http://127.0.0.1:7711.evil.example", False),
    ("http://[::1]evil.example:7711", False),
    ("http://localhost:7711@evil.example", False),
    ("https://evil.example", False),
    ("http://localhost:3000/", False),
    ("http://localhost:3000/path", False),
    ("http://user@localhost", False),
    ("http://localhost:3000, http://evil.example", False),
    ("http:/localhost", False),
    ("ftp://localhost", False),
    ("localhost:3000", False),
    ("", False),
]


@pytest.mark.parametrize(("host", "allowed"), HOSTS, ids=[repr(h) for h, _ in HOSTS])
def test_host_headers_are_parsed_strictly(host: str, allowed: bool) -> None:
    assert POLICY.host_allowed(host) is allowed


@pytest.mark.parametrize(("origin", "allowed"), ORIGINS, ids=[repr(o) for o, _ in ORIGINS])
def test_origin_headers_are_parsed_strictly(origin: str, allowed: bool) -> None:
    assert POLICY.origin_allowed(origin) is allowed


def test_split_authority_returns_the_lowercased_host_and_numeric_port() -> None:
    assert split_authority("LocalHost:7711") == ("localhost", 7711)
    assert split_authority("[::1]") == ("[::1]", None)
    assert split_authority("localhost:7711@evil.example") is None


OK = ("host", "127.0.0.1:7711")
# (headers in the order sent, expected status): a repeated Host or Origin is refused whichever copy
# is the good one, because parsers disagree on which copy counts.
HEADER_SETS: list[tuple[list[tuple[str, str]], int]] = [
    ([OK], 200),
    ([OK, ("origin", "http://localhost:3000")], 200),
    ([], 421),
    ([OK, OK], 421),
    ([OK, ("host", "evil.example")], 421),
    ([("host", "evil.example"), OK], 421),
    ([("host", "127.0.0.1:7711.evil.example")], 421),
    ([OK, ("origin", "http://localhost:3000"), ("origin", "http://localhost:3000")], 403),
    ([OK, ("origin", "http://localhost:3000"), ("origin", "https://evil.example")], 403),
    ([OK, ("origin", "https://evil.example"), ("origin", "http://localhost:3000")], 403),
    ([OK, ("origin", "http://[::1]evil.example:7711")], 403),
    ([OK, ("origin", "null")], 403),
]


async def _through_middleware(policy: SecurityPolicy, headers: list[tuple[str, str]]) -> tuple[int, dict[str, Any]]:
    sent: list[Message] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "path": "/stats",
        "method": "GET",
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
    }
    await SecurityMiddleware(app, policy)(scope, receive, send)
    return sent[0]["status"], json.loads(sent[1]["body"])


@pytest.mark.parametrize(("headers", "status"), HEADER_SETS, ids=[str(h) for h, _ in HEADER_SETS])
async def test_the_middleware_refuses_bad_or_repeated_host_and_origin_headers(
    headers: list[tuple[str, str]], status: int
) -> None:
    code, body = await _through_middleware(POLICY, headers)
    assert code == status, body
    if status != 200:
        assert set(body) == {"error", "detail"} and body["error"]


async def test_a_repeated_authorization_header_is_refused_when_a_token_is_set() -> None:
    guarded = SecurityPolicy.build(bind_host="127.0.0.1", extra_hosts=(), token="t0ken")
    good = ("authorization", "Bearer t0ken")
    assert (await _through_middleware(guarded, [OK, good]))[0] == 200
    assert (await _through_middleware(guarded, [OK, good, good]))[0] == 401
    assert (await _through_middleware(POLICY, [OK, good, good]))[0] == 200  # no token configured


def test_a_repeated_origin_over_a_real_socket_is_refused(server: LiveServer) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    request = (
        f"GET /stats HTTP/1.1\r\nHost: {host}:{port}\r\nOrigin: http://localhost:3000\r\n"
        "Origin: https://evil.example\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 403"), reply[:200]


async def test_token_guards_everything_but_health(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data", auth_token="s3cret-token", force_explore_when_cold=0)
    with live_server(settings) as running:
        async with httpx2.AsyncClient(base_url=running.url) as client:
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
    from live_memory.workspaces.workspace import allowed_roots

    settings = load_settings(env={"HOME": str(tmp_path)}, data_dir=tmp_path / "d")
    assert allowed_roots(settings.allowed_roots, settings.env) == (tmp_path.resolve(),)


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
