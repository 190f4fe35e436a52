"""Decay (issue 14, item 3): both curves are functions of the time since a memory was
last touched (stated, stated again, or handed out by a read), and neither deletes."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memledger import Claim, InvalidQueryError, Memory
from memledger.domain.scoring import decayed_confidence, down_weight
from memledger.errors import StoreLockedError
from memledger.index.derived import DerivedIndex
from memledger.read.access import AccessLog
from memledger.read.recall import RecallResult, RecallSettings
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event
from memledger.write.worker import episode_of

ANYONE = actor("*")
NOW = day(10, 2)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    index = DerivedIndex(tmp_path / "m.index", embedder=None)
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock, index=index)
    yield memory
    memory.close()


# -- the curves ------------------------------------------------------------------------

days = st.floats(min_value=0, max_value=1e5, allow_nan=False)
taus = st.floats(min_value=0.01, max_value=1e4, allow_nan=False)


@given(days, days, taus)
def test_down_weight_sinks_to_the_floor_and_never_below(a: float, b: float, tau: float) -> None:
    early, late = sorted((a, b))
    assert 0.3 <= down_weight(late, tau_days=tau) <= down_weight(early, tau_days=tau) <= 1.0
    assert down_weight(0, tau_days=tau) == 1.0
    assert down_weight(-5, tau_days=tau) == 1.0  # a touch after the read time counts as now
    assert down_weight(tau, tau_days=tau) == pytest.approx(0.3 + 0.7 / math.e)


@given(st.floats(min_value=0, max_value=1), days, taus)
def test_confidence_halves_every_half_life(confidence: float, t: float, half: float) -> None:
    now = decayed_confidence(confidence, t, half_life_days=half)
    assert 0 <= now <= confidence
    later = decayed_confidence(confidence, t + half, half_life_days=half)
    assert later == pytest.approx(now / 2, abs=1e-12)
    assert decayed_confidence(confidence, 0, half_life_days=half) == confidence


# -- recall ----------------------------------------------------------------------------


def _turn(memory: Memory, event_id: str, text: str, *, at: datetime, subject: str = SUBJECT) -> str:
    said = event(event_id, text, occurred_at=at, who=ANYONE, subject=subject)
    receipt = memory.ingest(said, [episode_of(said)])
    (result,) = receipt.results
    assert result.memory_id is not None
    return result.memory_id


def _weights(result: RecallResult) -> dict[str, float]:
    return {item.record.source_event_id: item.time_weight for item in result.items}


def _order(result: RecallResult) -> list[str]:
    return [item.record.source_event_id for item in result.items]


def test_a_read_lifts_what_it_hands_out(memory: Memory, clock: FrozenClock) -> None:
    """Two turns alike, of two subjects; the older ranks second until a read hands it
    out: from then its time since the last touch is the read's, and it ranks first."""
    text = "The sourdough starter smells of acetone."
    _turn(memory, "old", text, at=NOW - timedelta(days=300), subject="user-a")
    _turn(memory, "new", text, at=NOW - timedelta(days=100), subject="user-b")
    asked = "sourdough starter acetone"
    before = memory.recall(asked, tenant=TENANT, touch=False)
    assert _order(before) == ["new", "old"]
    assert _weights(before)["old"] < _weights(before)["new"] < 1.0

    read = memory.recall(asked, tenant=TENANT, subject="user-a")  # hands out the older
    assert _order(read) == ["old"]
    after = memory.recall(asked, tenant=TENANT, touch=False)
    assert _order(after) == ["old", "new"]
    assert _weights(after)["old"] == pytest.approx(1.0)

    # a read as of a time before that access does not count it
    earlier = memory.recall(asked, tenant=TENANT, valid_at=NOW - timedelta(days=1), touch=False)
    assert _order(earlier) == ["new", "old"]
    clock.set(NOW + timedelta(days=400))  # and the lift fades like any touch
    much_later = memory.recall(asked, tenant=TENANT, touch=False)
    assert _weights(much_later)["old"] < _weights(after)["old"]


def test_a_look_ahead_touches_nothing(memory: Memory) -> None:
    _turn(memory, "t", "The sourdough starter smells of acetone.", at=NOW - timedelta(days=30))
    memory.recall("sourdough", tenant=TENANT, touch=False)
    memory.prepare("sourdough", tenant=TENANT, subject=SUBJECT)
    assert memory.flush_accesses() == 0
    memory.recall("sourdough", tenant=TENANT)
    assert memory.flush_accesses() == 1


def test_a_packet_touches_what_it_places_only(memory: Memory) -> None:
    long = " ".join(["The kiln in the garage fires stoneware at cone six"] * 30)
    placed = _turn(memory, "short", "The kiln fires stoneware.", at=NOW - timedelta(days=5))
    left = _turn(memory, "long", long, at=NOW - timedelta(days=300))
    packet = memory.context("kiln stoneware", tenant=TENANT, budget=120)
    shown = {item.memory_id for item in packet.items}
    assert placed in shown and left not in shown
    memory.flush_accesses()
    with memory.store.read() as unit:
        assert unit.access_counts(TENANT, [placed, left]) == {placed: 1}


def test_accesses_outlive_the_process(tmp_path: Path, clock: FrozenClock) -> None:
    """Closing a Memory writes what it holds; the next one ranks with it."""
    url = tmp_path / "m.db"
    first = Memory(open_store(url), clock=clock, index=DerivedIndex(tmp_path / "i", embedder=None))
    old = _turn(
        first, "old", "The sourdough starter smells of acetone.", at=NOW - timedelta(days=300)
    )
    first.recall("sourdough", tenant=TENANT)
    first.close()
    second = Memory(open_store(url), clock=clock, index=DerivedIndex(tmp_path / "i", embedder=None))
    try:
        with second.store.read() as unit:
            assert unit.access_counts(TENANT, [old]) == {old: 1}
            assert unit.last_touched(TENANT, [old], before=NOW) == {old: NOW}
    finally:
        second.close()


def _working(memory: Memory, event_id: str, *, at: datetime) -> str:
    said = event(event_id, "Right now I am debugging the tokenizer.", occurred_at=at, who=ANYONE)
    claim = Claim(
        family="conversation",
        kind="working",
        statement="Is debugging the tokenizer",
        value="debugging the tokenizer",
        grounding="debugging the tokenizer",
    )
    receipt = memory.ingest(said, [claim])
    (result,) = receipt.results
    assert result.memory_id is not None
    return result.memory_id


def test_working_memory_fades_out_of_recall_and_stays_held(memory: Memory) -> None:
    """Working memory's confidence halves every day without a touch: five days on it is
    below ``min_confidence`` and recall leaves it out as ``faded``; it is still held."""
    working = _working(memory, "w", at=NOW - timedelta(days=5))
    asked = "debugging the tokenizer"
    found = memory.recall(asked, tenant=TENANT, touch=False)
    assert [e.reason for e in found.excluded if e.memory_id == working] == ["faded"]
    assert working not in {item.record.memory_id for item in found.items}
    assert memory.get(working, tenant=TENANT).memory_id == working  # nothing deleted

    slow = RecallSettings(half_lives={"working": 10.0})
    (item,) = [
        i
        for i in memory.recall(asked, tenant=TENANT, settings=slow, touch=False).items
        if i.record.memory_id == working
    ]
    assert item.confidence == pytest.approx(item.record.confidence * 0.5**0.5)
    by_family = RecallSettings(half_lives={"working": 0.5, "conversation": 10.0})
    named = memory.recall(asked, tenant=TENANT, settings=by_family, touch=False)
    assert working in {i.record.memory_id for i in named.items}  # the family's entry wins
    kept = RecallSettings(min_confidence=0.0)
    (item,) = [
        i
        for i in memory.recall(asked, tenant=TENANT, settings=kept, touch=False).items
        if i.record.memory_id == working
    ]
    assert item.confidence == pytest.approx(item.record.confidence * 0.5**5)


def test_a_stable_kind_keeps_its_confidence(memory: Memory) -> None:
    _turn(memory, "t", "The sourdough starter smells of acetone.", at=NOW - timedelta(days=3000))
    (item,) = memory.recall("sourdough acetone", tenant=TENANT, touch=False).items
    assert item.confidence == item.record.confidence


@pytest.mark.parametrize(
    "settings",
    [
        {"half_lives": {"working": 0}},
        {"half_lives": {"working": -1.0}},
        {"half_lives": {"working": float("inf")}},
        {"half_lives": {"": 1.0}},
        {"half_lives": {"working": True}},
        {"half_lives": [("working", 1.0)]},
        {"min_confidence": 1.5},
        {"min_confidence": -0.1},
        {"min_confidence": float("nan")},
    ],
)
def test_bad_decay_settings_are_refused(settings: dict[str, object]) -> None:
    with pytest.raises(InvalidQueryError):
        RecallSettings(**settings)  # type: ignore[arg-type]


# -- the access log --------------------------------------------------------------------


class _Tick:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_log_is_due_by_count_or_by_age() -> None:
    tick = _Tick()
    log = AccessLog(batch=3, every=5.0, monotonic=tick)
    assert not log.due()
    log.note(TENANT, ["a", "b"], at=NOW)
    assert not log.due()
    log.note(TENANT, ["c"], at=NOW)
    assert log.due()  # three memories
    log = AccessLog(batch=3, every=5.0, monotonic=tick)
    log.note(TENANT, ["a"], at=NOW)
    tick.now = 4.9
    assert not log.due()
    tick.now = 5.0
    assert log.due()  # five seconds after the first


def test_the_log_keeps_the_latest_time_and_counts_reads() -> None:
    log = AccessLog()
    log.note(TENANT, ["a", "a"], at=NOW)  # one read that hands a memory out once
    log.note(TENANT, ["a"], at=NOW - timedelta(days=1))
    log.note("other", ["a"], at=NOW + timedelta(days=1))
    assert log.pending(TENANT, ["a", "b"], before=NOW) == {"a": NOW}
    assert log.pending(TENANT, ["a"], before=NOW - timedelta(hours=1)) == {}


class _LockedStore:
    """A store whose writes time out, for the log's failure path."""

    def __init__(self, fail: bool = True) -> None:
        self.fail = fail
        self.written: list[tuple[str, dict[str, tuple[datetime, int]]]] = []

    def write(self) -> _LockedStore:
        if self.fail:
            raise StoreLockedError("locked")
        return self

    def __enter__(self) -> _LockedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def record_accesses(self, tenant: str, accesses: dict[str, tuple[datetime, int]]) -> int:
        self.written.append((tenant, dict(accesses)))
        return len(accesses)


def test_a_failed_write_keeps_the_notes_for_the_next_try() -> None:
    log = AccessLog()
    log.note(TENANT, ["a"], at=NOW)
    store = _LockedStore()
    with pytest.raises(StoreLockedError):
        log.flush(store)  # type: ignore[arg-type]
    log.note(TENANT, ["a"], at=NOW + timedelta(seconds=1))
    store.fail = False
    assert log.flush(store) == 1  # type: ignore[arg-type]
    assert store.written == [(TENANT, {"a": (NOW + timedelta(seconds=1), 2)})]
    assert log.pending(TENANT, ["a"], before=NOW + timedelta(days=1)) == {}


def test_past_its_limit_the_log_drops_the_oldest_notes() -> None:
    log = AccessLog(limit=2)
    log.note(TENANT, ["a"], at=NOW)
    log.note(TENANT, ["b"], at=NOW + timedelta(seconds=1))
    log.note(TENANT, ["c"], at=NOW + timedelta(seconds=2))
    assert log.dropped == 1
    later = NOW + timedelta(days=1)
    assert set(log.pending(TENANT, ["a", "b", "c"], before=later)) == {"b", "c"}


def test_a_read_never_fails_for_its_access_notes(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch is due, the store refuses it: the recall still answers, and the notes
    stay pending for the next write."""
    from memledger.store._sql_unit import SqlUnit

    _turn(memory, "t", "The sourdough starter smells of acetone.", at=NOW - timedelta(days=3))
    memory.accesses.batch = 1

    def refuse(self: SqlUnit, tenant: str, accesses: object) -> int:
        raise StoreLockedError("locked")

    with monkeypatch.context() as patch:
        patch.setattr(SqlUnit, "record_accesses", refuse)
        found = memory.recall("sourdough", tenant=TENANT)
    assert [i.record.source_event_id for i in found.items] == ["t"]
    held = found.items[0].record.memory_id
    assert memory.accesses.pending(TENANT, [held], before=NOW) == {held: NOW}
    assert memory.flush_accesses() == 1
