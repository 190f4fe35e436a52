"""The SQLite store itself: URLs, migrations from blank and as an upgrade, error translation."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memledger import Grant, Memory, MigrationError, StoreError
from memledger.errors import InvalidInputError
from memledger.store import open_store
from memledger.store import sqlite as sqlite_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref
from store_helpers import old_sqlite_store


def test_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    default = Memory.open()
    assert default.url == "sqlite:///memledger.db" and (tmp_path / "memledger.db").exists()
    default.close()
    absolute = open_store(f"sqlite:///{tmp_path / 'abs.db'}")
    assert Path(absolute.url.removeprefix("sqlite:///")) == tmp_path / "abs.db"
    absolute.close()
    relative = open_store("sqlite:///rel.db")
    assert (tmp_path / "rel.db").exists()
    relative.close()
    for bad in ("mysql://x/y", "sqlite://host/x.db", "sqlite:///"):
        with pytest.raises(InvalidInputError):
            open_store(bad)
    with pytest.raises(StoreError, match="does not exist"):
        open_store(tmp_path / "no" / "such" / "dir.db")


def test_blank_database_gets_every_migration(tmp_path: Path) -> None:
    store = sqlite_store.SQLiteStore(tmp_path / "m.db")
    known = sqlite_store.load_migrations()
    assert store.schema_version() == len(known) >= 1
    store.close()
    again = sqlite_store.SQLiteStore(tmp_path / "m.db")  # reopening applies nothing twice
    assert again.schema_version() == len(known)
    again.close()
    conn = sqlite3.connect(tmp_path / "m.db")
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert rows == [(v, n) for v, n, _ in known]
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


def test_upgrade_keeps_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    old = Memory.open(path)
    old.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    old.close()
    extra = (
        len(sqlite_store.load_migrations()) + 1,
        "add_note",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
    )
    original = sqlite_store.load_migrations
    monkeypatch.setattr(sqlite_store, "load_migrations", lambda: [*original(), extra])
    upgraded = Memory.open(path)
    assert isinstance(upgraded.store, sqlite_store.SQLiteStore)
    assert upgraded.store.schema_version() == extra[0]
    (record,) = upgraded.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 3))
    assert record.value == "friday"
    upgraded.close()


def test_newer_or_tampered_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    sqlite_store.SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (99, 'future', 'x', 'now')")
    conn.commit()
    with pytest.raises(MigrationError, match="version 99"):
        sqlite_store.SQLiteStore(path)
    conn.execute("DELETE FROM schema_migrations WHERE version = 99")
    conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
    conn.commit()
    conn.close()
    with pytest.raises(MigrationError, match="append-only"):
        sqlite_store.SQLiteStore(path)


def test_driver_errors_are_translated(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory = Memory.open(path)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE history")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="SQLite write failed"):
        memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    memory.close()
    with pytest.raises(StoreError, match="closed"):
        memory.current(SUBJECT, FAMILY, tenant=TENANT)


def test_a_held_write_lock_times_out_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 200)
    memory = Memory.open(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError, match="lock"):
        memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    blocker.execute("ROLLBACK")
    blocker.close()
    memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    assert len(memory.history(SUBJECT, FAMILY, tenant=TENANT)) == 1
    memory.close()


def test_writers_queue_at_the_write_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "m.db"
    memory = Memory.open(path)
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 200)
    with open(f"{path}.lock", "w") as other:  # another open file, as another process holds it
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(StoreError, match="write lock"):
            memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
        assert memory.history(SUBJECT, FAMILY, tenant=TENANT) == ()
        fcntl.flock(other, fcntl.LOCK_UN)
    memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    assert len(memory.history(SUBJECT, FAMILY, tenant=TENANT)) == 1
    memory.close()


def _open_at_once(path: str, barrier: Any) -> None:
    barrier.wait()
    sqlite_store.SQLiteStore(Path(path)).close()


def test_processes_creating_one_store_at_once_all_succeed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    for round_ in range(4):  # the race was rare: several rounds of four openers
        path = tmp_path / f"m{round_}.db"
        barrier = context.Barrier(4)
        procs = [context.Process(target=_open_at_once, args=(str(path), barrier)) for _ in range(4)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(60)
        assert [proc.exitcode for proc in procs] == [0] * 4
        assert sqlite_store.SQLiteStore(path).schema_version() == len(
            sqlite_store.load_migrations()
        )


def test_schema_2_upgrades_to_3_with_its_queued_jobs_and_old_grants(tmp_path: Path) -> None:
    """A store written before the hardening migration keeps working: its queued job
    (no revocation mark: every revocation after the upgrade is later than it) runs,
    and grants stored as "family:scope" text read back exactly, never wider."""
    path = tmp_path / "old.db"
    with old_sqlite_store(path, 2) as conn:
        conn.execute(
            "INSERT INTO events VALUES ('acme', 'evt-1', 'hash', 'user-42', 'user-42', 1, ?,"
            " 'chat', NULL, NULL, '2026-10-02T12:00:00.000000Z', 'Send it on Fridays please.',"
            " '{}', '2026-10-02T12:00:00.000000Z')",
            (json.dumps(["delivery_preference:*", "home_city:"]),),
        )
        conn.execute(
            "INSERT INTO jobs (tenant, job_id, event_id, generations, status, attempts, created_at)"
            " VALUES ('acme', 'job-1', 'evt-1', '{}', 'queued', 0, '2026-10-02T12:00:00.000000Z')"
        )
    memory = Memory.open(path, clock=FrozenClock(day(10, 3)))
    try:
        assert memory.store.schema_version() == len(sqlite_store.load_migrations())  # type: ignore[attr-defined]
        assert memory.event("evt-1", tenant=TENANT).actor.grants == frozenset(
            {Grant(family="delivery_preference")}
        )
        (job,) = memory.jobs(tenant=TENANT)
        assert job.revocation_mark == 0
        done = memory.commit_job("job-1", [pref("friday", grounding="on Fridays")], tenant=TENANT)
        assert [(r.disposition, r.reason) for r in done.results] == [("current", None)]
    finally:
        memory.close()


def test_an_in_memory_store_writes_no_file_and_shares_no_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its index is in memory too: no ``:memory:.index`` (or ``.lock``) in the working
    folder, and a second in-memory store never sees the first one's entries."""
    from memledger.write.worker import episode_of

    monkeypatch.chdir(tmp_path)
    first = Memory.open(":memory:", clock=FrozenClock(day(10, 2)))
    second = Memory.open(":memory:", clock=FrozenClock(day(10, 2)))
    said = event("e1", "The kiln fires stoneware at cone six.", occurred_at=day(10, 1))
    first.ingest(said, [episode_of(said)])
    assert [
        i.record.source_event_id for i in first.recall("kiln stoneware", tenant=TENANT).items
    ] == ["e1"]
    other = second.recall("kiln stoneware", tenant=TENANT)
    assert other.items == () and other.excluded == ()
    first.close()
    second.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_schema_12_traces_get_the_namespaces_their_packets_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upgrade finds, for each trace already stored, the private namespaces of the
    memories it names that are still in the store; a key that may not read one of them
    then finds no such trace."""
    path = tmp_path / "old.db"
    original = sqlite_store.load_migrations
    monkeypatch.setattr(sqlite_store, "load_migrations", lambda: original()[:12])
    memory = Memory.open(path, clock=FrozenClock(day(10, 2)))
    written = {}
    for n, subject in enumerate(("agent:planner/c-7", "agent:bo", "agent:/x", SUBJECT)):
        said = event(f"e{n}", "Deliver on Fridays.", occurred_at=day(10, 2), subject=subject)
        (result,) = memory.ingest(said, [pref("friday")]).results
        written[subject] = str(result.memory_id)
    memory.close()
    traces = {
        "ctx-mixed": [*written.values(), "mem-erased"],
        "ctx-shared": [written["agent:/x"], written[SUBJECT]],
        "ctx-planner": [written["agent:planner/c-7"], written["agent:planner/c-7"]],
        "ctx-none": [],
    }
    conn = sqlite3.connect(path)
    for trace_id, held in traces.items():
        items = [{"memory_id": m} for m in held] + [{"section": "state", "fields": {}}]
        conn.execute(
            "INSERT INTO traces VALUES (?, ?, NULL, '2026-10-02T12:00:00.000000Z', ?, ?)",
            (TENANT, trace_id, "0" * 64, json.dumps({"version": 1, "items": items})),
        )
    conn.commit()
    conn.close()
    monkeypatch.setattr(sqlite_store, "load_migrations", original)
    store = sqlite_store.SQLiteStore(path)
    try:
        with store.read() as unit:
            column = dict(unit.conn.execute("SELECT trace_id, namespaces FROM traces"))  # type: ignore[attr-defined]
            assert column == {
                "ctx-mixed": "|agent:bo||agent:planner|",
                "ctx-shared": "",
                "ctx-planner": "|agent:planner|",
                "ctx-none": "",
            }
            for seen, shown in (
                (frozenset[str](), {"ctx-shared", "ctx-none"}),
                (frozenset({"agent:planner"}), {"ctx-shared", "ctx-none", "ctx-planner"}),
                (frozenset({"agent:planner", "agent:bo"}), set(traces)),
            ):
                found = {t for t in traces if unit.get_trace(TENANT, t, namespaces=seen)}
                assert found == shown
                assert {t.trace_id for t in unit.traces(TENANT, namespaces=seen)} == shown
    finally:
        store.close()
