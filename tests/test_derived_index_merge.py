"""The SQLite index keeps its FTS5 tables in few segments: the indexer's syncs merge
them in bounded steps, a read's catch-up never does, and merging changes no result."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memledger import Memory
from memledger.errors import StoreLockedError
from memledger.index._fts import table_name
from memledger.index._sqlite_merge import segments
from memledger.index.catchup import CatchUp, catch_up, feed
from memledger.index.derived import DerivedIndex
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import TENANT, actor, day, event
from memledger.write.worker import episode_of

WORDS = (
    "cat violin budget sourdough garden train museum river coffee bicycle piano "
    "lantern meadow harbour chess pepper thunder orchard canyon ferry"
).split()
SUBJECTS = ("ada", "bo", "cy")
TURNS = 100
QUERIES = ("violin budget", "pepper coffee river", "chess", "orchard ferry canyon lantern")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """A store of :data:`TURNS` conversation turns, three subjects, one tenant."""
    memory = Memory(open_store(f"sqlite:///{tmp_path / 'm.db'}"), clock=FrozenClock(day(10, 2)))
    for n in range(TURNS):
        subject = SUBJECTS[n % len(SUBJECTS)]
        text = " ".join(WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(4 + n % 5))
        source = replace(
            event(
                f"e{n}",
                f"turn {n}: {text}",
                occurred_at=day(9, 1 + n // 24, n % 24),
                who=actor(actor_id=subject),
                subject=subject,
                tenant=TENANT,
            ),
            metadata={"session": f"{subject}-s{n // 30}"},
        )
        memory.ingest(source, [episode_of(source)])
    yield memory
    memory.close()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[DerivedIndex]:
    index = DerivedIndex(tmp_path / "m.index")
    yield index
    index.close()


def counts(index: DerivedIndex) -> list[int]:
    """The segments of the tenant's two FTS5 tables (words, windows)."""
    return [segments(index._conn, table_name(TENANT, kind)) for kind in ("fts", "win")]


def marked(index: DerivedIndex) -> list[str]:
    return [t for (t,) in index._conn.execute("SELECT tenant FROM unmerged")]


def results(index: DerivedIndex) -> list[list[tuple[str, float]]]:
    """Every query's hits with their scores: tenant-wide and subject-scoped, on each
    table."""
    found = []
    for query in QUERIES:
        for windows in (False, True):
            for subjects in (None, ["ada"], ["bo", "cy"]):
                hits = index.search(query, tenant=TENANT, k=10, subjects=subjects, windows=windows)
                found.append([(h.memory_id, h.score) for h in hits])
    return found


def test_the_indexers_syncs_leave_few_segments(memory: Memory, index: DerivedIndex) -> None:
    for _ in range(TURNS // 10):  # the indexer's rounds: many small transactions each
        index.sync(memory.store, batch=2, limit=10)
    assert index.status().entries == TURNS
    assert max(counts(index)) <= 2
    assert marked(index) == []


def test_a_reads_catch_up_never_merges_and_the_next_sync_does(
    memory: Memory, index: DerivedIndex
) -> None:
    bound = CatchUp(seconds=60, rows=TURNS, batch=2)
    assert catch_up(index, memory.store, tenant=TENANT, bound=bound) == TURNS
    before = counts(index)
    assert min(before) > 4  # what a feed of small transactions leaves unmerged
    assert marked(index) == [TENANT]
    feed(index, memory.store, rows=TURNS)  # the indexer: the rows were applied, it merges
    assert max(counts(index)) <= 2
    assert marked(index) == []


def test_merging_changes_no_hit_and_no_score(memory: Memory, index: DerivedIndex) -> None:
    index.sync(memory.store, batch=2, merge=False)
    assert min(counts(index)) > 4
    unmerged = results(index)
    assert sum(map(len, unmerged)) > 50
    index._merge_segments()
    assert max(counts(index)) <= 2
    assert results(index) == unmerged
    index._compact_segments(TENANT)
    assert counts(index) == [1, 1]
    assert results(index) == unmerged


def test_each_sync_merges_a_bounded_number_of_pages(memory: Memory, index: DerivedIndex) -> None:
    index.sync(memory.store, batch=2, merge=False)
    before = counts(index)
    merges: list[str] = []
    index._conn.set_trace_callback(lambda sql: merges.append(sql) if "'merge'" in sql else None)
    index._merge_segments(pages=1)  # one step of each table, and the tenant stays marked
    assert len(merges) == 2
    assert marked(index) == [TENANT]
    assert sum(counts(index)) < sum(before)
    while marked(index):
        index._merge_segments(pages=1)
    assert len(merges) > 2 and max(counts(index)) <= 2


def test_a_rebuild_leaves_one_segment_per_table(memory: Memory, index: DerivedIndex) -> None:
    index.rebuild(memory.store)
    assert counts(index) == [1, 1]
    index.sync(memory.store, batch=2, merge=False)
    index.rebuild_tenant(memory.store, TENANT, batch=2)
    assert counts(index) == [1, 1]
    assert marked(index) == []


def test_a_file_from_before_the_marks_has_every_tenant_merged(
    memory: Memory, index: DerivedIndex, tmp_path: Path
) -> None:
    index.sync(memory.store, batch=2, merge=False)
    index._conn.execute("DROP TABLE unmerged")
    index.close()
    again = DerivedIndex(tmp_path / "m.index")
    try:
        assert marked(again) == [TENANT]
        assert min(counts(again)) > 4
        again.sync(memory.store)
        assert max(counts(again)) <= 2
    finally:
        again.close()


def test_a_merge_that_cannot_write_says_so_and_keeps_the_tenant_marked(
    memory: Memory, index: DerivedIndex, tmp_path: Path
) -> None:
    index.sync(memory.store, batch=2, merge=False)
    before = counts(index)
    index._conn.execute("PRAGMA busy_timeout = 0")
    other = sqlite3.connect(tmp_path / "m.index", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing the file
    try:
        with pytest.raises(StoreLockedError, match="index file gave up waiting for the lock"):
            index._merge_segments()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert counts(index) == before and marked(index) == [TENANT]
    index._merge_segments()
    assert max(counts(index)) <= 2 and marked(index) == []
