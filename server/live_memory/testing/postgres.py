"""A throwaway PostgreSQL cluster for the team store's tests: Debian's own server binaries, a private data dir.

One cluster per test process (tests/conftest.py keeps the modules that use it on one xdist worker), started
on first use and stopped (immediate mode) with its directory removed at the end. The tests of a process take
turns on one database, emptied for each (`empty_database`), so no test sees another's rows.

The cluster listens on a Unix socket in its directory (the tests' superuser connects there without a
password) and on a free loopback TCP port, where only a role with a password may log in (SCRAM), so the
URLs the tests hand the store carry a real credential that must never reach a message.

initdb takes seconds (its bootstrap and post-bootstrap passes); its output is kept as a template in the
system's temporary directory, named after the server version and the options below, and each run copies it
(a fraction of a second). As root the server refuses to run: every server command then runs as the
`postgres` user, who owns the directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from live_memory.testing.ports import free_port

PG_ROOT = Path("/usr/lib/postgresql")
BINARIES = ("initdb", "pg_ctl", "postgres")
SERVER_USER = "postgres"  # as root, the server runs as this user (Debian's package creates it)
ROLE = "live"  # the role the store's URLs log in as, over TCP with a password
INITDB_OPTIONS = ("--auth-local=trust", "--auth-host=scram-sha-256", "-U", "postgres", "-E", "UTF8", "--no-sync")
# Speed over durability: the cluster is thrown away. (Commits still reach the OS at once: a stop in
# immediate mode, as the fault tests do, loses nothing.)
SERVER_OPTIONS = ("-c", "fsync=off", "-c", "full_page_writes=off")
COMMAND_TIMEOUT_S = 60.0
HBA = "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
MISSING = "PostgreSQL server binaries not found (Debian: apt-get install postgresql); team store tests skipped"


def find_bin_dir(root: Path = PG_ROOT) -> Path | None:
    """The newest installed version's bin/ holding initdb, pg_ctl and postgres; None when there is none."""
    if not root.is_dir():
        return None
    versions = [d for d in root.iterdir() if re.fullmatch(r"\d+(\.\d+)?", d.name)]
    for version in sorted(versions, key=lambda d: tuple(int(p) for p in d.name.split(".")), reverse=True):
        bin_dir = version / "bin"
        if all(os.access(bin_dir / name, os.X_OK) for name in BINARIES):
            return bin_dir
    return None


def unavailable_reason() -> str | None:
    """Why a cluster cannot be started here (shown as the skip reason), or None when it can."""
    if find_bin_dir() is None:
        return MISSING
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root without a '{SERVER_USER}' user to run PostgreSQL as; team store tests skipped"
        if shutil.which("runuser") is None:
            return "running as root without runuser to start PostgreSQL as another user; team store tests skipped"
    return None


def _clean_env() -> dict[str, str]:
    """The environment without libpq's variables (PGHOST, PGSSLMODE...), which would redirect our commands."""
    return {key: value for key, value in os.environ.items() if not key.startswith("PG")}


@dataclass
class PostgresCluster:
    """A running cluster: URLs for the store, fresh databases, and stop/start for fault tests."""

    bin_dir: Path
    base: Path
    port: int
    password: str
    running: bool = False

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base

    def url(self, database: str, *, port: int | None = None, password: str | None = None) -> str:
        """A postgresql:// URL for the password role (over TCP; `port` may point at a proxy instead)."""
        secret = self.password if password is None else password
        return f"postgresql://{ROLE}:{secret}@127.0.0.1:{port or self.port}/{database}"

    def admin_url(self, database: str) -> str:
        """A URL for the superuser, over the Unix socket (what an administrator's `team-setup` logs in as)."""
        return f"postgresql:///{database}?host={self.socket_dir}&port={self.port}&user=postgres"

    def role_url(self, database: str, role: str) -> str:
        """A URL for a teammate's role made by `team-setup` (its password: `member_password`)."""
        return f"postgresql://{role}:{self.member_password(role)}@127.0.0.1:{self.port}/{database}"

    def member_password(self, role: str) -> str:
        return f"{self.password}-{role}"

    def give_password(self, role: str) -> None:
        with self._admin() as admin:
            admin.execute(f"ALTER ROLE \"{role}\" PASSWORD '{self.member_password(role)}'".encode())

    # --- lifecycle -------------------------------------------------------------------------------

    @classmethod
    def launch(cls) -> PostgresCluster:
        bin_dir = find_bin_dir()
        if bin_dir is None:
            raise RuntimeError(MISSING)
        base = Path(tempfile.mkdtemp(prefix="lm-pg-"))
        cluster = cls(bin_dir, base, free_port(), "pw-" + secrets.token_hex(12))
        try:
            _give_to_server_user(base)
            _copy_tree(_template(bin_dir), cluster.data_dir)
            (cluster.data_dir / "pg_hba.conf").write_text(HBA)
            _give_to_server_user(cluster.data_dir / "pg_hba.conf")
            cluster._run(cluster._start_command())
            cluster.running = True
            with cluster._admin() as admin:
                admin.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{cluster.password}'".encode())
        except BaseException:
            cluster.destroy()
            raise
        return cluster

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self._run(self._stop_command())
        self.running = False
        shutil.rmtree(self.base, ignore_errors=True)

    async def stop(self) -> None:
        """Kill the server at once (as a crash would): open connections break, new ones are refused."""
        await self._run_async(self._stop_command())
        self.running = False

    async def start(self) -> None:
        """Start it again on the same port (it recovers its data first); returns once it accepts connections."""
        await self._run_async(self._start_command())
        self.running = True

    def stop_now(self) -> None:
        """`stop`, for a test that runs no event loop."""
        self._run(self._stop_command())
        self.running = False

    def ensure_running(self) -> None:
        if not self.running:
            self._run(self._start_command())
            self.running = True

    # --- databases -------------------------------------------------------------------------------

    def create_database(self) -> str:
        name = "t_" + secrets.token_hex(6)
        with self._admin() as admin:
            # FILE_COPY (PostgreSQL 15+): twice as fast as the default WAL_LOG for a small database on a
            # cluster without fsync.
            row = admin.execute(b"SHOW server_version_num").fetchone()
            strategy = " STRATEGY FILE_COPY" if row and int(str(row[0])) >= 150000 else ""
            admin.execute(f"CREATE DATABASE {name} OWNER {ROLE}{strategy}".encode())
        return name

    def empty_database(self, database: str, schema: str) -> None:
        """`database` as a fresh one would be for a program that keeps everything in `schema`: no connection to
        it but this one, and no such schema (milliseconds, where CREATE DATABASE takes ~0.2 s)."""
        with self._admin(database) as admin:
            admin.execute(
                b"SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                b" WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())

    def admin_execute(self, database: str, statement: str) -> list[tuple[object, ...]]:
        """Run one statement as the superuser in `database` (to set up or inspect what a test needs)."""
        with self._admin(database) as admin:
            cursor = admin.execute(statement.encode())
            return list(cursor.fetchall()) if cursor.description else []

    def _admin(self, database: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=str(self.socket_dir), port=self.port, user="postgres", dbname=database, autocommit=True
        )

    # --- commands --------------------------------------------------------------------------------

    def _start_command(self) -> list[str]:
        options = " ".join(("-k", str(self.socket_dir), "-h", "127.0.0.1", "-p", str(self.port), *SERVER_OPTIONS))
        log = str(self.base / "server.log")
        return [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", log, "-w", "-o", options, "start"]

    def _stop_command(self) -> list[str]:
        return [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"]

    def _run(self, command: Sequence[str]) -> None:
        _run_as_server_user(command)

    async def _run_async(self, command: Sequence[str]) -> None:
        process = await asyncio.create_subprocess_exec(
            *_as_server_user(command),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=_clean_env(),
        )
        try:
            async with asyncio.timeout(COMMAND_TIMEOUT_S):
                output, _ = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        if process.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({process.returncode}): {output.decode(errors='replace')}")


def _as_server_user(command: Sequence[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", SERVER_USER, "--", *command]
    return list(command)


def _run_as_server_user(command: Sequence[str]) -> None:
    done = subprocess.run(
        _as_server_user(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_clean_env(),
        timeout=COMMAND_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stdout.decode(errors='replace')}")


def _give_to_server_user(path: Path) -> None:
    if os.geteuid() == 0:
        user = pwd.getpwnam(SERVER_USER)
        os.chown(path, user.pw_uid, user.pw_gid)


def _copy_tree(source: Path, target: Path) -> None:
    """A copy keeping owners and modes (the server refuses a data dir others may read)."""
    subprocess.run(["cp", "-a", str(source), str(target)], check=True, timeout=COMMAND_TIMEOUT_S)


def _template(bin_dir: Path) -> Path:
    """A freshly initialized data dir for this server version and these options, built once per machine."""
    version = subprocess.run(
        [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, check=True, timeout=10
    ).stdout.strip()
    key = hashlib.sha256(repr((version, INITDB_OPTIONS, os.geteuid())).encode()).hexdigest()[:12]
    template = Path(tempfile.gettempdir()) / f"live-memory-pg-template-{key}"
    if (template / "PG_VERSION").is_file():
        return template
    build = Path(tempfile.mkdtemp(prefix="lm-pg-init-"))
    try:
        _give_to_server_user(build)
        _run_as_server_user([str(bin_dir / "initdb"), "-D", str(build / "data"), *INITDB_OPTIONS])
        with contextlib.suppress(OSError):  # another process built it meanwhile: use theirs
            (build / "data").rename(template)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return template
