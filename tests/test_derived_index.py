"""The derived index on real SQLite files: fed from the outbox, lagging, rebuilt; lexical
and vector search per tenant, degradation when the embedder fails, threads of turns."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from embedder_helpers import HashingWrapper
from index_helpers import entries
from memledger import Claim, InvalidQueryError, Memory
from memledger.errors import EmbedderError, InvalidInputError
from memledger.index._vectors import median
from memledger.index.derived import DerivedIndex, IndexStatus, default_index_path
from memledger.index.embedders import CachedEmbedder, HashingEmbedder, Vectors
from memledger.index.lexical import entry_text, query_terms
from memledger.index.postgres import PostgresIndex
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import (
    FAMILY,
    SUBJECT,
    TENANT,
    UNGRANTED,
    actor,
    day,
    event,
    pref,
)
from memledger.write.worker import episode_of

AnyIndex: TypeAlias = DerivedIndex | PostgresIndex


@pytest.fixture
def memory(backend_url: str) -> Iterator[Memory]:
    """A store of each backend; its index (:func:`index_at`) is of the same backend."""
    memory = Memory(open_store(backend_url), clock=FrozenClock(day(10, 2)))
    yield memory
    memory.close()


sqlite_only = pytest.mark.parametrize("backend_url", ["sqlite"], indirect=True)
"""For what only the SQLite index file has (its file, vectors held in memory, pruning)."""


def index_at(memory: Memory, folder: Path, name: str, **options: Any) -> AnyIndex:
    """The index ``name`` over ``memory``'s store: a file in ``folder`` beside a SQLite
    store, a schema of its database for PostgreSQL (the same name: the same index)."""
    if memory.store.url.startswith("postgresql://"):
        namespace = "ix_" + re.sub(r"\W", "_", name)
        return PostgresIndex(memory.store, namespace=namespace, **options)
    return DerivedIndex(folder / name, **options)


def entry_rows(index: AnyIndex, tenant: str) -> list[tuple[object, ...]]:
    """``(id, memory_id, changed)`` of each of ``tenant``'s entries, by id."""
    return entries(index, "id, memory_id, changed", "tenant = ? ORDER BY id", (tenant,))


@pytest.fixture
def index(memory: Memory, tmp_path: Path) -> Iterator[AnyIndex]:
    index = index_at(memory, tmp_path, "m.index")
    yield index
    index.close()


def test_sync_follows_the_outbox_and_carries_revisions(memory: Memory, index: AnyIndex) -> None:
    memory.ingest(
        event("e1", "Digest on Fridays", occurred_at=day(10, 2), sequence=1),
        [pref("friday", grounding="on Fridays")],
    )
    assert index.lag(memory.store) == 1 and index.search("friday", tenant=TENANT, k=5) == []
    assert index.sync(memory.store) == 1 and index.lag(memory.store) == 0
    (hit,) = index.search("when is my digest? friday", tenant=TENANT, k=5)
    (record,) = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    assert (hit.memory_id, hit.revision, hit.generation) == (record.memory_id, 1, 0)
    assert hit.score > 0
    assert index.sync(memory.store) == 0  # nothing new: idempotent

    memory.ingest(event("e2", "Daily instead", occurred_at=day(10, 5), sequence=2), [pref("daily")])
    index.sync(memory.store)
    hits = {h.memory_id for h in index.search("friday daily", tenant=TENANT, k=10)}
    assert hits == {r.memory_id for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT)}
    assert record.memory_id not in hits  # the closed record left the index; its remnant came

    memory.revoke_family(SUBJECT, FAMILY, tenant=TENANT)
    index.sync(memory.store)
    assert index.search("friday daily", tenant=TENANT, k=10) == []


def test_an_observation_gets_no_entry_so_it_takes_no_candidates_place(
    memory: Memory, index: AnyIndex
) -> None:
    # said without a grant: kept as an observation, which recall can never return
    receipt = memory.ingest(
        event("e1", "Digest on Fridays", occurred_at=day(10, 2), sequence=1, who=UNGRANTED),
        [pref("friday", grounding="on Fridays")],
    )
    assert [r.disposition for r in receipt.results] == ["observation"]
    memory.ingest(
        event("e2", "Digest on Fridays, please", occurred_at=day(10, 3), sequence=2),
        [pref("friday", grounding="on Fridays")],
    )
    index.sync(memory.store)
    records = memory.timeline(SUBJECT, FAMILY, tenant=TENANT)
    (current,) = [r for r in records if r.kind != "observation"]
    assert [h.memory_id for h in index.search("friday", tenant=TENANT, k=5)] == [current.memory_id]
    assert [r[1] for r in entry_rows(index, TENANT)] == [current.memory_id]
    index.rebuild(memory.store)
    assert [r[1] for r in entry_rows(index, TENANT)] == [current.memory_id]


def test_a_lagging_index_still_serves_what_it_has(memory: Memory, index: AnyIndex) -> None:
    memory.ingest(
        event("e1", "Digest on Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")]
    )
    index.sync(memory.store)
    memory.ingest(event("e2", "Daily instead", occurred_at=day(10, 5), sequence=2), [pref("daily")])
    assert index.lag(memory.store) > 0
    (stale,) = index.search("friday", tenant=TENANT, k=5)  # the read path must recheck this
    assert memory.get(stale.memory_id, tenant=TENANT).status == "superseded"


def test_rebuild_gives_the_same_answers(memory: Memory, index: AnyIndex) -> None:
    for n, value in enumerate(["friday", "daily", "monday"], start=1):
        memory.ingest(
            event(f"e{n}", f"Send it {value}", occurred_at=day(10, n), sequence=n), [pref(value)]
        )
    index.sync(memory.store)
    before = index.search("friday daily monday", tenant=TENANT, k=10)
    assert index.rebuild(memory.store) > 0
    assert index.search("friday daily monday", tenant=TENANT, k=10) == before
    assert index.cursor > 0 and index.lag(memory.store) == 0


def test_bad_queries() -> None:
    assert query_terms("What is the, of it?") == []
    assert query_terms("Where does Anna live, Anna?") == ["anna", "live"]


def test_bad_k(index: AnyIndex) -> None:
    with pytest.raises(InvalidQueryError):
        index.search("friday", tenant=TENANT, k=0)


texts = st.lists(
    st.lists(
        st.sampled_from(["digest", "friday", "daily", "sushi", "berlin", "plan", "trip"]),
        min_size=1,
        max_size=4,
    ).map(" ".join),
    min_size=1,
    max_size=5,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(shared=texts, others=texts)
def test_another_tenants_documents_never_change_a_tenants_scores(
    tmp_path_factory: pytest.TempPathFactory, shared: list[str], others: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("iso")
    results = []
    for with_others in (False, True):
        memory = Memory(open_store(folder / f"m{with_others}.db"), clock=FrozenClock(day(10, 1)))
        for tenant, docs in (
            ("acme", shared),
            ("globex", shared + (others if with_others else [])),
        ):
            for n, text in enumerate(docs):
                memory.ingest(
                    event(f"e{n}", text, occurred_at=day(10, 1), tenant=tenant),
                    [
                        Claim(
                            family="conversation",
                            kind="episode",
                            statement=text,
                            value={"text": text, "speaker": "u"},
                            scope=f"turn:e{n}",
                        )
                    ],
                )
        index = DerivedIndex(folder / f"i{with_others}.index")
        index.sync(memory.store)
        results.append(index.search("digest friday sushi trip", tenant="acme", k=10))
        assert all(h.tenant == "acme" for h in results[-1])
        index.close()
        memory.close()
    assert results[0] == results[1]


# -- vectors, degradation, reopening, neighbours ----------------------------------------


class FlakyEmbedder(HashingWrapper):
    """The hashing embedder, except that it raises while ``failing`` is set."""

    def __init__(self, *, failing: bool = True) -> None:
        super().__init__()
        self.failing = failing
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.failing:
            raise EmbedderError("embedding service did not answer", reason="unreachable")
        return self.inner.embed(texts)


def turn(
    memory: Memory,
    event_id: str,
    text: str,
    *,
    at: datetime,
    session: str = "s1",
    speaker: str = SUBJECT,
    subject: str = SUBJECT,
    tenant: str = TENANT,
) -> str:
    """Commit one conversation turn as the worker would (``episode_of``); its memory id."""
    source = replace(
        event(
            event_id,
            text,
            occurred_at=at,
            who=actor(actor_id=speaker),
            subject=subject,
            tenant=tenant,
        ),
        metadata={"session": session},
    )
    (result,) = memory.ingest(source, [episode_of(source)]).results
    assert result.memory_id is not None
    return result.memory_id


TEXTS = (
    "We adopted a grey cat called Pepper from the shelter",
    "The quarterly budget review moved to Thursday afternoon",
    "My sister plays the violin in the city orchestra",
    "I am learning to bake sourdough bread on weekends",
)


def turns(memory: Memory, *, tenant: str = TENANT, subject: str = SUBJECT) -> list[str]:
    return [
        turn(
            memory,
            f"{tenant}-{subject}-{n}",
            text,
            at=day(10, 1, 9 + n),
            tenant=tenant,
            subject=subject,
        )
        for n, text in enumerate(TEXTS)
    ]


@pytest.fixture
def hashed(memory: Memory, tmp_path: Path) -> Iterator[AnyIndex]:
    index = index_at(memory, tmp_path, "v.index", embedder=HashingEmbedder())
    yield index
    index.close()


def entry_of(memory: Memory, memory_id: str, *, tenant: str = TENANT) -> str:
    return entry_text(memory.get(memory_id, tenant=tenant))


def test_every_entry_gets_a_vector_and_the_nearest_is_the_same_text(
    memory: Memory, hashed: AnyIndex
) -> None:
    ids = turns(memory)
    hashed.sync(memory.store)
    status = hashed.status()
    assert status.entries == len(TEXTS) and status.vectors == status.entries
    assert status.embedder == HashingEmbedder().name and status.degraded is None
    for memory_id in ids:
        hits = hashed.search_vectors(entry_of(memory, memory_id), tenant=TENANT, k=2)
        assert hits[0].memory_id == memory_id
        assert hits[0].cosine == pytest.approx(1.0, abs=1e-5)
        assert hits[0].score > hits[1].score
    hits = hashed.search_vectors(TEXTS[0], tenant=TENANT, k=len(TEXTS))
    cosines = [h.cosine for h in hits if h.cosine is not None]
    assert len(cosines) == len(hits) == len(TEXTS)
    assert cosines == sorted(cosines, reverse=True)
    median = float(np.median(cosines))  # score: how much nearer than a typical entry
    assert [h.score for h in hits] == pytest.approx([c - median for c in cosines])


def test_vector_search_reads_only_the_tenants_own_rows(memory: Memory, hashed: AnyIndex) -> None:
    acme = set(turns(memory, tenant="acme"))
    globex = set(turns(memory, tenant="globex"))
    hashed.sync(memory.store)
    query = "a cat from the shelter and the violin"

    def scored(tenant: str) -> list[tuple[float, float | None]]:
        hits = hashed.search_vectors(query, tenant=tenant, k=10)
        assert {h.tenant for h in hits} == {tenant}
        assert {h.memory_id for h in hits} == (acme if tenant == "acme" else globex)
        return [(h.score, h.cosine) for h in hits]

    before = scored("acme")
    assert before == scored("globex")  # same texts, same scores
    turn(
        memory,
        "globex-extra",
        "Pepper the cat sleeps on the violin case",
        at=day(10, 2),
        tenant="globex",
    )
    hashed.sync(memory.store)
    assert scored("acme") == before  # another tenant's rows never move a tenant's scores
    assert hashed.search_vectors(query, tenant="initech", k=10) == []


def test_vector_search_filters_subjects_and_checks_k(memory: Memory, hashed: AnyIndex) -> None:
    mine = set(turns(memory, subject="user-42"))
    theirs = set(turns(memory, subject="user-7"))
    hashed.sync(memory.store)
    query = TEXTS[2]
    only = hashed.search_vectors(query, tenant=TENANT, k=10, subjects=["user-7"])
    assert {h.memory_id for h in only} == theirs and {h.subject for h in only} == {"user-7"}
    both = hashed.search_vectors(query, tenant=TENANT, k=10, subjects=["user-7", "user-42"])
    assert {h.memory_id for h in both} == mine | theirs
    assert hashed.search_vectors(query, tenant=TENANT, k=10, subjects=["nobody"]) == []
    assert len(hashed.search_vectors(query, tenant=TENANT, k=3)) == 3
    for k in (0, -1, 1.5, True, "3"):
        with pytest.raises(InvalidQueryError, match="k must"):
            hashed.search_vectors(query, tenant=TENANT, k=k)  # type: ignore[arg-type]
        with pytest.raises(InvalidQueryError, match="k must"):
            hashed.search(query, tenant=TENANT, k=k)  # type: ignore[arg-type]


def test_subjects_that_hold_every_row_score_each_row_by_its_own_vector(
    memory: Memory, hashed: AnyIndex
) -> None:
    """Subjects whose rows interleave, asked for in any order, covering every row: each
    hit keeps its own cosine, as in a tenant-wide search."""
    for n, text in enumerate(TEXTS):
        subject = "user-7" if n % 2 else "user-42"
        turn(memory, f"x{n}", text, at=day(10, 1, 9 + n), subject=subject, speaker=subject)
    hashed.sync(memory.store)
    query = TEXTS[2]
    everyone = hashed.search_vectors(query, tenant=TENANT, k=10)
    for subjects in (["user-7", "user-42"], ["user-42", "user-7"]):
        hits = hashed.search_vectors(query, tenant=TENANT, k=10, subjects=subjects)
        assert hits == everyone
        for hit in hits:
            q, own = HashingEmbedder().embed([query, entry_of(memory, hit.memory_id)])
            assert hit.cosine == pytest.approx(float(q @ own), abs=1e-5)


def test_a_lexical_index_has_no_vectors_to_search(memory: Memory, index: AnyIndex) -> None:
    turns(memory)
    index.sync(memory.store)
    status = index.status()
    assert (status.vectors, status.embedder, status.degraded) == (0, None, None)
    assert status.entries == len(TEXTS)
    with pytest.raises(EmbedderError) as raised:
        index.search_vectors("cat", tenant=TENANT, k=5)
    assert raised.value.reason == "unavailable"


def test_a_failing_embedder_degrades_to_lexical_and_a_later_sync_backfills(
    memory: Memory, tmp_path: Path
) -> None:
    flaky = FlakyEmbedder()
    ids = turns(memory)
    with index_at(memory, tmp_path, "f.index", embedder=flaky) as index:
        assert index.sync(memory.store) == len(TEXTS)
        status = index.status()
        assert (status.entries, status.vectors) == (len(TEXTS), 0)
        assert status.degraded is not None and "unreachable" in status.degraded
        assert index.glance(TENANT).degraded == status.degraded
        assert index.lag(memory.store) == 0  # the cursor moved on: lexical entries are there
        (hit,) = index.search("violin orchestra", tenant=TENANT, k=5)
        assert hit.memory_id == ids[2]
        with pytest.raises(EmbedderError):  # the query cannot be embedded either
            index.search_vectors("violin", tenant=TENANT, k=5)
        later = turn(memory, "e-later", "The violin lessons start in May", at=day(10, 3))
        index.sync(memory.store)  # still failing: still degraded, still lexical
        assert index.status().vectors == 0 and index.status().degraded is not None

        flaky.failing = False
        assert index.sync(memory.store) == 0  # nothing new in the outbox ...
        status = index.status()
        assert status.vectors == status.entries == len(TEXTS) + 1  # ... but vectors backfilled
        assert status.degraded is None and index.glance(TENANT).degraded is None
        hits = index.search_vectors(entry_of(memory, later), tenant=TENANT, k=2)
        assert hits[0].memory_id == later
        calls = flaky.calls
        index.sync(memory.store)
        assert flaky.calls == calls  # caught up and healthy: no more embedding


def test_reopening_with_another_embedder_resets_and_refills(memory: Memory, tmp_path: Path) -> None:
    turns(memory)
    path = "r.index"
    with index_at(memory, tmp_path, path, embedder=HashingEmbedder()) as first:
        first.sync(memory.store)
        cursor = first.cursor
        assert cursor > 0
    with index_at(memory, tmp_path, path, embedder=HashingEmbedder()) as same:
        assert same.status() == IndexStatus(
            cursor=cursor,
            entries=len(TEXTS),
            vectors=len(TEXTS),
            embedder=HashingEmbedder().name,
            degraded=None,
        )
        assert same.sync(memory.store) == 0
    for embedder in (HashingEmbedder(dimensions=64), None, HashingEmbedder()):
        with index_at(memory, tmp_path, path, embedder=embedder) as reopened:
            status = reopened.status()
            assert (status.cursor, status.entries, status.vectors) == (0, 0, 0), embedder
            assert reopened.lag(memory.store) == cursor
            assert reopened.sync(memory.store) == cursor
            status = reopened.status()
            assert status.entries == len(TEXTS)
            assert status.vectors == (0 if embedder is None else len(TEXTS))
            if embedder is not None:
                (best, *_) = reopened.search_vectors(TEXTS[1], tenant=TENANT, k=3)
                assert "budget" in entry_of(memory, best.memory_id)


def test_a_cached_embedder_counts_as_an_embedder_even_while_its_cache_is_empty(
    memory: Memory, tmp_path: Path
) -> None:
    """``CachedEmbedder`` has ``__len__`` (0 when empty): the index must not take it for
    ``None``. The CLI and ``Memory.index`` always wrap their embedder in one."""
    turns(memory)
    path = "c.index"
    wide = CachedEmbedder(HashingEmbedder())
    with index_at(memory, tmp_path, path, embedder=wide) as index:
        assert index.status().embedder == wide.name
        index.sync(memory.store)
        cursor = index.cursor
    with index_at(memory, tmp_path, path, embedder=HashingEmbedder()) as same:  # same space
        assert (same.cursor, same.status().embedder) == (cursor, wide.name)
    narrow = CachedEmbedder(HashingEmbedder(dimensions=64))
    with index_at(
        memory, tmp_path, path, embedder=narrow
    ) as switched:  # another space: reset and refilled
        assert (switched.cursor, switched.status().entries) == (0, 0)
        switched.sync(memory.store)
        (best, *_) = switched.search_vectors(TEXTS[1], tenant=TENANT, k=3)
        assert "budget" in entry_of(memory, best.memory_id)


@sqlite_only
def test_a_file_of_another_schema_is_reset_on_open(memory: Memory, tmp_path: Path) -> None:
    turns(memory)
    path = tmp_path / "s.index"
    with DerivedIndex(path) as index:
        index.sync(memory.store)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    conn.close()
    with DerivedIndex(path) as index:
        assert (index.cursor, index.status().entries) == (0, 0)
        index.sync(memory.store)
        assert index.status().entries == len(TEXTS)


def test_progress_counts_up_to_the_total(memory: Memory, hashed: AnyIndex) -> None:
    turns(memory)
    turns(memory, subject="user-7")
    with memory.store.read() as unit:
        head = unit.outbox_head()
    calls: list[tuple[int, int]] = []
    assert hashed.sync(memory.store, batch=3, progress=lambda d, t: calls.append((d, t))) == head
    assert calls == [(3, head), (6, head), (head, head)]
    rebuilt: list[tuple[int, int]] = []
    assert hashed.rebuild(memory.store, progress=lambda d, t: rebuilt.append((d, t))) == head
    assert rebuilt and rebuilt[-1] == (head, head)
    done = [d for d, _ in rebuilt]
    assert done == sorted(done) and all(t == head for _, t in rebuilt)
    reindexed: list[tuple[int, int]] = []
    memory_index = Memory(memory.store, index=hashed)
    assert memory_index.reindex(progress=lambda d, t: reindexed.append((d, t))) == head
    assert reindexed[-1] == (head, head)


def test_rebuild_answers_like_incremental_sync_vectors_included(
    memory: Memory, tmp_path: Path
) -> None:
    incremental = index_at(memory, tmp_path, "inc.index", embedder=HashingEmbedder())
    rebuilt = index_at(memory, tmp_path, "reb.index", embedder=HashingEmbedder())
    try:
        for n, value in enumerate(["friday", "daily", "monday"], start=1):
            memory.ingest(
                event(f"p{n}", f"Send it {value}", occurred_at=day(10, n), sequence=n),
                [pref(value)],
            )
            turn(memory, f"t{n}", f"Digest talk number {n}: {value}", at=day(10, n, 13))
            incremental.sync(memory.store)
        rebuilt.rebuild(memory.store)
        for query in ("friday daily monday", "digest talk monday"):
            assert rebuilt.search(query, tenant=TENANT, k=10) == incremental.search(
                query, tenant=TENANT, k=10
            )
            assert rebuilt.search_vectors(query, tenant=TENANT, k=10) == (
                incremental.search_vectors(query, tenant=TENANT, k=10)
            )
        assert rebuilt.status() == incremental.status()
    finally:
        incremental.close()
        rebuilt.close()


def test_another_handle_sees_a_rebuild_made_elsewhere(memory: Memory, tmp_path: Path) -> None:
    """A server's open index must not keep serving vectors or names cached before a
    ``memledger reindex`` run by another process rebuilt the same file."""
    path = "shared.index"
    first = turn(memory, "e1", "We adopted a grey cat called Pepper", at=day(10, 1))
    with index_at(memory, tmp_path, path, embedder=HashingEmbedder()) as serving:
        serving.sync(memory.store)
        assert [h.memory_id for h in serving.search_vectors("cat", tenant=TENANT, k=5)] == [first]
        assert serving.names(TENANT) == {SUBJECT}
        second = turn(memory, "e2", "Melanie has a cat too", at=day(10, 2), speaker="melanie")
        with index_at(memory, tmp_path, path, embedder=HashingEmbedder()) as reindex:
            reindex.rebuild(memory.store)
        lexical = {h.memory_id for h in serving.search("cat", tenant=TENANT, k=5)}
        vectors = {h.memory_id for h in serving.search_vectors("cat", tenant=TENANT, k=5)}
        assert lexical == {first, second}
        assert vectors == lexical
        assert serving.names(TENANT) == {SUBJECT, "melanie"}
        # a name whose only entry left is forgotten once another handle rebuilds
        memory.revoke(second, tenant=TENANT, reason="not hers")
        with index_at(memory, tmp_path, path, embedder=HashingEmbedder()) as reindex:
            reindex.rebuild(memory.store)
        assert serving.names(TENANT) == {SUBJECT}


def test_neighbours_are_the_turns_of_the_same_thread_in_time_order(
    memory: Memory, index: AnyIndex
) -> None:
    # s1 turns are ingested out of time order; s2 and another tenant interleave in time
    s1 = {
        hour: turn(memory, f"s1-{hour}", f"first thread at {hour}", at=day(10, 1, hour))
        for hour in (12, 9, 11, 10, 13)
    }
    s2 = [
        turn(memory, f"s2-{hour}", f"second thread at {hour}", at=day(10, 1, hour), session="s2")
        for hour in (9, 10, 11)
    ]
    other = [
        turn(memory, f"o-{hour}", f"other tenant at {hour}", at=day(10, 1, hour), tenant="globex")
        for hour in (10, 11, 12)
    ]
    fact = (
        memory.ingest(
            event("p1", "Fridays", occurred_at=day(10, 1, 11), sequence=1), [pref("friday")]
        )
        .results[0]
        .memory_id
    )
    index.sync(memory.store)
    a, b, c, d, e = (s1[h] for h in (9, 10, 11, 12, 13))

    assert index.neighbours(TENANT, [c], window=1) == {c: [(b, -1), (d, 1)]}
    assert index.neighbours(TENANT, [c], window=2) == {c: [(b, -1), (a, -2), (d, 1), (e, 2)]}
    assert index.neighbours(TENANT, [a, e], window=2) == {
        a: [(b, 1), (c, 2)],
        e: [(d, -1), (c, -2)],
    }
    assert index.neighbours(TENANT, [s2[0]], window=5) == {s2[0]: [(s2[1], 1), (s2[2], 2)]}
    assert index.neighbours("globex", [other[1]], window=5) == {
        other[1]: [(other[0], -1), (other[2], 1)]
    }
    # not an episode, another tenant's id, an unknown id, or no window: nothing
    assert fact is not None
    assert index.neighbours(TENANT, [fact, other[1], "mem-nope"], window=2) == {}
    assert index.neighbours("globex", [c], window=2) == {}
    assert index.neighbours(TENANT, [c], window=0) == {}
    assert index.neighbours(TENANT, [], window=2) == {}


def test_neighbours_of_many_anchors_at_once_are_each_anchors_own(
    memory: Memory, index: AnyIndex
) -> None:
    # one thread with turns sharing a time (ordered by when they were indexed), ingested
    # out of time order, beside another thread of the same subject
    hours = [11, 9, 10, 10, 12, 10, 13, 12, 9]
    thread = [
        turn(memory, f"t-{n}", f"turn {n} at {hour}", at=day(10, 1, hour))
        for n, hour in enumerate(hours)
    ]
    aside = [turn(memory, f"x-{n}", f"aside {n}", at=day(10, 1, 10), session="x") for n in (1, 2)]
    index.sync(memory.store)
    ordered = [m for _, _, m in sorted(zip(hours, range(len(hours)), thread, strict=True))]

    def one_by_one(anchor: str, window: int) -> list[tuple[str, int]]:
        at = ordered.index(anchor)
        before = [(ordered[at - d], -d) for d in range(1, window + 1) if at - d >= 0]
        after = [(ordered[at + d], d) for d in range(1, window + 1) if at + d < len(ordered)]
        return before + after

    for window in (1, 2, 3, 9):
        anchors = [ordered[0], ordered[-1], *ordered[2:6], aside[1]]
        found = index.neighbours(TENANT, [*anchors, "mem-nope", ordered[3]], window=window)
        expected = {a: one_by_one(a, window) for a in anchors if a in ordered}
        expected[aside[1]] = [(aside[0], -1)]
        assert found == expected, window
        if isinstance(index, DerivedIndex):
            assert list(found) == sorted(found)  # in the order of the memory ids


def test_names_are_the_tenants_speakers_and_subjects(memory: Memory, index: AnyIndex) -> None:
    turn(memory, "e1", "hello", at=day(10, 1), speaker="melanie", subject="caroline")
    turn(memory, "e2", "hi there", at=day(10, 1, 13), speaker="caroline", subject="caroline")
    turn(memory, "e3", "secret", at=day(10, 1), speaker="mallory", subject="eve", tenant="globex")
    memory.ingest(event("p1", "Fridays", occurred_at=day(10, 1), sequence=1), [pref("friday")])
    assert index.names(TENANT) == frozenset()
    index.sync(memory.store)
    assert index.names(TENANT) == {"melanie", "caroline", SUBJECT}
    assert index.names("globex") == {"mallory", "eve"}
    assert index.names("initech") == frozenset()
    turn(memory, "e4", "me too", at=day(10, 2), speaker="bob", subject="caroline")
    index.sync(memory.store)  # read incrementally: only what changed since the last call
    assert index.names(TENANT) == {"melanie", "caroline", "bob", SUBJECT}
    index.rebuild(memory.store)
    assert index.names(TENANT) == {"melanie", "caroline", "bob", SUBJECT}
    assert index.names("globex") == {"mallory", "eve"}


def test_a_glance_holds_names_cursor_and_degraded_together(memory: Memory, index: AnyIndex) -> None:
    turn(memory, "e1", "hello", at=day(10, 1), speaker="melanie", subject="caroline")
    turn(memory, "e2", "secret", at=day(10, 1), speaker="mallory", subject="eve", tenant="globex")
    index.sync(memory.store)
    turn(memory, "e3", "hi", at=day(10, 2), speaker="bob", subject="caroline")
    index.sync(memory.store, tenant=TENANT)  # this tenant's cursor moves ahead of the global
    turn(memory, "e4", "later", at=day(10, 3), speaker="eve", subject="eve", tenant="globex")
    for tenant, subject in [(TENANT, None), (TENANT, "caroline"), ("globex", None)]:
        seen = index.glance(tenant, subject=subject)
        assert seen.names == index.names(tenant, subject=subject)
        assert seen.cursor == index.cursor_of(tenant) and seen.degraded == index.degraded
    assert index.glance(TENANT).names == {"melanie", "bob", "caroline"}
    assert index.glance(TENANT).cursor > index.cursor == index.glance("globex").cursor
    turn(memory, "e5", "hey", at=day(10, 4), speaker="dana", subject="caroline")
    index.sync(memory.store)
    assert index.glance(TENANT).names == {"melanie", "bob", "caroline", "dana"}


@dataclass
class UrlOnly:
    url: str


@pytest.mark.parametrize("name", ["m.db", "m#1.db", "notes?v=2.db", "with space.db"])
def test_default_index_path_sits_beside_a_sqlite_store(tmp_path: Path, name: str) -> None:
    store = open_store(tmp_path / name)
    try:
        assert default_index_path(store) == tmp_path / f"{name}.index"
    finally:
        store.close()


def test_default_index_path_of_a_relative_url_and_other_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    relative = UrlOnly("sqlite:///data/m.db")
    assert default_index_path(relative) == Path("data/m.db.index")  # type: ignore[arg-type]
    # a server store's index is a file of this machine's, one per store URL
    monkeypatch.setenv("MEMLEDGER_INDEX_DIR", str(tmp_path / "indexes"))
    one = default_index_path(UrlOnly("postgresql://host/db"))  # type: ignore[arg-type]
    other = default_index_path(UrlOnly("postgresql://host/other"))  # type: ignore[arg-type]
    assert one.parent == other.parent == tmp_path / "indexes" and one.parent.is_dir()
    assert one != other and one.suffix == ".index"
    monkeypatch.delenv("MEMLEDGER_INDEX_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_index_path(UrlOnly("postgresql://host/db")).parent == (  # type: ignore[arg-type]
        tmp_path / "cache" / "memledger"
    )
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("MEMLEDGER_INDEX_DIR", str(tmp_path / "file" / "sub"))
    with pytest.raises(InvalidInputError, match="MEMLEDGER_INDEX_DIR"):
        default_index_path(UrlOnly("postgresql://host/db"))  # type: ignore[arg-type]


@sqlite_only
def test_vectors_held_in_memory_follow_every_change_like_a_fresh_load(
    memory: Memory, tmp_path: Path
) -> None:
    """A long-lived reader's vectors, brought up to date from what changed, answer exactly
    as a handle that loads everything anew: after new entries, a correction that removes
    entries, a revocation, and a rebuild by another handle."""
    path = tmp_path / "v.index"
    reader = DerivedIndex(path, embedder=HashingEmbedder())
    writer = DerivedIndex(path, embedder=HashingEmbedder())
    query = "digest delivered on fridays, daily or weekly"

    def same_as_fresh() -> list[str]:
        with DerivedIndex(path, embedder=HashingEmbedder()) as fresh:
            expected = fresh.search_vectors(query, tenant=TENANT, k=50)
        found = reader.search_vectors(query, tenant=TENANT, k=50)
        assert [(h.memory_id, round(h.score, 6)) for h in found] == [
            (h.memory_id, round(h.score, 6)) for h in expected
        ]
        return [h.memory_id for h in found]

    try:
        memory.ingest(
            event("e1", "Digest on Fridays", occurred_at=day(10, 2), sequence=1),
            [pref("friday", grounding="on Fridays")],
        )
        turn(memory, "t1", "The weekly digest is too long", at=day(10, 2))
        writer.sync(memory.store)
        first = same_as_fresh()
        memory.ingest(
            event("e2", "Daily instead", occurred_at=day(10, 5), sequence=2), [pref("daily")]
        )
        gone = turn(memory, "t2", "Could the digest come daily?", at=day(10, 5))
        writer.sync(memory.store)
        second = same_as_fresh()
        assert set(first) - set(second)  # the corrected record left the reader's vectors
        memory.revoke(gone, tenant=TENANT)
        writer.sync(memory.store)
        assert gone not in same_as_fresh()
        writer.rebuild(memory.store)
        assert same_as_fresh() and gone not in same_as_fresh()
    finally:
        reader.close()
        writer.close()


def removals(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute("SELECT count(*) FROM removed").fetchone()
    return int(count)


@sqlite_only
def test_recorded_removals_are_pruned_and_a_reader_from_before_reads_again(
    memory: Memory, tmp_path: Path
) -> None:
    """The record of removals does not grow without end: after ``prune_after`` of them a
    sync deletes it, and a long-lived reader whose vectors predate the prune (it can no
    longer learn what was removed) reads them again rather than keep a removed row."""
    path = tmp_path / "v.index"
    ids = turns(memory)
    reader = DerivedIndex(path, embedder=HashingEmbedder())
    writer = DerivedIndex(path, embedder=HashingEmbedder(), prune_after=2)
    query = TEXTS[0]

    def same_as_fresh() -> list[str]:
        with DerivedIndex(path, embedder=HashingEmbedder()) as fresh:
            expected = fresh.search_vectors(query, tenant=TENANT, k=len(TEXTS))
        found = reader.search_vectors(query, tenant=TENANT, k=len(TEXTS))
        assert [(h.memory_id, round(h.score, 6)) for h in found] == [
            (h.memory_id, round(h.score, 6)) for h in expected
        ]
        return [h.memory_id for h in found]

    try:
        writer.sync(memory.store)
        assert set(same_as_fresh()) == set(ids)  # the reader holds every row in memory
        memory.revoke(ids[0], tenant=TENANT)
        writer.sync(memory.store)
        assert removals(path) == 1  # below prune_after: kept for readers to catch up from
        memory.revoke(ids[1], tenant=TENANT)
        writer.sync(memory.store)
        assert removals(path) == 0  # pruned
        assert set(same_as_fresh()) == set(ids[2:])
        memory.revoke(ids[2], tenant=TENANT)
        writer.sync(memory.store)
        assert removals(path) == 1 and same_as_fresh() == [ids[3]]
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_prune_after_must_be_a_positive_integer(tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="prune_after"):
        DerivedIndex(tmp_path / "v.index", prune_after=bad)  # type: ignore[arg-type]


def test_a_turn_is_also_found_by_the_words_around_it_until_they_are_revoked(
    memory: Memory, index: AnyIndex
) -> None:
    ids = [
        turn(memory, f"w{n}", text, at=day(10, 2, 9, n))
        for n, text in enumerate(
            [
                "We adopted a greyhound called Pixel last week.",
                "That is lovely news, congratulations!",
                "She sleeps on the sofa all day long.",
                "Work has been busy with the product launch.",
            ]
        )
    ]
    turn(memory, "other", "A greyhound ran past our office.", at=day(10, 2, 9), session="s2")
    index.sync(memory.store)

    def found(words: str) -> set[str]:
        return {h.memory_id for h in index.search(words, tenant=TENANT, k=10, windows=True)}

    assert index.search("greyhound", tenant=TENANT, k=10, windows=False)
    near = found("greyhound Pixel")
    assert {ids[0], ids[1], ids[2]} <= near  # two turns on each side carry its words
    assert ids[3] not in near  # three turns away
    memory.revoke(ids[0], tenant=TENANT)
    index.sync(memory.store)
    assert not found("Pixel")  # a revoked turn leaves no words in its neighbours' windows
    assert {ids[1], ids[2], ids[3]} <= found("sofa")


def test_rebuilding_one_tenant_leaves_the_others_and_answers_the_same(
    memory: Memory, tmp_path: Path
) -> None:
    index = index_at(memory, tmp_path, "one.index", embedder=HashingEmbedder())
    try:
        for tenant in (TENANT, "globex"):
            for n, value in enumerate(["friday", "daily", "monday"], start=1):
                memory.ingest(
                    event(
                        f"p{n}",
                        f"Send it {value}",
                        occurred_at=day(10, n),
                        sequence=n,
                        tenant=tenant,
                    ),
                    [pref(value)],
                )
                turn(
                    memory,
                    f"t{n}",
                    f"Digest talk number {n}: {value}",
                    at=day(10, n, 13),
                    tenant=tenant,
                )
        memory.revoke_family(SUBJECT, FAMILY, tenant=TENANT)  # deletes to replay as well
        index.sync(memory.store)
        queries = ("friday daily monday", "digest talk monday")

        def answers(tenant: str) -> list[object]:
            return [
                (index.search(q, tenant=tenant, k=10), index.search_vectors(q, tenant=tenant, k=10))
                for q in queries
            ]

        def rows(tenant: str) -> list[tuple[object, ...]]:
            return entry_rows(index, tenant)

        before, others = answers(TENANT), rows("globex")
        status = index.status()
        elsewhere = index_at(memory, tmp_path, "one.index", embedder=HashingEmbedder())
        seen = elsewhere.search_vectors(queries[1], tenant=TENANT, k=10)  # holds its vectors
        assert index.rebuild_tenant(memory.store, TENANT) > 0
        assert answers(TENANT) == before
        # another handle drops the vectors it held from before (the epoch moved)
        assert elsewhere.search_vectors(queries[1], tenant=TENANT, k=10) == seen
        elsewhere.close()
        assert rows("globex") == others  # untouched: same rows, same stamps
        assert rows(TENANT) and all(r[0] > others[-1][0] for r in rows(TENANT))  # rebuilt
        assert index.status().entries == status.entries and index.lag(memory.store) == 0
        # what comes after a tenant's rebuild is synced as usual
        turn(memory, "t9", "Digest talk number 9: sunday", at=day(10, 9, 13))
        assert index.sync(memory.store, tenant=TENANT) == 1
        assert index.search("sunday", tenant=TENANT, k=5)
    finally:
        index.close()


@given(
    hnp.arrays(
        np.float32,
        st.integers(1, 80),
        elements=st.one_of(
            st.sampled_from([0.0, -0.0, 0.25, -0.5, 1.0]),  # ties, and zeros of both signs
            st.floats(-1, 1, width=32),
            st.sampled_from([float("nan"), float("inf"), float("-inf")]),
        ),
    )
)
@example(np.array([-0.0], dtype=np.float32))  # numpy's median of one -0.0 is +0.0
@example(np.array([-0.0, -0.0, 0.5], dtype=np.float32))
@example(np.array([-0.0, -0.0], dtype=np.float32))
def test_the_median_of_the_rows_searched_is_numpys_bit_for_bit(values: np.ndarray) -> None:
    expected = float(np.median(values))
    assert np.float64(median(values)).tobytes() == np.float64(expected).tobytes()
    rows = np.random.default_rng(len(values)).standard_normal(len(values) + 1).astype(np.float32)
    for searched in (rows, rows[:-1], np.round(rows, 1)):  # odd and even counts, ties
        assert median(searched) == float(np.median(searched))


@sqlite_only
@pytest.mark.parametrize("windows", [False, True])
def test_a_subjects_own_bm25_is_fts5s_when_the_tenant_has_one_subject(
    memory: Memory, index: AnyIndex, windows: bool
) -> None:
    texts = [
        "sushi on friday, sushi again on saturday",
        "the digest comes on friday",
        "a trip to Porto in May",
        "friday friday friday: the trip is on",
        "nothing to see here",
        "sushi",
    ]
    for n, text in enumerate(texts):
        turn(memory, f"b{n}", text, at=day(10, 1, 9 + n))
    index.sync(memory.store)
    for query in ("sushi friday trip", "friday", "porto zebra", "zebra"):
        wide = index.search(query, tenant=TENANT, k=10, windows=windows)
        own = index.search(query, tenant=TENANT, k=10, subjects=[SUBJECT], windows=windows)
        assert [h.memory_id for h in own] == [h.memory_id for h in wide], query
        assert [h.score for h in own] == pytest.approx([h.score for h in wide], rel=1e-9)
        assert bool(own) == (query != "zebra")
