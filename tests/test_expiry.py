"""Expiry on the read path and on a schedule: a record past its expiry leaves recall
and the hot cache at once, the worker erases it at its pace, and the command line sets
retentions and runs expiry. The store-level checks run on every backend in the
conformance suite (``ExpiryChecks``)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memledger import Claim, Memory
from memledger.cli import app
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event
from memledger.write.worker import Worker, episode_of

ANYONE = actor("*")


def _city(value: str, expires: int) -> Claim:
    return Claim(
        family="home_city",
        kind="fact",
        statement=f"Lives in {value}",
        value=value,
        expires_at=day(3, expires),
    )


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(3, 1, 13))


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Memory:
    index = DerivedIndex(tmp_path / "m.db.index", embedder=HashingEmbedder())
    return Memory(open_store(tmp_path / "m.db"), clock=clock, index=index)


def test_recall_leaves_out_a_record_past_its_expiry(memory: Memory, clock: FrozenClock) -> None:
    said = event("evt-1", "I am staying in Quorvale.", occurred_at=day(3, 1), who=ANYONE)
    (result,) = memory.ingest(said, [_city("Quorvale", expires=3)]).results
    question = "where does the user live? Quorvale"
    found = memory.recall(question, tenant=TENANT, subject=SUBJECT)
    assert [i.record.memory_id for i in found.items] == [result.memory_id]
    clock.set(day(3, 3))
    later = memory.recall(question, tenant=TENANT, subject=SUBJECT)
    assert later.items == ()
    assert (result.memory_id, "past_expiry") in {(e.memory_id, e.reason) for e in later.excluded}
    memory.close()


def test_the_hot_cache_never_serves_a_value_past_its_expiry(
    memory: Memory, clock: FrozenClock
) -> None:
    said = event("evt-1", "I am staying in Quorvale.", occurred_at=day(3, 1), who=ANYONE)
    memory.ingest(said, [_city("Quorvale", expires=3)])
    cached = memory.hot.current(memory.reading, tenant=TENANT, subject=SUBJECT)
    assert [r.value for r in cached.values["home_city"]] == ["Quorvale"]
    assert memory.hot.current(memory.reading, tenant=TENANT, subject=SUBJECT) == cached  # a hit
    clock.set(day(3, 3))  # no commit moved a stamp: only the expiry says it is stale
    assert memory.hot.current(memory.reading, tenant=TENANT, subject=SUBJECT).values == {}
    memory.close()


def test_the_worker_erases_what_expired_at_its_pace(memory: Memory, clock: FrozenClock) -> None:
    said = event("evt-1", "I am staying in Quorvale.", occurred_at=day(3, 1), who=ANYONE)
    memory.ingest(said, [_city("Quorvale", expires=3)])
    clock.set(day(3, 4))
    stop = threading.Event()
    worker = Worker(memory.writing, FunctionExtractor(lambda e: [episode_of(e)]))
    reports = []
    thread = threading.Thread(
        target=lambda: reports.append(worker.run(stop=stop, poll=0.01, expire_every=0.05))
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not memory.erasures(tenant=TENANT) and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    thread.join(10)
    (report,) = reports
    assert report.expired == 1
    (receipt,) = memory.erasures(tenant=TENANT)
    assert receipt.scope == "expiry" and receipt.events == ("evt-1",)
    memory.close()


def test_retention_and_expiry_from_the_command_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    memory = Memory(open_store(db), clock=FrozenClock(day(3, 1, 13)))
    said = event("evt-1", "Hello there from Quorvale.", occurred_at=day(3, 1), who=ANYONE)
    memory.ingest(said, [episode_of(said)])
    memory.close()
    runner = CliRunner()
    base = ["--db", db, "--tenant", TENANT]
    assert json.loads(runner.invoke(app, ["retention", *base, "--json"]).output) == {}
    done = runner.invoke(app, ["retention", "episode", "1", *base, "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"episode": 1}
    bad = runner.invoke(app, ["retention", "episode", "soon", *base])
    assert bad.exit_code == 2 and "whole number or off" in bad.output
    erased = runner.invoke(app, ["expire", "--db", db, "--json"])  # now is long after
    assert erased.exit_code == 0, erased.output
    (receipt,) = json.loads(erased.output)
    assert receipt["scope"] == "expiry" and receipt["events"] == ["evt-1"]
    again = runner.invoke(app, ["expire", "--db", db])
    assert again.exit_code == 0 and "nothing has expired" in again.output
    off = runner.invoke(app, ["retention", "episode", "off", *base, "--json"])
    assert json.loads(off.output) == {}
