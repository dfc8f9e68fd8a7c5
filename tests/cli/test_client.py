"""The command line's side of talking to a running server: the address it dials, telling Live Memory
from another program on the port, one JSON request with a clear error for each failure, and waiting
for a server that is still starting."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from live_memory.cli import client
from live_memory.constants import SERVER_NAME
from live_memory.core.errors import ClientError
from live_memory.settings.config import Settings, load_settings
from live_memory.testing.ports import free_port


@dataclass
class Peer:
    """A loopback HTTP server answering every request with `status` and `body` (bytes as given, anything
    else as JSON), recording what it received."""

    status: int = 200
    body: Any = field(default_factory=lambda: {"service": SERVER_NAME, "status": "ok"})
    received: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0


@pytest.fixture
def peer() -> Iterator[Peer]:
    state = Peer()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            state.received.append(
                {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": raw}
            )
            payload = state.body if isinstance(state.body, bytes) else json.dumps(state.body).encode()
            self.send_response(state.status)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    state.port = int(server.server_address[1])
    # a short poll interval: shutdown() waits for the serving loop's next look
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def settings(tmp_path: Path, port: int, **env: str) -> Settings:
    values = {"HOME": str(tmp_path), "LIVE_MEMORY_PORT": str(port), **env}
    return load_settings(env=values, data_dir=tmp_path / "data")


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:7711"),
        ("0.0.0.0", "http://127.0.0.1:7711"),  # a wildcard bind is dialled on loopback
        ("::", "http://127.0.0.1:7711"),
        ("::1", "http://[::1]:7711"),
        ("localhost", "http://localhost:7711"),
    ],
)
def test_the_client_dials_the_configured_address(tmp_path: Path, host: str, url: str) -> None:
    configured = settings(tmp_path, 7711, LIVE_MEMORY_HOST=host)
    assert client.server_url(configured) == client.listen_url(configured) == url


def test_a_url_from_the_environment_wins_over_the_configured_address(tmp_path: Path, peer: Peer) -> None:
    """The one order (tests/plugin/test_server_url.py checks it against the hooks): a URL, even the MCP
    endpoint's, is where the CLI sends its requests; the serve command still checks its own address."""
    configured = settings(tmp_path, free_port(), LIVE_MEMORY_URL=f"http://127.0.0.1:{peer.port}/mcp")
    assert client.request_json(configured, "GET", "/stats")[0] == 200
    assert peer.received[0]["path"] == "/stats"
    assert client.listen_url(configured) == f"http://127.0.0.1:{configured.port}"


def test_the_bearer_token_is_sent_only_when_one_is_configured(tmp_path: Path) -> None:
    assert client.auth_headers(settings(tmp_path, 7711)) == {}
    assert client.auth_headers(settings(tmp_path, 7711, LIVE_MEMORY_AUTH_TOKEN="s3cret")) == {
        "authorization": "Bearer s3cret"
    }


def test_live_memory_is_recognised_by_its_health_answer(peer: Peer) -> None:
    state, health = client.who_answers(f"http://127.0.0.1:{peer.port}")
    assert state == "ours" and health == {"service": SERVER_NAME, "status": "ok"}
    assert peer.received[0]["path"] == "/health"


@pytest.mark.parametrize("body", [b"<html>hello</html>", {"service": "something-else"}, ["a", "list"]])
def test_another_program_on_the_port_is_foreign(peer: Peer, body: Any) -> None:
    peer.body = body
    assert client.who_answers(f"http://127.0.0.1:{peer.port}") == ("foreign", None)


def test_a_port_nobody_listens_on_is_absent() -> None:
    assert client.who_answers(f"http://127.0.0.1:{free_port()}") == ("absent", None)


def test_a_request_returns_the_status_and_json_and_sends_token_params_and_body(tmp_path: Path, peer: Peer) -> None:
    peer.status, peer.body = 404, {"error": "no memory of this workspace yet"}
    configured = settings(tmp_path, peer.port, LIVE_MEMORY_AUTH_TOKEN="tok")
    status, data = client.request_json(configured, "POST", "/reset", params={"cwd": "/w"}, body={"cwd": "/w"})
    assert (status, data) == (404, {"error": "no memory of this workspace yet"})
    sent = peer.received[0]
    assert (sent["method"], sent["path"]) == ("POST", "/reset?cwd=%2Fw")
    assert sent["headers"]["authorization"] == "Bearer tok"
    assert json.loads(sent["body"]) == {"cwd": "/w"}


def test_no_server_says_how_to_start_one(tmp_path: Path) -> None:
    port = free_port()
    with pytest.raises(ClientError) as caught:
        client.request_json(settings(tmp_path, port), "GET", "/stats")
    assert str(caught.value) == f"no server answers at http://127.0.0.1:{port}; start one with `live-memory serve`"


def test_an_answer_that_is_not_a_json_object_means_another_program_holds_the_port(tmp_path: Path, peer: Peer) -> None:
    peer.status, peer.body = 200, b"<html>router admin</html>"
    with pytest.raises(ClientError) as caught:
        client.request_json(settings(tmp_path, peer.port), "GET", "/stats")
    url = f"http://127.0.0.1:{peer.port}"
    assert str(caught.value) == client.not_ours(url) + " (it answered /stats with HTTP 200, not JSON)"
    assert "LIVE_MEMORY_PORT" in str(caught.value)


def test_the_servers_error_message_is_shown_else_its_status() -> None:
    assert client.error_of(422, {"error": "invalid request body"}) == "invalid request body"
    assert client.error_of(500, {}) == "the server answered HTTP 500"


def test_waiting_returns_at_once_when_live_memory_answers(peer: Peer, capsys: pytest.CaptureFixture[str]) -> None:
    client.wait_for_server(f"http://127.0.0.1:{peer.port}", 0)
    assert capsys.readouterr().err == ""


def test_waiting_stops_at_once_when_another_program_answers(peer: Peer) -> None:
    peer.body = b"not json"
    url = f"http://127.0.0.1:{peer.port}"
    with pytest.raises(ClientError) as caught:
        client.wait_for_server(url, 30)
    assert str(caught.value) == client.not_ours(url)
    assert len(peer.received) == 1  # no polling: a foreign program will not turn into Live Memory


def test_waiting_without_time_to_wait_reports_the_missing_server_at_once() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ClientError) as caught:
        client.wait_for_server(url, 0)
    assert str(caught.value) == f"no server answers at {url}; start one with `live-memory serve`"
