"""The short path on the wire: a memory as an application reads it
(:func:`item_to_dict`), what an add did (:func:`added_to_dict`) and a memory's history
(:func:`memory_change_to_dict`)."""

from __future__ import annotations

from memledger.domain.items import MemoryChange, MemoryItem
from memledger.wire._json import JsonObject, iso_or_none, isoformat
from memledger.wire._records import receipt_to_dict
from memledger.write.messages import Added

__all__ = ["added_to_dict", "item_to_dict", "memory_change_to_dict"]


def item_to_dict(item: MemoryItem) -> JsonObject:
    return {
        "id": item.id,
        "memory": item.memory,
        "kind": item.kind,
        "family": item.family,
        "user_id": item.user_id,
        "agent_id": item.agent_id,
        "session": item.session,
        "role": item.role,
        "value": item.value,
        "created_at": isoformat(item.created_at),
        "valid_from": isoformat(item.valid_from),
        "valid_until": iso_or_none(item.valid_until),
        "source_event_id": item.source_event_id,
        "score": item.score,
        "relevant": item.relevant,
    }


def added_to_dict(added: Added) -> JsonObject:
    return {
        "event_ids": list(added.event_ids),
        "receipts": [receipt_to_dict(r) for r in added.receipts],
        "memories": [item_to_dict(m) for m in added.memories],
        "skipped": added.skipped,
        "duplicate": added.duplicate,
        "pending": list(added.pending),
    }


def memory_change_to_dict(change: MemoryChange) -> JsonObject:
    return {
        "memory_id": change.memory_id,
        "action": change.action,
        "status": change.status,
        "memory": change.memory,
        "at": isoformat(change.at),
        "cause": change.cause,
        "note": change.note,
    }
