"""The ASGI application: JSON routes, the MCP endpoint (mounted last), and the lifespan that owns
every background task and the one shutdown sequence.

    create_app(settings) -> WorkspaceService (workspaces) + Answerer (questions) + routes + /mcp

The routes are plain functions of their request: what they need (`AppState`) is yielded by the lifespan, and
Starlette copies it into every request's `request.state`.

The lifespan enters the MCP session manager (a mounted sub-app's own lifespan never runs), runs the
watchers, keep-warm and background jobs in one task group, and on the way out: stops admitting,
lets running questions return their best answer, ends idle MCP streams, cancels the background
tasks, flushes every snapshot under a deadline and closes the providers.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import AppStatus
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn import Server

from live_memory import __version__
from live_memory import constants as C
from live_memory.constants import MCP_PATH
from live_memory.fs.safe_files import clean_stale_temp_files, ensure_private_dir
from live_memory.http.app_state import AppState, ProviderFactory
from live_memory.http.jobs import JobRegistry
from live_memory.http.mcp_tools import build_mcp_server
from live_memory.http.routes import build_routes
from live_memory.http.security import SecurityMiddleware, SecurityPolicy, check_bind
from live_memory.http.shutdown import IdleStreams, StopSignal, drain_limit_s
from live_memory.settings.config import Settings
from live_memory.settings.provider_factory import build_provider
from live_memory.settings.runtime import Runtime, missing_credential_message
from live_memory.tools import TOOL_SCHEMAS, Toolbox, ToolLimits
from live_memory.workspaces.answerer import Answerer
from live_memory.workspaces.keep_warm import KeepWarm
from live_memory.workspaces.service import ToolFactory, WorkspaceService
from live_memory.workspaces.store import SNAPSHOT_DIR, SYMBOL_INDEX_SUFFIX
from live_memory.workspaces.workspace import workspace_id

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timings:
    """Every interval the service waits on, injectable so tests never wait on production timers."""

    progress_interval_s: float = C.PROGRESS_INTERVAL_S
    shutdown_grace_s: float = C.SHUTDOWN_GRACE_S
    flush_deadline_s: float = C.SHUTDOWN_FLUSH_DEADLINE_S
    idle_stream_ping_s: float = C.IDLE_STREAM_PING_S
    stream_settle_s: float = C.STREAM_SETTLE_S
    keep_warm_check_s: float = C.KEEP_WARM_CHECK_S
    deadline_reserve_s: float = C.FINAL_ANSWER_RESERVE_S
    health_probe_s: float = C.HEALTH_WORKER_PROBE_S
    snapshot_write_behind_s: float = C.SNAPSHOT_WRITE_BEHIND_S


def prepare_data_dir(data_dir: Path) -> None:
    """The data dir is private (0700, whatever the umask), and writes a kill interrupted leave no temp files."""
    ensure_private_dir(data_dir)
    for folder in (data_dir, data_dir / SNAPSHOT_DIR):
        for stale in clean_stale_temp_files(folder, ".*.tmp", older_than_s=C.STALE_TEMP_FILE_AGE_S):
            logger.info("removed a temp file left by an interrupted write: %s", stale.name)


def default_tool_factory(root: Path, settings: Settings) -> Toolbox:
    """A checkout's tools; with `symbol_index`, its index is kept beside the snapshot of the memory it is named
    after (`<id of the checkout>.symbols.sqlite`)."""
    index = settings.data_dir / SNAPSHOT_DIR / f"{workspace_id(root)}{SYMBOL_INDEX_SUFFIX}"
    limits = ToolLimits(secret_globs=settings.secret_globs)
    return Toolbox(root, limits, index_path=index if settings.symbol_index else None)


class McpTrailingSlash:
    """Serve `/mcp/` as `/mcp` without a redirect (some clients do not follow 307 on POST)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") == MCP_PATH + "/":
            scope = dict(scope, path=MCP_PATH, raw_path=MCP_PATH.encode())
        await self.app(scope, receive, send)


async def prepare_after_a_restart(service: WorkspaceService) -> None:
    """With memories on disk (a restart), build the provider's SDK client now, in a worker thread: importing an SDK
    costs a second or more of CPU, which the first question after a restart would otherwise wait for. A server
    never asked anything still pays nothing (the client is built on first use). Failures are the first
    question's to report."""
    prepare = getattr(service.runtime.provider, "prepare", None)
    if prepare is None or not await anyio.to_thread.run_sync(service.store.list_meta):
        return
    try:
        await prepare()
    except Exception as exc:  # the first question builds it again and says what is wrong
        logger.info("the provider's client was not prepared at start: %s", exc)


def security_policy(settings: Settings) -> SecurityPolicy:
    return SecurityPolicy.build(bind_host=settings.host, extra_hosts=settings.allowed_hosts, token=settings.auth_token)


def transport_security(policy: SecurityPolicy) -> TransportSecuritySettings:
    """The MCP SDK's own DNS-rebinding check, configured to match ours."""
    names = sorted(policy.allowed_hosts - {"::1"})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names] + names,
        allowed_origins=[f"{scheme}://{n}:*" for n in names for scheme in ("http", "https")]
        + [f"{scheme}://{n}" for n in names for scheme in ("http", "https")],
    )


@dataclass(frozen=True)
class Parts:
    """What one app is made of, built once by `create_app`; its lifespan starts and stops them."""

    settings: Settings
    timings: Timings
    service: WorkspaceService
    answerer: Answerer
    jobs: JobRegistry
    keep_warm: KeepWarm
    stop: StopSignal
    mcp: MCPServer
    announce: Callable[[str], None]
    state: AppState  # what every request reads (`request.state`)


def create_app(
    settings: Settings,
    provider_factory: ProviderFactory | None = None,
    tool_factory: ToolFactory | None = None,
    *,
    timings: Timings = Timings(),
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    announce: Callable[[str], None] = logger.info,
) -> Starlette:
    """`announce` receives one line once the service is ready (the command prints it, whatever the log level)."""
    check_bind(settings.host, settings.auth_token)
    # The SDK streams each answer as server-sent events; by default those streams are cut the moment
    # a stop signal arrives, losing answers still being written. Ours end when their answer is sent,
    # and the idle ones are ended by `IdleStreams` (public switch of the event-stream library).
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
    policy = security_policy(settings)
    factory = provider_factory or build_provider
    service = build_service(settings, factory, tool_factory or default_tool_factory, timings, clock, wall_clock)
    parts = build_parts(settings, service, factory, timings, clock, wall_clock, announce)
    mcp_app = parts.mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        transport_security=transport_security(policy),
    )
    app = Starlette(routes=[*build_routes(), Mount("/", app=mcp_app)], lifespan=functools.partial(lifespan, parts))
    # For code that holds the app, not a request (the tests reach the service so); handlers read `request.state`.
    app.state.service = service
    app.state.answerer = parts.answerer
    app.state.keep_warm = parts.keep_warm
    app.state.stop = parts.stop
    app.state.timings = timings
    app.add_middleware(McpTrailingSlash)
    app.add_middleware(IdleStreams, stop=parts.stop, ping_interval_s=timings.idle_stream_ping_s)
    app.add_middleware(SecurityMiddleware, policy=policy)  # outermost: every route, /mcp included
    return app


def build_service(
    settings: Settings,
    factory: ProviderFactory,
    tool_factory: ToolFactory,
    timings: Timings,
    clock: Callable[[], float],
    wall_clock: Callable[[], float],
) -> WorkspaceService:
    """The one way in to every workspace, with its first provider and, when configured, the team store's sync."""
    team = None
    if settings.team_store:  # the store's driver loads only when it is used
        from live_memory.team.sync import team_sync_for

        team = team_sync_for(settings)
    return WorkspaceService(
        Runtime(settings, factory(settings)),
        tool_factory=tool_factory,
        clock=clock,
        wall_clock=wall_clock,
        write_behind_s=timings.snapshot_write_behind_s,
        team=team,
    )


def build_parts(
    settings: Settings,
    service: WorkspaceService,
    factory: ProviderFactory,
    timings: Timings,
    clock: Callable[[], float],
    wall_clock: Callable[[], float],
    announce: Callable[[str], None],
) -> Parts:
    """The answerer, the background jobs, keep-warm, the stop signal and the MCP server around one service."""
    answerer = Answerer(
        service,
        TOOL_SCHEMAS,
        clock=clock,
        wall_clock=wall_clock,
        deadline_reserve_s=timings.deadline_reserve_s,
    )
    jobs = JobRegistry(ttl_s=C.JOB_TTL_S, max_jobs=C.MAX_JOBS, clock=clock)
    keep_warm = KeepWarm(service, TOOL_SCHEMAS, clock=clock, check_interval_s=timings.keep_warm_check_s)
    stop = StopSignal(settle_s=timings.stream_settle_s, clock=clock)
    mcp = build_mcp_server(
        answerer,
        jobs,
        stop,
        async_tools=settings.async_tools,
        progress_interval_s=timings.progress_interval_s,
        clock=clock,
    )
    stop.on_begin(service.begin_shutdown)
    stop.on_begin(lambda: answerer.cut_deadlines(timings.shutdown_grace_s))
    state = AppState(
        service=service,
        started_at=clock(),
        running=service.settings,  # the options read at start: a later reload shows them as pending
        provider_factory=factory,
        config_lock=asyncio.Lock(),
        health_probe_s=timings.health_probe_s,
    )
    return Parts(settings, timings, service, answerer, jobs, keep_warm, stop, mcp, announce, state)


@asynccontextmanager
async def lifespan(parts: Parts, app: Starlette) -> AsyncIterator[AppState]:
    """Serve: prepare the data dir, run the MCP sessions and the background work, hand every request the
    app's state (Starlette copies what is yielded into `request.state`); on the way out, the one stop."""
    await anyio.to_thread.run_sync(prepare_data_dir, parts.settings.data_dir)
    async with parts.mcp.session_manager.run(), anyio.create_task_group() as tasks:
        start_background_work(parts, tasks)
        parts.announce(
            f"live-memory {__version__}: serving http://{parts.settings.host}:{parts.settings.port}{MCP_PATH}"
        )
        if parts.service.runtime.provider is None:  # said once; /health and the status page keep saying it
            logger.warning("no model credential, questions will fail: %s", missing_credential_message(parts.settings))
        try:
            with parts.stop.from_signals(drain_limit_s=drain_limit_s(parts.timings.shutdown_grace_s)):
                yield parts.state
        finally:
            await stop_serving(parts, tasks)


def start_background_work(parts: Parts, tasks: anyio.abc.TaskGroup) -> None:
    """Everything that runs beside the requests, in the lifespan's task group: cancelled at the stop."""
    parts.service.start(tasks)
    tasks.start_soon(prepare_after_a_restart, parts.service, name="live-memory provider client")
    parts.jobs.attach(tasks)
    tasks.start_soon(parts.keep_warm.run, name="live-memory keep-warm")


async def stop_serving(parts: Parts, tasks: anyio.abc.TaskGroup) -> None:
    """The one stop: no new questions, running ones cut to the grace period, the background work cancelled,
    every snapshot flushed under a deadline, the providers closed (shielded: the cancelled task group must not
    cut them short)."""
    parts.stop.begin()
    await parts.jobs.aclose()
    tasks.cancel_scope.cancel()
    deadline_s = parts.timings.flush_deadline_s
    with anyio.move_on_after(deadline_s, shield=True) as flush:
        await parts.service.flush()
    if flush.cancelled_caught:
        logger.error("snapshots not all written within %.0f s of shutdown", deadline_s)
    with anyio.CancelScope(shield=True):
        await parts.service.aclose()


def serve_until_stopped(server: Server, sockets: list[socket.socket], *, thread_wait_s: float) -> int:
    """Run uvicorn until it stops, then exit even if a worker thread is stuck (a read blocked on a FIFO or a
    hung network mount). asyncio waits for every worker thread at exit, so one stuck thread would keep a
    stopped server alive forever, holding its port; here the threads get `thread_wait_s`, and then the
    process ends anyway (the snapshots were flushed by the lifespan before uvicorn returned)."""
    factory = server.config.get_loop_factory()
    loop = factory() if factory is not None else asyncio.new_event_loop()
    status = 1
    try:
        loop.run_until_complete(server.serve(sockets=sockets))
        status = 0
    except SystemExit as exc:  # a stop signal, re-raised by uvicorn once it has stopped
        status = exc.code if isinstance(exc.code, int) else 0
    finally:
        stuck = _close_loop(loop, thread_wait_s)
        if stuck:
            logger.error(
                "worker threads still busy %.1f s after the server stopped (%s); exiting without them",
                thread_wait_s,
                ", ".join(stuck),
            )
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    # Only the interpreter's teardown is left: its collections over the whole heap (the SDKs' classes, every
    # module) would find nothing that needs finalizing, and cost a stop about half a second.
    gc.freeze()
    return status


def _close_loop(loop: asyncio.AbstractEventLoop, wait_s: float) -> list[str]:
    """Cancel what is left on the loop and close it without waiting for its worker threads (unlike
    asyncio.run); then give every other non-daemon thread until the deadline. Returns the stuck ones."""
    deadline = time.monotonic() + wait_s
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            gathered = asyncio.gather(*left, return_exceptions=True)
            loop.run_until_complete(asyncio.wait([gathered], timeout=wait_s))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()  # shuts the default executor down without waiting for its threads
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join(max(deadline - time.monotonic(), 0.0))
    return [t.name for t in threading.enumerate() if t is not current and not t.daemon and t.is_alive()]
