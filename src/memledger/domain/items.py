"""A memory as the short path shows it: :class:`MemoryItem`, one record in the few
fields an application reads (its id, its text, whose it is, when), with the whole
record beside them; :class:`MemoryChange`, one step of a memory's history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memledger.domain.records import HistoryAction, JsonValue, MemoryRecord, RecordStatus

__all__ = ["MemoryChange", "MemoryItem", "item_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryItem:
    """One memory: ``memory`` is its text (a fact's statement, a turn's words or, for a
    long turn found by search, the passage that matched); ``user_id`` and ``agent_id``
    say whose it is; ``score`` and ``relevant`` are set by a search (``relevant``:
    whether recall would hand it out rather than abstain)."""

    id: str
    memory: str
    kind: str
    family: str
    user_id: str | None
    agent_id: str | None
    session: str | None
    role: str | None
    value: JsonValue
    created_at: datetime
    valid_from: datetime
    valid_until: datetime | None
    source_event_id: str
    record: MemoryRecord
    score: float | None = None
    relevant: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryChange:
    """One step of a memory's history: ``action`` on the record ``memory_id`` (this
    memory, one it replaced or one that replaced it) at ``at``, with the text the
    record held (``None`` once erased) and why (``cause``)."""

    memory_id: str
    action: HistoryAction
    status: RecordStatus
    memory: str | None
    at: datetime
    cause: str
    note: str | None = None


def item_of(
    record: MemoryRecord,
    *,
    text: str | None = None,
    score: float | None = None,
    relevant: bool | None = None,
) -> MemoryItem:
    """``record`` as a :class:`MemoryItem` (``text``: what to show instead of its
    statement, such as a long turn's passage)."""
    value = record.value
    facts = value if isinstance(value, dict) else {}
    session = facts.get("session") if record.kind == "episode" else None
    role = facts.get("role") if record.kind == "episode" else None
    agent = record.subject.split("/", 1)[0].removeprefix("agent:")
    return MemoryItem(
        id=record.memory_id,
        memory=record.claim if text is None else text,
        kind=record.kind,
        family=record.family,
        user_id=None if record.subject.startswith("agent:") else record.subject,
        agent_id=agent if record.subject.startswith("agent:") else None,
        session=session if isinstance(session, str) else None,
        role=role if isinstance(role, str) else None,
        value=value,
        created_at=record.recorded_at,
        valid_from=record.valid_from,
        valid_until=record.valid_until,
        source_event_id=record.source_event_id,
        record=record,
        score=score,
        relevant=relevant,
    )
