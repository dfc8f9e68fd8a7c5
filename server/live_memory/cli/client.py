"""The command line's side of talking to a running server: where it is, whether what answers there is
Live Memory, one JSON request with clear errors, and waiting for a server that is still starting.

Every failure is a `ClientError` whose message says what happened and what to do; the command prints it
(no traceback reaches a person).

Where the server is, first match wins (the one order; docs/configuration.md, "Where clients find the server"):
  1. a URL the command is given (`--url`)
  2. env LIVE_MEMORY_URL
  3. env CLAUDE_PLUGIN_OPTION_SERVER_URL (the plugin's `server_url` option, as Claude Code hands it to the
     plugin's scripts)
  4. http://HOST:PORT, each from env LIVE_MEMORY_HOST / LIVE_MEMORY_PORT, else config.json in the data dir, else
     127.0.0.1:7711; a wildcard host is dialled on loopback, an IPv6 address in brackets.
`${VAR}` and `${VAR:-default}` in a URL are expanded; a trailing `/` or `/mcp` is dropped. The plugin's hooks
(hooks/_client.py) and deploy/wait-for-health.py are stdlib scripts with their own copies of this order; a
test checks that all three agree.
"""

from __future__ import annotations

import re
import signal
import sys
import time
from collections.abc import Mapping
from typing import Any

import httpx2

from live_memory.constants import HEALTH_PROBE_TIMEOUT_S, MCP_PATH, SERVER_NAME
from live_memory.core.errors import ClientError
from live_memory.settings.config import Settings

URL_VARIABLES = ("LIVE_MEMORY_URL", "CLAUDE_PLUGIN_OPTION_SERVER_URL")
WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_vars(text: str, env: Mapping[str, str]) -> str:
    """`${VAR}` / `${VAR:-default}` as Claude Code expands them (one level): the plugin option's default is
    `http://127.0.0.1:${LIVE_MEMORY_PORT:-7711}`."""
    return _VAR.sub(lambda m: env.get(m.group(1), "") or m.group(2) or "", text)


def listen_url(settings: Settings) -> str:
    """http://host:port of the address the server binds (step 4 of the order)."""
    host = settings.host
    if host in WILDCARD_HOSTS:
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


def server_url(settings: Settings, explicit: str = "") -> str:
    """Base URL of the server a client talks to, without a trailing slash (the order in the module docstring)."""
    for raw in (explicit, *(settings.env.get(name, "") for name in URL_VARIABLES)):
        url = expand_vars(raw.strip(), settings.env).strip().rstrip("/")
        if url:
            return url.removesuffix(MCP_PATH)
    return listen_url(settings)


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
        "with LIVE_MEMORY_PORT (and LIVE_MEMORY_HOST), or at its URL with LIVE_MEMORY_URL"
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
    base = server_url(settings)
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
    """Return once Live Memory answers at `url`; wait up to `wait_s` for one that is still starting (each probe is
    bounded by what is left of the wait, so the whole wait is, too)."""
    deadline = time.monotonic() + max(0.0, wait_s)
    announced = False
    with probe_client() as client:
        while True:
            left = deadline - time.monotonic()
            client.timeout = httpx2.Timeout(max(ASK_START_POLL_S, min(HEALTH_PROBE_TIMEOUT_S, left)))
            state, _ = who_answers(url, client)
            if state == "ours":
                return
            if state == "foreign":
                raise ClientError(not_ours(url))
            if time.monotonic() >= deadline:
                waited = f" (waited {wait_s:g} s)" if wait_s else ""
                raise ClientError(f"no server answers at {url}{waited}; start one with `live-memory serve`")
            if not announced:
                print(
                    f"live-memory: no server answers at {url} yet; waiting up to {wait_s:g} s for one that is "
                    "starting (--wait 0: fail at once)…",
                    file=sys.stderr,
                    flush=True,
                )
                announced = True
            time.sleep(min(ASK_START_POLL_S, max(0.0, deadline - time.monotonic())))  # no event to wait on
