"""The private PostgreSQL server for tests (``memledger.testing.postgres``): a real
PostgreSQL 16 from the ``pgserver`` binaries, with pgvector, and real hot-standby
replicas whose replay we pause to make replication lag on demand."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from memledger.testing import postgres as postgres_module
from memledger.testing.postgres import (
    PostgresServer,
    PostgresServerError,
    Replica,
    free_port,
    postgres_server,
)


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def replica(pg: PostgresServer) -> Iterator[Replica]:
    with pg.replica() as running:
        yield running


def _eventually(check: Callable[[], bool], *, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def _database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_server_answers_and_names_its_url(pg: PostgresServer) -> None:
    assert pg.execute("SELECT 1") == [(1,)]
    assert pg.url() == f"postgresql://postgres@127.0.0.1:{pg.port}/postgres"
    with psycopg.connect(pg.url("template1")) as connection:
        assert connection.execute("SELECT current_database(), current_user").fetchone() == (
            "template1",
            "postgres",
        )


def test_server_runs_as_an_unprivileged_user(pg: PostgresServer) -> None:
    pid = int((pg.folder / "data" / "postmaster.pid").read_text().splitlines()[0])
    owner = Path(f"/proc/{pid}").stat().st_uid
    assert owner != 0
    if os.geteuid() != 0:
        assert owner == os.geteuid()


def test_create_database_gives_separate_databases(pg: PostgresServer) -> None:
    first, second = pg.create_database(), pg.create_database()
    assert first != second
    assert _database(first).startswith("t_")
    with psycopg.connect(first, autocommit=True) as connection:
        connection.execute("CREATE TABLE only_here (x int)")
        connection.execute("INSERT INTO only_here VALUES (1)")
    with psycopg.connect(second) as connection:
        seen = connection.execute("SELECT to_regclass('only_here') IS NOT NULL").fetchone()
    assert seen == (False,)
    assert pg.execute("SELECT count(*) FROM only_here", database=_database(first)) == [(1,)]
    assert pg.create_database("named_one") == pg.url("named_one")
    assert pg.execute("SELECT 1 FROM pg_database WHERE datname = 'named_one'") == [(1,)]


def test_pgvector_is_available(pg: PostgresServer) -> None:
    database = _database(pg.create_database())
    pg.execute("CREATE EXTENSION vector", database=database)
    pg.execute("CREATE TABLE items (id int, embedding vector(3))", database=database)
    pg.execute(
        "INSERT INTO items VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0,0,1]')",
        database=database,
    )
    rows = pg.execute(
        "SELECT id FROM items ORDER BY embedding <-> %s::vector LIMIT 2",
        ["[0.1,0.9,0]"],
        database=database,
    )
    assert rows == [(2,), (1,)]


@pytest.mark.parametrize(
    "name", ["", "1abc", "Upper", "a-b", "a b", 'x"; DROP DATABASE postgres; --', "x" * 64]
)
def test_invalid_database_names_raise(pg: PostgresServer, name: str) -> None:
    with pytest.raises(ValueError, match="database name"):
        pg.create_database(name)
    with pytest.raises(ValueError, match="database name"):
        pg.url(name)


def test_replica_sees_rows_written_on_the_primary(pg: PostgresServer, replica: Replica) -> None:
    assert replica.port != pg.port
    assert replica.execute("SELECT pg_is_in_recovery()") == [(True,)]
    database = _database(pg.create_database())
    pg.execute("CREATE TABLE notes (id int)", database=database)
    pg.execute("INSERT INTO notes VALUES (1)", database=database)

    def replicated() -> bool:
        try:
            return replica.execute("SELECT id FROM notes", database=database) == [(1,)]
        except psycopg.Error:  # the database or table has not arrived yet
            return False

    assert _eventually(replicated)


def test_paused_replay_hides_new_rows_until_resumed(pg: PostgresServer, replica: Replica) -> None:
    database = _database(pg.create_database())
    pg.execute("CREATE TABLE notes (id int)", database=database)
    pg.execute("INSERT INTO notes VALUES (1)", database=database)

    def count() -> int:
        try:
            rows = replica.execute("SELECT count(*) FROM notes", database=database)
        except psycopg.Error:
            return -1
        return int(rows[0][0])

    assert _eventually(lambda: count() == 1)
    replica.pause_replay()
    try:
        paused_at = replica.replay_lsn()
        pg.execute("INSERT INTO notes VALUES (2)", database=database)
        assert pg.execute("SELECT count(*) FROM notes", database=database) == [(2,)]
        assert not _eventually(lambda: count() != 1, timeout=1.0)
        assert replica.replay_lsn() == paused_at
    finally:
        replica.resume_replay()
    assert _eventually(lambda: count() == 2)
    assert _lsn(replica.replay_lsn()) > _lsn(paused_at)


def test_replica_refuses_writes(replica: Replica) -> None:
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        replica.execute("CREATE TABLE refused (x int)")


def test_replica_stops_and_is_deleted_on_exit(pg: PostgresServer) -> None:
    with pg.replica() as short:
        port, folder = short.port, short.folder
        assert short.execute("SELECT 1") == [(1,)]
        assert (folder / "data" / "standby.signal").exists()
    assert not _accepts(port)
    assert not folder.exists()
    assert pg.execute("SELECT 1") == [(1,)]


def test_server_on_a_given_port_stops_and_is_deleted_on_exit() -> None:
    wanted = free_port()
    with postgres_server(port=wanted) as server:
        folder = server.folder
        assert server.port == wanted
        assert server.execute("SELECT 1") == [(1,)]
    assert not _accepts(wanted)
    assert not folder.exists()


def test_a_taken_port_raises_with_the_server_log() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PostgresServerError, match="already in use"), postgres_server(port=port):
            pass


def test_a_port_taken_after_the_check_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        offered = [taken.getsockname()[1]]  # as if another process bound it after the check

        def chooser() -> int:
            return offered.pop() if offered else free_port()

        monkeypatch.setattr(postgres_module, "free_port", chooser)
        with postgres_server() as server:
            assert not offered
            assert server.port != taken.getsockname()[1]
            assert server.execute("SELECT 1") == [(1,)]


def test_missing_pgserver_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pgserver", None)  # how Python spells "not installed"
    expected = r"pip install 'memledger\[pgserver\]'"
    with pytest.raises(PostgresServerError, match=expected), postgres_server():
        pass


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another user")
def test_binaries_the_server_user_cannot_reach_are_run_from_a_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A checkout under /root (mode 0700): the server's user cannot reach the binaries."""
    import shutil
    import tempfile

    real = postgres_module._binaries()
    hidden = Path(tempfile.mkdtemp(dir="/root" if os.access("/root", os.W_OK) else None))
    copies = hidden
    try:
        os.chmod(hidden, 0o700)
        site = hidden / "site"
        shutil.copytree(real.parent, site / "pgserver" / "pginstall", symlinks=True)
        shutil.copytree(real.parent.parent.parent / "pgserver.libs", site / "pgserver.libs")
        binaries = site / "pgserver" / "pginstall" / "bin"
        monkeypatch.setattr(postgres_module, "_binaries", lambda: binaries)
        copies = Path(tempfile.mkdtemp(prefix="copies-", dir="/tmp"))
        os.chmod(copies, 0o755)
        monkeypatch.setattr(postgres_module, "_COPIES", copies)
        runner = postgres_module._runner()
        assert runner.bin.is_relative_to(copies)
        with postgres_server() as server:
            assert server.execute("SELECT 1") == [(1,)]
    finally:
        shutil.rmtree(hidden, ignore_errors=True)
        shutil.rmtree(copies, ignore_errors=True)


def test_a_durable_server_keeps_postgresql_durability_on() -> None:
    with postgres_server(durable=True) as server:
        settings = dict(
            server.execute(
                "SELECT name, setting FROM pg_settings"
                " WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')"
            )
        )
    assert settings == {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}


def test_a_replica_copy_is_given_time_for_what_the_server_holds(
    pg: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    granted: list[tuple[int, float]] = []

    def copy(self: object, tool: str, *args: str, into: Path, size: int, limit: float) -> None:
        granted.append((size, limit))
        raise PostgresServerError("stopped before copying")

    monkeypatch.setattr(postgres_module._Runner, "copy", copy)

    def asked() -> tuple[int, float]:
        with pytest.raises(PostgresServerError, match="stopped"), pg.replica():
            pass
        return granted[-1]

    size, limit = asked()
    assert size == pg.size() > 0
    assert limit == pytest.approx(120 + size / 2 / 1_048_576, abs=1)
    url = pg.create_database()
    pg.execute(
        "CREATE TABLE filler AS SELECT repeat('x', 1000) AS text FROM generate_series(1, 20000)",
        database=_database(url),
    )
    more, longer = asked()
    assert more >= size + 20_000_000
    assert longer >= limit + 9
    with pytest.raises(PostgresServerError, match="stopped"), pg.replica(timeout=5):
        pass
    assert granted[-1][1] == pytest.approx(5, abs=0.5)


def test_a_stalled_copy_names_the_tool_its_size_and_how_far_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_module, "_STALL", 1.0)
    runner = postgres_module._Runner(Path("/bin"), None)
    started = time.monotonic()
    expected = r"^sleep of about 3\.0 MB made no progress for 1 s \(ran \d+ s, 0\.0 MB done\)$"
    with pytest.raises(PostgresServerError, match=expected):
        runner.copy("sleep", "30", into=tmp_path / "none", size=3 * 1_048_576, limit=60)
    assert time.monotonic() - started < 10


def test_a_failed_copy_says_what_the_tool_said(tmp_path: Path) -> None:
    runner = postgres_module._Runner(Path("/bin"), None)
    with pytest.raises(PostgresServerError, match=r"^ls failed \(exit 2\): .*missing"):
        runner.copy("ls", str(tmp_path / "missing"), into=tmp_path, size=0, limit=60)
