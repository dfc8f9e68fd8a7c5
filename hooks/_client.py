"""Shared stdlib plumbing for the Live Memory plugin scripts (hooks, slash commands, status line).

Owns: where the server is (URL and optional bearer token), one bounded JSON request, reading a hook's
stdin, and running a script's work under a hard wall-clock bound. Never imports the server package,
never raises out of a hook, and runs on any python3 >= 3.8 (no third-party modules).

Server URL, first match wins (the package's one order, docs/configuration.md "Where clients find the server";
tests/plugin/test_server_url.py checks this copy against the package's):
  1. env LIVE_MEMORY_URL
  2. the plugin option `server_url` (Claude Code exports it to hooks as CLAUDE_PLUGIN_OPTION_SERVER_URL)
  3. http://HOST:PORT, each from env LIVE_MEMORY_HOST / LIVE_MEMORY_PORT, else the service's config.json in
     the data dir (LIVE_MEMORY_DATA_DIR, else CLAUDE_PLUGIN_DATA, else $XDG_DATA_HOME/live-memory), else
     127.0.0.1:7711; a wildcard host is reached on loopback, an IPv6 address in brackets.
`${VAR}` / `${VAR:-default}` in a URL are expanded; a trailing `/` or `/mcp` is dropped.
Token: env LIVE_MEMORY_AUTH_TOKEN, else the plugin option `auth_token`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = "7711"
# Why 0.8 s: hooks must stay under ~1 s in total even when the server accepts but never answers.
DEFAULT_TIMEOUT_S = 0.8
# Same cap as the server's passive_max_file_bytes: above it a tee carries no content.
MAX_FILE_BYTES = 256 * 1024
# A hook payload is a few KiB; a Write payload repeats the file, so allow generously but not unbounded.
MAX_STDIN_BYTES = 16 * 1024 * 1024
PROJECT_HEADER = "X-Live-Memory-Project"

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
_MCP_PATH = "/mcp"


def expand_vars(text: str, env: Mapping[str, str]) -> str:
    """Expand `${VAR}` / `${VAR:-default}` the way Claude Code expands .mcp.json (one level, no nesting)."""

    def sub(match: re.Match[str]) -> str:
        value = env.get(match.group(1), "")
        return value if value else (match.group(2) or "")

    return _VAR.sub(sub, text)


def server_url(env: Mapping[str, str] | None = None) -> str:
    """Base URL of the Live Memory service, without a trailing slash (see the module docstring)."""
    env = os.environ if env is None else env
    for raw in (env.get("LIVE_MEMORY_URL", ""), env.get("CLAUDE_PLUGIN_OPTION_SERVER_URL", "")):
        url = expand_vars(raw.strip(), env).strip().rstrip("/")
        if url:
            return url[: -len(_MCP_PATH)] if url.endswith(_MCP_PATH) else url
    host, port = _setting(env, "host", DEFAULT_HOST), _setting(env, "port", DEFAULT_PORT)
    if host in _WILDCARD_HOSTS:
        host = DEFAULT_HOST
    elif ":" in host and not host.startswith("["):
        host = "[" + host + "]"
    return "http://" + host + ":" + (port or DEFAULT_PORT)


def _setting(env: Mapping[str, str], key: str, default: str) -> str:
    """An option as the service resolves it: env LIVE_MEMORY_<KEY>, else its config.json, else `default`.
    Read only when no URL is set; an unreadable config.json counts as absent (a hook never fails)."""
    name = "LIVE_MEMORY_" + key.upper()
    if name in env:
        return env[name].strip()
    try:
        with open(os.path.join(_data_dir(env), "config.json"), encoding="utf-8") as handle:
            values = json.load(handle)
    except (OSError, ValueError):
        return default
    value = values.get(key) if isinstance(values, dict) else None
    return default if value is None else str(value).strip()


def _data_dir(env: Mapping[str, str]) -> str:
    """The service's data dir, as it picks it: LIVE_MEMORY_DATA_DIR, CLAUDE_PLUGIN_DATA, the XDG data home."""
    for name in ("LIVE_MEMORY_DATA_DIR", "CLAUDE_PLUGIN_DATA"):
        if env.get(name):
            return os.path.expanduser(env[name])
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(os.path.expanduser(xdg), "live-memory")


def auth_token(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    for name in ("LIVE_MEMORY_AUTH_TOKEN", "CLAUDE_PLUGIN_OPTION_AUTH_TOKEN"):
        token = (env.get(name) or "").strip()
        if token:
            return token
    return ""


def project_dir(payload: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> str:
    """The session's project root: the same directory .mcp.json sends as X-Live-Memory-Project.

    Why CLAUDE_PROJECT_DIR before the payload's `cwd`: the payload follows `cd`, while the MCP header
    (the default `cwd` of ask_live_memory) is fixed at launch; both should name one workspace.
    """
    env = os.environ if env is None else env
    candidates = [env.get("CLAUDE_PROJECT_DIR", "")]
    if payload is not None:
        candidates.append(str(payload.get("cwd") or ""))
    for candidate in candidates:
        if candidate and os.path.isabs(candidate):
            return os.path.normpath(candidate)
    return os.getcwd()


def _opener(url: str) -> urllib.request.OpenerDirector:
    # Why: an HTTP(S)_PROXY meant for the internet must not swallow requests to a loopback service.
    host = urllib.parse.urlsplit(url).hostname or ""
    if host in _LOOPBACK_HOSTS or host.startswith("127."):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def request(
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    query: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, Any] | None]:
    """One JSON request to the service: (status, JSON object or None). Status 0 = not reachable.

    Never raises for network or protocol trouble: hooks must stay silent when the server is down.
    """
    url = server_url(env) + path
    if query:
        url += "?" + urllib.parse.urlencode(dict(query))
    headers = {"Accept": "application/json", "User-Agent": "live-memory-plugin"}
    data = None
    if body is not None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers["Content-Type"] = "application/json"
    token = auth_token(env)
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with _opener(url).open(req, timeout=timeout) as response:
            return response.status, _json_object(response.read())
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, _json_object(exc.read())
        except Exception:
            return exc.code, None
    except Exception:  # refused, timed out, reset, bad URL: all mean "no usable server"
        return 0, None


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(raw.decode("utf-8"))
    except Exception:
        return None
    return data if isinstance(data, dict) else None


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else {} (server answers are read defensively: fields may be added)."""
    return value if isinstance(value, dict) else {}


def number(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def read_payload(stream: Any = None) -> dict[str, Any] | None:
    """The hook's JSON payload from stdin, or None when it is missing or not a JSON object."""
    stream = sys.stdin if stream is None else stream
    try:
        raw = stream.buffer.read(MAX_STDIN_BYTES + 1) if hasattr(stream, "buffer") else stream.read().encode()
    except Exception:
        return None
    if not raw or len(raw) > MAX_STDIN_BYTES:
        return None
    return _json_object(raw)


def run_bounded(work: Callable[[], str | None], deadline_s: float, fallback: str | None = None) -> None:
    """Run `work` in a daemon thread; print what it returns; always exit 0, at the latest after deadline_s.

    `fallback` is printed instead when the work raised or overran the deadline. Why a thread and
    os._exit: socket timeouts bound each operation, not the total (DNS, a trickling server); this
    bounds the whole script so Claude Code never waits on us.
    """
    result: dict[str, str | None] = {"out": fallback}

    def target() -> None:
        try:
            result["out"] = work()
        except Exception:
            result["out"] = fallback

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(deadline_s)
    out = fallback if thread.is_alive() else result["out"]
    try:
        if out:
            sys.stdout.write(out)
        sys.stdout.flush()
    except Exception:
        pass
    os._exit(0)
