"""The PostgreSQL store's own behaviour, on a real server (the conformance suite runs
the shared invariants on it: ``test_conformance_postgres``): SQL translation, URLs,
migrations, the locks the write path relies on, the outbox in commit order and the
job queue under ``SKIP LOCKED``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from memledger import Actor, Memory, SourceEvent
from memledger.domain.records import Job
from memledger.errors import (
    InvalidInputError,
    MigrationError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from memledger.index.postgres import PostgresIndex
from memledger.store import open_store
from memledger.store import postgres as pg
from memledger.testing import FrozenClock
from memledger.testing.postgres import PostgresServer
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref


@pytest.fixture
def url(postgres: PostgresServer) -> str:
    return postgres.create_database()


@pytest.fixture
def store(url: str) -> Iterator[pg.PostgresStore]:
    store = open_store(url)
    assert isinstance(store, pg.PostgresStore)
    yield store
    store.close()


def test_sqlite_dialect_is_translated() -> None:
    translate = pg._translated_sql
    assert translate("SELECT a FROM t WHERE b = ? AND c LIKE 'x%'", parameters=True) == (
        "SELECT a FROM t WHERE b = %s AND c LIKE 'x%%'"
    )
    assert translate("INSERT OR IGNORE INTO t VALUES (?, ?)", parameters=True) == (
        "INSERT INTO t VALUES (%s, %s) ON CONFLICT DO NOTHING"
    )
    assert translate(
        "SELECT 1 FROM records INDEXED BY records_source WHERE x", parameters=False
    ) == ("SELECT 1 FROM records WHERE x")
    assert translate("SELECT '50%'", parameters=False) == "SELECT '50%'"


def test_url_hides_the_password_and_a_missing_store_is_not_created(
    postgres: PostgresServer, url: str
) -> None:
    with_password = url.replace("postgres@", "postgres:s3cret@")
    with pytest.raises(StoreNotFoundError, match="no memledger store"):
        open_store(with_password, create=False)
    store = open_store(with_password)
    assert "s3cret" not in store.url and "***@" in store.url
    store.close()
    again = open_store(url, create=False)
    assert isinstance(again, pg.PostgresStore)
    assert again.schema_version() == len(pg.load_migrations())
    again.close()
    missing = postgres.url("no_such_database")
    with pytest.raises(StoreNotFoundError, match="no PostgreSQL database"):
        open_store(missing)


def test_open_refuses_a_newer_or_changed_schema(url: str) -> None:
    open_store(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1")
    with pytest.raises(MigrationError, match="differs from the packaged one"):
        open_store(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM schema_migrations")
        conn.execute("INSERT INTO schema_migrations VALUES (99, 'future', 'x', 'now')")
    with pytest.raises(MigrationError, match="schema version 99"):
        open_store(url)


def test_processes_opening_one_database_at_once_migrate_it_once(url: str) -> None:
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            open_store(url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version FROM schema_migrations").fetchall()
    packaged = [(m[0],) for m in pg.load_migrations()]
    assert len(packaged) >= 3 and rows == packaged  # each packaged migration once


def _in_thread(target: object) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(target()))  # type: ignore[operator]
    thread.start()
    return thread, out


def test_a_family_slot_is_locked_until_commit_even_before_it_exists(
    store: pg.PostgresStore,
) -> None:
    def second_writer() -> int:
        with store.write() as unit:
            return unit.lock_family(TENANT, SUBJECT, FAMILY).revision

    with store.write() as unit:
        slot = unit.lock_family(TENANT, SUBJECT, FAMILY)  # no row yet
        thread, out = _in_thread(second_writer)
        time.sleep(0.5)
        assert out == []  # still waiting
        unit.put_family(type(slot)(tenant=TENANT, subject=SUBJECT, family=FAMILY, revision=1))
    thread.join(10)
    assert out == [1]  # it read the committed revision, not the one before


def test_an_event_is_decided_under_its_own_lock(store: pg.PostgresStore) -> None:
    def other() -> str | None:
        with store.write() as unit:
            return unit.event_hash(TENANT, "evt-1")

    first = event("evt-1", "Fridays", occurred_at=day(10, 2))
    with store.write() as unit:
        assert unit.event_hash(TENANT, "evt-1") is None
        thread, out = _in_thread(other)
        time.sleep(0.5)
        assert out == []
        unit.append_event(first, content_hash="h1", at=day(10, 2))
    thread.join(10)
    assert out == ["h1"]


def test_outbox_sequence_is_commit_order(store: pg.PostgresStore) -> None:
    memory = Memory(store, clock=FrozenClock(day(10, 2)))
    early = threading.Event()
    release = threading.Event()

    def slow_writer() -> None:  # starts first, commits last
        with store.write() as unit:
            record = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)[0]
            unit.add_outbox(record, op="upsert", at=day(10, 2))
            early.set()
            release.wait(10)

    memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    with store.read() as unit:
        head = unit.outbox_head()
    thread = threading.Thread(target=slow_writer)
    thread.start()
    early.wait(10)
    memory.ingest(event("evt-2", "Mondays", occurred_at=day(10, 3), sequence=2), [pref("monday")])
    with store.read() as unit:  # a reader tailing the outbox now
        seen = [e.seq for e in unit.outbox_after(head, limit=100)]
    release.set()
    thread.join(10)
    with store.read() as unit:
        later = [e for e in unit.outbox_after(max(seen), limit=100)]
    assert seen and len(later) == 1  # the late commit comes after what was read: not skipped
    memory.close()


def _job(tenant: str, n: int) -> Job:
    return Job(
        tenant=tenant,
        job_id=f"job-{n:03d}",
        event_id=f"evt-{n}",
        generations={},
        status="queued",
        attempts=0,
        created_at=day(10, 1) + timedelta(minutes=n),
    )


def test_claims_take_turns_across_tenants_and_skip_locked_jobs(store: pg.PostgresStore) -> None:
    with store.write() as unit:
        for n in range(10):
            unit.add_job(_job("big", n))  # the older backlog
        for n in range(10, 12):
            unit.add_job(_job("small", n))
    now = day(10, 2)
    until = now + timedelta(minutes=5)
    with store.write() as first:
        mine = first.claim_jobs(tenant=None, now=now, lease_until=until, owner="a", limit=4)
        # one of each tenant, then a second of each: the small tenant is not starved
        assert sorted((j.tenant, j.job_id) for j in mine) == [
            ("big", "job-000"),
            ("big", "job-001"),
            ("small", "job-010"),
            ("small", "job-011"),
        ]
        with store.write() as second:  # another worker while the first has not committed
            theirs = second.claim_jobs(tenant=None, now=now, lease_until=until, owner="b", limit=4)
    assert [j.job_id for j in theirs] == ["job-002", "job-003", "job-004", "job-005"]
    assert {j.attempts for j in [*mine, *theirs]} == {1}


def test_a_job_leased_and_committed_meanwhile_is_not_leased_again(
    store: pg.PostgresStore,
) -> None:
    """Two workers claiming one job at a time: a claim whose snapshot still shows a job
    unleased, though another worker has leased it and committed since, must not lease
    it a second time (the lease is checked again on the locked row)."""
    jobs = 150
    with store.write() as unit:
        for n in range(jobs):
            unit.add_job(_job("acme", n))
    now = day(10, 2)
    until = now + timedelta(minutes=5)
    claimed: dict[str, list[str]] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def worker(owner: str) -> None:
        start.wait(10)
        while True:
            with store.write() as unit:
                got = unit.claim_jobs(tenant=None, now=now, lease_until=until, owner=owner, limit=1)
            if not got:
                return
            claimed[owner].extend(j.job_id for j in got)

    threads = [threading.Thread(target=worker, args=(owner,)) for owner in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    both = claimed["a"] + claimed["b"]
    assert sorted(both) == sorted(set(both)), "a job was leased twice"
    assert len(both) == jobs
    with store.read() as unit:
        assert {j.attempts for j in unit.jobs("acme", open_only=False)} == {1}


def test_a_deadlock_is_a_store_locked_error_and_nothing_is_written(
    store: pg.PostgresStore,
) -> None:
    ready = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(first: str, second: str) -> None:
        try:
            with store.write() as unit:
                unit.lock_family(TENANT, SUBJECT, first)
                ready.wait(10)
                unit.lock_family(TENANT, SUBJECT, second)
                unit.bump_counter(TENANT, f"wrote-{first}")
        except StoreLockedError as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=("a", "b")),
        threading.Thread(target=writer, args=("b", "a")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(errors) == 1 and "deadlock" in str(errors[0])
    with store.read() as unit:
        assert len(unit.counters(TENANT)) == 1  # the loser wrote nothing


def test_revocations_of_one_tenant_are_numbered_one_at_a_time(store: pg.PostgresStore) -> None:
    def second() -> int:
        with store.write() as unit:
            return unit.add_revocation(TENANT, "user-7", FAMILY, generation=1, at=day(10, 2))

    with store.write() as unit:
        assert unit.add_revocation(TENANT, SUBJECT, FAMILY, generation=1, at=day(10, 2)) == 1
        thread, out = _in_thread(second)
        time.sleep(0.5)
        assert out == []
    thread.join(10)
    assert out == [2]


def test_counters_are_written_at_commit_and_read_back_before_it(store: pg.PostgresStore) -> None:
    with store.write() as unit:
        unit.bump_counter(TENANT, "b")
        unit.bump_counter(TENANT, "a", by=2)
        unit.bump_counter("other", "a")
        assert unit.counters(TENANT) == {"a": 2, "b": 1}
    with store.write() as unit:
        unit.bump_counter(TENANT, "a")
        assert unit.counters(TENANT) == {"a": 3, "b": 1}
    with store.read() as unit:
        assert unit.counters(TENANT) == {"a": 3, "b": 1}
        assert unit.counters("other") == {"a": 1}


def test_memory_on_postgresql_end_to_end(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingest, the worker, recall through the default index (in the database itself, no
    file of this machine's), a correction and a revocation: the same story as on SQLite."""
    monkeypatch.setenv("MEMLEDGER_INDEX_DIR", str(tmp_path))
    start = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
    turns = [
        ("caroline", "I went to an LGBTQ support group yesterday and it was so powerful."),
        ("melanie", "That's amazing! What did you take away from it?"),
        ("caroline", "That I want to work in counseling and help people like me."),
    ]
    with Memory.open(url, clock=FrozenClock(start + timedelta(days=1))) as memory:
        for n, (speaker, text) in enumerate(turns):
            memory.ingest(
                SourceEvent(
                    tenant="acme",
                    event_id=f"s1-{n}",
                    subject="chat",
                    actor=Actor(id=speaker, authenticated=True),
                    channel="chat",
                    occurred_at=start + timedelta(minutes=n),
                    text=text,
                    metadata={"session": "s1"},
                )
            )
        assert memory.process().outcomes == {"committed": 3}
        result = memory.recall(
            "What did Caroline take away from the support group?", tenant="acme", k=3
        )
        assert [i.record.source_event_id for i in result.items][:1] == ["s1-0"]
        assert isinstance(memory.index, PostgresIndex) and memory.index.status().entries == 3
        assert list(tmp_path.glob("*.index")) == []
        memory.ingest(event("p-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
        memory.ingest(event("p-2", "Mondays", occurred_at=day(10, 3), sequence=2), [pref("monday")])
        (now,) = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 4))
        assert now.value == "monday"
        memory.revoke(now.memory_id, tenant=TENANT, reason="wrong")
        assert memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 4)) == ()


def test_an_error_inside_a_savepoint_surfaces_there_and_rolls_back_alone(
    store: pg.PostgresStore,
) -> None:
    with store.write() as unit:
        unit.bump_counter(TENANT, "kept")
        with pytest.raises(psycopg.errors.NotNullViolation), unit.savepoint():
            unit.conn.execute("INSERT INTO counters VALUES (?, ?, ?)", (TENANT, "x", None))
            unit.conn.execute("INSERT INTO counters VALUES (?, ?, ?)", (TENANT, "y", 1))
        unit.conn.execute("INSERT INTO counters VALUES (?, ?, ?)", (TENANT, "after", 1))
    with store.read() as unit:
        assert unit.counters(TENANT) == {"after": 1, "kept": 1}


def test_a_failed_statement_rolls_the_whole_unit_back(store: pg.PostgresStore) -> None:
    with pytest.raises(StoreError, match="null value"), store.write() as unit:
        unit.bump_counter(TENANT, "lost")
        unit.conn.execute("INSERT INTO counters VALUES (?, ?, ?)", (TENANT, "x", None))
    with store.read() as unit:
        assert unit.counters(TENANT) == {}
    with store.write() as unit:  # the connection is fine afterwards
        unit.bump_counter(TENANT, "next")
    with store.read() as unit:
        assert unit.counters(TENANT) == {"next": 1}


def test_a_unit_that_raises_keeps_its_own_error_and_writes_nothing(
    store: pg.PostgresStore,
) -> None:
    with pytest.raises(ValueError, match="caller's"), store.write() as unit:
        unit.conn.execute("INSERT INTO counters VALUES (?, ?, ?)", (TENANT, "lost", 1))
        raise ValueError("the caller's own error")
    with store.read() as unit:
        assert unit.counters(TENANT) == {}


def test_without_the_postgres_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delitem(sys.modules, "memledger.store.postgres")
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    with pytest.raises(InvalidInputError, match=r"pip install 'memledger\[postgres\]'"):
        open_store("postgresql://nobody@127.0.0.1:1/db")


def test_a_rolled_back_savepoint_takes_back_what_it_held_for_the_commit(
    store: pg.PostgresStore, url: str
) -> None:
    """Outbox rows and counters wait for the commit: a savepoint rolled back (a worker's
    poisoned job) must not leave its rows or counts to be written then."""
    memory = Memory(store, clock=FrozenClock(day(10, 2)))
    memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    (record,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    with store.read() as unit:
        head, before = unit.outbox_head(), dict(unit.counters(TENANT))
        pending = unit.outbox_size(TENANT)
    with store.write() as unit:
        unit.bump_counter(TENANT, "kept")
        with pytest.raises(ValueError, match="poisoned"), unit.savepoint():
            unit.add_outbox(record, op="upsert", at=day(10, 2))
            unit.bump_counter(TENANT, "lost")
            unit.lock_family(TENANT, SUBJECT, "other")
            raise ValueError("poisoned")
        unit.lock_family(TENANT, SUBJECT, "other")  # taken again: the savepoint let it go
        key = "\x1f".join(("family", TENANT, SUBJECT, "other"))
        with psycopg.connect(url, autocommit=True) as other:
            (taken,) = other.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)
            ).fetchone()
        assert taken is False  # this unit holds it again
        unit.add_outbox(record, op="delete", at=day(10, 2))
        assert unit.outbox_size(TENANT) == pending + 1  # its own row, not yet written
    with store.read() as unit:
        assert [e.op for e in unit.outbox_after(head, limit=10)] == ["delete"]
        assert dict(unit.counters(TENANT)) == {**before, "kept": 1}


def test_schema_5_traces_get_the_namespaces_their_packets_held(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on SQLite: the upgrade finds, for each trace already stored, the private
    namespaces of the memories it names that are still in the store."""
    monkeypatch.setenv("MEMLEDGER_INDEX_DIR", str(tmp_path))
    original = pg.load_migrations
    monkeypatch.setattr(pg, "load_migrations", lambda: original()[:5])
    written = {}
    with Memory.open(url, clock=FrozenClock(day(10, 2))) as memory:
        for n, subject in enumerate(("agent:planner/c-7", "agent:bo", "agent:/x", SUBJECT)):
            said = event(f"e{n}", "Deliver on Fridays.", occurred_at=day(10, 2), subject=subject)
            (result,) = memory.ingest(said, [pref("friday")]).results
            written[subject] = str(result.memory_id)
    traces = {
        "ctx-mixed": [*written.values(), "mem-erased"],
        "ctx-shared": [written["agent:/x"], written[SUBJECT]],
        "ctx-planner": [written["agent:planner/c-7"], written["agent:planner/c-7"]],
        "ctx-none": [],
    }
    with psycopg.connect(url, autocommit=True) as conn:
        for trace_id, held in traces.items():
            items = [{"memory_id": m} for m in held] + [{"section": "state", "fields": {}}]
            conn.execute(
                "INSERT INTO traces VALUES (%s, %s, NULL, '2026-10-02T12:00:00.000000Z', %s, %s)",
                (TENANT, trace_id, "0" * 64, json.dumps({"version": 1, "items": items})),
            )
    monkeypatch.setattr(pg, "load_migrations", original)
    store = open_store(url)
    try:
        with psycopg.connect(url) as conn:
            column = dict(conn.execute("SELECT trace_id, namespaces FROM traces").fetchall())
        assert column == {
            "ctx-mixed": "|agent:bo||agent:planner|",
            "ctx-shared": "",
            "ctx-planner": "|agent:planner|",
            "ctx-none": "",
        }
        with store.read() as unit:
            seen = frozenset({"agent:planner"})
            found = {t for t in traces if unit.get_trace(TENANT, t, namespaces=seen)}
            assert found == {"ctx-shared", "ctx-none", "ctx-planner"}
    finally:
        store.close()


def test_an_add_that_waits_runs_its_job_once_another_claim_lets_go(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An add that waits finds its turn's job locked by another worker's claim not yet
    committed (so it still reads as queued and unleased): it waits until the claim lets
    go and runs the job itself, and answers with the memory, not a pending turn."""
    monkeypatch.setenv("MEMLEDGER_INDEX_DIR", str(tmp_path))
    with Memory.open(url) as memory:
        queued = memory.add("I live in Porto.", user_id="alice", wait=False)
        (job_id,) = [r.job_id for r in queued.receipts]
        locked = threading.Event()

        def claim_in_flight() -> None:
            with psycopg.connect(url) as conn:  # a transaction: rolled back on leaving
                conn.execute("SELECT 1 FROM jobs WHERE job_id = %s FOR UPDATE", (job_id,))
                locked.set()
                time.sleep(0.5)

        holder, _ = _in_thread(claim_in_flight)
        assert locked.wait(10)
        added = memory.add("I live in Porto.", user_id="alice")
        holder.join(10)
        assert added.pending == ()
        assert [r.outcome for r in added.receipts] == ["committed"]
        assert "Porto" in [m.value for m in added.memories if m.family == "home_city"]
