"""A private PostgreSQL 16 server with pgvector for tests, and hot-standby replicas::

    from memledger.testing.postgres import postgres_server

    with postgres_server() as server:
        url = server.create_database()  # "postgresql://postgres@127.0.0.1:PORT/t_..."
        with server.replica() as replica:
            replica.pause_replay()
            ...

Runs the PostgreSQL binaries of the ``pgserver`` package (``pip install
'memledger[pgserver]'``) directly: ``initdb`` into a fresh temporary folder (trust
authentication, user ``postgres``, UTF-8, C locale), ``pg_ctl start`` on a free
loopback port with durability relaxed for speed (no fsync), streaming replication
enabled, and waits until the server answers as the one it started (its
``data_directory`` is that folder). On exit the server is stopped (fast shutdown, then
``SIGKILL`` if it hangs) and the folder deleted. ``port`` asks for a given port.

:meth:`PostgresServer.replica` takes a ``pg_basebackup`` of the running server and
starts it as a hot standby on another free port; :class:`Replica` pauses and resumes
its WAL replay, to make replication lag on demand. The copy's time limit grows with
the server's data (120 s plus a second per 2 MB), and a copy that copies nothing for
60 s fails sooner; either error names the copy's size, how long it ran and how much it
copied. Tests that take replicas do best on a server of their own, which holds only
what they write.

PostgreSQL refuses to run as root. Under root the binaries run as an unprivileged
system user: ``pgserver`` if it exists (the ``pgserver`` package's own), otherwise
``memledger-pg``, created with ``useradd --system`` when missing. The temporary
folders are then made under ``/tmp`` and handed to that user.

Talking to the server (``create_database``, ``execute``, the replica controls) needs
psycopg 3 (``pip install 'memledger[postgres]'``). In a pytest fixture::

    @pytest.fixture(scope="module")
    def postgres() -> Iterator[PostgresServer]:
        with postgres_server() as server:
            yield server
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memledger.testing._watched import WatchError, megabytes, run_watched
from memledger.testing.redis import free_port

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresServer", "PostgresServerError", "Replica", "free_port", "postgres_server"]

_ATTEMPTS = 5
"""Tries on a free port (another process may take it between the check and the bind)."""

_SYSTEM_USERS = ("pgserver", "memledger-pg")
"""Unprivileged users to run as under root: the first that exists, else the last, created."""

_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "max_connections": "200",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "replica",
    "max_wal_senders": "10",
    "hot_standby": "on",
}
"""Server settings, passed on the command line (so a replica's copied files keep none)."""

_DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
"""PostgreSQL's defaults, for a server that measures what a real one costs."""

_STALL = 60.0
"""Seconds a replica's base backup may copy nothing (its fast checkpoint included)."""

_COPY_TIME = 120.0
"""Seconds a replica may take to copy and start, on top of :data:`_COPY_RATE`'s share."""

_COPY_RATE = 2 * 1_048_576
"""Bytes per second a replica's base backup is granted of the primary's data: slow
enough for a machine under load, so the limit grows with what earlier tests wrote."""

_COPIES = Path("/tmp")
"""Where copies of the binaries go when the server's user cannot reach the originals."""

_DATABASE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""Database names we create or connect to: plain identifiers within NAMEDATALEN."""


class PostgresServerError(RuntimeError):
    """``pgserver`` (or psycopg) is missing, or a server or replica did not start."""


@dataclass(frozen=True)
class _Runner:
    """Runs the PostgreSQL binaries, as ``user`` when set (we are root), else as ourselves."""

    bin: Path
    user: str | None

    def _options(self) -> dict[str, Any]:
        """How a binary is started: no ``PG*`` variables, from ``/``, as ``user`` if set."""
        env = {name: value for name, value in os.environ.items() if not name.startswith("PG")}
        options: dict[str, Any] = {"cwd": "/", "env": env}
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            options.update(user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
            env["HOME"] = "/"
        return options

    def run(self, tool: str, *args: str, timeout: float) -> None:
        """Run ``tool``; a failure or timeout raises :class:`PostgresServerError`."""
        try:
            done = subprocess.run(
                [str(self.bin / tool), *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=max(timeout, 1.0),
                check=False,
                **self._options(),
            )
        except subprocess.TimeoutExpired as exc:
            raise PostgresServerError(f"{tool} took longer than {exc.timeout:.0f} s") from exc
        if done.returncode != 0:
            told = (done.stderr or done.stdout).strip()
            raise PostgresServerError(f"{tool} failed (exit {done.returncode}): {told}")

    def copy(self, tool: str, *args: str, into: Path, size: int, limit: float) -> None:
        """Run ``tool``, which copies about ``size`` bytes into the folder ``into``, for
        as long as that folder grows (up to ``limit`` seconds); a failure, a stall of
        :data:`_STALL` seconds or the limit raises :class:`PostgresServerError`."""
        try:
            code, told = run_watched(
                [str(self.bin / tool), *args],
                progress=lambda: _folder_size(into),
                stall=_STALL,
                limit=max(limit, 1.0),
                **self._options(),
            )
        except WatchError as exc:
            raise PostgresServerError(f"{tool} of about {megabytes(size)} {exc}") from exc
        if code != 0:
            raise PostgresServerError(f"{tool} failed (exit {code}): {told}")

    def own(self, path: Path) -> None:
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(path, entry.pw_uid, entry.pw_gid)


def _binaries() -> Path:
    # Found, not imported: importing pgserver sets up its own server machinery.
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresServerError(
            "pgserver is not installed, and the PostgreSQL tests start their own server "
            "from its binaries: pip install 'memledger[pgserver]'"
        )
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (found / "pg_ctl").is_file():
        raise PostgresServerError(f"pgserver has no PostgreSQL binaries in {str(found)!r}")
    return found


def _system_user() -> str:
    for name in _SYSTEM_USERS:
        with suppress(KeyError):
            return pwd.getpwnam(name).pw_name
    name = _SYSTEM_USERS[-1]
    command = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PostgresServerError(f"could not create the system user {name!r}: {exc}") from exc
    try:  # another process may have created it meanwhile: then useradd failed, but it exists
        return pwd.getpwnam(name).pw_name
    except KeyError:
        told = done.stderr.strip()
        raise PostgresServerError(f"could not create the system user {name!r}: {told}") from None


def _runner() -> _Runner:
    if os.geteuid() != 0:
        return _Runner(_binaries(), None)
    runner = _Runner(_binaries(), _system_user())
    try:
        runner.run("postgres", "--version", timeout=30)
    except (PostgresServerError, PermissionError):
        # The binaries sit where the server's user cannot reach them (a checkout under
        # /root, mode 0700): run a copy under /tmp instead.
        return _Runner(_reachable_copy(runner.bin.parent) / "bin", runner.user)
    return runner


def _reachable_copy(install: Path) -> Path:
    """A copy of pgserver's ``pginstall`` folder that every user can read, made once per
    version (a copy in place is reused; a new one is moved in whole). The binaries find
    their libraries at ``$ORIGIN/../../../pgserver.libs``: the copy keeps that layout."""
    version = (install / "bin" / "postgres").stat()
    target = _COPIES / f"memledger-pginstall-{version.st_size}-{int(version.st_mtime)}"
    binaries = target / "pgserver" / "pginstall"
    if (binaries / "bin" / "postgres").is_file():
        return binaries
    partial = Path(tempfile.mkdtemp(prefix="memledger-pginstall-", dir=_COPIES))
    try:
        shutil.copytree(install, partial / "copy" / "pgserver" / "pginstall", symlinks=True)
        libraries = install.parent.parent / "pgserver.libs"
        if libraries.is_dir():
            shutil.copytree(libraries, partial / "copy" / "pgserver.libs", symlinks=True)
        for root, folders, _ in os.walk(partial):
            for name in [".", *folders]:
                os.chmod(Path(root) / name, 0o755)
        try:
            (partial / "copy").rename(target)
        except OSError:  # another process moved its copy in first
            if not (binaries / "bin" / "postgres").is_file():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return binaries


@contextmanager
def _scratch(runner: _Runner, prefix: str) -> Iterator[Path]:
    """A temporary folder (with ``run/`` for the socket) owned by whoever runs the server."""
    # Under root, /tmp rather than $TMPDIR: the server's user must be able to reach it.
    top = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp" if runner.user else None))
    try:
        (top / "run").mkdir()
        runner.own(top)
        runner.own(top / "run")
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _folder_size(folder: Path) -> int:
    """Bytes in the files under ``folder`` (0 while it does not exist)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with suppress(OSError):  # a file may go between the listing and the look
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _tail(log: Path, lines: int = 15) -> str:
    if not log.exists():
        return "(no server log)"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _connect(url: str, *, timeout: float = 5.0) -> psycopg.Connection[tuple[Any, ...]]:
    try:
        import psycopg
    except ImportError as exc:
        raise PostgresServerError(
            "psycopg is not installed: pip install 'memledger[postgres]'"
        ) from exc
    return psycopg.connect(url, autocommit=True, connect_timeout=max(1, round(timeout)))


def _scalar(connection: psycopg.Connection[tuple[Any, ...]], sql: str) -> object:
    row = connection.execute(sql).fetchone()
    return None if row is None else row[0]


def _url(port: int, database: str = "postgres") -> str:
    if not isinstance(database, str) or not _DATABASE_NAME.fullmatch(database):
        raise ValueError(
            f"database name {database!r} is not a lower-case identifier of at most "
            "63 characters ([a-z_][a-z0-9_]*)"
        )
    return f"postgresql://postgres@127.0.0.1:{port}/{database}"


def _answers(port: int, data: Path, *, standby: bool) -> bool:
    """Whether the server on ``port`` is ours (its data folder) and in the expected role."""
    import psycopg

    try:
        with _connect(_url(port), timeout=1) as connection:
            row = connection.execute(
                "SELECT current_setting('data_directory'), pg_is_in_recovery()"
            ).fetchone()
    except psycopg.Error:
        return False
    return row is not None and Path(row[0]).resolve() == data.resolve() and row[1] is standby


def _postmaster_pid(data: Path) -> int | None:
    try:
        first = (data / "postmaster.pid").read_text().splitlines()[0]
        pid = int(first)
    except (OSError, IndexError, ValueError):
        return None
    try:  # a stale file may name a recycled pid: kill only a postgres process
        if b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
    except FileNotFoundError:
        return None if Path("/proc/self").exists() else pid
    return pid


def _stop(runner: _Runner, data: Path) -> None:
    """Stop the server on ``data`` if one runs: fast shutdown, else ``SIGKILL``."""
    if not (data / "postmaster.pid").exists():
        return
    try:
        runner.run("pg_ctl", "stop", "-D", str(data), "-m", "fast", "-w", "-t", "10", timeout=15)
        return
    except PostgresServerError:
        pid = _postmaster_pid(data)
    if pid is None:
        return
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)


def _start(
    runner: _Runner, top: Path, port: int, deadline: float, *, standby: bool, durable: bool
) -> None:
    """``pg_ctl start`` the server in ``top/data`` on ``port``; on failure, nothing runs."""
    data, log = top / "data", top / "server.log"
    settings = {**_SETTINGS, "port": str(port), "unix_socket_directories": str(top / "run")}
    if durable:
        settings.update(_DURABLE)
    options = " ".join(f"-c {name}={shlex.quote(value)}" for name, value in settings.items())
    seconds = max(1, round(deadline - time.monotonic()))
    try:
        runner.run(
            "pg_ctl", "start", "-D", str(data), "-l", str(log), "-w", "-t", str(seconds),
            "-o", options, timeout=seconds + 5,
        )  # fmt: skip
        while time.monotonic() < deadline:
            if _answers(port, data, standby=standby):
                return
            time.sleep(0.05)
        told = "it did not answer in time"
    except PostgresServerError as exc:
        told = str(exc)
    _stop(runner, data)
    role = "replica" if standby else "server"
    raise PostgresServerError(
        f"PostgreSQL {role} did not start on 127.0.0.1:{port}: {told}\n{_tail(log)}"
    )


def _launch(
    runner: _Runner,
    top: Path,
    port: int | None,
    deadline: float,
    *,
    standby: bool,
    durable: bool = False,
) -> int:
    """Start the server in ``top/data`` on ``port`` or a free one; returns the port."""
    for attempt in range(1 if port is not None else _ATTEMPTS):
        chosen = port if port is not None else free_port()
        try:
            _start(runner, top, chosen, deadline, standby=standby, durable=durable)
            break
        except PostgresServerError:
            if port is not None or attempt == _ATTEMPTS - 1 or time.monotonic() >= deadline:
                raise
    return chosen


@dataclass(frozen=True, kw_only=True)
class _Instance:
    port: int
    folder: Path
    """The temporary folder holding the data folder, log and socket; deleted on exit."""
    _runner: _Runner = field(repr=False, compare=False)

    def url(self, database: str = "postgres") -> str:
        """``postgresql://postgres@127.0.0.1:PORT/DATABASE``; a bad name raises ValueError."""
        return _url(self.port, database)

    def execute(
        self, sql: str, params: Sequence[object] = (), *, database: str = "postgres"
    ) -> list[tuple[Any, ...]]:
        """Run one statement in autocommit; returns its rows (none for a command)."""
        with _connect(self.url(database)) as connection:
            cursor = connection.execute(sql, params or None)
            return cursor.fetchall() if cursor.description is not None else []


class PostgresServer(_Instance):
    """A running private server: superuser ``postgres``, trust authentication."""

    def create_database(self, name: str | None = None) -> str:
        """Create a database (by default ``t_<random hex>``) and return its URL."""
        chosen = name if name is not None else f"t_{secrets.token_hex(8)}"
        url = self.url(chosen)  # validates the name, so quoting it below is safe
        self.execute(f'CREATE DATABASE "{chosen}"')
        return url

    def size(self) -> int:
        """Bytes the server's databases hold (what a base backup copies, WAL aside)."""
        ((total,),) = self.execute("SELECT sum(pg_database_size(oid))::bigint FROM pg_database")
        return int(total)

    @contextmanager
    def replica(self, *, timeout: float | None = None) -> Iterator[Replica]:
        """A hot standby streaming from this server, for the duration of the block.

        ``timeout`` bounds the copy and the start together: by default 120 s plus a
        second for every 2 MB the server holds. The copy (``pg_basebackup``) runs on
        while it copies, and fails sooner once it has copied nothing for 60 s."""
        size = self.size()
        limit = timeout if timeout is not None else _COPY_TIME + size / _COPY_RATE
        deadline = time.monotonic() + limit
        with _scratch(self._runner, "memledger-pg-replica-") as top:
            self._runner.copy(
                "pg_basebackup", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                "-D", str(top / "data"), "-R", "-X", "stream", "--checkpoint=fast",
                "--no-sync", "--no-password",
                into=top / "data", size=size, limit=deadline - time.monotonic(),
            )  # fmt: skip
            port = _launch(self._runner, top, None, deadline, standby=True)
            try:
                yield Replica(port=port, folder=top, _runner=self._runner)
            finally:
                _stop(self._runner, top / "data")


class Replica(_Instance):
    """A running hot standby: answers reads, refuses writes, replays the primary's WAL."""

    def pause_replay(self, *, timeout: float = 10.0) -> None:
        """Stop applying WAL (it is still received) and wait until replay has paused."""
        deadline = time.monotonic() + timeout
        with _connect(self.url()) as connection:
            connection.execute("SELECT pg_wal_replay_pause()")
            # "pause requested" until the startup process stops between two records
            state = _scalar(connection, "SELECT pg_get_wal_replay_pause_state()")
            while state != "paused":
                if time.monotonic() >= deadline:
                    raise PostgresServerError(f"replay did not pause within {timeout} s: {state}")
                time.sleep(0.01)
                state = _scalar(connection, "SELECT pg_get_wal_replay_pause_state()")

    def resume_replay(self) -> None:
        """Apply WAL again, catching up with everything received meanwhile."""
        self.execute("SELECT pg_wal_replay_resume()")

    def replay_lsn(self) -> str:
        """The last WAL position replayed, as PostgreSQL writes it (``"0/3000148"``)."""
        with _connect(self.url()) as connection:
            return str(_scalar(connection, "SELECT pg_last_wal_replay_lsn()::text"))


@contextmanager
def postgres_server(
    *, port: int | None = None, timeout: float = 30.0, durable: bool = False
) -> Iterator[PostgresServer]:
    """Run a private PostgreSQL server for the duration of the block. ``durable=True``
    keeps PostgreSQL's own durability (fsync, synchronous commit, full page writes) on,
    for benchmarks; tests run without it."""
    runner = _runner()
    deadline = time.monotonic() + timeout
    with _scratch(runner, "memledger-pg-") as top:
        runner.run(
            "initdb", "-D", str(top / "data"), "--auth=trust", "--encoding=UTF8",
            "--locale=C", "-U", "postgres", "--no-sync", timeout=deadline - time.monotonic(),
        )  # fmt: skip
        chosen = _launch(runner, top, port, deadline, standby=False, durable=durable)
        try:
            yield PostgresServer(port=chosen, folder=top, _runner=runner)
        finally:
            _stop(runner, top / "data")
