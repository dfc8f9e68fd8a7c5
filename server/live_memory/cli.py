"""The `live-memory` command: serve (idempotent singleton), ask, stats, config.

`serve` binds first and only then starts the app, so a second start finds the port taken, asks
/health who holds it, and exits 0 when it is already Live Memory (1 when it is another program).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import httpx

from live_memory import __version__
from live_memory.config import Settings, load_settings, write_config_value
from live_memory.constants import HEALTH_PROBE_TIMEOUT_S, MCP_PATH, SERVER_NAME
from live_memory.errors import ConfigError
from live_memory.logging_setup import configure_logging
from live_memory.security import check_bind

if TYPE_CHECKING:
    import httpx2

logger = logging.getLogger("live_memory")


def _client_host(settings: Settings) -> str:
    host = str(settings.host)
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def base_url(settings: Settings) -> str:
    return f"http://{_client_host(settings)}:{settings.port}"


def probe_health(url: str) -> dict[str, Any] | None:
    """The /health JSON of whatever answers at `url`, or None."""
    try:
        response = httpx.get(f"{url}/health", timeout=HEALTH_PROBE_TIMEOUT_S)
        data = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio then sets TCP_NODELAY on accepted connections, so small
    # keep-alive responses are not held back by the client's delayed ACK (~40 ms each).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def cmd_serve(settings: Settings) -> int:
    """Bind first (a second start finds the port taken and asks who holds it), then run uvicorn.
    Everything else about serving and stopping lives in the app's lifespan."""
    import uvicorn

    from live_memory.app import Timings, create_app

    check_bind(settings.host, settings.auth_token)
    try:
        sock = bind_socket(settings.host, settings.port)
    except OSError as exc:
        if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            print(f"live-memory: cannot bind {settings.host}:{settings.port}: {exc}", file=sys.stderr)
            return 1
        health = probe_health(base_url(settings))
        if health and health.get("service") == SERVER_NAME:
            print(
                f"live-memory: already running at {base_url(settings)} (pid {health.get('pid')}, "
                f"version {health.get('version')}); nothing to do."
            )
            return 0
        print(
            f"live-memory: port {settings.port} on {settings.host} is held by another program; "
            "stop it or choose another port with LIVE_MEMORY_PORT.",
            file=sys.stderr,
        )
        return 1
    # A stop signal is a request to stop, handled gracefully: uvicorn re-raises it once it is done,
    # and the process then exits 0 instead of dying of the signal.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit_quietly)
    config = uvicorn.Config(
        create_app(
            settings,
            timings=Timings(shutdown_grace_s=settings.shutdown_grace_s),
            announce=lambda line: print(line, file=sys.stderr, flush=True),
        ),
        log_level=settings.log_level,
        lifespan="on",
        timeout_graceful_shutdown=int(settings.shutdown_grace_s) + 5,
    )
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _exit_quietly(sig: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


async def _ask(http: httpx2.AsyncClient, url: str, question: str, cwd: str, max_answer_tokens: int) -> tuple[str, bool]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        result = await client.call_tool(
            "ask_live_memory",
            {"question": question, "cwd": cwd, "max_answer_tokens": max_answer_tokens},
        )
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    return text, bool(result.is_error)


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    import httpx2

    cwd = os.path.abspath(args.cwd)
    url = args.url or f"{base_url(settings)}{MCP_PATH}"
    if probe_health(url.removesuffix(MCP_PATH)) is None:
        print(f"live-memory: no server answers at {url}; start one with `live-memory serve`.", file=sys.stderr)
        return 1
    timeout_s = float(settings.default_timeout_s) + 60.0
    # built before the event loop starts: a client loads its certificate store from disk
    http = httpx2.AsyncClient(headers=_auth_headers(settings), timeout=httpx2.Timeout(30.0, read=timeout_s))
    try:
        text, is_error = asyncio.run(_ask(http, url, args.question, cwd, args.max_answer_tokens))
    except Exception as exc:  # the MCP client raises several transport error types
        print(f"live-memory: the request failed: {exc}", file=sys.stderr)
        return 1
    print(text, file=sys.stderr if is_error else sys.stdout)
    return 1 if is_error else 0


def cmd_stats(settings: Settings, args: argparse.Namespace) -> int:
    params = {"cwd": os.path.abspath(args.cwd)} if args.cwd else None
    try:
        response = httpx.get(f"{base_url(settings)}/stats", params=params, headers=_auth_headers(settings), timeout=5.0)
    except httpx.HTTPError as exc:
        print(f"live-memory: no server at {base_url(settings)} ({exc})", file=sys.stderr)
        return 1
    print(json.dumps(response.json(), indent=2))
    return 0 if response.status_code == 200 else 1


def cmd_config(settings: Settings, args: argparse.Namespace) -> int:
    if args.action == "show":
        rows = settings.describe()
        width = max(len(k) for k, _, _ in rows)
        for key, value, source in rows:
            print(f"{key:<{width}}  {value}  [{source}]")
        return 0
    if args.action == "get":
        for key, value, _ in settings.describe():
            if key == args.item:
                print(value)
                return 0
        print(f"live-memory: unknown option {args.item!r}", file=sys.stderr)
        return 2
    key, sep, raw = (args.item or "").partition("=")
    if not sep:
        print("live-memory: use `config set key=value`", file=sys.stderr)
        return 2
    write_config_value(settings.data_dir, key.strip(), raw)
    print(f"live-memory: {key.strip()} saved to {settings.config_file}")
    try:
        response = httpx.post(f"{base_url(settings)}/reload", json={}, headers=_auth_headers(settings), timeout=5.0)
        if response.status_code == 200:
            print("live-memory: the running server reloaded its configuration.")
    except httpx.HTTPError:
        print("live-memory: no running server to reload; the value applies at the next start.")
    return 0


def _auth_headers(settings: Settings) -> dict[str, str]:
    return {"authorization": f"Bearer {settings.auth_token}"} if settings.auth_token else {}


def cmd_ledger(settings: Settings, args: argparse.Namespace) -> int:
    cwd = os.path.abspath(args.cwd)
    try:
        if args.action == "forget":
            if not args.text:
                print('live-memory: use `ledger forget "<substring>"`', file=sys.stderr)
                return 2
            response = httpx.post(
                f"{base_url(settings)}/ledger/forget",
                json={"cwd": cwd, "substring": args.text},
                headers=_auth_headers(settings),
                timeout=10.0,
            )
        else:
            response = httpx.get(
                f"{base_url(settings)}/ledger", params={"cwd": cwd}, headers=_auth_headers(settings), timeout=10.0
            )
    except httpx.HTTPError as exc:
        print(
            f"live-memory: no server at {base_url(settings)} ({exc}); start one with `live-memory serve`",
            file=sys.stderr,
        )
        return 1
    data = response.json()
    if response.status_code != 200:
        print(f"live-memory: {data.get('error')}", file=sys.stderr)
        return 1
    if args.action == "forget":
        print(f"live-memory: forgot {data['forgotten']} fact(s) in {data['workspace']}")
    elif args.action == "export" and args.format == "json":
        print(json.dumps(data["facts"], indent=2))
    elif args.action == "export":
        print(data["markdown"], end="")
    else:
        for fact in data["facts"]:
            print(("(stale) " if fact["stale"] else "") + fact["text"])
        if not data["facts"]:
            print("(the ledger is empty: facts are distilled when the memory compacts)")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from live_memory.doctor import run_doctor  # imports the provider SDKs: only when needed

    checks = run_doctor(os.environ, Path(args.plugin_dir) if args.plugin_dir else None, round_trip=not args.offline)
    for check in checks:
        print(check.line())
    failed = [c for c in checks if not c.ok]
    print(f"\n{len(checks) - len(failed)} ok, {len(failed)} to fix" if failed else f"\nall {len(checks)} checks ok")
    return 1 if failed else 0


def cmd_install_service(args: argparse.Namespace) -> int:
    from live_memory.service_install import current_executable, install_service, plan_install

    where = {
        "executable": current_executable(),
        "unit_dir": args.unit_dir,
        "env_file": args.env_file,
        "data_dir": args.data_dir,
        "user": args.run_as,
    }
    if args.print_only:
        print(plan_install(args.mode, **where).unit_text, end="")
        return 0
    report = install_service(args.mode, enable=not args.no_enable, **where)
    print(report)
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="live-memory", description="A persistent codebase memory for agents.")
    parser.add_argument("--version", action="version", version=f"live-memory {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the server (exits 0 if one is already running)")
    ask = sub.add_parser("ask", help="ask a running server a question")
    ask.add_argument("question")
    ask.add_argument("--cwd", default=os.getcwd(), help="workspace directory (default: current)")
    ask.add_argument("--url", default="", help="MCP endpoint URL (default from host/port settings)")
    ask.add_argument("--max-answer-tokens", type=int, default=0)
    stats = sub.add_parser("stats", help="print /stats of a running server")
    stats.add_argument("--cwd", default="", help="one workspace (default: all)")
    ledger = sub.add_parser("ledger", help="show, export or edit what the memory believes")
    ledger.add_argument("action", choices=["show", "export", "forget"])
    ledger.add_argument("text", nargs="?", default="", help="forget: drop facts containing this text")
    ledger.add_argument("--cwd", default=os.getcwd(), help="workspace directory (default: current)")
    ledger.add_argument("--format", choices=["md", "json"], default="md")
    doctor = sub.add_parser("doctor", help="check the setup and print fixes")
    doctor.add_argument("--plugin-dir", default="", help="the plugin's directory, to check its .mcp.json URL")
    doctor.add_argument("--offline", action="store_true", help="skip the 1-token round trip to the model")
    svc = sub.add_parser("install-service", help="install the systemd unit and start it (docs/operations.md)")
    scope = svc.add_mutually_exclusive_group()
    scope.add_argument("--user", dest="mode", action="store_const", const="user", help="a user unit (default)")
    scope.add_argument("--system", dest="mode", action="store_const", const="system", help="a system unit (root)")
    svc.set_defaults(mode="user")
    svc.add_argument("--print", dest="print_only", action="store_true", help="print the rendered unit, change nothing")
    svc.add_argument("--no-enable", action="store_true", help="write the files but run no systemctl command")
    svc.add_argument("--unit-dir", type=Path, default=None, help="write the unit here instead of systemd's directory")
    svc.add_argument("--env-file", type=Path, default=None, help="the environment file (default: per mode)")
    svc.add_argument("--data-dir", type=Path, default=None, help="the data dir (default: env file's, else the CLI's)")
    svc.add_argument("--run-as", default=None, help="--system only: the account to run as (default: the sudo caller)")
    config = sub.add_parser("config", help="show, get or set configuration")
    config.add_argument("action", choices=["show", "get", "set"])
    config.add_argument("item", nargs="?", default="", help="key (get) or key=value (set)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "doctor":  # reports a broken configuration instead of refusing to start
        return cmd_doctor(args)
    if args.command == "install-service":  # works even with a broken config.json
        try:
            return cmd_install_service(args)
        except ConfigError as exc:
            print(f"live-memory: {exc}", file=sys.stderr)
            return 2
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"live-memory: configuration error: {exc}", file=sys.stderr)
        return 2
    configure_logging(str(settings.log_level), str(settings.log_file))
    try:
        if args.command == "serve":
            return cmd_serve(settings)
        if args.command == "ask":
            return cmd_ask(settings, args)
        if args.command == "stats":
            return cmd_stats(settings, args)
        if args.command == "ledger":
            return cmd_ledger(settings, args)
        return cmd_config(settings, args)
    except ConfigError as exc:
        print(f"live-memory: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
