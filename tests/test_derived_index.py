"""The lexical derived index on real SQLite files: fed from the outbox, lagging, rebuilt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger import Claim, InvalidQueryError, Memory
from memledger.index.derived import DerivedIndex
from memledger.index.lexical import query_terms
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 2)))
    yield memory
    memory.close()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[DerivedIndex]:
    index = DerivedIndex(tmp_path / "m.index")
    yield index
    index.close()


def test_sync_follows_the_outbox_and_carries_revisions(memory: Memory, index: DerivedIndex) -> None:
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


def test_a_lagging_index_still_serves_what_it_has(memory: Memory, index: DerivedIndex) -> None:
    memory.ingest(
        event("e1", "Digest on Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")]
    )
    index.sync(memory.store)
    memory.ingest(event("e2", "Daily instead", occurred_at=day(10, 5), sequence=2), [pref("daily")])
    assert index.lag(memory.store) > 0
    (stale,) = index.search("friday", tenant=TENANT, k=5)  # the read path must recheck this
    assert memory.get(stale.memory_id, tenant=TENANT).status == "superseded"


def test_rebuild_gives_the_same_answers(memory: Memory, index: DerivedIndex) -> None:
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


def test_bad_k(index: DerivedIndex) -> None:
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
