"""Whether a coding agent started from this shell reaches the server: `live-memory doctor` checks every installed
agent this way, and `live-memory install` warns with the same findings.

An agent that cannot reach the server says little about it: Codex and Gemini CLI print nothing and the tool is
simply absent, OpenCode logs it only with `--print-logs`. So this looks from the agent's side: the URL its entry
names, whether something listens there, whether the server wants a bearer token, and whether the variable the
entry names holds one the server accepts in this shell (the token is read from the environment and sent to the
server only, never printed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx2

from live_memory.cli.agents import AGENTS
from live_memory.constants import HEALTH_PROBE_TIMEOUT_S, MCP_PATH


@dataclass(frozen=True)
class Finding:
    ok: bool
    detail: str
    fix: str = ""


def access(base: str, token: str | None) -> str:
    """What the server at `base` makes of a client sending `token` (None: no token): "open" (no token needed),
    "accepted", "required" (none sent, one is needed), "refused" (the one sent is wrong), "absent" (nothing
    listens) or "foreign" (something else answers)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx2.get(f"{base}/config", headers=headers, timeout=HEALTH_PROBE_TIMEOUT_S)
    except httpx2.ConnectError:
        return "absent"
    except httpx2.HTTPError:
        return "foreign"
    if response.status_code == 401:
        return "refused" if token else "required"
    if response.status_code != 200:
        return "foreign"
    return "accepted" if token else "open"


def check_agent(agent: str, env: Mapping[str, str], server_base: str | None = None) -> Finding | None:
    """How `agent`'s installed entry fares from this shell; None when it is not installed. `server_base`: where
    this shell's server is (a URL the entry does not name is then a finding)."""
    setup = AGENTS[agent]
    found = setup.connection(setup.home(env))
    if found is None:
        return None
    url, token_env = found
    base = url.rstrip("/").removesuffix(MCP_PATH)
    token = env.get(token_env, "").strip() if token_env else ""
    unset = f"{token_env} is not set in this shell" if token_env and not token else ""
    export = f"export {token_env}=<the server's LIVE_MEMORY_AUTH_TOKEN> in the shell you start {agent} from"
    if server_base is not None and base != server_base.rstrip("/"):
        return Finding(
            False,
            f"{agent} connects to {url}, the server is at {server_base}{MCP_PATH}",
            f"run `live-memory install {agent}` again (or with --url)",
        )
    state = access(base, token or None)
    if state == "absent":
        also = f"; and {unset}" if unset else ""
        return Finding(
            False,
            f"nothing listens at {base}: {agent} shows no tool and no error{also}",
            "start it: `live-memory serve` (or the service)" + (f"; {export}" if unset else ""),
        )
    if state == "foreign":
        return Finding(False, f"{base} is not Live Memory", f"run `live-memory install {agent} --url` with its URL")
    if state == "required" and token_env:
        return Finding(False, f"{unset}: {agent} started from it sends no token and the server refuses it", export)
    if state == "required":
        return Finding(
            False,
            f"the server requires a bearer token and {agent}'s entry sends none",
            f"live-memory install {agent} --token-env LIVE_MEMORY_AUTH_TOKEN",
        )
    if state == "refused":
        return Finding(False, f"the server refuses the token in ${token_env} (this shell's)", export)
    return Finding(True, f"{url}" + (f", bearer token from ${token_env}" if token_env else ""))
