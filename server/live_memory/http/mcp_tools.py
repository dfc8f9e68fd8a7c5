"""The MCP surface: `ask_live_memory` (plain-text answers, progress heartbeats, clear errors).

Expected failures become `ToolError` (an is_error result the calling agent reads); anything else
is logged once with its traceback and reported without internals. The tool is registered with
`structured_output=False` so clients receive the answer as plain text, not `{"result": ...}`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from live_memory import __version__
from live_memory import constants as C
from live_memory.core.errors import ReportedError
from live_memory.core.records import QuestionResult
from live_memory.engine.agent_loop import Progress
from live_memory.http.jobs import JobRegistry
from live_memory.http.shutdown import EndListens, StopSignal
from live_memory.workspaces.answerer import Answerer, validate_question

logger = logging.getLogger(__name__)

# Sent to the calling agent with every one of its requests: every word here is paid for many times over.
ASK_DESCRIPTION = """\
Ask Live Memory, a persistent memory of this codebase, a plain-language question (where something \
lives, how parts connect, why code is so, what changed) BEFORE exploring unfamiliar code or re-reading \
files. It answers from what it learned across sessions, naming files with line ranges. Read-only.
question: one self-contained question (include names, paths, error text you know).
cwd: the absolute repository root.
max_answer_tokens: optional answer cap (0 = default).
The answer ends with a metadata line (model, latency, tokens, cost)."""


SUBMIT_DESCRIPTION = (
    "Start an ask_live_memory question in the background and return a job id at once (same arguments as "
    "ask_live_memory). Collect the answer later with ask_live_memory_result."
)
RESULT_DESCRIPTION = (
    "Collect the answer of a question started with ask_live_memory_submit: the answer (handed out once), or "
    "[running] while it is still being worked on."
)


def _agent_of(ctx: Context) -> str:
    """The asking agent's name: its MCP client's (e.g. `codex-mcp-client`) when the call carries client info,
    else the agent header its MCP entry sends (`codex`, `claude-code`, ...); empty when neither says."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    name = str(info.name) if info is not None and info.name else (ctx.headers or {}).get(C.AGENT_HEADER.lower(), "")
    return "".join(c for c in name.strip() if c.isprintable())[: C.MAX_AGENT_NAME_CHARS]


def _cwd_from(ctx: Context, cwd: str) -> str:
    """An explicit cwd always wins; else the project dir a plugin's .mcp.json sends as a header."""
    if cwd.strip():
        return cwd
    header = (ctx.headers or {}).get(C.PROJECT_HEADER, "")
    if header and not header.startswith("${"):
        return header
    raise ToolError("cwd is required: pass the absolute path of your repository root (e.g. the project directory)")


def _report_done(reports: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
    def done(task: asyncio.Task[None]) -> None:
        reports.discard(task)
        if not task.cancelled() and task.exception() is not None:  # a lost heartbeat is not worth failing for
            logger.debug("progress report failed: %r", task.exception())

    return done


def build_mcp_server(
    answerer: Answerer,
    jobs: JobRegistry,
    stop: StopSignal,
    *,
    async_tools: bool,
    progress_interval_s: float = C.PROGRESS_INTERVAL_S,
    clock: Callable[[], float] = time.monotonic,
) -> MCPServer:
    mcp = MCPServer(
        name=C.SERVER_NAME,
        version=__version__,
        instructions="Call ask_live_memory with your question and the absolute repository root as cwd.",
    )
    mcp.middleware.append(EndListens(stop))  # a stop ends the clients' standing event streams

    @mcp.tool(
        structured_output=False,
        description=ASK_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=False),
    )
    async def ask_live_memory(question: str, ctx: Context, cwd: str = "", max_answer_tokens: int = 0) -> str:
        workspace_cwd = _cwd_from(ctx, cwd)
        progress = Progress()  # ours: the answer path writes what it is doing, the heartbeat reads it
        started = clock()
        budget = answerer.time_budget_s

        # Progress heartbeats from a loop timer, not a task group with a sleeping task: most answers come
        # long before the first beat, and a timer costs next to nothing to cancel. Reports do not overlap.
        loop = asyncio.get_running_loop()
        reports: set[asyncio.Task[None]] = set()
        timer: asyncio.TimerHandle | None = None

        def beat() -> None:
            nonlocal timer
            if not reports:
                report = ctx.report_progress(round(clock() - started, 1), budget, progress.now)
                task = loop.create_task(report)
                reports.add(task)
                task.add_done_callback(_report_done(reports))
            timer = loop.call_later(progress_interval_s, beat)

        timer = loop.call_later(progress_interval_s, beat)
        result: QuestionResult | None = None
        failure: Exception | None = None
        with stop.call():
            try:
                result = await answerer.ask(workspace_cwd, question, max_answer_tokens, progress, agent=_agent_of(ctx))
            except Exception as exc:  # cancellation (the client hung up) still propagates
                failure = exc
            finally:
                if timer is not None:
                    timer.cancel()
                for task in reports:
                    task.cancel()
        if isinstance(failure, ReportedError):
            raise ToolError(str(failure))
        if failure is not None or result is None:
            logger.error("ask_live_memory failed unexpectedly", exc_info=failure)
            raise ToolError("Live Memory hit an internal error answering this question; see the server log.")
        return result.render()

    if async_tools:
        register_async_tools(mcp, answerer, jobs)
    return mcp


def register_async_tools(mcp: MCPServer, answerer: Answerer, jobs: JobRegistry) -> None:
    @mcp.tool(structured_output=False, description=SUBMIT_DESCRIPTION)
    async def ask_live_memory_submit(question: str, ctx: Context, cwd: str = "", max_answer_tokens: int = 0) -> str:
        workspace_cwd = _cwd_from(ctx, cwd)
        agent = _agent_of(ctx)

        async def work() -> str:
            return (await answerer.ask(workspace_cwd, question, max_answer_tokens, agent=agent)).render()

        try:
            validate_question(question)
            await answerer.check_workspace(workspace_cwd)
            return jobs.submit(work)
        except ReportedError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(structured_output=False, description=RESULT_DESCRIPTION)
    async def ask_live_memory_result(job_id: str) -> str:
        try:
            text, failed = jobs.result(job_id)
        except ReportedError as exc:
            raise ToolError(str(exc)) from None
        if failed:
            raise ToolError(text)
        return text
