"""Seals every test: no provider or Claude variables leak in, HOME and the data dir are temporary,
and nothing may talk to a host that is not loopback."""

from __future__ import annotations

import asyncio
import atexit
import gc
import os
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from blockbuster import BlockBuster, blockbuster_ctx

from live_memory.team.sql import SCHEMA as TEAM_SCHEMA
from live_memory.testing.llm_server import FakeLLM
from live_memory.testing.postgres import PostgresCluster, unavailable_reason

# Bytecode caches are kept even where PYTHONDONTWRITEBYTECODE is set: without them every xdist worker rewrites
# the asserts of every test module again (about 3 s of CPU per worker), and every `live-memory` subprocess
# compiles the package again. (Caches go to __pycache__ beside the sources, ignored by git.)
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# matplotlib (the benchmark report's charts) caches its list of the installed fonts, half a second to build, under
# HOME, which is new for every test: it is kept with the benchmarks' other caches instead (ignored by git).
os.environ.setdefault("MPLCONFIGDIR", str(Path(__file__).resolve().parents[1] / "bench" / ".cache" / "matplotlib"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (the provider SDKs, the MCP SDK, every test module: some 350,000 objects)
    stays for the whole run: out of the collector's sight, every full collection a test triggers skips it."""
    gc.collect()
    gc.freeze()


# At exit, the collector's last passes over the whole heap (most of a second of CPU per worker) find nothing that
# needs finalizing: skip them.
atexit.register(gc.freeze)

# Modules run whole by one worker under pytest-xdist, by group: their tests share a module-scoped fixture (built
# once per worker that runs any of them) or a one-time export into bench/.cache; the property-based ones share
# Hypothesis's first-use scan of the project's sources for constants (two seconds of CPU per process when the
# checkout is fresh, cached in .hypothesis/ after).
ONE_WORKER_MODULES = {
    "tests/test_bench_session_bill.py": "session-bill",
    # The same repository's task sequences (bench/bill_workload.py caches them per process).
    "tests/test_bench_content.py": "session-bill",
    "tests/test_bench_reword.py": "session-bill",
    # One real session of each agent's CLI (tests/agents/session.py), shared by the module's tests.
    "tests/agents/test_codex.py": "codex",
    "tests/agents/test_gemini.py": "gemini",
    "tests/agents/test_opencode.py": "opencode",
    "tests/http/test_security.py": "hypothesis",
    # Each worker has its own PostgreSQL cluster (live_memory/testing/postgres.py, from one initdb template per
    # machine): the store's own tests share one, started once.
    "tests/team/test_store.py": "postgres",
    # One recorded Claude Code session, which every test of the module reads.
    "tests/plugin/test_claude_code_e2e.py": "claude-e2e",
    "tests/workspaces/test_workspace.py": "hypothesis",
    # One wheel built and installed in a fresh venv, which every test of the module runs.
    "tests/test_wheel.py": "wheel",
}

_SEALED_PREFIXES = ("LIVE_MEMORY_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "DEEPSEEK_", "OPENROUTER_")
_LOOPBACK = ("127.", "::1", "localhost")


def seal_environment(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """No provider or Claude variable from outside; HOME and the data dir under `home`."""
    for name in list(os.environ):
        if name.startswith(_SEALED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("LIVE_MEMORY_DATA_DIR", str(home / "live-memory-data"))
    return home


@pytest.fixture(autouse=True)
def sealed_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    return seal_environment(monkeypatch, tmp_path_factory.mktemp("home"))


def _share_the_default_tls_context() -> None:
    """Every httpx2 client (ours, the SDKs', Starlette's TestClient) builds a TLS context and loads the CA store
    into it (~40 ms of CPU), even for the plain-http loopback servers the tests talk to, and the tests build
    hundreds of clients. In the test process, clients that ask for the default verification share one context
    (built once, same CA store). The transport module looks the function up at call time, so it is swapped
    there (private API: a new httpx2 that moves it fails here, loudly, at collection)."""
    import httpx2._transports.default as transports
    from httpx2._config import create_ssl_context as build

    cache: dict[tuple[object, ...], Any] = {}

    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert is not None:
            return build(verify=verify, cert=cert, trust_env=trust_env)
        key = (trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in cache:
            cache[key] = build(verify=verify, cert=cert, trust_env=trust_env)
        return cache[key]

    vars(transports)["create_ssl_context"] = shared


_share_the_default_tls_context()


def _import_what_the_mcp_sdk_imports_late() -> None:
    """The MCP SDK sets up its logging (rich, when installed) on the first MCPServer(). The server builds its
    one before the event loop starts; tests may build one inside a running loop, where that first import's
    file reads would trip the blocking-call guard below. So it is imported once here, at collection."""
    try:
        import rich.logging  # noqa: F401 - loaded for the SDK, before any loop runs
    except ImportError:  # without rich the SDK logs through the standard library: nothing to import
        return


_import_what_the_mcp_sdk_imports_late()


class _Scheduling:
    """xdist's `load` distribution, except that each group of ONE_WORKER_MODULES goes to one worker whole.
    (Its own `loadgroup` mode cannot do this with pytest 9: it renames items through an attribute pytest 9
    no longer reads.)"""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "load":
            return None  # a --dist given on the command line wins
        from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

        class ModuleOrTest(LoadScopeScheduling):  # type: ignore[misc]
            def _split_scope(self, nodeid: str) -> str:
                return ONE_WORKER_MODULES.get(nodeid.split("::", 1)[0], nodeid)

            def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
                """As xdist's, but a finished unit is forgotten: xdist counts a node's pending tests over
                every unit it was ever given, on every report (quadratic in the number of tests)."""
                nodeid = self.registered_collections[node][item_index]
                held = self.assigned_work[node]
                unit = held[self._split_scope(nodeid)]
                unit[nodeid] = True
                if all(unit.values()):
                    del held[self._split_scope(nodeid)]
                self._reschedule(node)

        return ModuleOrTest(config, log)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker per CPU this process may use. Each worker costs seconds of CPU to start (it imports
    and collects everything); on 2 CPUs a third worker cost more than its overlap with waiting tests saved.
    (xdist itself would count physical cores when psutil is installed, one on a 2-vCPU machine.)"""
    if hasattr(os, "sched_getaffinity"):  # Linux: the CPUs this process may run on
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


_CLEARING: list[threading.Thread] = []


def _clear_earlier_runs_meanwhile(config: pytest.Config) -> None:
    """pytest removes the temporary dirs of runs past its retention count when a run ends, after the last test:
    some 20,000 files of this suite's, seconds of waiting. This removes the same dirs while the tests run, with
    pytest's own cleanup (which respects the lock of a run still using its dir); at the end it waits for that,
    then finds nothing left to do. (Private API, as in _share_the_default_tls_context: a pytest that moves it
    fails here.)"""
    from _pytest.pathlib import LOCK_TIMEOUT, cleanup_numbered_dir

    factory = config._tmp_path_factory  # type: ignore[attr-defined]
    if factory._given_basetemp is not None:  # --basetemp: one dir, which pytest empties at the start
        return
    current = factory.getbasetemp()
    keep = int(config.getini("tmp_path_retention_count"))
    dead_before = current.stat().st_mtime - LOCK_TIMEOUT
    cleanup = threading.Thread(
        target=cleanup_numbered_dir, args=(current.parent, "pytest-", keep, dead_before), daemon=True
    )
    cleanup.start()
    _CLEARING.append(cleanup)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):  # the hook exists only with pytest-xdist installed
        config.pluginmanager.register(_Scheduling(), "live-memory-scheduling")


def _rewrite_test_modules_backwards(config: pytest.Config) -> None:
    """On a fresh checkout every worker rewrites the asserts of every test module as it collects them (some
    four seconds of CPU each, the same work twice). The second worker rewrites them ahead, last file first,
    into pytest's own cache of rewritten modules, while the first collects from the first file on: they meet
    in the middle, and each finds the other's half cached. Nothing is imported here; pytest's cache check
    (source size and mtime) decides as it always does. (Private API, as in _clear_earlier_runs_meanwhile; a
    pytest that moves it just rewrites everything itself, as before.)"""
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
    except ImportError:
        return
    if sys.dont_write_bytecode or config.getoption("assertmode") != "rewrite":
        return
    state = config.stash[assertstate_key]
    here = Path(__file__).parent
    modules = sorted([*here.rglob("test_*.py"), *here.rglob("conftest.py")], reverse=True)
    for source in modules:
        cache = get_cache_dir(source)
        pyc = cache / (source.name[:-3] + PYC_TAIL)
        if _read_pyc(source, pyc) is not None:
            continue
        try:
            cache.mkdir(exist_ok=True)
            source_hash, code = _rewrite_test(source, config)
        except (OSError, SyntaxError, ValueError):
            continue  # pytest meets it again when it collects the module, and reports it there as it should
        _write_pyc(state, code, source_hash, pyc)


def pytest_sessionstart(session: pytest.Session) -> None:
    worker = getattr(session.config, "workerinput", None)
    if worker is None:  # the controller (or a run without workers), not a worker
        _clear_earlier_runs_meanwhile(session.config)
    elif worker.get("workerid") == "gw1":
        _rewrite_test_modules_backwards(session.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    for cleanup in _CLEARING:  # a short run ends before the cleanup does: it leaves no half-removed dir behind
        cleanup.join()


def _is_loopback(address: object) -> bool:
    if isinstance(address, str):  # AF_UNIX paths are local by definition
        return True
    if not isinstance(address, tuple) or not address:
        return False
    host = str(address[0])
    return host.startswith(_LOOPBACK) or host in ("0.0.0.0", "")


def refuse_connections_off_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any connection to a non-loopback address: tests never touch the network."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: object) -> None:
        if not _is_loopback(address):
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {address!r}")
        real_connect(self, address)  # type: ignore[arg-type]

    def guarded_connect_ex(self: socket.socket, address: object) -> int:
        if not _is_loopback(address):
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {address!r}")
        return real_connect_ex(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    refuse_connections_off_loopback(monkeypatch)
    yield


@pytest.fixture(autouse=True)
def no_blocking_calls_on_the_event_loop() -> Iterator[BlockBuster]:
    """Fail the test if the service's code makes a blocking call (file I/O, sleep, a lock wait, a
    blocking socket) on a running event loop: that would stall every other question meanwhile. The testing aids
    (a fake provider, a server in a thread) are not the service: they may block."""
    with blockbuster_ctx("live_memory", excluded_modules=["live_memory.testing"]) as blockbuster:
        yield blockbuster


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    """The fake provider on a loopback port (Anthropic caching rules, small cache minimum)."""
    with FakeLLM(min_cacheable_tokens=64) as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL cluster for this test process, started on first use; skips without one."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    cluster = PostgresCluster.launch()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def team_database(postgres: PostgresCluster) -> str:
    """The database this process's team store tests take turns on (see team_db)."""
    return postgres.create_database()


@dataclass(frozen=True)
class TeamDatabase:
    """The session's team database, as a store that never used it finds it, and a URL (with a password) to it."""

    cluster: PostgresCluster
    name: str
    url: str


@pytest.fixture
def team_db(postgres: PostgresCluster, team_database: str) -> Iterator[TeamDatabase]:
    postgres.ensure_running()  # a failed test may have left it stopped
    postgres.empty_database(team_database, TEAM_SCHEMA)
    yield TeamDatabase(postgres, team_database, postgres.url(team_database))
    postgres.ensure_running()


@dataclass(frozen=True)
class TeamRoles:
    """The team database of this test process as `team-setup` leaves it: three teammates, each with a URL."""

    db: TeamDatabase
    urls: dict[str, str]  # role -> URL


TEAMMATES = ("ana", "ben", "mallory")


@pytest.fixture
async def team_roles(team_db: TeamDatabase) -> TeamRoles:
    """The team database as its administrator sets it up: a role per teammate (ana, ben, mallory), authors
    proven by row-level security."""
    from live_memory.team.admin import set_up

    await set_up(team_db.cluster.admin_url(team_db.name), TEAMMATES)
    for role in TEAMMATES:
        await asyncio.to_thread(team_db.cluster.give_password, role)
    return TeamRoles(team_db, {role: team_db.cluster.role_url(team_db.name, role) for role in TEAMMATES})
