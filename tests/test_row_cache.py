"""The SQL stores' decoded rows (:func:`memledger.store._rows.record`): a row read again
is decoded once, a long one every time, and an erasure leaves none behind. That a
changed row is read as it is now is the conformance suite's (``RowChecks``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memledger import Memory
from memledger.store import _rows
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event, pref


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory.open(tmp_path / "m.db", clock=FrozenClock(day(10, 2)))
    yield memory
    memory.close()


def _read(memory: Memory, memory_id: str) -> object:
    with memory.store.read() as unit:
        return unit.get_records(TENANT, [memory_id])[memory_id]


def _ingested(memory: Memory, event_id: str, claim: object) -> str:
    said = event(event_id, "Send it on Fridays", occurred_at=day(10, 2), who=actor("*"))
    (result,) = memory.ingest(said, [claim]).results  # type: ignore[list-item]
    assert result.memory_id is not None
    return result.memory_id


def test_a_row_read_again_is_decoded_once(memory: Memory) -> None:
    friday = _ingested(memory, "evt-1", pref("friday"))
    first = _read(memory, friday)
    assert _read(memory, friday) is first


def test_a_long_row_is_decoded_every_time(memory: Memory) -> None:
    long = "x" * (_rows.CACHED_CHARS + 1)
    notes = _ingested(memory, "evt-1", pref(long, statement="Delivery: as the long note says"))
    first = _read(memory, notes)
    again = _read(memory, notes)
    assert again == first and again is not first


def test_an_erasure_leaves_no_decoded_record_in_memory(memory: Memory) -> None:
    friday = _ingested(memory, "evt-1", pref("friday"))
    _read(memory, friday)
    assert _rows._cached.cache_info().currsize >= 1
    memory.erase(subject=SUBJECT, tenant=TENANT, reason="asked")
    assert _rows._cached.cache_info().currsize == 0


def test_decoded_rows_are_kept_a_bounded_time(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An erasure made through another process empties this one's cache within KEPT_S."""
    friday = _ingested(memory, "evt-1", pref("friday"))
    first = _read(memory, friday)
    assert _read(memory, friday) is first
    later = _rows._emptied[0] + _rows.KEPT_S + 1
    monkeypatch.setattr(_rows.time, "monotonic", lambda: later)
    again = _read(memory, friday)
    assert again == first and again is not first  # decoded afresh once the time is up
    assert _read(memory, friday) is again
