"""A burst of writes leaves the derived index behind: a read applies only its bound of
the backlog and still answers exactly (revision floor, overlay, recheck), says how far
behind the index is, and the worker catches the index up; on real SQLite files and a
real PostgreSQL server, over the library, the HTTP API and the command line."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import httpx
import pytest
from typer.testing import CliRunner

from embedder_helpers import HashingWrapper
from mcp_helpers import http_client, payload, serving
from memledger import Memory, Receipt
from memledger.api import create_app
from memledger.cli import app
from memledger.errors import InvalidInputError, StoreLockedError
from memledger.index._base import Embedder
from memledger.index.backends import Index
from memledger.index.catchup import CatchUp
from memledger.index.derived import DerivedIndex, default_index_path
from memledger.index.embedders import Vectors, default_embedder
from memledger.index.postgres import PostgresIndex
from memledger.serve import BackgroundWorker, ServeConfig, build_app
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.http import serve
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref
from memledger.write.worker import WorkerSettings

BURST = 400
"""Writes in the burst: two outbox rows each (the new value, the old one closed)."""
BOUND = 100
"""Rows a read may apply: an eighth of the burst's backlog."""
QUERY = "what delivery plan is my digest on?"
"""Names the family (its overlay) and matches every value's words (its stale entries)."""


def _open(url: str, folder: Path, *, embedder: Embedder | None = None) -> Memory:
    store = open_store(url)
    if url.startswith("postgresql://"):
        index: Index = PostgresIndex(store, namespace="ix_backlog", embedder=embedder)
    else:
        index = DerivedIndex(folder / "m.db.index", embedder=embedder)
    return Memory(store, clock=FrozenClock(day(10, 2)), index=index, catch_up=CatchUp(rows=BOUND))


@pytest.fixture
def memory(backend_url: str, tmp_path: Path) -> Iterator[Memory]:
    """A store of each backend with a lexical index of the same backend; reads apply at
    most :data:`BOUND` rows."""
    opened = _open(backend_url, tmp_path)
    yield opened
    opened.close()


sqlite_only = pytest.mark.parametrize("backend_url", ["sqlite"], indirect=True)


def _burst(memory: Memory, count: int = BURST, *, first: int = 1) -> Receipt:
    """``count`` corrections of the delivery preference, each to a new value."""
    receipt = None
    for n in range(first, first + count):
        receipt = memory.ingest(
            event(f"b{n}", f"Deliver my digest on plan {n}", occurred_at=day(10, 2), sequence=n),
            [pref(f"plan {n}")],
        )
    assert receipt is not None
    return receipt


def _revision(receipt: Receipt) -> int:
    (family,) = receipt.revisions
    return family.revision


def _lag(memory: Memory) -> int:
    return memory.index.lag(memory.store, tenant=TENANT)


def _current(memory: Memory) -> str:
    (record,) = [r for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT) if r.status == "active"]
    return record.memory_id


def test_a_read_after_a_burst_applies_its_bound_and_returns_the_corrected_value(
    memory: Memory,
) -> None:
    memory.ingest(
        event("b0", "Deliver my digest on Fridays", occurred_at=day(10, 2), sequence=0),
        [pref("friday")],
    )
    memory.index.sync(memory.store)
    (friday,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    floor = _revision(_burst(memory))
    backlog = _lag(memory)
    assert backlog == 2 * BURST  # a full catch-up is eight reads' bound

    found = memory.recall(QUERY, tenant=TENANT, subject=SUBJECT, min_revision=floor)

    assert backlog - _lag(memory) == BOUND  # the read applied its bound, no more
    assert found.index_lag == _lag(memory) == backlog - BOUND
    ids = [item.record.memory_id for item in found.items]
    assert ids[0] == _current(memory)  # the corrected value, from the canonical slot
    assert "slot" in found.items[0].sources
    assert [item.record.value for item in found.items] == [f"plan {BURST}"]
    assert friday.memory_id not in ids
    # the index still holds the value the applied rows left current: the recheck drops it
    stale = {h.memory_id for h in memory.index.search(QUERY, tenant=TENANT, k=50)}
    (held,) = [memory.get(memory_id, tenant=TENANT) for memory_id in stale]
    assert (held.value, held.status) == (f"plan {BOUND // 2}", "superseded")
    assert {e.memory_id: e.reason for e in found.excluded}[held.memory_id] == "superseded"


def test_a_read_that_applies_nothing_still_meets_its_floor(memory: Memory) -> None:
    memory.catch_up = CatchUp(rows=0)
    memory.ingest(
        event("b0", "Deliver my digest on Fridays", occurred_at=day(10, 2), sequence=0),
        [pref("friday")],
    )
    memory.index.sync(memory.store)
    floor = _revision(_burst(memory, 50))

    found = memory.recall(QUERY, tenant=TENANT, subject=SUBJECT, min_revision=floor)
    packet = memory.context(QUERY, tenant=TENANT, subject=SUBJECT)

    assert found.index_lag == packet.index_lag == _lag(memory) == 100  # nothing applied
    assert [item.record.memory_id for item in found.items] == [_current(memory)]
    assert [item.memory_id for item in packet.memories] == [_current(memory)]
    assert packet.to_dict()["index_lag"] == 100


def test_a_revoked_value_never_comes_back_through_a_lagging_index(memory: Memory) -> None:
    receipt = memory.ingest(
        event("b0", "Deliver my digest on Fridays", occurred_at=day(10, 2), sequence=0),
        [pref("friday")],
    )
    memory.index.sync(memory.store)
    (friday,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    for n in range(1, 601):  # other subjects' burst: backlog ahead of the revocation
        memory.ingest(
            event(f"o{n}", f"Digest plan {n}", occurred_at=day(10, 2), subject=f"user-{n}"),
            [pref(f"plan {n}")],
        )
    memory.revoke_family(SUBJECT, FAMILY, tenant=TENANT, reason="not hers")
    assert receipt.results[0].memory_id == friday.memory_id

    for subject in (SUBJECT, None):
        found = memory.recall(QUERY, tenant=TENANT, subject=subject, k=50)
        assert friday.memory_id not in {i.record.memory_id for i in found.items}
        assert found.index_lag > 0  # the revocation's row is past what the reads applied
    packet = memory.context(QUERY, tenant=TENANT, subject=SUBJECT)
    assert friday.memory_id not in {item.memory_id for item in packet.memories}
    assert packet.index_lag is not None and packet.index_lag > 0
    hits = {h.memory_id for h in memory.index.search("friday", tenant=TENANT, k=50)}
    assert friday.memory_id in hits  # the stale entry is there; the recheck refused it
    assert "friday" not in memory.context(QUERY, tenant=TENANT, subject=SUBJECT).text.lower()


def test_an_erasure_behind_a_burst_still_leaves_nothing_in_the_index(memory: Memory) -> None:
    """Erasure is not a read: its index step applies the whole backlog, however long,
    so the erased words leave the index file, and no read brings them back."""
    memory.ingest(
        event("b0", "Deliver my digest on Fridays", occurred_at=day(10, 2), sequence=0),
        [pref("friday")],
    )
    memory.index.sync(memory.store)
    _burst(memory)  # the erasure's own rows come after all of these
    memory.erase(tenant=TENANT, subject=SUBJECT)
    assert _lag(memory) == 0
    assert memory.index.search("friday plan delivery", tenant=TENANT, k=50) == []
    found = memory.recall("friday digest delivery plan", tenant=TENANT, subject=SUBJECT, k=50)
    assert found.items == () and found.index_lag == 0


class _SlowEmbedder(HashingWrapper):
    """The hashing embedder taking :data:`PAUSE` seconds for every batch it embeds."""

    PAUSE = 0.05

    def embed(self, texts: Sequence[str]) -> Vectors:
        time.sleep(self.PAUSE)
        return super().embed(texts)


def test_a_read_spends_at_most_its_time_budget_on_the_backlog(
    backend_url: str, tmp_path: Path
) -> None:
    memory = _open(backend_url, tmp_path, embedder=_SlowEmbedder())
    try:
        _burst(memory, 200)
        backlog = _lag(memory)
        memory.catch_up = CatchUp(seconds=0.1, rows=10_000, batch=20)

        found = memory.recall(QUERY, tenant=TENANT, subject=SUBJECT)

        applied = backlog - found.index_lag
        # the first step always runs; each takes at least PAUSE: no third begins in 0.1 s
        assert 20 <= applied <= 40 and found.index_lag == _lag(memory)
        assert [item.record.value for item in found.items][:1] == ["plan 200"]
    finally:
        memory.close()


def test_a_read_past_its_time_budget_still_applies_one_step(memory: Memory) -> None:
    _burst(memory, 50)
    memory.catch_up = CatchUp(seconds=1e-9, rows=1000, batch=10)  # over before it begins
    found = memory.recall(QUERY, tenant=TENANT, subject=SUBJECT)
    assert found.index_lag == 99 - 10 == _lag(memory)  # one step: reads always move it on


def _frontend(memory: Memory) -> httpx.Client:
    _, token = memory.create_key(TENANT, SUBJECT, grants=[FAMILY])
    return httpx.Client(headers={"Authorization": f"Bearer {token}"}, trust_env=False, timeout=30)


@sqlite_only
def test_recall_and_context_over_http_say_how_far_behind_the_index_is(memory: Memory) -> None:
    memory.ingest(
        event("b0", "Deliver my digest on Fridays", occurred_at=day(10, 2), sequence=0),
        [pref("friday")],
    )
    memory.index.sync(memory.store)
    _burst(memory)
    with serve(create_app(memory)) as url, _frontend(memory) as http:
        recalled = http.post(f"{url}/v1/recall", json={"query": QUERY, "subject": SUBJECT})
        packet = http.post(f"{url}/v1/context", json={"request": QUERY, "subject": SUBJECT})
    assert recalled.status_code == 200 and packet.status_code == 200, packet.text
    assert recalled.json()["index_lag"] == 2 * BURST - BOUND
    assert packet.json()["index_lag"] == 2 * BURST - 2 * BOUND == _lag(memory)
    (item,) = [i for i in packet.json()["items"] if i["section"] == "memories"]
    assert item["memory_id"] == _current(memory)


@sqlite_only
def test_recall_and_context_over_mcp_say_how_far_behind_the_index_is(memory: Memory) -> None:
    _burst(memory)
    _, token = memory.create_key(TENANT, SUBJECT, grants=[FAMILY])
    lags: list[int] = []

    async def main(url: str) -> None:
        async with http_client(url, token) as client:
            recalled = await client.call_tool("recall", {"query": QUERY, "subject": SUBJECT})
            packet = await client.call_tool("context", {"request": QUERY, "subject": SUBJECT})
            lags.extend((payload(recalled)["index_lag"], payload(packet)["index_lag"]))
            assert payload(packet)["memories"][0]["memory_id"] == _current(memory)

    with serving(build_app(memory, ServeConfig(web=False))) as base:
        anyio.run(main, f"{base}/mcp")
    assert lags == [2 * BURST - 1 - BOUND, 2 * BURST - 1 - 2 * BOUND] and lags[1] == _lag(memory)


def test_the_background_worker_catches_the_index_up(memory: Memory) -> None:
    _burst(memory)
    assert _lag(memory) == 2 * BURST - 1  # (the first value closes nothing)
    worker = BackgroundWorker(
        memory,
        FunctionExtractor(lambda source: []),
        settings=WorkerSettings(index_rows=150),
        poll=0.05,
    )
    worker.start()
    try:
        deadline = time.monotonic() + 15
        while memory.index.lag(memory.store) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        report = worker.stop()
    assert memory.index.lag(memory.store) == _lag(memory) == 0
    assert report.indexed == 2 * BURST - 1 and report.errors == []
    found = memory.recall(QUERY, tenant=TENANT, subject=SUBJECT, sync=False)
    assert found.index_lag == 0 and found.items[0].record.value == f"plan {BURST}"


@sqlite_only
def test_a_locked_index_file_is_a_store_error_and_nothing_is_applied(memory: Memory) -> None:
    """The worker takes a busy index for a round to skip (it catches StoreError): a
    sync that cannot get the file's write lock raises StoreLockedError, not SQLite's
    own error, and applies nothing; once the lock is gone the next sync applies all."""
    _burst(memory)
    index = memory.index
    assert isinstance(index, DerivedIndex)
    lag = _lag(memory)
    holder = sqlite3.connect(index.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreLockedError, match="index file gave up waiting for the lock"):
            index.sync(memory.store)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert index.lag(memory.store) == lag
    assert index.sync(memory.store) == lag and index.lag(memory.store) == 0


def test_the_global_lag_counts_what_each_tenants_own_syncs_applied(memory: Memory) -> None:
    for tenant in (TENANT, "globex"):
        for n in range(30):  # one outbox row each: a new subject's first value
            memory.ingest(
                event(
                    f"{tenant}-{n}", "Plan", occurred_at=day(10, 2), subject=f"u{n}", tenant=tenant
                ),
                [pref(f"plan {n}")],
            )
    index = memory.index
    assert index.lag(memory.store) == 60 and memory.freshness().index_lag == 60
    memory.recall(QUERY, tenant=TENANT, subject=SUBJECT)  # all of acme's 30: within BOUND
    assert index.lag(memory.store) == 30 and index.lag(memory.store, tenant=TENANT) == 0
    index.sync(memory.store, tenant="globex", limit=25)
    assert index.lag(memory.store) == 5 == index.lag(memory.store, tenant="globex")
    index.sync(memory.store, tenant="globex")
    assert index.cursor == 0  # no sync of every tenant ran, yet nothing is pending
    assert index.lag(memory.store) == 0 and memory.freshness().index_lag == 0
    memory.ingest(event("late", "Plan late", occurred_at=day(10, 2)), [pref("late")])
    assert index.lag(memory.store) == 1
    index.sync(memory.store)  # (it reads past the rows the tenants' syncs applied)
    assert index.lag(memory.store) == 0 and index.cursor > 0


def test_status_on_the_command_line_shows_no_lag_once_reads_caught_up(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    index = DerivedIndex(default_index_path(open_store(db)), embedder=default_embedder())
    memory = Memory(open_store(db), clock=FrozenClock(day(10, 2)), index=index)
    _burst(memory, 20)
    memory.recall(QUERY, tenant=TENANT, subject=SUBJECT)  # within its bound: all 40 rows
    memory.close()
    done = CliRunner().invoke(app, ["status", "--db", str(db), "--json"], env={})
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["index_lag_rows"] == 0


@pytest.mark.parametrize(
    "options",
    [
        {"seconds": -0.1},
        {"seconds": float("nan")},
        {"seconds": float("inf")},
        {"seconds": True},
        {"seconds": "0.1"},
        {"rows": -1},
        {"rows": 1.5},
        {"batch": 0},
        {"batch": False},
    ],
)
def test_a_bad_bound_is_refused(options: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        CatchUp(**options)  # type: ignore[arg-type]


def test_a_bad_bound_or_worker_step_is_refused_by_what_takes_them(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    with pytest.raises(InvalidInputError, match="catch_up must be a CatchUp"):
        Memory(store, catch_up=0.1)  # type: ignore[arg-type]
    store.close()
    for bad in (-1, True, 2.0):
        with pytest.raises(InvalidInputError, match="index_rows"):
            WorkerSettings(index_rows=bad)  # type: ignore[arg-type]


def test_threads_reading_during_a_burst_stay_within_their_bound(tmp_path: Path) -> None:
    """Reads on several threads while writes go on: each read applies at most its bound
    (the lag it reports never runs ahead of the writes), and every read meets the floor
    of the write that came before it."""
    memory = Memory(
        open_store(tmp_path / "m.db"),
        clock=FrozenClock(day(10, 2)),
        index=DerivedIndex(tmp_path / "m.db.index", embedder=None),
        catch_up=CatchUp(rows=20),
    )
    errors: list[str] = []
    done = threading.Event()
    floors: list[tuple[int, str]] = []

    def read() -> None:
        while not done.is_set():
            if not floors:
                continue
            floor, value = floors[-1]
            found = memory.recall(QUERY, tenant=TENANT, subject=SUBJECT, min_revision=floor)
            top = found.items[0].record.value if found.items else None
            number = int(str(top).split()[-1]) if top else -1
            if number < int(value.split()[-1]):
                errors.append(f"floor {floor}: got {top!r}, wanted {value!r} or later")

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for n in range(1, 201):
            receipt = _burst(memory, 1, first=n)
            floors.append((_revision(receipt), f"plan {n}"))
    finally:
        done.set()
        for reader in readers:
            reader.join()
        memory.close()
    assert errors == []
