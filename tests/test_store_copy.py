"""Copying a SQLite store into an empty PostgreSQL store (``memledger copy-store``): the
same rows, the same reads, sequences that continue, and nothing written when it fails."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from cli_helpers import assert_one_error, run
from memledger import Memory
from memledger.errors import InvalidInputError, StoreError
from memledger.index.backends import open_index
from memledger.ports import Store
from memledger.store import open_store
from memledger.store.copy import copy_store
from memledger.testing import FrozenClock
from memledger.testing.postgres import PostgresServer
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref, snapshot


def fill(memory: Memory) -> tuple[list[str], str]:
    """A history with a bit of everything: corrections, a revocation, queued and done
    extraction jobs, a key, a context trace; the event ids and the key's token."""
    ids = []
    for n, value in enumerate(["friday", "daily", "monday"], start=1):
        memory.ingest(event(f"p{n}", f"Send it {value}", occurred_at=day(10, n), sequence=n),
                      [pref(value)])  # fmt: skip
        ids.append(f"p{n}")
    memory.ingest(event("other", "Send it sunday", occurred_at=day(10, 5), subject="user-7",
                        sequence=1), [pref("sunday")])  # fmt: skip
    memory.revoke_family("user-7", FAMILY, tenant=TENANT)
    for n, text in enumerate(["I moved to Lisbon last month.", "I work at Initech now."]):
        memory.ingest(event(f"t{n}", text, occurred_at=day(10, 6 + n), sequence=10 + n))
        ids.append(f"t{n}")
    memory.process(tenant=TENANT)
    memory.ingest(event("queued", "I prefer tea.", occurred_at=day(10, 9), sequence=20))
    ids.append("queued")
    _, token = memory.create_key(TENANT, SUBJECT, label="copied key")
    memory.context("when do you send the digest?", tenant=TENANT, subject=SUBJECT)
    return ids, token


@pytest.fixture
def stores(postgres: PostgresServer, tmp_path: Path) -> Iterator[tuple[Memory, Store]]:
    source = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 12)))
    target = open_store(postgres.create_database())
    yield source, target
    source.close()
    target.close()


def _rows(store: Store, table: str) -> list[tuple[object, ...]]:
    if store.url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(store.dsn) as conn:  # type: ignore[attr-defined]
            return [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3")]
    with store.read() as unit:
        return [tuple(r) for r in unit.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3")]


def test_a_copy_holds_the_same_rows_and_answers_the_same_reads(
    stores: tuple[Memory, Store],
) -> None:
    source, target = stores
    ids, token = fill(source)
    copied = copy_store(source.store, target)
    assert copied["events"] == len(ids) + 1 and copied["outbox"] > 0 and copied["traces"] == 1
    assert copied["api_keys"] == 1 and copied["jobs"] >= 3
    for table, count in copied.items():
        assert len(_rows(target, table)) == count, table
    for table in ("events", "records", "history", "outbox", "jobs", "api_keys", "families"):
        assert _rows(target, table) == _rows(source.store, table), table
    with psycopg.connect(target.dsn) as pg:  # type: ignore[attr-defined]
        # analysed: the planner knows the row counts (-1: never analysed)
        tuples = dict(
            pg.execute(
                "SELECT relname, reltuples FROM pg_class WHERE relname IN ('events', 'records')"
            ).fetchall()
        )
    assert tuples == {"events": copied["events"], "records": copied["records"]}
    copy = Memory(target, clock=FrozenClock(day(10, 12)))
    for subject in (SUBJECT, "user-7"):
        assert snapshot(copy, subjects=[subject], event_ids=ids) == snapshot(
            source, subjects=[subject], event_ids=ids
        )
    assert copy.authenticate(token).actor.id == SUBJECT  # the key works there
    # what comes next continues the copied sequences, and the queued job runs there
    copy.process(tenant=TENANT)
    copy.ingest(event("p9", "Send it never", occurred_at=day(10, 11), sequence=9), [pref("never")])
    with source.store.read() as before, target.read() as after:
        assert after.outbox_head() > before.outbox_head()
    with open_index(target) as index:
        assert index.sync(target) == len(_rows(target, "outbox"))
        found = [h.memory_id for h in index.search("never", tenant=TENANT, k=3)]
        assert found == [r.memory_id for r in copy.current(SUBJECT, FAMILY, tenant=TENANT)]


def test_a_target_that_holds_rows_is_refused_and_left_as_it_was(
    stores: tuple[Memory, Store],
) -> None:
    source, target = stores
    fill(source)
    Memory(target).ingest(event("mine", "Send it friday", occurred_at=day(10, 1)), [pref("friday")])
    before = {t: _rows(target, t) for t in ("events", "records", "outbox")}
    with pytest.raises(InvalidInputError, match="not empty"):
        copy_store(source.store, target)
    assert {t: _rows(target, t) for t in before} == before


def test_a_failure_half_way_writes_nothing(stores: tuple[Memory, Store]) -> None:
    """A row PostgreSQL refuses (a NUL, which SQLite keeps when written around the
    store) in a table copied late: the tables copied before it are rolled back too."""
    source, target = stores
    fill(source)
    path = source.store.url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE traces SET body = body || char(0)")
    conn.close()
    with pytest.raises(StoreError, match=r"traces.*nothing was written"):
        copy_store(source.store, target)
    for table in ("events", "records", "outbox", "api_keys"):
        assert _rows(target, table) == [], table


def test_only_sqlite_into_postgresql(stores: tuple[Memory, Store], tmp_path: Path) -> None:
    source, target = stores
    other = open_store(tmp_path / "other.db")
    try:
        for a, b in ((source.store, other), (target, source.store), (target, target)):
            with pytest.raises(InvalidInputError, match="copies a SQLite store into a PostgreSQL"):
                copy_store(a, b)
    finally:
        other.close()


def test_cli_copies_and_reports_each_table(stores: tuple[Memory, Store], tmp_path: Path) -> None:
    source, target = stores
    fill(source)
    db = source.store.url.removeprefix("sqlite:///")
    url = target.dsn  # type: ignore[attr-defined]
    result = run(["copy-store", url, "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["from"] == source.url and "***" not in body["from"]
    assert body["rows"]["events"] == len(_rows(target, "events")) > 0
    again = run(["copy-store", url, "--db", db])
    assert_one_error(again, "not empty")
    wrong = run(["copy-store", f"sqlite:///{tmp_path / 'x.db'}", "--db", db])
    assert_one_error(wrong, "copies into a PostgreSQL store")
