"""The short path on the wire: :class:`MemoryItem` (a memory as an application reads
it), :class:`Added` (what an add did), :class:`MemoryChange` (a step of a memory's
history) and :class:`MemorySearch` (a search's answer)."""

from __future__ import annotations

from pydantic import AwareDatetime
from pydantic import JsonValue as Json

from memledger.domain.records import HistoryAction, Kind, RecordStatus, Role
from memledger.wire_models._base import WireModel
from memledger.wire_models._events import Receipt

__all__ = ["Added", "MemoryChange", "MemoryItem", "MemorySearch"]


class MemoryItem(WireModel):
    """:func:`memledger.wire.item_to_dict`."""

    id: str
    memory: str
    kind: Kind
    family: str
    user_id: str | None
    agent_id: str | None
    session: str | None
    role: Role | None
    value: Json
    created_at: AwareDatetime
    valid_from: AwareDatetime
    valid_until: AwareDatetime | None
    source_event_id: str
    score: float | None
    relevant: bool | None


class Added(WireModel):
    """:func:`memledger.wire.added_to_dict`."""

    event_ids: list[str]
    receipts: list[Receipt]
    memories: list[MemoryItem]
    skipped: int
    duplicate: bool
    pending: list[str]


class MemoryChange(WireModel):
    """:func:`memledger.wire.memory_change_to_dict`."""

    memory_id: str
    action: HistoryAction
    status: RecordStatus
    memory: str | None
    at: AwareDatetime
    cause: str
    note: str | None


class MemorySearch(WireModel):
    """A search's answer: the nearest memories, best first."""

    results: list[MemoryItem]
