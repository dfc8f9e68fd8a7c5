"""The one stop sequence: callbacks run once, answers in flight are waited for, idle event streams end."""

from __future__ import annotations

import anyio
import pytest
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import SubscriptionsListenResult
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from live_memory.constants import SHUTDOWN_DRAIN_MARGIN_S
from live_memory.http.shutdown import LISTEN_METHOD, EndListens, IdleStreams, StopSignal, drain_limit_s


async def test_begin_runs_every_step_once_even_when_one_fails() -> None:
    stop = StopSignal()
    ran: list[str] = []

    def broken() -> None:
        ran.append("broken")
        raise RuntimeError("one step fails")

    stop.on_begin(broken)
    stop.on_begin(lambda: ran.append("admissions closed"))
    stop.begin()
    stop.begin()
    assert stop.begun
    assert ran == ["broken", "admissions closed"]


async def test_answers_delivered_waits_for_every_call_in_flight() -> None:
    stop = StopSignal()
    delivered = anyio.Event()

    async def watch() -> None:
        await stop.answers_delivered()
        delivered.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            with stop.call(), stop.call():
                tasks.start_soon(watch)
                stop.begin()
                await anyio.wait_all_tasks_blocked()
                assert not delivered.is_set()  # two answers are still being written
            await delivered.wait()


async def test_the_last_answer_gets_the_settle_time_and_a_stop_after_it_waits_for_nothing() -> None:
    now = [100.0]
    stop = StopSignal(settle_s=60.0, clock=lambda: now[0])
    stop.begin()
    with anyio.fail_after(5):
        await stop.answers_delivered()  # no answer yet: nothing to settle
    with stop.call():
        pass  # an answer handed over at 100 s
    settled = anyio.Event()

    async def watch() -> None:
        await stop.answers_delivered()
        settled.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            await anyio.wait_all_tasks_blocked()
            assert not settled.is_set()  # its frames still get their time to reach the socket
            tasks.cancel_scope.cancel()
        now[0] += 60.0
        await stop.answers_delivered()  # a stop once that time has passed waits for nothing


@pytest.mark.parametrize("begun", [False, True])
def test_an_idle_event_stream_ends_when_the_stop_begins(begun: bool) -> None:
    stop = StopSignal()
    app = IdleStreams(Starlette(routes=[Route("/health", lambda r: PlainTextResponse("ok"))]), stop, 0.01)
    if begun:
        stop.begin()
    with TestClient(app) as client:
        assert client.get("/health").text == "ok"  # other requests pass through
        headers = {"accept": "text/event-stream"}
        if begun:  # after the stop, clients are told there is no stream to hold open
            assert client.get("/mcp", headers=headers).status_code == 405
            return
        with client.stream("GET", "/mcp", headers=headers) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            assert next(lines) == ": ping"
            client.portal.call(stop.begin)  # type: ignore[union-attr]
            rest = list(lines)  # the stream ends instead of holding shutdown open
    assert all(line in ("", ": ping") for line in rest)


def test_a_stop_told_to_be_quick_is_quick_and_a_long_grace_gets_at_most_the_standard_margin() -> None:
    assert drain_limit_s(0.0) == 1.0  # at least a second to hand over what was cut
    assert drain_limit_s(0.5) == 1.5
    assert drain_limit_s(3.0) == 6.0
    assert drain_limit_s(10.0) == 10.0 + SHUTDOWN_DRAIN_MARGIN_S


def _context(method: str, request_id: int | None = 7) -> ServerRequestContext[None, None]:
    return ServerRequestContext(
        session=None,  # type: ignore[arg-type]
        lifespan_context=None,
        protocol_version="2026-07-28",
        method=method,
        request_id=request_id,
    )


async def test_a_listen_stream_ends_with_its_result_once_the_stop_begins_and_answers_are_delivered() -> None:
    stop = StopSignal()
    middleware = EndListens(stop)
    forever = anyio.Event()

    async def listen(ctx: ServerRequestContext[None, None]) -> HandlerResult:
        await forever.wait()  # a subscription stream: it never ends by itself
        return None

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            results: list[HandlerResult] = []

            async def serve() -> None:
                results.append(await middleware(_context(LISTEN_METHOD), listen))

            tasks.start_soon(serve)
            await anyio.wait_all_tasks_blocked()
            assert results == []  # no stop yet: the stream stays open
            stop.begin()
    (result,) = results
    assert isinstance(result, SubscriptionsListenResult)
    assert result.meta == {SUBSCRIPTION_ID_META_KEY: 7}  # the graceful close, stamped with the listen's id


async def test_other_requests_and_a_listen_that_ends_by_itself_pass_through_untouched() -> None:
    stop = StopSignal()
    middleware = EndListens(stop)

    async def handler(ctx: ServerRequestContext[None, None]) -> HandlerResult:
        return {"method": ctx.method}

    with anyio.fail_after(5):
        assert await middleware(_context("tools/call"), handler) == {"method": "tools/call"}
        assert await middleware(_context(LISTEN_METHOD), handler) == {"method": LISTEN_METHOD}
        assert await middleware(_context(LISTEN_METHOD, request_id=None), handler) == {"method": LISTEN_METHOD}
