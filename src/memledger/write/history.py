"""One history entry of a family's change log, as every writer of records makes it."""

from __future__ import annotations

from datetime import datetime

from memledger.domain.records import HistoryAction, HistoryEntry, MemoryRecord
from memledger.ports import FamilySlot


def history_entry(
    slot: FamilySlot,
    record: MemoryRecord,
    action: HistoryAction,
    *,
    revision: int,
    at: datetime,
    cause: str,
) -> HistoryEntry:
    """What ``action`` did to ``record`` at the family's ``revision`` (``seq`` is the
    store's to number)."""
    return HistoryEntry(
        seq=0,
        tenant=slot.tenant,
        subject=slot.subject,
        family=slot.family,
        revision=revision,
        generation=slot.generation,
        action=action,
        memory_id=record.memory_id,
        status=record.status,
        at=at,
        cause=cause,
    )
