"""`live-memory doctor`: check everything a working setup needs and say how to fix what is not.

Checks: Python, configuration, data dir permissions, the port (our server, free, or a foreign
program), this shell's bearer token when the server wants one, the provider credential, a 1-token round
trip to the model, that the checkout (`--cwd`) lies inside the allowed roots, that every installed coding
agent reaches the server from this shell (`agent_checks.py`), and that the plugin's `.mcp.json` points at
this server.

When a server answers, its data dir, configuration and credential are the ones checked (from its
`GET /config`), and the server itself sends the round trip and checks the checkout (`POST /check`): the
key the README recommends lives only in the service's environment, which this shell does not see. Each
check names the process it describes: "server pid N" or "this shell". A check that cannot be made is
never reported ok.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from live_memory.cli.agent_checks import access, check_agent
from live_memory.cli.agents import AGENTS
from live_memory.cli.client import auth_headers, server_url
from live_memory.constants import DOCTOR_ROUND_TRIP_TIMEOUT_S, MCP_PATH, SERVER_NAME
from live_memory.core.errors import ConfigError, ProviderError, TeamStoreError
from live_memory.core.messages import ChatRequest, Message, TextPart
from live_memory.settings.config import Settings, load_settings
from live_memory.settings.provider_factory import build_provider
from live_memory.settings.runtime import missing_credential_message
from live_memory.workspaces.workspace import allowed_roots


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        text = f"[{mark}] {self.name}: {self.detail}"
        return text + (f"\n       fix: {self.fix}" if self.fix and not self.ok else "")


def check_python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, sys.version.split()[0], "install Python 3.11 or newer")


SHELL = "this shell"


def check_data_dir(path: Path, where: str = SHELL) -> Check:
    name = f"data dir ({where})"
    if not path.exists():
        return Check(name, True, f"{path} (created on first start)")
    if not os.access(path, os.W_OK):
        return Check(name, False, f"{path} is not writable", "chown it to this user or set LIVE_MEMORY_DATA_DIR")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check(name, False, f"{path} is readable by others ({oct(mode)})", f"chmod 700 {path}")
    return Check(name, True, f"{path} ({oct(mode)})")


def server_config(settings: Settings) -> dict[str, Any] | None:
    """The running server's `GET /config`, or None when it does not answer it."""
    try:
        response = httpx2.get(f"{server_url(settings)}/config", timeout=2.0, headers=auth_headers(settings))
        data = response.json()
    except (httpx2.HTTPError, ValueError):
        return None
    return data if response.status_code == 200 and isinstance(data, dict) and "options" in data else None


def check_server(settings: Settings) -> Check:
    url = server_url(settings)
    try:
        health = httpx2.get(f"{url}/health", timeout=2.0, headers=auth_headers(settings)).json()
    except httpx2.ConnectError:
        return Check(
            "server", False, f"nothing listens on {url}", "start it: `live-memory serve` (or the systemd unit)"
        )
    except (httpx2.HTTPError, ValueError):
        return Check(
            "server", False, f"another program holds port {settings.port}", "free the port or set LIVE_MEMORY_PORT"
        )
    if not isinstance(health, dict) or health.get("service") != SERVER_NAME:
        return Check("server", False, f"port {settings.port} answers but is not Live Memory", "set LIVE_MEMORY_PORT")
    return Check("server", True, f"Live Memory {health.get('version')} (pid {health.get('pid')}) at {url}")


def check_credential(settings: Settings) -> Check:
    provider = build_provider(settings)
    if provider is None:
        return Check(f"credential ({SHELL})", False, "none found", missing_credential_message(settings))
    kind = "subscription credential" if provider.info.subscription else f"API key from {settings.api_key_source}"
    asyncio.run(provider.aclose())
    return Check(f"credential ({SHELL})", True, f"{settings.profile.name}: {kind}")


def check_server_credential(config: Mapping[str, Any], where: str) -> Check:
    credential = config.get("credential") or {}
    kind = credential.get("kind", "missing")
    name = f"credential ({where})"
    if kind == "missing":
        fix = (
            "set LIVE_MEMORY_API_KEY (or the provider's own key variable) in the server's environment, not this "
            "shell's (e.g. the service's environment file), then restart it"
        )
        return Check(name, False, f"the server has none for {config.get('provider')} at {config.get('endpoint')}", fix)
    source = "" if kind == "subscription" else f" from {credential.get('source')}"
    return Check(name, True, f"{config.get('provider')}: {kind}{source}")


def check_team_store(settings: Settings) -> Check:
    """With `team_store` set: the store answers, and its schema is one this version knows (no migration is
    applied here: the server does that when it starts)."""
    name = f"team store ({SHELL})"
    if not settings.team_store:
        return Check(name, True, "off (knowledge stays on this machine)")
    from live_memory.team.store import TeamStore, bundled_migrations  # the driver loads only when it is used

    known = len(bundled_migrations())

    async def probe() -> tuple[float, int | None, str]:
        store = await TeamStore.connect(settings.team_store, pool_max=1, timeout_s=settings.team_timeout_s)
        try:
            return await store.ping(), await store.schema_version(), store.masked_url
        finally:
            await store.aclose()

    try:
        latency_s, version, where = asyncio.run(probe())
    except TeamStoreError as exc:
        return Check(name, False, str(exc), "check LIVE_MEMORY_TEAM_STORE, the network and the credentials")
    if version is not None and version > known:
        return Check(name, False, f"{where}: schema {version} is newer than this version's {known}", "upgrade")
    schema = f"schema {version}" if version is not None else "no schema yet (the server creates it)"
    if version is not None and version < known:
        schema += f" (the server upgrades it to {known} when it starts)"
    return Check(name, True, f"{where} answered in {latency_s * 1000:.0f} ms; {schema}")


def check_round_trip(settings: Settings) -> Check:
    name = f"model round trip ({SHELL})"
    provider = build_provider(settings)
    if provider is None:
        return Check(name, False, "not made: no credential", "see the credential check")

    async def ping() -> str:
        try:
            request = ChatRequest(
                system=(TextPart("Reply with one word."),),
                messages=(Message("user", (TextPart("ping"),)),),
                max_tokens=1,
            )
            response = await provider.chat(request)
            return response.model
        finally:
            await provider.aclose()

    try:
        model = asyncio.run(ping())
    except ProviderError as exc:
        return Check(name, False, str(exc), "fix the credential, model name or endpoint shown above")
    return Check(name, True, f"{model} at {settings.base_url} answered")


def _expand(value: str, env: Mapping[str, str], user_config: Mapping[str, str]) -> str:
    """`${VAR}`, `${VAR:-default}` and `${user_config.KEY}` (its manifest default) as Claude Code
    expands them in .mcp.json; innermost first, so defaults may nest."""

    def repl(match: re.Match[str]) -> str:
        name, _, default = match.group(1).partition(":-")
        if name.startswith("user_config."):
            return user_config.get(name.removeprefix("user_config."), default)
        return env.get(name) or default

    previous = None
    while previous != value:
        previous, value = value, re.sub(r"\$\{([^{}]+)\}", repl, value)
    return value


def _user_config_defaults(plugin_dir: Path) -> dict[str, str]:
    try:
        manifest = json.loads((plugin_dir / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
        options = manifest.get("userConfig", {})
        return {k: str(v.get("default", "")) for k, v in options.items() if isinstance(v, dict)}
    except (OSError, ValueError, AttributeError):
        return {}


def check_plugin(settings: Settings, plugin_dir: Path | None) -> Check:
    if plugin_dir is None:
        return Check("plugin .mcp.json", True, "not checked (pass --plugin-dir to check the plugin's URL)")
    config = plugin_dir / ".mcp.json"
    try:
        servers = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]
        entry = next(iter(servers.values()))
        defaults = {k: _expand(v, settings.env, {}) for k, v in _user_config_defaults(plugin_dir).items()}
        url = _expand(str(entry["url"]), settings.env, defaults)
    except (OSError, ValueError, KeyError, StopIteration, TypeError) as exc:
        return Check("plugin .mcp.json", False, f"{config} is unreadable ({exc})", "reinstall the plugin")
    expected = server_url(settings) + MCP_PATH
    if url.rstrip("/") != expected:
        return Check(
            "plugin .mcp.json",
            False,
            f"the plugin connects to {url}, the server is at {expected}",
            "set the same port for both (LIVE_MEMORY_PORT for the server, the plugin's server URL option)",
        )
    return Check("plugin .mcp.json", True, f"points at {url}")


def check_token(settings: Settings) -> Check | None:
    """This shell's bearer token, when the server wants one (None: it wants none, or takes this shell's)."""
    base = server_url(settings)
    state = access(base, settings.auth_token or None)
    if state == "required":
        detail = f"the server at {base} requires a bearer token and this shell has no LIVE_MEMORY_AUTH_TOKEN"
    elif state == "refused":
        detail = f"the server at {base} refuses this shell's LIVE_MEMORY_AUTH_TOKEN"
    else:
        return None
    fix = "export LIVE_MEMORY_AUTH_TOKEN (the server's value) in this shell, and in the shells you start agents from"
    return Check(f"token ({SHELL})", False, detail, fix)


def server_checks(settings: Settings, where: str, cwd: str, *, round_trip: bool) -> list[Check]:
    """The model round trip and the checkout, as the server sees them (POST /check)."""
    try:
        response = httpx2.post(
            f"{server_url(settings)}/check",
            json={"cwd": cwd, "model": round_trip},
            headers=auth_headers(settings),
            timeout=DOCTOR_ROUND_TRIP_TIMEOUT_S + 5,
        )
        data = response.json()
    except (httpx2.HTTPError, ValueError) as exc:
        data, response = {"error": f"{type(exc).__name__}: {exc}"}, None
    if response is None or response.status_code != 200 or not isinstance(data, dict):
        detail = f"the server did not answer POST /check ({data.get('error') if isinstance(data, dict) else data})"
        return [Check(f"server checks ({where})", False, detail, "upgrade the server, or see its log")]
    checks = []
    model = data.get("model")
    if isinstance(model, dict):
        fix = "fix the credential, model name or endpoint shown, in the server's environment, then restart it"
        checks.append(Check(f"model round trip ({where})", bool(model.get("ok")), str(model.get("detail")), fix))
    checks.append(_checkout_check(data.get("workspace"), where))
    return checks


def _checkout_check(result: Any, where: str) -> Check:
    ok = isinstance(result, dict) and bool(result.get("ok"))
    detail = str(result.get("detail")) if isinstance(result, dict) else "not checked"
    fix = "run doctor from the checkout you will ask about, or add it to LIVE_MEMORY_ALLOWED_ROOTS on the server"
    return Check(f"checkout ({where})", ok, detail, fix)


def check_checkout(settings: Settings, cwd: str) -> Check:
    """Without a server: whether this shell's settings would let a question about `cwd` in."""
    path = Path(cwd).resolve()
    roots = allowed_roots(settings.allowed_roots, settings.env)
    if roots and not any(path == root or root in path.parents for root in roots):
        allowed = ", ".join(str(r) for r in roots)
        detail = f"cwd {str(path)!r} is outside the allowed roots ({allowed})"
        return _checkout_check({"ok": False, "detail": detail}, SHELL)
    return _checkout_check({"ok": True, "detail": f"{path} may be asked about"}, SHELL)


def check_agents(settings: Settings) -> list[Check]:
    """Each installed coding agent, as started from this shell."""
    checks = []
    for agent in sorted(AGENTS):
        found = check_agent(agent, settings.env, server_url(settings))
        if found is not None:
            checks.append(Check(f"agent {agent} ({SHELL})", found.ok, found.detail, found.fix))
    return checks


def run_doctor(
    env: Mapping[str, str], plugin_dir: Path | None = None, *, round_trip: bool = True, cwd: str | None = None
) -> list[Check]:
    checks = [check_python()]
    try:
        settings = load_settings(env=env)
    except ConfigError as exc:
        checks.append(Check("configuration", False, str(exc), "correct the value named above"))
        return checks
    cwd = cwd or os.getcwd()
    checks.append(Check(f"configuration ({SHELL})", True, f"provider {settings.profile.name}, model {settings.model}"))
    server = check_server(settings)
    token = check_token(settings) if server.ok else None
    config = server_config(settings) if server.ok and token is None else None
    if config is None:
        checks += [check_data_dir(settings.data_dir), server, *([token] if token else []), check_credential(settings)]
        if round_trip:
            checks.append(check_round_trip(settings))
        checks.append(check_checkout(settings, cwd))
    else:
        where = f"server pid {config.get('process', {}).get('pid')}"
        checks.append(
            Check(
                f"configuration ({where})",
                True,
                f"provider {config.get('provider')}, model {config.get('model')} at {config.get('endpoint')}; "
                f"config file {config.get('config_file')}",
            )
        )
        checks += [check_data_dir(Path(str(config.get("data_dir"))), where), server]
        checks.append(check_server_credential(config, where))
        checks += server_checks(settings, where, cwd, round_trip=round_trip)
    checks += check_agents(settings)
    checks.append(check_team_store(settings))
    checks.append(check_plugin(settings, plugin_dir))
    return checks
