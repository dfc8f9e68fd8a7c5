"""Operations: spend caps, /stats vs /metrics, the status page, the ledger, keep-warm,
hot reload and doctor."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx2
import pytest

from live_memory.cli.main import main
from live_memory.testing.live_server import LiveServer, ask_via_mcp, live_server, settings_for
from live_memory.testing.llm_server import FakeLLM, RecordedRequest, Reply
from live_memory.tools import TOOL_SCHEMAS
from live_memory.workspaces.keep_warm import KeepWarm
from tests.fakes.repo_builder import one_file_repo


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return one_file_repo(tmp_path, "a.py", "A = 1\n")


def summarizing(request: RecordedRequest) -> Reply:
    system = request.body.get("system") or [{"text": ""}]
    if "knowledge ledger" in system[0]["text"]:
        return Reply.text("- a.py defines A\n- docs live in docs/")
    return Reply.text("an answer " * 30)


def without_cache_control(value: Any) -> Any:
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    return value


async def get(server: LiveServer, path: str, **params: str) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=server.url) as client:
        return await client.get(path, params=params)


async def test_a_spent_cap_stops_questions_with_a_clear_message(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.responder = summarizing
    settings = settings_for(fake.base_url, tmp_path / "data", daily_budget_usd="0.000001", force_explore_when_cold=0)
    with live_server(settings) as server:
        first, first_error = await ask_via_mcp(server.mcp_url, {"question": "q1", "cwd": str(workspace)})
        second, second_error = await ask_via_mcp(server.mcp_url, {"question": "q2", "cwd": str(workspace)})
        today = (await get(server, "/stats")).json()["server"]["today"]
        health = (await get(server, "/health")).json()
        page = (await get(server, "/")).text
    assert not first_error, first
    assert second_error and "daily budget of $0.000001 is spent" in second  # the cap as set, not "$0.00"
    assert "`live-memory config set daily_budget_usd=N`" in second and "LIVE_MEMORY_DAILY_BUDGET_USD" in second
    assert today["remaining_usd"] == 0.0 and today["foreground_usd"] > 0
    assert today["spent"].startswith("Live Memory's daily budget of $0.000001 is spent")
    assert (health["status"], health["budget"]) == ("degraded", "spent")
    assert '<p class="alert">Questions are refused: Live Memory&#x27;s daily budget of $0.000001 is spent' in page
    assert len(fake.requests) == 1


async def test_background_work_stops_before_questions_do(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.responder = summarizing
    data = tmp_path / "data"
    settings = settings_for(
        fake.base_url,
        data,
        max_context_tokens=3000,
        distill_min_interval_s=0,
        force_explore_when_cold=0,
        hold_files="all",
    )
    content = "x = 1  # padding\n" * 120
    with live_server(settings) as server:
        await ask_via_mcp(server.mcp_url, {"question": "warm up", "cwd": str(workspace)})
        spent = (await get(server, "/stats")).json()["server"]["today"]["foreground_usd"]
        # a cap that leaves room for questions but is past the share where background work stops
        (data / "config.json").write_text(f'{{"daily_budget_usd": {spent * 1.1}}}')
        async with httpx2.AsyncClient(base_url=server.url) as client:
            assert (await client.post("/reload", json={})).status_code == 200
            events = [{"path": f"f{i}.py", "kind": "read", "content": content} for i in range(6)]
            await client.post("/notify", json={"cwd": str(workspace), "events": events})
        text, is_error = await ask_via_mcp(server.mcp_url, {"question": "after tees", "cwd": str(workspace)})
        stats = (await get(server, "/stats", cwd=str(workspace))).json()["workspace"]
    summaries = [r for r in fake.requests if "knowledge ledger" in (r.body.get("system") or [{"text": ""}])[0]["text"]]
    assert not is_error, text  # the question still ran
    assert stats["compactions"] >= 1 and summaries == []  # ... but distillation shed instead of summarizing


async def test_stats_metrics_and_the_status_page_agree(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.responder = summarizing
    with live_server(settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)) as server:
        await ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)})
        stats = (await get(server, "/stats", cwd=str(workspace))).json()
        metrics = (await get(server, "/metrics")).text
        page = (await get(server, "/")).text
    ws = stats["workspace"]
    label = f'workspace="{ws["id"]}"'
    assert f"live_memory_questions_total{{{label}}} {float(ws['questions_answered'])}" in metrics
    assert f"live_memory_context_used_tokens{{{label}}} {float(ws['fill']['used_tokens'])}" in metrics
    assert f'live_memory_cost_usd_total{{kind="foreground"}} {stats["server"]["cost_usd"]["foreground"]}' in metrics

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.cells: list[str] = []
            self.scripts = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.scripts += tag in ("script", "link", "img")

        def handle_data(self, data: str) -> None:
            if data.strip():
                self.cells.append(data.strip())

    parser = Cells()
    parser.feed(page)
    assert parser.scripts == 0  # self-contained: no scripts or external assets
    assert str(workspace) in parser.cells and str(ws["questions_answered"]) in parser.cells


async def test_ledger_can_be_read_and_corrected(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.responder = summarizing
    settings = settings_for(
        fake.base_url,
        tmp_path / "data",
        max_context_tokens=2500,
        distill_min_interval_s=0,
        force_explore_when_cold=0,
        hold_files="all",
    )
    with live_server(settings) as server:
        await ask_via_mcp(server.mcp_url, {"question": "warm up", "cwd": str(workspace)})
        async with httpx2.AsyncClient(base_url=server.url) as client:
            content = "A = 1\n" + "# padding\n" * 800
            await client.post(
                "/notify",
                json={"cwd": str(workspace), "events": [{"path": "a.py", "kind": "read", "content": content}]},
            )
            await ask_via_mcp(server.mcp_url, {"question": "compact please", "cwd": str(workspace)})
            ledger = (await client.get("/ledger", params={"cwd": str(workspace)})).json()
            forgot = (
                await client.post("/ledger/forget", json={"cwd": str(workspace), "substring": "docs live"})
            ).json()
            after = (await client.get("/ledger", params={"cwd": str(workspace)})).json()
        await ask_via_mcp(server.mcp_url, {"question": "and now", "cwd": str(workspace)})
    assert [f["text"] for f in ledger["facts"]] == ["a.py defines A", "docs live in docs/"]
    assert ledger["facts"][0]["sources"] == {"a.py": ledger["facts"][0]["sources"]["a.py"]}
    assert "# Live Memory ledger" in ledger["markdown"]
    assert forgot["forgotten"] == 1 and [f["text"] for f in after["facts"]] == ["a.py defines A"]
    assert "retracted by the user" in str(fake.requests[-1].body["messages"])


async def test_keep_warm_pings_only_eligible_workspaces(fake: FakeLLM, tmp_path: Path) -> None:
    fake.responder = summarizing
    busy, idle, fresh = (tmp_path / n for n in ("busy", "idle", "fresh"))
    for root in (busy, idle, fresh):
        (root / ".git").mkdir(parents=True)
    settings = settings_for(fake.base_url, tmp_path / "data", keep_warm=1, force_explore_when_cold=0)
    with live_server(settings) as server:
        for root in (busy, idle, fresh):
            await ask_via_mcp(server.mcp_url, {"question": f"about {root.name}", "cwd": str(root)})
        service = server.app.state.service
        now = [10_000.0]
        warm = KeepWarm(service, TOOL_SCHEMAS, clock=lambda: now[0])
        states = {s.root.name: s for s in service.states()}
        before = len(fake.requests)

        async def scenario() -> tuple[list[Any], list[Any]]:  # runs on the server's loop, like the real one
            for state in states.values():
                state.last_used = state.last_prompt_at = now[0]
            not_due = await warm.tick()
            now[0] += 241
            states["busy"].in_flight = 1
            states["idle"].last_used = now[0] - 3600
            due = await warm.tick()
            states["busy"].in_flight = 0
            return not_due, due

        not_due, pinged = await asyncio.to_thread(server.run_in_server, scenario())
    assert not_due == []
    assert [s.root.name for s in pinged] == ["fresh"]
    ping = fake.requests[before]
    assert ping.body["max_tokens"] == 0  # Anthropic pre-warm: no output billed
    last_question = [r for r in fake.requests[:before] if "about fresh" in str(r.body["messages"])][-1]
    history = without_cache_control(last_question.body["messages"][:-1])
    assert without_cache_control(ping.body["system"]) == without_cache_control(last_question.body["system"])
    assert ping.body["tools"] == last_question.body["tools"]
    assert without_cache_control(ping.body["messages"])[: len(history)] == history  # the same prefix, extended
    assert states["fresh"].stats.background_usage.prompt_tokens > 0


async def test_reload_swaps_the_model_and_keeps_workspaces(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.responder = summarizing
    data = tmp_path / "data"
    with live_server(settings_for(fake.base_url, data, force_explore_when_cold=0)) as server:
        await ask_via_mcp(server.mcp_url, {"question": "before reload", "cwd": str(workspace)})
        data.mkdir(exist_ok=True)
        (data / "config.json").write_text('{"model": "claude-sonnet-4-6"}')
        async with httpx2.AsyncClient(base_url=server.url) as client:
            reloaded = (await client.post("/reload", json={})).json()
        text, _ = await ask_via_mcp(server.mcp_url, {"question": "after reload", "cwd": str(workspace)})
    assert reloaded["reloaded"] and reloaded["model"] == "claude-sonnet-4-6" and "model" in reloaded["changed"]
    assert fake.requests[-1].body["model"] == "claude-sonnet-4-6"
    assert "before reload" in str(fake.requests[-1].body["messages"])  # the workspace survived
    assert "model=claude-sonnet-4-6" in text


def doctor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict[str, str], *args: str
) -> tuple[int, str]:
    """`live-memory doctor` in this process (the command's whole job is what it prints and returns)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = main(["doctor", *args])
    return code, capsys.readouterr().out


def test_doctor_reports_a_broken_config_with_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "LIVE_MEMORY_DATA_DIR": str(tmp_path / "d")}
    code, out = doctor(monkeypatch, capsys, {**env, "LIVE_MEMORY_PORT": "not-a-port"}, "--offline")
    assert code == 1
    assert "[FAIL] configuration: invalid port from env LIVE_MEMORY_PORT" in out
    _, out = doctor(monkeypatch, capsys, {**env, "LIVE_MEMORY_PORT": "9"}, "--offline")
    assert "[FAIL] server: nothing listens on http://127.0.0.1:9" in out
    assert "[FAIL] credential (this shell): none found" in out and "LIVE_MEMORY_API_KEY" in out


def test_doctor_passes_against_a_running_server_and_the_plugin(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data")
    with live_server(settings) as server:
        plugin = Path(__file__).resolve().parents[1]  # this repository is the plugin
        env = {
            "HOME": str(tmp_path),
            "PATH": "/usr/bin:/bin",
            "LIVE_MEMORY_PORT": str(server.port),
            "LIVE_MEMORY_DATA_DIR": str(tmp_path / "data"),
            "LIVE_MEMORY_BASE_URL": fake.base_url,
            "LIVE_MEMORY_API_KEY": "test",
        }
        code, out = doctor(monkeypatch, capsys, env, "--plugin-dir", str(plugin), "--cwd", str(tmp_path))
    assert code == 0, out
    assert "[ok  ] model round trip" in out and "[ok  ] plugin .mcp.json" in out


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed: the headless screenshot check is skipped")
async def test_the_status_page_renders_in_a_headless_browser(fake: FakeLLM, workspace: Path, tmp_path: Path) -> None:
    fake.responder = summarizing
    shot = tmp_path / "status.png"
    with live_server(settings_for(fake.base_url, tmp_path / "data", force_explore_when_cold=0)) as server:
        await ask_via_mcp(server.mcp_url, {"question": "q", "cwd": str(workspace)})
        command = [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'chrome'}",
            f"--screenshot={shot}",
            "--window-size=1000,400",
            f"{server.url}/",
        ]
        result = await asyncio.to_thread(subprocess.run, command, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000  # a real, non-blank page was drawn
