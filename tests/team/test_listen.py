"""Fresh within seconds, against a real PostgreSQL: a teammate's answer is usable a moment after it was written,
with no restart and no compaction (the store announces each row, LISTEN/NOTIFY); a listener whose connection is
dropped, or whose network swallows packets, is found out and comes back, and asks never wait for it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from live_memory.team.listen import announced
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.conftest import TeamRoles
from tests.fakes.engine import Engine, until
from tests.fakes.tcp_proxy import TcpProxy
from tests.fakes.team import FRESH_S, arrives, checkout, first_pull, reader, running, sync, team_engine

QUESTION = "Where is VERSION defined?"


def server(tmp_path: Path, name: str, url: str) -> tuple[Engine, Path]:
    """A teammate's server and checkout; its model reads app.py and answers "VERSION is in app.py:1."."""
    root = off_loop(checkout, tmp_path / name)
    return team_engine(tmp_path / name, reader("VERSION is in app.py:1."), url, team_share_answers="1"), root


async def test_a_teammates_answer_is_usable_within_seconds_without_a_restart_or_a_compaction(
    tmp_path: Path, team_roles: TeamRoles
) -> None:
    ana, ana_root = server(tmp_path, "ana", team_roles.urls["ana"])
    ben, ben_root = server(tmp_path, "ben", team_roles.urls["ben"])
    async with running(ana), running(ben):
        await first_pull(ben, ben_root)  # ben's memory is loaded and has pulled: nothing yet
        await until(lambda: sync(ben).figures.listening)
        await ana.answerer.ask(str(ana_root), QUESTION)
        await until(lambda: sync(ana).figures.answers_pushed == 1)
        written = time.monotonic()

        await arrives(ben, ben_root, QUESTION)

        assert time.monotonic() - written < FRESH_S
        served = await ben.answerer.ask(str(ben_root), QUESTION)
        assert served.model == "team-answer" and "written by ana" in served.answer
        state = await ben.service.find(str(ben_root))
        assert state is not None and state.stats.compactions == 0


async def test_a_dropped_listener_comes_back_and_pulls_what_it_missed(tmp_path: Path, team_roles: TeamRoles) -> None:
    ana, ana_root = server(tmp_path, "ana", team_roles.urls["ana"])
    ben, ben_root = server(tmp_path, "ben", team_roles.urls["ben"])
    db = team_roles.db
    async with running(ana), running(ben):
        sync(ben).retry_s = 0.01  # retried at once: the test does not wait out the production backoff
        await first_pull(ben, ben_root)
        await until(lambda: sync(ben).figures.listening)
        # Every connection to the store is cut (a failover, an administrator's pg_terminate_backend).
        terminate = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'ben'"
        await asyncio.to_thread(db.cluster.admin_execute, db.name, terminate)
        await ana.answerer.ask(str(ana_root), "what is first?")  # written while ben's listener may be away
        await until(lambda: sync(ana).figures.answers_pushed == 1)
        await arrives(ben, ben_root, "what is first?")  # from the pull of everything on its return, or announced
        await until(lambda: sync(ben).figures.listening)
        await ana.answerer.ask(str(ana_root), "what is second?")
        await until(lambda: sync(ana).figures.answers_pushed == 2)
        await arrives(ben, ben_root, "what is second?")  # announced to the listener that came back


async def test_a_listener_whose_network_swallows_packets_is_found_out_and_asks_go_on(
    tmp_path: Path, team_roles: TeamRoles
) -> None:
    db = team_roles.db
    async with TcpProxy("127.0.0.1", db.cluster.port) as proxy:
        url = team_roles.urls["ben"].replace(f":{db.cluster.port}/", f":{proxy.port}/")
        root = off_loop(checkout, tmp_path / "ben")
        model = ScriptedProvider(text_response("answered all the same"))
        ben = team_engine(tmp_path / "ben", model, url, team_share_answers="1", team_timeout_s="0.3")
        sync(ben).ping_s = 0.05
        async with running(ben):
            await first_pull(ben, root)
            await until(lambda: sync(ben).figures.listening)
            proxy.black_hole()
            await until(lambda: not sync(ben).figures.listening, timeout_s=FRESH_S)  # its ping went unanswered
            started = time.monotonic()
            assert (await ben.answerer.ask(str(root), QUESTION)).answer.startswith("answered all the same")
            assert time.monotonic() - started < 1.0


def test_an_announcement_that_names_no_row_is_ignored() -> None:
    assert announced('{"table": "answers", "repo": "example.com/team/app", "id": 3}') is not None
    for payload in ("", "rm -rf ~", '{"table": "users", "repo": "x", "id": 1}', '{"table": "facts", "id": -1}'):
        assert announced(payload) is None
