"""Guards for recall's canonical recheck and its abstention floor: each test fails when
the behaviour it names breaks (issue 9, mutation pass)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memledger import Claim, Memory, MemoryRecord
from memledger.index.derived import DerivedIndex, Hit
from memledger.index.lexical import entry_text
from memledger.read.recall import Excluded, RecallSettings, recall
from memledger.read.recheck import Checker
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, TENANT, day, event, pref

OTHER = "globex"


def parcel(where: str) -> list[Claim]:
    return [pref(where, statement=f"Parcels left at the {where}")]


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 5))


def _foreign(memory: Memory) -> str:
    """A current memory of the other tenant only; returns its id."""
    receipt = memory.ingest(
        event("g1", "garden shed", occurred_at=day(10, 2), sequence=1, tenant=OTHER),
        parcel("garden shed"),
    )
    assert receipt.outcome == "committed"
    (record,) = memory.current("user-42", FAMILY, tenant=OTHER, valid_at=day(10, 3))
    assert memory.history("user-42", FAMILY, tenant=TENANT) == ()  # nothing of ours yet
    return record.memory_id


# -- item 3: the recheck reads the asking tenant's records only --------------------------------


def test_the_recheck_never_admits_another_tenants_memory_id(
    memory: Memory, clock: FrozenClock
) -> None:
    foreign = _foreign(memory)
    memory.ingest(
        event("a1", "front porch", occurred_at=day(10, 2), sequence=1), parcel("front porch")
    )
    (ours,) = memory.current("user-42", FAMILY, tenant=TENANT, valid_at=day(10, 3))
    kept: dict[str, MemoryRecord] = {}
    excluded: list[Excluded] = []
    with memory.store.read() as unit:
        checker = Checker(unit, tenant=TENANT, at=clock.now(), now=clock.now(), indexed={})
        checker.admit([foreign, ours.memory_id], kept, excluded)
    assert list(kept) == [ours.memory_id]
    assert excluded == [Excluded(memory_id=foreign, reason="not_found")]


class LeakyIndex(DerivedIndex):
    """A derived index that (wrongly) hands tenant ``acme`` a hit of another tenant's
    memory: recall's canonical recheck, which reads the asking tenant's records only,
    is what must stop it."""

    leak: Sequence[Hit] = ()

    def search(self, query: str, **kwargs: object) -> list[Hit]:  # type: ignore[override]
        hits = super().search(query, **kwargs)  # type: ignore[arg-type]
        return [*hits, *self.leak] if kwargs.get("tenant") == TENANT else hits


def test_an_index_hit_naming_another_tenants_memory_is_never_returned(
    memory: Memory, tmp_path: Path
) -> None:
    foreign_id = _foreign(memory)
    foreign = memory.get(foreign_id, tenant=OTHER)
    memory.ingest(
        event("a1", "front porch", occurred_at=day(10, 2), sequence=1), parcel("front porch")
    )
    with LeakyIndex(tmp_path / "m.index", embedder=None) as index:
        index.sync(memory.store)
        index.leak = (
            Hit(
                tenant=OTHER,
                memory_id=foreign_id,
                subject=foreign.subject,
                family=foreign.family,
                kind=foreign.kind,
                revision=foreign.revision,
                generation=foreign.generation,
                score=100.0,
                text=entry_text(foreign),
            ),
        )
        result = recall(memory.reading, index, "parcels garden shed", tenant=TENANT, k=10)
    assert [i.record.tenant for i in result.items] == [TENANT] * len(result.items)
    assert foreign_id not in {i.record.memory_id for i in result.items}
    assert [e.reason for e in result.excluded if e.memory_id == foreign_id] == ["not_found"]


# -- item 6: abstain below a quarter of the query's content words ----------------------------


def test_a_memory_covering_a_quarter_of_the_query_is_returned_and_less_abstains(
    memory: Memory, tmp_path: Path
) -> None:
    memory.ingest(
        event("a1", "garden shed", occurred_at=day(10, 2), sequence=1), parcel("garden shed")
    )
    assert RecallSettings().floor == 0.25
    with DerivedIndex(tmp_path / "m.index", embedder=None) as index:
        index.sync(memory.store)
        # four content words, one of them (garden) in the memory: exactly a quarter
        quarter = recall(
            memory.reading, index, "violin budget sourdough garden", tenant=TENANT, k=5
        )
        # five content words, the same one covered: a fifth, below the floor
        fifth = recall(
            memory.reading, index, "violin budget sourdough orchestra garden", tenant=TENANT, k=5
        )
        fifth_found = recall(
            memory.reading,
            index,
            "violin budget sourdough orchestra garden",
            tenant=TENANT,
            k=5,
            settings=RecallSettings(floor=0.2),
        )
        # two of four words (garden, shed): a half, comfortably above
        half = recall(memory.reading, index, "violin budget garden shed", tenant=TENANT, k=5)
    assert [i.record.value for i in quarter.items] == ["garden shed"]
    assert quarter.items[0].relevance == pytest.approx(0.25)
    assert "lexical" in quarter.items[0].sources  # found, then judged: not a missed search
    assert fifth.items == () and fifth.abstained
    assert [i.relevance for i in fifth_found.items] == [pytest.approx(0.2)]  # only the floor
    assert [i.relevance for i in half.items] == [pytest.approx(0.5)]
