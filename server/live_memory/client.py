"""The command line's side of talking to a running server: where it is, whether what answers there is
Live Memory, one JSON request with clear errors, and waiting for a server that is still starting.

Every failure is a `ClientError` whose message says what happened and what to do; the command prints it
(no traceback reaches a person).
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import httpx2

from live_memory.config import Settings
from live_memory.constants import HEALTH_PROBE_TIMEOUT_S, SERVER_NAME
from live_memory.errors import ClientError


def _client_host(settings: Settings) -> str:
    host = str(settings.host)
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def base_url(settings: Settings) -> str:
    return f"http://{_client_host(settings)}:{settings.port}"


# How long `ask` waits for a server that is still starting (polling /health), and how often it looks.
ASK_START_WAIT_S = 10.0
ASK_START_POLL_S = 0.1
CLIENT_TIMEOUT_S = 10.0
STDIN_QUESTION = "-"
# Exit status of a command whose reader went away (`live-memory stats | head`): 128 + SIGPIPE, as the shell shows.
BROKEN_PIPE_EXIT = 128 + int(signal.SIGPIPE)


def auth_headers(settings: Settings) -> dict[str, str]:
    return {"authorization": f"Bearer {settings.auth_token}"} if settings.auth_token else {}


def probe_client() -> httpx2.Client:
    """One client for a series of probes: building a client loads the CA store (~40 ms of CPU), which a
    probe every 50-100 ms would otherwise repeat for as long as a server takes to start."""
    return httpx2.Client(timeout=HEALTH_PROBE_TIMEOUT_S)


def who_answers(url: str, client: httpx2.Client | None = None) -> tuple[str, dict[str, Any] | None]:
    """("ours", health) when Live Memory answers /health at `url`, ("foreign", None) when another program
    holds the port, ("absent", None) when nothing listens."""
    if client is None:
        with probe_client() as own:
            return who_answers(url, own)
    try:
        response = client.get(f"{url}/health")
    except httpx2.ConnectError:
        return "absent", None
    except httpx2.HTTPError:  # it accepted the connection but spoke no usable HTTP in time
        return "foreign", None
    try:
        data = response.json()
    except ValueError:
        return "foreign", None
    if isinstance(data, dict) and data.get("service") == SERVER_NAME:
        return "ours", data
    return "foreign", None


def not_ours(url: str) -> str:
    return (
        f"the program answering at {url} is not Live Memory; stop it, or point the CLI at Live Memory's port "
        "with LIVE_MEMORY_PORT (and LIVE_MEMORY_HOST)"
    )


def request_json(
    settings: Settings,
    method: str,
    path: str,
    *,
    params: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """One request to the running server: (status, JSON object). Raises ClientError when no server answers
    or what answers is not Live Memory (a reply that is not a JSON object)."""
    base = base_url(settings)
    try:
        response = httpx2.request(
            method, base + path, params=params, json=body, headers=auth_headers(settings), timeout=CLIENT_TIMEOUT_S
        )
    except httpx2.ConnectError:
        raise ClientError(f"no server answers at {base}; start one with `live-memory serve`") from None
    except httpx2.HTTPError as exc:
        raise ClientError(f"the server at {base} did not answer {path} ({type(exc).__name__})") from None
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ClientError(not_ours(base) + f" (it answered {path} with HTTP {response.status_code}, not JSON)")
    return response.status_code, data


def error_of(status: int, data: dict[str, Any]) -> str:
    return str(data.get("error") or f"the server answered HTTP {status}")


def wait_for_server(url: str, wait_s: float) -> None:
    """Return once Live Memory answers at `url`; wait up to `wait_s` for one that is still starting."""
    deadline = time.monotonic() + max(0.0, wait_s)
    announced = False
    with probe_client() as client:
        while True:
            state, _ = who_answers(url, client)
            if state == "ours":
                return
            if state == "foreign":
                raise ClientError(not_ours(url))
            if time.monotonic() >= deadline:
                raise ClientError(f"no server answers at {url}; start one with `live-memory serve`")
            if not announced:
                print("live-memory: waiting for the server to start…", file=sys.stderr, flush=True)
                announced = True
            time.sleep(ASK_START_POLL_S)  # polling a port that is not open yet: there is no event to wait on
