"""A team's knowledge through a real PostgreSQL: what one server's summaries learn, another server with the same
files starts from; a changed file keeps the team's fact about its old bytes out; an outage of the store costs
no answer and no fact (the queue on disk waits, and drains when the store is back)."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest

from live_memory.cli.doctor import run_doctor
from live_memory.core.messages import ChatRequest, ChatResponse, ToolResultPart
from live_memory.core.records import FileEvent, TeamAnswer, ToolCall, Usage
from live_memory.http.stats import team_stats
from live_memory.memory.ledger import LedgerFact
from live_memory.team.policy import TeamPolicy
from live_memory.team.queue import DiskQueue
from live_memory.team.repo_identity import normalize_remote, repository_identity
from live_memory.team.store import TeamStore
from live_memory.testing.live_server import live_server, settings_for
from live_memory.testing.llm_server import FakeLLM
from live_memory.testing.off_loop import off_loop
from live_memory.testing.scripted_provider import ScriptedProvider, text_response
from tests.conftest import TeamDatabase
from tests.fakes.engine import Engine, until
from tests.fakes.tcp_proxy import TcpProxy
from tests.fakes.team import APP, checkout, first_pull, running, team_engine

LONG_ANSWER = "the answer, at length: " + "words " * 600  # about 900 tokens: the third one passes the history bound
FACT = "VERSION is defined in app.py and serve() returns it"


def two_checkouts(tmp_path: Path, second_app: str = APP) -> tuple[Path, Path, Path, Path]:
    """Two developers' homes and their clones: (first home, its checkout, second home, its checkout)."""
    first_home, second_home = tmp_path / "first", tmp_path / "second"
    return first_home, off_loop(checkout, first_home), second_home, off_loop(checkout, second_home, app=second_app)


def learner(fact: str = FACT) -> ScriptedProvider:
    """A model that reads app.py for each question, then answers at length; asked for the ledger's changes
    (a summary: no tools offered), it adds `fact`. A fold that continues the conversation gets a Read, and is
    redone as a summary."""

    def reply(request: ChatRequest) -> ChatResponse:
        if not request.tools:
            return text_response(f"+ {fact}", usage=Usage(input_tokens=2000, output_tokens=20))
        if any(isinstance(part, ToolResultPart) for part in request.messages[-1].parts):
            return text_response(LONG_ANSWER)
        return text_response("", tool_calls=(ToolCall("r", "Read", {"file_path": "app.py"}),))

    return ScriptedProvider(responder=reply)


async def learn(engine: Engine, root: Path) -> None:
    """Questions until a fold wrote the fact into the ledger, and the team's queue took it."""
    for index in range(4):
        await engine.answerer.ask(str(root), f"question {index} about app.py")
    state = await engine.service.find(str(root))
    assert state is not None and any(f.text == FACT for f in state.window.ledger.facts)


async def facts_in_store(url: str) -> list[str]:
    store = await TeamStore.connect(url, pool_max=1, timeout_s=5.0)
    try:
        return [f.text for f in (await store.pull("example.com/team/app", limit=100)).rows]
    finally:
        await store.aclose()


async def test_what_one_server_learned_the_next_server_on_the_same_bytes_starts_from(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    first_home, first_root, second_home, second_root = two_checkouts(tmp_path)
    async with running(team_engine(first_home, learner(), team_db.url)) as first:
        await learn(first, first_root)
        team = first.service.team
        assert team is not None
        await until(lambda: team.figures.pushed >= 1 and team.queued == 0)
    assert FACT in await facts_in_store(team_db.url)

    second_model = ScriptedProvider(text_response("from the team's knowledge"))
    async with running(team_engine(second_home, second_model, team_db.url)) as second:
        result = await second.answerer.ask(str(second_root), "where is VERSION defined?")
        assert result.answer == "from the team's knowledge"
        # The team's fact is in the ledger the very first request carried, marked with who learned it.
        assert FACT in second_model.requests[0].system[1].text
        state = await second.service.find(str(second_root))
        assert state is not None
        [merged] = [f for f in state.window.ledger.facts if f.text == FACT]
        assert merged.team == "live"  # its author: the role the store's database recorded, not a name it was given
        assert set(merged.sources) == {"app.py"}
        # The file changes here: the team's fact is no longer presented as current, as a local one would not be.
        off_loop((second_root / "app.py").write_text, "VERSION = 3\n")
        await second.service.notify(str(second_root), [FileEvent("app.py", "change")])
        assert [f.stale for f in state.window.ledger.facts if f.text == FACT] == [True]


async def test_a_checkout_whose_file_changed_never_presents_the_teams_fact_about_the_old_bytes(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    first_home, first_root, second_home, second_root = two_checkouts(tmp_path, "VERSION = 2  # moved on\n")
    async with running(team_engine(first_home, learner(), team_db.url)) as first:
        await learn(first, first_root)
        team = first.service.team
        assert team is not None
        await until(lambda: team.queued == 0 and team.figures.pushed >= 1)
    second_model = ScriptedProvider(text_response("read it myself"))
    async with running(team_engine(second_home, second_model, team_db.url)) as second:
        await second.answerer.ask(str(second_root), "where is VERSION defined?")
        assert FACT not in second_model.requests[0].system[1].text
        state = await second.service.find(str(second_root))
        assert state is not None and all(f.text != FACT for f in state.window.ledger.facts)


async def test_a_store_down_at_start_costs_no_answer_and_its_queue_drains_once_it_is_up(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    home = tmp_path / "dev"
    root = off_loop(checkout, home)
    await team_db.cluster.stop()
    try:
        async with running(team_engine(home, learner(), team_db.url, team_timeout_s="0.5")) as engine:
            await learn(engine, root)  # every answer came, the store being down
            team = engine.service.team
            assert team is not None
            await until(lambda: team.figures.state == "down" and team.queued >= 1)
            assert team.figures.pushed == 0
    finally:
        await team_db.cluster.start()
    # The queue is on disk: a restarted server pushes it.
    async with running(team_engine(home, learner(), team_db.url)) as restarted:
        drained = restarted.service.team
        assert drained is not None and drained.queued >= 1
        await until(lambda: drained.queued == 0, timeout_s=15.0)
        assert drained.figures.state == "up"
    assert FACT in await facts_in_store(team_db.url)


async def test_a_store_that_dies_mid_session_and_comes_back_loses_nothing(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    home = tmp_path / "dev"
    root = off_loop(checkout, home)
    async with running(team_engine(home, learner(), team_db.url, team_timeout_s="0.5")) as engine:
        team = engine.service.team
        assert team is not None
        team.retry_s = 0.01  # retried at once: the test does not wait out the production backoff
        await engine.answerer.ask(str(root), "a first question")
        await until(lambda: team.figures.state == "up")
        await team_db.cluster.stop()
        for index in range(4):  # the fold, and its facts' push, happen while the store is down
            await engine.answerer.ask(str(root), f"question {index}")
        await until(lambda: team.queued >= 1 and team.figures.state == "down")
        await team_db.cluster.start()
        await until(lambda: team.queued == 0, timeout_s=30.0)
    assert FACT in await facts_in_store(team_db.url)


def test_the_queue_survives_a_restart_and_a_line_torn_by_a_kill(tmp_path: Path) -> None:
    queue = DiskQueue(tmp_path, max_items=3)
    queue.append([{"text": "one"}, {"text": "two"}])
    with (tmp_path / "team-queue.jsonl").open("ab") as torn:
        torn.write(b'{"text": "thr')  # a kill mid-append
    again = DiskQueue(tmp_path, max_items=3)
    assert again.head(10) == [{"text": "one"}, {"text": "two"}]
    again.append([{"text": "three"}, {"text": "four"}])  # past the cap: the oldest goes
    assert [i["text"] for i in DiskQueue(tmp_path, max_items=3).head(10)] == ["two", "three", "four"]
    again.remove_head(2)
    assert DiskQueue(tmp_path, max_items=3).head(10) == [{"text": "four"}]


def test_only_facts_learned_here_on_plain_files_and_without_credentials_leave() -> None:
    policy = TeamPolicy("postgresql://x", 1.0, 1, (), (".env", "secrets/"), "dev", "m1")
    digest = {"app.py": "a" * 64}
    assert policy.may_share(LedgerFact("app.py defines VERSION", digest))
    assert not policy.may_share(LedgerFact("app.py defines VERSION", digest, team="someone@m2"))  # not ours
    assert not policy.may_share(LedgerFact("app.py defines VERSION", digest, stale=True))
    assert not policy.may_share(LedgerFact("a general remark"))  # no grounds: it holds nowhere in particular
    assert not policy.may_share(LedgerFact("the key is in .env", {".env": "b" * 64}))
    assert not policy.may_share(LedgerFact("see secrets/prod.json for the key", digest))
    assert not policy.may_share(LedgerFact("app.py reads its key from .env.", digest))
    assert not policy.may_share(LedgerFact("app.py uses sk-abcdefghijklmnopqrstuvwx", digest))
    assert not policy.may_share(LedgerFact("app.py sets TOKEN = 'q8ZfK2mP9xLr4TnW7vB3cY6hJ1sD5gAe'", digest))
    long_name = "test_a_store_that_never_answers_holds_no_answer_and_its_queue_drains"
    assert policy.may_share(LedgerFact(f"app.py is tested by {long_name}", digest))  # an identifier, no secret
    assert not TeamPolicy("postgresql://x", 1.0, 1, ("github.com/org/other",), (), "dev", "m1").allows(
        "example.com/team/app"
    )


def test_a_fact_the_ledger_dropped_is_not_taken_back_from_the_team_for_the_same_bytes() -> None:
    from live_memory.memory.ledger import Ledger

    ledger = Ledger([LedgerFact("old claim about app.py", {"app.py": "a" * 64})])
    ledger.apply_summary("- 1", {"app.py": "a" * 64}, 10_000)
    assert ledger.facts == []
    pulled = [
        LedgerFact("old claim about app.py", {"app.py": "a" * 64}, team="x@m"),  # dropped here: stays out
        LedgerFact("old claim about app.py", {"app.py": "c" * 64}, team="x@m"),  # other bytes: another fact
        LedgerFact("newer", {"app.py": "a" * 64}, team="y@m"),
        LedgerFact("newer", {"app.py": "a" * 64}, team="z@m"),  # the same fact twice: once
    ]
    assert ledger.merge_team(pulled) == 2
    assert [(f.text, f.sources["app.py"][0]) for f in ledger.facts] == [
        ("old claim about app.py", "c"),
        ("newer", "a"),
    ]


@pytest.mark.parametrize(
    ("url", "identity"),
    [
        ("git@github.com:Org/App.git", "github.com/org/app"),
        ("https://user:token@github.com/org/app", "github.com/org/app"),
        ("ssh://git@github.com:22/org/app/", "github.com/org/app"),
        ("https://gitlab.example.com/group/sub/app.git", "gitlab.example.com/group/sub/app"),
        ("/srv/git/app.git", "app"),
        ("", None),
    ],
)
def test_a_repository_is_one_identity_however_its_remote_is_spelled(url: str, identity: str | None) -> None:
    assert normalize_remote(url) == identity


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, cwd=root, check=True, capture_output=True, text=True).stdout.strip()


async def test_a_repository_without_a_remote_is_named_by_its_root_commit(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    off_loop(git, root, "init", "-q")
    assert await repository_identity(root) is None  # no commit yet
    off_loop(git, root, "commit", "-q", "--allow-empty", "-m", "first")
    first = off_loop(git, root, "rev-parse", "HEAD")
    off_loop(git, root, "commit", "-q", "--allow-empty", "-m", "second")
    assert await repository_identity(root) == f"root:{first}"


def until_sync(client: httpx2.Client, condition: Callable[[], bool]) -> None:
    for _ in range(500):  # bounded polling of the server's own state, paced by its answers
        if condition():
            return
        client.get("/health")
    raise AssertionError("never reached")


def test_the_store_shows_in_health_stats_metrics_and_the_status_page_and_never_fails_health(
    tmp_path: Path, team_db: TeamDatabase, fake: FakeLLM
) -> None:
    settings = settings_for(fake.base_url, tmp_path / "data", team_store=team_db.url, team_timeout_s="0.5")
    with live_server(settings) as server, httpx2.Client(base_url=server.url) as client:
        until_sync(client, lambda: client.get("/stats").json()["server"]["team"]["state"] == "up")
        team = client.get("/stats").json()["server"]["team"]
        assert "live" in team["store"] and team_db.url.split(":")[2].split("@")[0] not in str(team)  # no password
        assert {"facts_pulled", "facts_pushed", "facts_queued", "latency_ms", "schema_version"} <= team.keys()
        assert (team["author"], team["row_security"], team["trusted_authors"]) == ("live", "bypassed", "all")
        assert (team["rows_rejected"], team["pull_errors"]) == (0, 0)
        assert (team["answers_pulled"], team["answers_pushed"], team["answers_reused"]) == (0, 0, 0)
        health = client.get("/health").json()
        assert health["team_store"] == "up"
        metrics = client.get("/metrics").text
        assert (
            "live_memory_team_store_up 1.0" in metrics and 'live_memory_team_answers_total{way="reused"} 0.0' in metrics
        )
        assert "live_memory_team_rows_rejected_total 0.0" in metrics and "live_memory_team_pull_errors_total" in metrics
        assert "Team store" in client.get("/").text
        team_db.cluster.stop_now()
        try:
            client.post("/notify", json={"cwd": str(checkout(tmp_path)), "events": []})  # a pull meets the outage
            until_sync(client, lambda: client.get("/stats").json()["server"]["team"]["state"] == "down")
            down = client.get("/health")
            assert down.status_code == 200 and down.json()["team_store"] == "down"  # reported, not failing
            assert "live_memory_team_store_up 0.0" in client.get("/metrics").text
        finally:
            team_db.cluster.ensure_running()


def test_doctor_checks_the_stores_connection_and_schema(tmp_path: Path, team_db: TeamDatabase) -> None:
    env = {"HOME": str(tmp_path), "LIVE_MEMORY_API_KEY": "x", "LIVE_MEMORY_TEAM_STORE": team_db.url}
    [fresh] = [c for c in run_doctor(env, round_trip=False) if c.name.startswith("team store")]
    assert fresh.ok and "no schema yet" in fresh.detail
    team_db.cluster.stop_now()
    try:
        [down] = [c for c in run_doctor(env, round_trip=False) if c.name.startswith("team store")]
    finally:
        team_db.cluster.ensure_running()
    assert not down.ok and "***" in down.detail and "LIVE_MEMORY_TEAM_STORE" in down.fix


async def test_a_store_that_never_answers_holds_no_answer(tmp_path: Path, team_db: TeamDatabase) -> None:
    """The store swallows every packet: questions are answered all the same (the first load waits for the team
    at most TEAM_LOAD_WAIT_S, beside the tree scan), and what they learn waits in the queue."""
    home = tmp_path / "dev"
    root = off_loop(checkout, home)
    async with TcpProxy("127.0.0.1", team_db.cluster.port) as proxy:
        proxy.black_hole()
        url = team_db.cluster.url(team_db.name, port=proxy.port)
        async with running(team_engine(home, learner(), url, team_timeout_s="30")) as engine:
            await learn(engine, root)
            team = engine.service.team
            assert team is not None
            assert team.figures.state == "connecting" and team.figures.pushed == 0  # it never answered
            await until(lambda: team.queued >= 1)


# --- answers, shared only when the user allows it (team_share_answers) ------------------------------------
QUESTION = "Where is VERSION defined?"


async def answers_in_store(url: str) -> list[TeamAnswer]:
    store = await TeamStore.connect(url, pool_max=1, timeout_s=5.0)
    try:
        await store.migrate()
        return (await store.pull_answers("example.com/team/app", limit=100, answer_max_chars=100_000)).rows
    finally:
        await store.aclose()


async def push_answer(url: str, question: str, sources: dict[str, str]) -> None:
    """An answer another server gave, as the store holds it."""
    store = await TeamStore.connect(url, pool_max=1, timeout_s=5.0)
    try:
        await store.migrate()
        await store.push_answers(
            [TeamAnswer("example.com/team/app", question, "elsewhere", sources, "m9", "x", 1.0, 1.0)]
        )
    finally:
        await store.aclose()


async def test_a_teammates_answer_on_the_same_bytes_answers_the_same_question_without_a_model_call(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    first_home, first_root, second_home, second_root = two_checkouts(tmp_path, "VERSION = 0  # not pulled yet\n")
    async with running(team_engine(first_home, learner(), team_db.url, team_share_answers="1")) as first:
        given = await first.answerer.ask(str(first_root), QUESTION)
        sync = first.service.team
        assert sync is not None
        await until(lambda: sync.figures.answers_pushed == 1 and sync.queued == 0)
    [stored] = await answers_in_store(team_db.url)
    assert (stored.question, stored.answer) == (QUESTION, given.answer)
    assert set(stored.sources) == {"app.py"}  # what the answer rests on: the file its model read
    # A row naming a file outside the checkout is refused as it arrives, whatever its bytes.
    outside = second_home / "src" / "outside.txt"
    off_loop(outside.write_text, "out\n")
    await push_answer(team_db.url, "what is outside?", {"../outside.txt": hashlib.sha256(b"out\n").hexdigest()})

    second_model = ScriptedProvider(*[text_response("my own answer")] * 3)
    async with running(team_engine(second_home, second_model, team_db.url, team_share_answers="1")) as second:
        await first_pull(second, second_root)
        # Other bytes here: the teammate's answer does not hold, until this checkout reaches its bytes.
        assert (await second.answerer.ask(str(second_root), QUESTION)).answer == "my own answer"
        off_loop((second_root / "app.py").write_text, APP)
        reused = await second.answerer.ask(str(second_root), "  where is version   DEFINED? ")
        assert len(second_model.requests) == 1  # no model call this time: the team paid for it once
        attribution, _, body = reused.answer.partition("\n\n")
        assert "A teammate's answer" in attribution and "written by live" in attribution and "app.py" in attribution
        assert body == "> " + given.answer.rstrip()  # their words, quoted
        assert (reused.cost_usd, reused.model) == (0.0, "team-answer")
        assert (await second.answerer.ask(str(second_root), "what is outside?")).answer == "my own answer"
        shown = team_stats(second.service)  # as /stats, /metrics and the status page show it
        assert (shown["answers_pulled"], shown["answers_pushed"], shown["answers_reused"]) == (1, 0, 1)
        assert shown["rows_rejected"] == 1  # the row naming a path outside the checkout, refused at the edge
        # The file changes here: the teammate's answer about its old bytes is not given again.
        off_loop((second_root / "app.py").write_text, "VERSION = 3\n")
        assert (await second.answerer.ask(str(second_root), QUESTION)).answer == "my own answer"
        assert len(second_model.requests) == 3


async def test_without_team_share_answers_no_question_or_answer_leaves_the_machine(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    first_home, first_root, second_home, second_root = two_checkouts(tmp_path)
    async with running(team_engine(first_home, learner(), team_db.url)) as first:
        await learn(first, first_root)  # four answers, and a fold whose facts are pushed after them
        team = first.service.team
        assert team is not None
        await until(lambda: team.figures.pushed >= 1 and team.queued == 0)
        assert team.figures.answers_pushed == 0
    assert FACT in await facts_in_store(team_db.url) and await answers_in_store(team_db.url) == []
    second_model = ScriptedProvider(text_response("my own answer"))
    async with running(team_engine(second_home, second_model, team_db.url, team_share_answers="1")) as second:
        await first_pull(second, second_root)
        assert (await second.answerer.ask(str(second_root), "question 0 about app.py")).answer == "my own answer"


def test_only_grounded_answers_without_secrets_or_credentials_leave_and_only_when_shared() -> None:
    policy = TeamPolicy("postgresql://x", 1.0, 1, (), (".env",), "dev", "m1", share_answers=True)
    digest = {"app.py": "a" * 64}
    assert policy.may_share_answer("where is VERSION?", "app.py:1", digest)
    assert not policy.may_share_answer("where is VERSION?", "app.py:1", {})  # holds nowhere in particular
    assert not policy.may_share_answer("what is in .env?", "nothing", digest)
    assert not policy.may_share_answer("the key?", "sk-abcdefghijklmnopqrstuvwx", digest)
    assert not policy.may_share_answer("where?", "here", {".env": "b" * 64})
    off = TeamPolicy("postgresql://x", 1.0, 1, (), (".env",), "dev", "m1")
    assert not off.may_share_answer("where is VERSION?", "app.py:1", digest)


async def test_a_queued_line_holding_a_credential_is_withheld_when_pushed(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    """A queue written under older rules (or by hand) is checked again on its way out: what holds a credential
    stays on this machine, the rest goes."""
    home = tmp_path / "dev"
    root = off_loop(checkout, home)
    line = {"repo": "example.com/team/app", "sources": {"app.py": "a" * 64}, "machine": "m", "user": "u"}
    texts = ("app.py reads postgresql://admin:Sup3rS3cret@db/prod", "serve() returns VERSION")
    lines = [line | {"text": text, "learned_at": 1.0e9} for text in texts]
    off_loop(DiskQueue(home / "data", 10).append, lines)
    async with running(team_engine(home, learner(), team_db.url)) as engine:
        await first_pull(engine, root)
        team = engine.service.team
        assert team is not None
        await until(lambda: team.figures.pushed + team.figures.withheld == 2)
        assert (team.figures.pushed, team.figures.withheld, team.queued) == (1, 1, 0)
    assert await facts_in_store(team_db.url) == ["serve() returns VERSION"]


async def test_a_teammates_answer_to_the_same_need_in_other_words_is_given_and_another_need_is_not(
    tmp_path: Path, team_db: TeamDatabase
) -> None:
    _, _, second_home, second_root = two_checkouts(tmp_path)
    grounds = {"app.py": hashlib.sha256(APP.encode()).hexdigest()}
    await push_answer(team_db.url, "Walk me through `app.py`.", grounds)
    second_model = ScriptedProvider(*[text_response("my own answer")] * 2)
    async with running(team_engine(second_home, second_model, team_db.url, team_share_answers="1")) as second:
        await first_pull(second, second_root)
        reused = await second.answerer.ask(str(second_root), "How is `app.py` organised, again?")
        assert (reused.model, len(second_model.requests)) == ("team-answer", 0)  # the same need, reworded
        review = await second.answerer.ask(str(second_root), "Review `app.py` for error handling.")
        assert review.answer == "my own answer"  # another need: the model answers
