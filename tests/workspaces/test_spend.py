"""What model calls cost and today's spend against the caps: priced per call, counted per workspace and
server-wide, saved across restarts, reset at 00:00 UTC; background work stops before questions do."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from live_memory.constants import BACKGROUND_STOP_SHARE
from live_memory.core.errors import BudgetExceededError
from live_memory.core.records import Usage
from live_memory.engine.admission import AdmissionLimits
from live_memory.settings.config import load_settings
from live_memory.settings.runtime import Runtime
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from live_memory.workspaces.spend import SPEND_FILE, Caps, SpendTracker, call_cost, caps_of, utc_day
from live_memory.workspaces.workspace import Location, WorkspacePolicy, WorkspaceState, new_state
from tests.fakes.engine import engine_for

NOON = 1_767_268_800.0  # 2026-01-01T12:00:00Z
MODEL = "claude-haiku-4-5"  # $1 in / $5 out / $1.25 cache write / $0.10 cache read per million tokens
ONE_AND_A_HALF = Usage(input_tokens=1_000_000, output_tokens=100_000)  # $1.00 + $0.50


class Clock:
    def __init__(self, now: float = NOON) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def runtime_for(tmp_path: Path, provider: ScriptedProvider | None = None, **options: str) -> Runtime:
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_API_KEY": "x"}
    env.update({f"LIVE_MEMORY_{k.upper()}": v for k, v in options.items()})
    return Runtime(load_settings(env=env, data_dir=tmp_path / "data"), provider or ScriptedProvider())


def state_for(root: Path) -> WorkspaceState:
    admission = AdmissionLimits(mode="parallel", max_parallel=4, max_waiting=8, retry_after_s=5.0)
    return new_state(Location(root, root), WorkspacePolicy(100_000, 60.0, admission))


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    return runtime_for(tmp_path)


async def test_a_charge_is_priced_counted_on_the_workspace_and_saved_privately(
    tmp_path: Path, runtime: Runtime
) -> None:
    tracker = SpendTracker(tmp_path / "data", Clock())
    state = state_for(tmp_path / "repo")
    cost = await tracker.charge(state, runtime, MODEL, ONE_AND_A_HALF, background=False)
    assert cost == pytest.approx(1.5)
    assert state.stats.usage == ONE_AND_A_HALF and state.stats.cost_usd == pytest.approx(1.5)
    assert state.stats.background_usage == Usage() and state.stats.background_cost_usd == 0.0
    path = tmp_path / "data" / SPEND_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    saved = json.loads(path.read_text())
    assert saved == {
        "day": "2026-01-01",
        "foreground_usd": pytest.approx(1.5),
        "background_usd": 0.0,
        "by_workspace": {state.id: pytest.approx(1.5)},
    }


async def test_background_calls_are_counted_apart_from_questions(tmp_path: Path, runtime: Runtime) -> None:
    tracker = SpendTracker(tmp_path / "data", Clock())
    state = state_for(tmp_path / "repo")
    await tracker.charge(state, runtime, MODEL, ONE_AND_A_HALF, background=True)
    await tracker.charge(state, runtime, MODEL, Usage(cache_read_tokens=1_000_000), background=False)
    assert state.stats.background_cost_usd == pytest.approx(1.5)
    assert state.stats.cost_usd == pytest.approx(0.10)
    today = tracker.today()
    assert (today.background_usd, today.foreground_usd) == pytest.approx((1.5, 0.10))
    assert today.total_usd == pytest.approx(1.6) and today.by_workspace == {state.id: pytest.approx(1.6)}


async def test_a_subscription_call_is_not_metered_and_writes_nothing(tmp_path: Path) -> None:
    provider = ScriptedProvider()
    provider.info = replace(provider.info, subscription=True)
    runtime = off_loop(runtime_for, tmp_path, provider)
    tracker = SpendTracker(tmp_path / "data", Clock())
    state = state_for(tmp_path / "repo")
    assert await tracker.charge(state, runtime, MODEL, ONE_AND_A_HALF, background=False) is None
    assert state.stats.usage == ONE_AND_A_HALF and state.stats.cost_usd == 0.0  # tokens still counted
    assert tracker.today().total_usd == 0.0 and not (tmp_path / "data" / SPEND_FILE).exists()


def test_without_a_provider_nothing_is_priced(tmp_path: Path) -> None:
    runtime = Runtime(runtime_for(tmp_path).settings, None)
    assert call_cost(runtime, MODEL, ONE_AND_A_HALF) is None


def test_configured_prices_override_the_table_and_price_an_unknown_model(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path, price_input="2", price_output="10")
    assert call_cost(runtime, MODEL, ONE_AND_A_HALF) == pytest.approx(3.0)
    assert call_cost(runtime, "my-local-model", ONE_AND_A_HALF) == pytest.approx(3.0)
    assert call_cost(runtime_for(tmp_path / "b"), "my-local-model", ONE_AND_A_HALF) == 0.0


async def test_todays_tally_survives_a_restart_and_a_new_utc_day_starts_from_zero(
    tmp_path: Path, runtime: Runtime
) -> None:
    clock = Clock()
    state = state_for(tmp_path / "repo")
    await SpendTracker(tmp_path / "data", clock).charge(state, runtime, MODEL, ONE_AND_A_HALF, background=False)
    again = off_loop(SpendTracker, tmp_path / "data", clock)  # a restart reads the file
    assert again.today().foreground_usd == pytest.approx(1.5)
    assert again.today().by_workspace == {state.id: pytest.approx(1.5)}
    clock.now += 12 * 3600  # 00:00 UTC the next day
    assert again.today().day == "2026-01-02" and again.today().total_usd == 0.0
    assert off_loop(SpendTracker, tmp_path / "data", clock).today().total_usd == 0.0  # yesterday's file is not today's


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"[1, 2]", b'{"day": "2026-01-01", "foreground_usd": "x"}'])
def test_an_unreadable_tally_starts_today_from_zero(tmp_path: Path, garbage: bytes) -> None:
    (tmp_path / SPEND_FILE).write_bytes(garbage)
    today = SpendTracker(tmp_path, Clock()).today()
    assert (today.day, today.total_usd, today.by_workspace) == ("2026-01-01", 0.0, {})


def test_the_daily_cap_refuses_questions_with_when_they_resume_and_the_knob() -> None:
    tracker = SpendTracker(Path("/nonexistent"), Clock())
    tracker.record("ws", 2.0, background=False)
    tracker.check_question("ws", Caps(daily_usd=2.5))  # under the cap: no error
    tracker.record("other", 0.5, background=True)
    with pytest.raises(BudgetExceededError) as refused:
        tracker.check_question("ws", Caps(daily_usd=2.5))
    assert str(refused.value) == (
        "Live Memory's daily budget of $2.50 is spent ($2.50 today); questions resume at 00:00 UTC, or raise it: "
        "`live-memory config set daily_budget_usd=N` (applies at once), or LIVE_MEMORY_DAILY_BUDGET_USD in the "
        "server's environment when that is where it is set"
    )


def test_a_cap_under_a_cent_is_shown_as_set_not_as_nothing() -> None:
    tracker = SpendTracker(Path("/nonexistent"), Clock())
    tracker.record("ws", 0.0012, background=False)
    with pytest.raises(BudgetExceededError, match=r"daily budget of \$0\.001 is spent \(\$0\.0012 today\)"):
        tracker.check_question("ws", Caps(daily_usd=0.001))


def test_a_workspace_cap_refuses_only_that_workspace() -> None:
    tracker = SpendTracker(Path("/nonexistent"), Clock())
    tracker.record("busy", 1.0, background=False)
    caps = Caps(workspace_daily_usd=1.0)
    tracker.check_question("quiet", caps)
    with pytest.raises(BudgetExceededError, match=r"this workspace's daily budget of \$1.00 is spent \(\$1.00 today\)"):
        tracker.check_question("busy", caps)
    with pytest.raises(BudgetExceededError, match="LIVE_MEMORY_WORKSPACE_DAILY_BUDGET_USD"):
        tracker.check_question("busy", caps)


def test_background_work_stops_before_the_cap_is_reached() -> None:
    tracker = SpendTracker(Path("/nonexistent"), Clock())
    caps = Caps(daily_usd=10.0, workspace_daily_usd=5.0)
    tracker.record("ws", 5.0 * BACKGROUND_STOP_SHARE - 0.01, background=False)
    assert tracker.background_allowed("ws", caps)
    tracker.record("ws", 0.01, background=True)
    assert not tracker.background_allowed("ws", caps)  # this workspace is at 80% of its cap
    assert tracker.background_allowed("other", caps)
    tracker.record("other", 10.0 * BACKGROUND_STOP_SHARE - 4.0, background=False)
    assert not tracker.background_allowed("other", caps)  # the server is at 80% of its cap
    assert tracker.background_allowed("other", Caps())  # no caps: never stopped


def test_a_zero_or_negative_amount_leaves_no_trace() -> None:
    tracker = SpendTracker(Path("/nonexistent"), Clock())
    tracker.record("ws", 0.0, background=False)
    tracker.record("ws", -1.0, background=True)
    assert tracker.today().by_workspace == {} and tracker.today().total_usd == 0.0


def test_the_report_shows_what_is_left_of_the_cap() -> None:
    tracker = SpendTracker(Path("/nonexistent"), Clock())
    tracker.record("ws", 0.75, background=False)
    tracker.record("ws", 0.25, background=True)
    assert tracker.report(Caps(daily_usd=3.0, workspace_daily_usd=1.0)) == {
        "day": "2026-01-01",
        "foreground_usd": 0.75,
        "background_usd": 0.25,
        "daily_budget_usd": 3.0,
        "remaining_usd": 2.0,
        "workspace_daily_budget_usd": 1.0,
        "spent": None,
    }
    uncapped = tracker.report(Caps())
    assert (uncapped["daily_budget_usd"], uncapped["remaining_usd"], uncapped["workspace_daily_budget_usd"]) == (
        None,
        None,
        None,
    )
    assert tracker.report(Caps(daily_usd=0.5))["remaining_usd"] == 0.0  # overspent: never negative


def test_caps_come_from_the_settings(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path, daily_budget_usd="4", workspace_daily_budget_usd="1.5")
    assert caps_of(runtime) == Caps(daily_usd=4.0, workspace_daily_usd=1.5)


def test_days_are_utc() -> None:
    assert utc_day(NOON - 12 * 3600) == "2026-01-01"
    assert utc_day(NOON - 12 * 3600 - 1) == "2025-12-31"


async def test_a_spent_budget_refuses_the_next_question_before_calling_the_model(tmp_path: Path) -> None:
    usage = Usage(input_tokens=1_000_000)  # $1 at the configured price
    provider = ScriptedProvider(text_response("first", usage=usage), text_response("second", usage=usage))
    engine = engine_for(tmp_path, provider, daily_budget_usd="1", price_input="1", price_output="0")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    first = await engine.answerer.ask(str(repo), "q1")
    assert first.cost_usd == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError, match=r"daily budget of \$1.00 is spent"):
        await engine.answerer.ask(str(repo), "q2")
    assert len(provider.requests) == 1
