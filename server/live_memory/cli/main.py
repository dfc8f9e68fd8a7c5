"""The `live-memory` command: serve (idempotent singleton), ask, stats, ledger, config, doctor, demo.

`serve` binds first and only then starts the app, so a second start finds the port taken, asks
/health who holds it, and exits 0 when it is already Live Memory (1 when it is another program).
The client commands say so, without a traceback, when nothing answers, when another program holds the
port, and when their reader goes away (`live-memory stats | head`).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import logging
import math
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from live_memory import __version__
from live_memory.cli.agent_command import add_agent_arguments, cmd_install_agent
from live_memory.cli.arguments import answer_tokens, port_number, wait_seconds
from live_memory.cli.client import (
    ASK_START_WAIT_S,
    BROKEN_PIPE_EXIT,
    STDIN_QUESTION,
    auth_headers,
    error_of,
    listen_url,
    request_json,
    server_url,
    wait_for_server,
    who_answers,
)
from live_memory.cli.config_command import cmd_config, ensure_data_dir
from live_memory.cli.help import HELP
from live_memory.cli.running import other_settings
from live_memory.cli.team_setup import add_team_setup_arguments, cmd_team_setup
from live_memory.constants import (
    CLI_AGENT_NAME,
    KEEP_ALIVE_TIMEOUT_S,
    MAX_REQUEST_HEAD_BYTES,
    MCP_PATH,
    SHUTDOWN_THREAD_WAIT_S,
)
from live_memory.core.errors import ClientError, ConfigError
from live_memory.http.security import check_bind
from live_memory.settings.config import Settings, load_settings
from live_memory.settings.logging_setup import configure_logging

if TYPE_CHECKING:
    import httpx2

logger = logging.getLogger("live_memory")
TOOL_ERROR_PREFIX = "Error executing tool ask_live_memory: "


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


def cmd_serve(settings: Settings, clock: Callable[[], float] = time.monotonic) -> int:
    """Bind first (a second start finds the port taken and asks who holds it), then run uvicorn.
    Everything else about serving and stopping lives in the app's lifespan. `clock` is the service's
    monotonic clock (a replay on simulated time passes its own)."""
    import uvicorn

    from live_memory.http.app import Timings, create_app, serve_until_stopped
    from live_memory.http.connections import bounded_protocol, connection_cap
    from live_memory.http.shutdown import drain_limit_s

    check_bind(settings.host, settings.auth_token)
    try:
        sock = bind_socket(settings.host, settings.port)
    except OSError as exc:
        if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            print(f"live-memory: cannot bind {settings.host}:{settings.port}: {exc}", file=sys.stderr)
            return 1
        holder, health = who_answers(listen_url(settings))
        if holder == "ours" and health is not None:
            differ = other_settings(settings, health.get("pid"))
            if differ is not None:
                print(f"live-memory: {differ}", file=sys.stderr)
                return 1
            print(
                f"live-memory: already running at {listen_url(settings)} (pid {health.get('pid')}, "
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
            clock=clock,
            announce=lambda line: print(line, file=sys.stderr, flush=True),
        ),
        log_level=settings.log_level,
        lifespan="on",
        timeout_graceful_shutdown=math.ceil(drain_limit_s(settings.shutdown_grace_s)),
        # Connection bounds (docs/operations.md, "Limits"): idle connections are closed, at most
        # connection_cap() are open, requests beyond it while all are busy get 503.
        http=bounded_protocol(connection_cap()),
        limit_concurrency=connection_cap() + 1,
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT_S,
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
    )
    # Once the server has stopped, a stuck worker thread does not keep the process (and the port) alive.
    thread_wait_s = min(settings.shutdown_grace_s, SHUTDOWN_THREAD_WAIT_S)
    return serve_until_stopped(uvicorn.Server(config), [sock], thread_wait_s=thread_wait_s)


def _exit_quietly(sig: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


async def _ask(http: httpx2.AsyncClient, url: str, question: str, cwd: str, max_answer_tokens: int) -> tuple[str, bool]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation

    me = Implementation(name=CLI_AGENT_NAME, version=__version__)  # what /stats counts these questions under
    async with http, Client(streamable_http_client(url, http_client=http), client_info=me) as client:
        result = await client.call_tool(
            "ask_live_memory",
            {"question": question, "cwd": cwd, "max_answer_tokens": max_answer_tokens},
        )
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:  # the MCP SDK prefixes the server's own message; a person needs only the message
        text = "live-memory: " + text.removeprefix(TOOL_ERROR_PREFIX)
    return text, bool(result.is_error)


def read_question(raw: str) -> str:
    if raw != STDIN_QUESTION:
        return raw
    return sys.stdin.read().strip()


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    question = read_question(args.question)
    if not question.strip():
        print("live-memory: the question is empty (`ask -` reads it from standard input)", file=sys.stderr)
        return 2
    cwd = os.path.abspath(args.cwd)
    base = server_url(settings, args.url)
    url = base + MCP_PATH
    wait_for_server(base, args.wait)  # before the MCP client's imports (a second and more): a failure comes at once
    import httpx2
    import mcp.client.streamable_http  # noqa: F401 - for `_ask`: an import reads files, so before the event loop runs

    timeout_s = float(settings.default_timeout_s) + 60.0
    # built before the event loop starts: a client loads its certificate store from disk
    http = httpx2.AsyncClient(headers=auth_headers(settings), timeout=httpx2.Timeout(30.0, read=timeout_s))
    try:
        text, is_error = asyncio.run(_ask(http, url, question, cwd, args.max_answer_tokens))
    except Exception as exc:  # the MCP client raises several transport error types
        print(f"live-memory: the request failed: {exc}", file=sys.stderr)
        return 1
    print(text, file=sys.stderr if is_error else sys.stdout)
    return 1 if is_error else 0


def cmd_stats(settings: Settings, args: argparse.Namespace) -> int:
    params = {"cwd": os.path.abspath(args.cwd)} if args.cwd else None
    status, data = request_json(settings, "GET", "/stats", params=params)
    if status != 200:
        print(f"live-memory: {error_of(status, data)}", file=sys.stderr)
        return 1
    print(json.dumps(data, indent=2))
    return 0


def cmd_ledger(settings: Settings, args: argparse.Namespace) -> int:
    cwd = os.path.abspath(args.cwd)
    if args.action == "forget":
        if not args.text:
            print('usage: live-memory ledger forget "<substring>"', file=sys.stderr)
            return 2
        status, data = request_json(settings, "POST", "/ledger/forget", body={"cwd": cwd, "substring": args.text})
    else:
        status, data = request_json(settings, "GET", "/ledger", params={"cwd": cwd})
    if status != 200:
        print(f"live-memory: {error_of(status, data)}", file=sys.stderr)
        return 1
    if args.action == "forget":
        print(f"live-memory: forgot {data.get('forgotten', 0)} fact(s) in {data.get('workspace', cwd)}")
    elif args.format == "json":
        print(json.dumps(data.get("facts", []), indent=2))
    elif args.action == "export":
        print(data.get("markdown", ""), end="")
    else:
        facts = data.get("facts") or []
        for fact in facts:
            print(("(stale) " if fact.get("stale") else "") + str(fact.get("text", "")))
        if not facts:
            print("(the ledger is empty: facts are distilled when the memory compacts)")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from live_memory.cli.doctor import run_doctor  # imports the provider SDKs: only when needed

    plugin_dir = Path(args.plugin_dir) if args.plugin_dir else None
    checks = run_doctor(os.environ, plugin_dir, round_trip=not args.offline, cwd=os.path.abspath(args.cwd))
    for check in checks:
        print(check.line())
    failed = [c for c in checks if not c.ok]
    print(f"\n{len(checks) - len(failed)} ok, {len(failed)} to fix" if failed else f"\nall {len(checks)} checks ok")
    return 1 if failed else 0


def cmd_install_service(args: argparse.Namespace) -> int:
    from live_memory.cli.service_install import current_executable, install_service, plan_install

    where = {
        "executable": current_executable(),
        "unit_dir": args.unit_dir,
        "env_file": args.env_file,
        "data_dir": args.data_dir,
        "user": args.run_as,
    }
    if args.print_only:
        plan = plan_install(args.mode, force=args.force, **where)
        for warning in plan.warnings:
            print(f"live-memory: warning (--force): {warning}", file=sys.stderr)
        print(plan.unit_text, end="")
        return 0
    report = install_service(args.mode, enable=not args.no_enable, force=args.force, **where)
    print(report)
    return 0 if report.ok else 1


def ask_as_command(settings: Settings, question: str, repo: Path) -> int:
    """`live-memory ask QUESTION --cwd REPO` with these settings (what the demo runs for each question)."""
    return cmd_ask(settings, build_parser().parse_args(["ask", question, "--cwd", str(repo)]))


def cmd_demo(args: argparse.Namespace) -> int:
    from live_memory.cli.demo import run_demo

    return run_demo(ask_as_command, Path(args.repo) if args.repo else None)


# The environment each command reads; shown in its --help.
def _subparser(sub: Any, name: str) -> argparse.ArgumentParser:
    short, description, environment = HELP[name]
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=short,
        description=description,
        epilog="environment:\n  " + environment,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="live-memory", description="A persistent codebase memory for agents.")
    parser.add_argument("--version", action="version", version=f"live-memory {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = _subparser(sub, "serve")
    serve.add_argument("--host", default=None, help="address to bind (default: LIVE_MEMORY_HOST, else 127.0.0.1)")
    serve.add_argument(
        "--port", type=port_number, default=None, help="port to bind (default: LIVE_MEMORY_PORT, else 7711)"
    )
    ask = _subparser(sub, "ask")
    ask.add_argument("question", help="the question; `-` reads it from standard input")
    ask.add_argument("--cwd", default=os.getcwd(), help="workspace directory (default: current)")
    ask.add_argument(
        "--url", default="", help="server URL, with or without /mcp (default: LIVE_MEMORY_URL, else host and port)"
    )
    ask.add_argument(
        "--max-answer-tokens",
        type=answer_tokens,
        default=0,
        help="cap on the answer's length in tokens (default 0: the server's max_answer_tokens)",
    )
    ask.add_argument(
        "--wait",
        type=wait_seconds,
        default=ASK_START_WAIT_S,
        help=f"seconds to wait for a server that is still starting (default: {ASK_START_WAIT_S:g}; 0: fail at once)",
    )
    stats = _subparser(sub, "stats")
    stats.add_argument("--cwd", default="", help="one workspace (default: all)")
    ledger = _subparser(sub, "ledger")
    ledger.add_argument("action", choices=["show", "export", "forget"], help="print, export as Markdown, or forget")
    ledger.add_argument("text", nargs="?", default="", help="forget: drop facts containing this text")
    ledger.add_argument("--cwd", default=os.getcwd(), help="workspace directory (default: current)")
    ledger.add_argument("--format", choices=["md", "json"], default="md", help="show/export: text or JSON")
    doctor = _subparser(sub, "doctor")
    doctor.add_argument("--plugin-dir", default="", help="the plugin's directory, to check its .mcp.json URL")
    doctor.add_argument("--offline", action="store_true", help="skip the 1-token round trip to the model")
    doctor.add_argument(
        "--cwd", default=os.getcwd(), help="the checkout to check against the allowed roots (default: current)"
    )
    svc = _subparser(sub, "install-service")
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
    svc.add_argument("--force", action="store_true", help="install even from a path the unit's sandbox hides (/tmp)")
    config = _subparser(sub, "config")
    config.add_argument("action", choices=["show", "get", "set"], help="every option, one option, or set one")
    config.add_argument("item", nargs="?", default="", help="key (get) or key=value (set)")
    for name in ("install", "uninstall"):
        add_agent_arguments(_subparser(sub, name), install=name == "install")
    add_team_setup_arguments(_subparser(sub, "team-setup"))
    demo = _subparser(sub, "demo")
    demo.add_argument("--repo", default="", help="the checkout to ask about (default: the one holding this package)")
    return parser


def _apply_serve_overrides(args: argparse.Namespace) -> None:
    """`serve --host/--port` win over the environment: set them there, so the settings load them as usual."""
    if args.host:
        os.environ["LIVE_MEMORY_HOST"] = args.host
    if args.port is not None:
        os.environ["LIVE_MEMORY_PORT"] = str(args.port)


def _run(args: argparse.Namespace) -> int:
    if args.command == "doctor":  # reports a broken configuration instead of refusing to start
        return cmd_doctor(args)
    if args.command == "demo":  # its own settings, whatever the environment says
        return cmd_demo(args)
    if args.command == "team-setup":  # an administrator's command: no server settings needed
        return cmd_team_setup(args)
    if args.command == "install-service":  # works even with a broken config.json
        try:
            return cmd_install_service(args)
        except ConfigError as exc:
            print(f"live-memory: {exc}", file=sys.stderr)
            return 2
    if args.command == "serve":
        _apply_serve_overrides(args)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"live-memory: configuration error: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, settings.log_file)
    try:
        if args.command == "serve":
            ensure_data_dir(settings.data_dir)
            return cmd_serve(settings)
        if args.command == "ask":
            return cmd_ask(settings, args)
        if args.command == "stats":
            return cmd_stats(settings, args)
        if args.command == "ledger":
            return cmd_ledger(settings, args)
        if args.command in ("install", "uninstall"):
            return cmd_install_agent(settings, args)
        return cmd_config(settings, args)
    except ConfigError as exc:
        print(f"live-memory: {exc}", file=sys.stderr)
        return 2
    except ClientError as exc:
        print(f"live-memory: {exc}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = _run(args)
        sys.stdout.flush()  # inside the guard: a reader that left shows up here at the latest
    except BrokenPipeError:
        # The reader went away (`live-memory stats | head`): stop quietly, like any Unix filter. Point stdout
        # at /dev/null so the interpreter's final flush does not complain a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return BROKEN_PIPE_EXIT
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
