"""Keep-warm pings, driven directly with an injected clock: who is eligible, what a ping sends (the
question's own prefix), what it costs, and the loop that runs them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from live_memory.core.errors import OverloadedError
from live_memory.core.messages import Message
from live_memory.core.records import Usage
from live_memory.settings.config import load_settings
from live_memory.settings.runtime import Runtime
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.tools import TOOL_SCHEMAS
from live_memory.workspaces.keep_warm import PING, KeepWarm
from live_memory.workspaces.workspace import WorkspaceState
from tests.fakes.engine import Engine, engine_for, until

NOW = 10_000.0


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def repo(tmp_path: Path, name: str = "repo") -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    return root


async def asked(engine: Engine, root: Path, clock: Clock) -> WorkspaceState:
    """A workspace that answered one question just now (by the injected clock)."""
    await engine.answerer.ask(str(root), f"about {root.name}")
    state = next(s for s in engine.service.states() if s.root.name == root.name)
    state.last_used = state.last_prompt_at = clock.now
    return state


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def test_a_workspace_is_pinged_once_an_interval_has_passed_since_its_last_request(
    tmp_path: Path, clock: Clock
) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, keep_warm="1")
    state = await asked(engine, repo(tmp_path), clock)
    warm = KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock)
    assert warm.interval_s() == 240.0  # the Anthropic profile: under the 5-minute cache TTL
    clock.now += 239
    assert await warm.tick() == [] and len(provider.requests) == 1
    clock.now += 1
    assert await warm.tick() == [state] and warm.pings == 1
    assert state.last_prompt_at == clock.now
    assert await warm.tick() == []  # the ping itself was the last request


async def test_a_ping_repeats_the_questions_prefix_and_asks_for_no_answer(tmp_path: Path, clock: Clock) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, keep_warm="1")
    state = await asked(engine, repo(tmp_path), clock)
    clock.now += 240
    await KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock).tick()
    question, ping = provider.requests

    def plain(messages: tuple[Message, ...] | list[Message]) -> list[object]:
        return [(m.role, [replace(p, cache=False, long_cache=False) for p in m.parts]) for m in messages]

    history = plain([t.message for t in state.window.history])
    assert [p.text for p in ping.system] == [p.text for p in question.system]
    assert ping.tools == question.tools and ping.cache_key == question.cache_key == state.id
    assert plain(ping.messages[:-1]) == history  # every stored turn, byte for byte
    assert plain(question.messages[:-1]) == history[: len(question.messages) - 1]  # which extends the question's
    assert ping.messages[-1].text == PING and not any(p.cache for p in ping.messages[-1].parts)
    assert ping.messages[-2].parts[-1].cache  # the shared prefix is what gets written
    assert ping.max_tokens == 1  # this provider cannot pre-warm with zero output tokens


async def test_a_provider_that_prewarms_gets_zero_max_tokens(tmp_path: Path, clock: Clock) -> None:
    provider = ScriptedProvider()
    provider.info = replace(provider.info, prewarm_with_zero_tokens=True)
    engine = engine_for(tmp_path, provider, keep_warm="1")
    await asked(engine, repo(tmp_path), clock)
    clock.now += 240
    await KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock).tick()
    assert provider.requests[-1].max_tokens == 0


async def test_a_ping_is_charged_as_background_spend(tmp_path: Path, clock: Clock) -> None:
    usage = Usage(cache_read_tokens=1_000_000)
    provider = ScriptedProvider(text_response("answer"), text_response("", usage=usage))
    engine = engine_for(tmp_path, provider, keep_warm="1", price_cache_read="0.5")
    state = await asked(engine, repo(tmp_path), clock)
    before = state.stats.usage
    clock.now += 240
    await KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock).tick()
    assert state.stats.background_usage == usage and state.stats.background_cost_usd == pytest.approx(0.5)
    assert state.stats.usage == before  # questions' own spend is untouched
    assert engine.service.spend.today().background_usd == pytest.approx(0.5)


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda s, c: setattr(s, "in_flight", 1), id="a-question-is-running"),
        pytest.param(lambda s, c: setattr(s, "last_used", c.now - 1801), id="no-question-for-half-an-hour"),
        pytest.param(lambda s, c: setattr(s, "last_prompt_at", None), id="never-sent-a-request"),
        pytest.param(lambda s, c: setattr(s, "loaded", False), id="not-loaded"),
    ],
)
async def test_a_busy_idle_or_unloaded_workspace_is_not_pinged(tmp_path: Path, clock: Clock, spoil: object) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, keep_warm="1")
    state = await asked(engine, repo(tmp_path), clock)
    clock.now += 240
    spoil(state, clock)  # type: ignore[operator]
    assert await KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock).tick() == []
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="keep-warm-off-by-default"),
        pytest.param({"keep_warm": "1", "background": "0"}, id="background-calls-off"),
    ],
)
async def test_settings_can_rule_out_pings(tmp_path: Path, clock: Clock, options: dict[str, str]) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, **options)
    await asked(engine, repo(tmp_path), clock)
    clock.now += 240
    assert await KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock).tick() == []


async def test_a_cache_that_lasts_hours_is_never_pinged(tmp_path: Path, clock: Clock) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, keep_warm="1")
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_PROVIDER": "deepseek", "LIVE_MEMORY_KEEP_WARM": "1"}
    env.update({"LIVE_MEMORY_API_KEY": "x", "LIVE_MEMORY_FORCE_EXPLORE_WHEN_COLD": "0"})
    deepseek = off_loop(load_settings, env=env, data_dir=tmp_path / "data")
    engine.service.runtime = Runtime(deepseek, provider)
    state = await asked(engine, repo(tmp_path), clock)
    warm = KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock)
    assert warm.interval_s() == 6 * 3600.0
    clock.now += 3600
    assert await warm.tick() == []
    clock.now += 5 * 3600
    assert await warm.tick() == []  # by then the workspace is past the 30-minute idle limit
    assert len(provider.requests) == 1 and state.stats.background_usage == Usage()


async def test_a_configured_interval_overrides_the_providers(tmp_path: Path, clock: Clock) -> None:
    engine = engine_for(tmp_path, ScriptedProvider(), keep_warm="1", keep_warm_interval_s="60")
    state = await asked(engine, repo(tmp_path), clock)
    warm = KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock)
    clock.now += 60
    assert warm.interval_s() == 60.0 and await warm.tick() == [state]


async def test_no_pings_once_background_spend_nears_the_daily_cap(tmp_path: Path, clock: Clock) -> None:
    engine = engine_for(tmp_path, ScriptedProvider(), keep_warm="1", daily_budget_usd="1")
    state = await asked(engine, repo(tmp_path), clock)
    engine.service.spend.record("elsewhere", 0.8, background=False)  # 80% of the cap is spent
    clock.now += 240
    assert await KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock).tick() == []
    assert state.stats.background_usage == Usage()


async def test_without_a_credential_nothing_is_pinged(tmp_path: Path, clock: Clock) -> None:
    engine = engine_for(tmp_path, ScriptedProvider(), keep_warm="1")
    state = await asked(engine, repo(tmp_path), clock)
    engine.service.runtime = Runtime(engine.service.settings, None)
    clock.now += 240
    assert not KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock).eligible(state)


async def test_a_failed_ping_is_not_retried_until_the_next_interval(tmp_path: Path, clock: Clock) -> None:
    provider = ScriptedProvider(text_response("one"), text_response("two"), OverloadedError("overloaded"))
    engine = engine_for(tmp_path, provider, keep_warm="1")
    ok, other = await asked(engine, repo(tmp_path, "one"), clock), await asked(engine, repo(tmp_path, "two"), clock)
    assert provider.requests[-1].cache_key == other.id
    warm = KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock)
    clock.now += 240
    pinged = await warm.tick()  # the first ping fails, the second still goes out
    assert pinged == [other] and warm.pings == 1
    assert ok.last_prompt_at == clock.now  # counted as a try: no retry storm against a failing provider
    assert await warm.tick() == []


async def test_the_loop_pings_on_its_check_interval_until_cancelled(tmp_path: Path, clock: Clock) -> None:
    provider = ScriptedProvider()
    engine = engine_for(tmp_path, provider, keep_warm="1")
    await asked(engine, repo(tmp_path), clock)
    clock.now += 240
    warm = KeepWarm(engine.service, TOOL_SCHEMAS, clock=clock, check_interval_s=0.0)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(warm.run)
            await until(lambda: warm.pings == 1)
            tasks.cancel_scope.cancel()
    assert provider.requests[-1].messages[-1].text == PING
