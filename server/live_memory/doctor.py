"""`live-memory doctor`: check everything a working setup needs and say how to fix what is not.

Checks: Python, configuration, data dir permissions, the port (our server, free, or a foreign
program), the provider credential, a 1-token round trip to the model, and that the plugin's
`.mcp.json` points at this server.
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

import httpx

from live_memory.config import Settings, load_settings
from live_memory.constants import MCP_PATH, SERVER_NAME
from live_memory.errors import ConfigError, ProviderError
from live_memory.providers.base import ChatRequest, Message, TextPart
from live_memory.providers.factory import build_provider, missing_credential_message


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


def check_data_dir(settings: Settings) -> Check:
    path = settings.data_dir
    if not path.exists():
        return Check("data dir", True, f"{path} (created on first start)")
    if not os.access(path, os.W_OK):
        return Check("data dir", False, f"{path} is not writable", "chown it to this user or set LIVE_MEMORY_DATA_DIR")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check("data dir", False, f"{path} is readable by others ({oct(mode)})", f"chmod 700 {path}")
    return Check("data dir", True, f"{path} ({oct(mode)})")


def server_url(settings: Settings) -> str:
    host = settings.host
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{host}:{settings.port}"


def check_server(settings: Settings) -> Check:
    url = server_url(settings)
    headers = {"authorization": f"Bearer {settings.auth_token}"} if settings.auth_token else {}
    try:
        health = httpx.get(f"{url}/health", timeout=2.0, headers=headers).json()
    except httpx.ConnectError:
        return Check(
            "server", False, f"nothing listens on {url}", "start it: `live-memory serve` (or the systemd unit)"
        )
    except (httpx.HTTPError, ValueError):
        return Check(
            "server", False, f"another program holds port {settings.port}", "free the port or set LIVE_MEMORY_PORT"
        )
    if not isinstance(health, dict) or health.get("service") != SERVER_NAME:
        return Check("server", False, f"port {settings.port} answers but is not Live Memory", "set LIVE_MEMORY_PORT")
    return Check("server", True, f"Live Memory {health.get('version')} (pid {health.get('pid')}) at {url}")


def check_credential(settings: Settings) -> Check:
    provider = build_provider(settings)
    if provider is None:
        return Check("credential", False, "none found", missing_credential_message(settings))
    kind = "subscription credential" if provider.info.subscription else f"API key from {settings.api_key_source}"
    asyncio.run(provider.aclose())
    return Check("credential", True, f"{settings.profile.name}: {kind}")


def check_round_trip(settings: Settings) -> Check:
    provider = build_provider(settings)
    if provider is None:
        return Check("model round trip", False, "skipped: no credential", "see the credential check")

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
        return Check("model round trip", False, str(exc), "fix the credential, model name or endpoint shown above")
    return Check("model round trip", True, f"{model} at {settings.base_url} answered")


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
            f"the plugin connects to {url}, the server listens on {expected}",
            "set the same port for both (LIVE_MEMORY_PORT for the server, the plugin's server URL option)",
        )
    return Check("plugin .mcp.json", True, f"points at {url}")


def run_doctor(env: Mapping[str, str], plugin_dir: Path | None = None, *, round_trip: bool = True) -> list[Check]:
    checks = [check_python()]
    try:
        settings = load_settings(env=env)
    except ConfigError as exc:
        checks.append(Check("configuration", False, str(exc), "correct the value named above"))
        return checks
    checks.append(Check("configuration", True, f"provider {settings.profile.name}, model {settings.model}"))
    checks.append(check_data_dir(settings))
    checks.append(check_server(settings))
    checks.append(check_credential(settings))
    if round_trip:
        checks.append(check_round_trip(settings))
    checks.append(check_plugin(settings, plugin_dir))
    return checks
