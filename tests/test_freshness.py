"""The freshness figures: extraction lag and backlog, index lag, reads that found no
memory or ran lexical only, exclusions by reason, erasure times; from the library, the
command line and the service's /metrics."""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from memledger import Memory
from memledger.cli import app
from memledger.freshness import quantile
from memledger.index.derived import DerivedIndex
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import TENANT, actor, day, event, pref

ANYONE = actor("*")


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(3, 1, 9))


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Memory:
    index = DerivedIndex(tmp_path / "m.db.index", embedder=None)
    return Memory(open_store(tmp_path / "m.db"), clock=clock, index=index)


def _fridays(source: object) -> list[object]:
    return [pref("friday", grounding="Fridays")]


def test_extraction_lag_backlog_and_index_lag(memory: Memory, clock: FrozenClock) -> None:
    for n in range(3):
        memory.ingest(event(f"e{n}", "Fridays suit me.", occurred_at=day(3, 1), sequence=n))
        clock.advance(timedelta(seconds=10))
    start = memory.freshness()
    assert (start.queued_jobs, start.jobs_done, start.extraction_lag_p95) == (3, 0, None)
    assert start.oldest_queued_seconds == 30.0 and start.index_lag is not None
    clock.advance(timedelta(seconds=30))  # the first job waited 60 s, the second 50 s
    memory.process(extractor=FunctionExtractor(_fridays), limit=2)  # type: ignore[arg-type]
    later = memory.freshness(tenant=TENANT)
    assert (later.queued_jobs, later.jobs_done) == (1, 2)
    assert (later.extraction_lag_p50, later.extraction_lag_p95) == (50.0, 60.0)
    assert later.oldest_queued_seconds == 40.0
    assert later.index_lag == memory.index.lag(memory.store, tenant=TENANT) > 0
    memory.index.sync(memory.store)
    assert memory.freshness().index_lag == 0
    clock.advance(timedelta(hours=2))  # out of the window: no recent job
    assert memory.freshness().jobs_done == 0
    assert memory.freshness(tenant="globex").queued_jobs == 0


def test_reads_that_found_nothing_and_what_the_recheck_refused(
    memory: Memory, clock: FrozenClock
) -> None:
    memory.ingest(event("e1", "Fridays", occurred_at=day(2, 1), sequence=1), [pref("friday")])
    memory.index.sync(memory.store)
    memory.ingest(event("e2", "Mondays", occurred_at=day(2, 2), sequence=2), [pref("monday")])
    found = memory.recall("when friday delivery", tenant=TENANT, sync=False)  # a stale hit
    assert found.abstained  # its only candidate was refused
    fresh = memory.recall("monday delivery", tenant=TENANT)
    assert fresh.items  # synced: the new one
    reads = memory.freshness().reads
    assert (reads["recalls"], reads["lexical_only"]) == (2, 2)  # no embedder: lexical
    assert reads["abstained"] == 1 and reads["abstained_fraction"] == 0.5
    refused = Counter(e.reason for e in [*found.excluded, *fresh.excluded])
    assert refused["superseded"] == 1 and reads["excluded"] == dict(sorted(refused.items()))


def test_erasure_times_of_a_tenant(memory: Memory, clock: FrozenClock) -> None:
    memory.ingest(event("e1", "Fridays", occurred_at=day(3, 1), sequence=1), [pref("friday")])
    memory.erase(tenant=TENANT, event="e1")
    found = memory.freshness(tenant=TENANT)
    assert found.erasures == 1 and found.erasure_p95 == 0.0  # a frozen clock: no time passed
    assert memory.freshness().erasures == 0  # receipts are per tenant


def test_status_on_the_command_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    memory = Memory(open_store(db), clock=FrozenClock(day(3, 1)))
    memory.ingest(event("e1", "Fridays suit me.", occurred_at=day(3, 1)))
    memory.close()
    done = CliRunner().invoke(app, ["status", "--db", db, "--tenant", TENANT, "--json"])
    assert done.exit_code == 0, done.output
    body = json.loads(done.output)
    assert body["extraction"]["queued_jobs"] == 1 and body["index_lag_rows"] == 0
    table = CliRunner().invoke(app, ["status", "--db", db])
    assert table.exit_code == 0 and "extraction jobs queued" in table.output


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=60), st.sampled_from([0.5, 0.95, 0.99]))
def test_quantile_is_the_nearest_rank(values: list[float], q: float) -> None:
    ordered = sorted(values)
    expected = ordered[max(1, math.ceil(round(q * len(values), 9))) - 1]
    assert quantile(values, q) == expected
    assert quantile([], q) is None


def test_a_scrape_with_the_store_down_says_so_and_does_not_fail() -> None:
    from memledger.api._metrics import Metrics
    from memledger.errors import StoreError

    def down() -> object:
        raise StoreError("the store is down")

    text = Metrics(freshness=down).text().decode()  # type: ignore[arg-type]
    assert "memledger_freshness_up 0.0" in text
    assert "memledger_extraction_backlog_jobs" not in text
