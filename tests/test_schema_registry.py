"""Claim families registered per tenant in the store: usable by that tenant only, on
every write and read path, in every process, and never redefined."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_helpers import snapshot
from memledger import (
    ConflictError,
    Family,
    InvalidInputError,
    Memory,
    Schema,
    SourceEvent,
    UnknownFamilyError,
)
from memledger.domain.records import Claim
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event

DIET = Family(name="diet", kinds=frozenset({"preference"}), description="What the subject eats.")


def diet(value: str, **more: object) -> Claim:
    return Claim(
        family="diet",
        kind="preference",
        statement=f"Eats {value}",
        value=value,
        **more,  # type: ignore[arg-type]
    )


def turn(event_id: str, text: str, *, tenant: str = TENANT, sequence: int = 1) -> SourceEvent:
    return event(
        event_id,
        text,
        occurred_at=day(10, 2),
        sequence=sequence,
        tenant=tenant,
        who=actor("diet"),
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "schema.db"


@pytest.fixture
def memory(path: Path) -> Iterator[Memory]:
    opened = Memory.open(path, clock=FrozenClock(day(10, 1)))
    yield opened
    opened.close()


def test_a_registered_family_is_its_tenants_only(memory: Memory, path: Path) -> None:
    assert memory.register_family(TENANT, DIET) == DIET
    receipt = memory.ingest(turn("evt-1", "I eat vegetarian"), [diet("vegetarian")])
    assert [r.disposition for r in receipt.results] == ["current"]
    (now,) = memory.current(SUBJECT, "diet", tenant=TENANT, valid_at=day(10, 3))
    assert now.value == "vegetarian"
    before = snapshot(path)
    with pytest.raises(UnknownFamilyError, match="'diet'"):
        memory.ingest(turn("evt-1", "I eat vegetarian", tenant="globex"), [diet("vegetarian")])
    with pytest.raises(UnknownFamilyError):
        memory.current(SUBJECT, "diet", tenant="globex")
    assert snapshot(path) == before
    assert "diet" in memory.families_of(TENANT).families
    assert "diet" not in memory.families_of("globex").families
    assert memory.families_of("globex") == memory.schema == Schema.default()


def test_registrations_survive_reopening_the_store(path: Path) -> None:
    with Memory.open(path, clock=FrozenClock(day(10, 1))) as first:
        first.register_family(TENANT, DIET)
    with Memory.open(path, clock=FrozenClock(day(10, 1))) as again:
        assert again.families_of(TENANT).family("diet") == DIET
        again.ingest(turn("evt-1", "I eat vegan food"), [diet("vegan")])
        assert [r.value for r in again.timeline(SUBJECT, "diet", tenant=TENANT)] == ["vegan"]
        assert [r.value for r in again.history(SUBJECT, "diet", tenant=TENANT)] == ["vegan"]
        assert [c.action for c in again.changes(SUBJECT, "diet", tenant=TENANT)] == ["recorded"]
        assert again.family_events(SUBJECT, "diet", tenant=TENANT) == ("evt-1",)
        ack = again.revoke_family(SUBJECT, "diet", tenant=TENANT)
        assert ack.family == "diet" and len(ack.revoked) == 1


def test_another_process_sees_a_registration_at_once(path: Path) -> None:
    """A long-running process caches each tenant's schema; a family registered by
    another process since is found on the first write that names it."""
    with (
        Memory.open(path, clock=FrozenClock(day(10, 1))) as server,
        Memory.open(path, clock=FrozenClock(day(10, 1))) as admin,
    ):
        server.ingest(turn("evt-0", "hello there"), [])  # the tenant's schema is now cached
        with pytest.raises(UnknownFamilyError):
            server.ingest(turn("evt-1", "I eat vegan food"), [diet("vegan")])
        admin.register_family(TENANT, DIET)
        receipt = server.ingest(turn("evt-1", "I eat vegan food"), [diet("vegan")])
        assert receipt.outcome == "committed"


def test_the_same_definition_again_is_a_no_op_and_another_a_conflict(
    memory: Memory, path: Path
) -> None:
    memory.register_family(TENANT, DIET)
    before = snapshot(path)
    assert memory.register_family(TENANT, DIET) == DIET
    relabelled = Family(name="diet", kinds=DIET.kinds, description="Food.")
    assert memory.register_family(TENANT, relabelled) == DIET  # the first description stays
    for other in (
        Family(name="diet", kinds=frozenset({"fact"})),
        Family(name="diet", kinds=DIET.kinds, own_say=True),
        Family(name="home_city", kinds=frozenset({"preference"})),  # a built-in one
    ):
        with pytest.raises(ConflictError, match="cannot change"):
            memory.register_family(TENANT, other)
    builtin = Family(name="home_city", kinds=frozenset({"fact"}), own_say=True)
    assert memory.register_family(TENANT, builtin) == Schema.default().family("home_city")
    assert snapshot(path) == before
    # another tenant may define the same name its own way
    food = Family(name="diet", kinds=frozenset({"fact"}))
    assert memory.register_family("globex", food) == food
    assert memory.families_of("globex").family("diet") == food


def test_unusable_registrations_are_refused(memory: Memory, path: Path) -> None:
    before = snapshot(path)
    with pytest.raises(InvalidInputError, match="':'"):
        memory.register_family(TENANT, Family(name="diet:vegan"))
    with pytest.raises(InvalidInputError, match="observation"):
        memory.register_family(TENANT, Family(name="notes", kinds=frozenset({"observation"})))
    with pytest.raises(InvalidInputError, match="Family"):
        memory.register_family(TENANT, "diet")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="tenant"):
        memory.register_family("", DIET)
    with pytest.raises(InvalidInputError, match="unknown kinds"):
        Family(name="diet", kinds=frozenset({"opinion"}))  # type: ignore[arg-type]
    assert snapshot(path) == before


def test_the_worker_writes_under_each_tenants_schema(memory: Memory) -> None:
    memory.register_family(TENANT, DIET)
    extractor = FunctionExtractor(lambda e: [diet("vegan", grounding="vegan")])
    memory.ingest(turn("evt-1", "I eat vegan food"))
    memory.ingest(turn("evt-1", "I eat vegan food", tenant="globex"))
    report = memory.process(extractor=extractor)
    assert report.outcomes == {"committed": 2}
    (mine,) = memory.current(SUBJECT, "diet", tenant=TENANT, valid_at=day(10, 3))
    assert mine.extractor == extractor.info
    assert memory.stats(tenant="globex") == {"gate:invalid": 1}  # not a family there
    assert memory.stats(tenant=TENANT) == {}
    # commit_job routes the same way
    queued = memory.ingest(turn("evt-2", "I eat vegetarian", sequence=2))
    assert queued.job_id is not None
    done = memory.commit_job(queued.job_id, [diet("vegetarian")], tenant=TENANT)
    assert done.outcome == "committed"


def test_an_own_say_family_needs_no_grant_from_the_user_themself(memory: Memory) -> None:
    tone = Family(name="tone", kinds=frozenset({"preference"}), own_say=True)
    memory.register_family(TENANT, tone)
    said = SourceEvent(
        tenant=TENANT,
        event_id="evt-1",
        subject=SUBJECT,
        actor=actor(),  # authenticated, no grant at all
        channel="chat",
        occurred_at=day(10, 2),
        text="Keep it short please",
        role="user",
    )
    claim = Claim(family="tone", kind="preference", statement="Wants brevity", value="short")
    receipt = memory.ingest(said, [claim])
    assert [r.disposition for r in receipt.results] == ["current"]


def test_the_codes_schema_wins_over_a_registration(path: Path) -> None:
    with Memory.open(path) as first:
        first.register_family(TENANT, DIET)
    coded = Family(name="diet", kinds=frozenset({"fact"}), description="In code.")
    with Memory.open(path, schema=Schema.default().with_families(coded)) as second:
        assert second.families_of(TENANT).family("diet") == coded
        with pytest.raises(ConflictError):
            second.register_family(TENANT, DIET)


def test_rederive_replays_under_the_tenants_schema(memory: Memory) -> None:
    memory.register_family(TENANT, DIET)
    extractor = FunctionExtractor(lambda e: [diet("vegan", grounding="vegan")])
    memory.ingest(turn("evt-1", "I eat vegan food"))
    memory.process(extractor=extractor)
    diff = memory.rederive(SUBJECT, tenant=TENANT, extractor=extractor)
    assert diff.empty and diff.unchanged == 1  # the diet window, as it stands
