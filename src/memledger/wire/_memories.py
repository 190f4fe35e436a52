"""The short path on the wire: a memory as an application reads it
(:func:`item_to_dict`), what an add did (:func:`added_to_dict`) and a memory's history
(:func:`memory_change_to_dict`), each declared once as
:class:`~memledger.wire._json.Fields`."""

from __future__ import annotations

from memledger.domain.items import MemoryChange, MemoryItem
from memledger.wire._json import Fields, JsonObject
from memledger.wire._records import receipt_to_dict
from memledger.write.messages import Added

__all__ = ["added_to_dict", "item_to_dict", "memory_change_to_dict"]

_ITEM: Fields[MemoryItem] = Fields(
    "id memory kind family user_id agent_id session role value",
    "created_at valid_from valid_until source_event_id score relevant",
)
_ADDED: Fields[Added] = Fields(
    "event_ids receipts memories skipped duplicate pending",
    receipts=lambda a: [receipt_to_dict(r) for r in a.receipts],
    memories=lambda a: _ITEM.each(a.memories),
)
_CHANGE: Fields[MemoryChange] = Fields("memory_id action status memory at cause note")


def item_to_dict(item: MemoryItem) -> JsonObject:
    return _ITEM(item)


def added_to_dict(added: Added) -> JsonObject:
    return _ADDED(added)


def memory_change_to_dict(change: MemoryChange) -> JsonObject:
    return _CHANGE(change)
