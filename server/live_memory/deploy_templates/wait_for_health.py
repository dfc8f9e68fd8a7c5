#!/usr/bin/env python3
"""Wait (bounded) until a Live Memory server answers /health; optionally start one first.

Two uses:
- readiness check of the systemd units: `ExecStartPost=<venv python> -I -m live_memory.deploy_templates.wait_for_health
  --strict --timeout 30` (the unit becomes active only once the server answers; --strict fails the start otherwise,
  so Restart=on-failure applies);
- a SessionStart-style backstop where no supervisor runs: `python3 deploy/wait-for-health.py --start` starts
  `live-memory serve` detached when nothing answers, then waits for it.

Prints exactly one status line to stderr. Exits 0 whatever happened (a hook must never fail a session), except
with --strict: 1 when the server is not healthy at the end of the wait.

Where to probe, first match wins (the one order every client follows; docs/configuration.md, "Where clients
find the server"): --url; env LIVE_MEMORY_URL; env CLAUDE_PLUGIN_OPTION_SERVER_URL (the plugin's `server_url`
option); http://<host>:<port>, each from env LIVE_MEMORY_HOST / LIVE_MEMORY_PORT, else from the data dir's
config.json (LIVE_MEMORY_DATA_DIR, else CLAUDE_PLUGIN_DATA, else $XDG_DATA_HOME/live-memory), else
127.0.0.1:7711. `${VAR}` / `${VAR:-default}` in a URL are expanded; a trailing `/` or `/mcp` is dropped. A
wildcard host (0.0.0.0, ::) is probed on loopback. Sends `Authorization: Bearer $LIVE_MEMORY_AUTH_TOKEN` when
that is set. Ignores proxy variables: the server is local.

Standard library only, python3 >= 3.8, never imports live_memory: `deploy/wait-for-health.py` is a byte-identical
copy of this file and runs with any python3.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_PORT = 7711
DEFAULT_TIMEOUT_S = 5.0
SERVICE_NAME = "live-memory"  # what /health reports as "service"
# One probe never waits longer than this, so a server that accepts but never answers cannot eat the whole bound.
PROBE_TIMEOUT_S = 1.0
# Between probes: start fast (a server that is just binding answers within ~0.1 s), back off to this.
POLL_INTERVAL_S = 0.05
MAX_POLL_INTERVAL_S = 0.5
_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
_URL_VARIABLES = ("LIVE_MEMORY_URL", "CLAUDE_PLUGIN_OPTION_SERVER_URL")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(text: str, env: Mapping[str, str]) -> str:
    """`${VAR}` / `${VAR:-default}`, one level, as Claude Code expands the plugin option's default."""
    return _VAR.sub(lambda m: env.get(m.group(1), "") or m.group(2) or "", text)


def _data_dir(env: Mapping[str, str]) -> Path:
    for name in ("LIVE_MEMORY_DATA_DIR", "CLAUDE_PLUGIN_DATA"):
        if env.get(name):
            return Path(env[name]).expanduser()
    home = env.get("HOME") or str(Path.home())
    return Path(env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")).expanduser() / "live-memory"


def _config_file_values(env: Mapping[str, str]) -> dict[str, Any]:
    try:
        data = json.loads((_data_dir(env) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def server_url(env: Mapping[str, str], explicit: str = "") -> str:
    """Base URL of the server (no trailing slash), as described in the module docstring."""
    for raw in (explicit, *(env.get(name, "") for name in _URL_VARIABLES)):
        url = _expand(raw.strip(), env).strip().rstrip("/")
        if url:
            return url[: -len("/mcp")] if url.endswith("/mcp") else url
    file_values: dict[str, Any] | None = None
    values: dict[str, str] = {}
    for key in ("host", "port"):
        name = f"LIVE_MEMORY_{key.upper()}"
        if name in env:  # set, even empty: the server reads it so
            values[key] = env[name].strip()
            continue
        if file_values is None:
            file_values = _config_file_values(env)
        if key in file_values:
            values[key] = str(file_values[key]).strip()
    host = values.get("host", "127.0.0.1")
    if host in _WILDCARD_HOSTS:
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{values.get('port') or DEFAULT_PORT}"


def probe(url: str, timeout_s: float, token: str = "") -> dict[str, Any] | None:
    """The /health JSON object when a Live Memory server answers at `url`; else None."""
    request = urllib.request.Request(url + "/health", headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=max(0.05, timeout_s)) as response:
            data = json.loads(response.read(64 * 1024).decode("utf-8"))
    except (OSError, ValueError, http.client.HTTPException):
        return None
    # "degraded" (e.g. no model credential yet) still serves: /health and the status page say what to fix
    if not isinstance(data, dict) or data.get("status") not in ("ok", "degraded"):
        return None
    if data.get("service", SERVICE_NAME) != SERVICE_NAME:
        return None
    return data


def find_executable(explicit: str = "") -> str:
    """The `live-memory` command to start: --executable, else the one beside this python, else PATH."""
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / SERVICE_NAME
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(SERVICE_NAME) or ""


def start_detached(executable: str, log_path: str) -> subprocess.Popen[bytes]:
    """Start `<executable> serve` in its own session, with no tie to our stdio (a hook's pipes stay closable)."""
    log = open(log_path or os.devnull, "ab")  # noqa: SIM115 - handed to the child, closed right after
    try:
        return subprocess.Popen(
            [executable, "serve"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # a hook runner killing our process group must not take the server down
            close_fds=True,
            cwd=os.path.expanduser("~"),
        )
    finally:
        log.close()


def _describe(health: Mapping[str, Any]) -> str:
    return f"version {health.get('version', '?')}, pid {health.get('pid', '?')}"


def run(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[bool, str]:
    """Probe, maybe start, wait. Returns (healthy, one-line status)."""
    started = time.monotonic()
    timeout_s = max(0.0, float(args.timeout))
    deadline = started + timeout_s
    url = server_url(env, args.url)
    token = env.get("LIVE_MEMORY_AUTH_TOKEN", "").strip()

    def remaining() -> float:
        return deadline - time.monotonic()

    health = probe(url, min(PROBE_TIMEOUT_S, max(remaining(), 0.05)), token)
    if health is not None:
        return True, f"healthy at {url} ({_describe(health)})"
    child: subprocess.Popen[bytes] | None = None
    action = ""
    if args.start:
        executable = find_executable(args.executable)
        if not executable:
            return False, f"nothing answers at {url} and no `live-memory` executable was found (pass --executable)"
        try:
            child = start_detached(executable, args.log)
        except OSError as exc:
            return False, f"nothing answers at {url}; starting `{executable} serve` failed: {exc}"
        action = f"started `{executable} serve` (pid {child.pid}); "
    interval = POLL_INTERVAL_S
    while remaining() > 0:
        if child is not None and child.poll() not in (None, 0):
            # 0 means another instance already serves (the singleton exits 0): keep probing that one.
            output = args.log or "discarded; pass --log"
            return False, f"{action}it exited with code {child.returncode} (output: {output})"
        time.sleep(min(interval, max(remaining(), 0.0)))
        interval = min(interval * 2, MAX_POLL_INTERVAL_S)
        health = probe(url, min(PROBE_TIMEOUT_S, max(remaining(), 0.05)), token)
        if health is not None:
            elapsed = time.monotonic() - started
            return True, f"{action}healthy at {url} after {elapsed:.1f} s ({_describe(health)})"
    hint = "" if args.start else "; start it with `live-memory serve` or `systemctl --user start live-memory`"
    return False, f"{action}no healthy Live Memory at {url} within {timeout_s:.1f} s{hint}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wait-for-health", description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--url", default="", help="server base URL (default: see the module docstring)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds to wait in all (default 5)")
    parser.add_argument("--start", action="store_true", help="start `live-memory serve` detached if nothing answers")
    parser.add_argument("--executable", default="", help="the live-memory command for --start (default: found)")
    parser.add_argument("--log", default="", help="append the started server's output to this file")
    parser.add_argument("--strict", action="store_true", help="exit 1 when not healthy (readiness checks)")
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    strict = "--strict" in argv
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (already printed by argparse)
        return 0 if exc.code in (0, None) or not strict else 1
    try:
        healthy, status = run(args, os.environ if env is None else env)
    except Exception as exc:  # a backstop never fails its caller; the reason still gets printed
        healthy, status = False, f"health check failed: {type(exc).__name__}: {exc}"
    print(f"live-memory: {status}", file=sys.stderr, flush=True)
    return 1 if strict and not healthy else 0


if __name__ == "__main__":
    sys.exit(main())
