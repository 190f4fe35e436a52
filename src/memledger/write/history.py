"""What every writer of records leaves behind in a family's change log, and the
changes it records:

* :func:`history_entry`: one history entry, as every writer of records makes it;
* :func:`family_time`: when a change to a family takes place (never before its last);
* :class:`FamilyStep`: the next revision of one locked family, whose history entries
  all carry that revision, the step's time and its cause;
* :func:`record_parts`: a change made of per-family parts, stored when it changed
  anything (``memledger.write.undo`` takes it back).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memledger.domain.changes import Change, ChangeKind, ChangePart
from memledger.domain.records import HistoryAction, HistoryEntry, MemoryRecord
from memledger.ports import FamilySlot, UnitOfWork


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


def family_time(slot: FamilySlot, now: datetime) -> datetime:
    """When a change made ``now`` to the family of ``slot`` takes place: ``now``, or the
    family's last change when the clock is behind it (its history never goes back)."""
    return max(now, slot.updated_at) if slot.updated_at is not None else now


class FamilyStep:
    """Writes one locked family's next revision at ``at``: every history entry it adds
    carries that revision and, unless told otherwise, ``cause``."""

    def __init__(self, unit: UnitOfWork, slot: FamilySlot, *, cause: str, at: datetime) -> None:
        self.unit, self.slot, self.cause, self.at = unit, slot, cause, at
        self.revision = slot.revision + 1

    def _history(
        self, record: MemoryRecord, action: HistoryAction, cause: str | None = None
    ) -> None:
        self.unit.add_history(
            history_entry(
                self.slot,
                record,
                action,
                revision=self.revision,
                at=self.at,
                cause=self.cause if cause is None else cause,
            )
        )


def record_parts(
    unit: UnitOfWork,
    tenant: str,
    *,
    change_id: str,
    kind: ChangeKind,
    at: datetime,
    reason: str,
    parts: Sequence[ChangePart],
) -> str | None:
    """Store the change that ``parts`` make up when there are any; its id (``None``:
    nothing changed, nothing stored)."""
    if not parts:
        return None
    unit.put_change(
        Change(
            tenant=tenant,
            change_id=change_id,
            kind=kind,
            at=at,
            reason=reason,
            parts=tuple(parts),
        )
    )
    return change_id
