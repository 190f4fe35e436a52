"""The JSON wire format of the edges: source events in, records and receipts out.

Input is parsed by strict pydantic models (unknown fields, naive datetimes and
type coercions such as ``"1"`` for a number are rejected) and converted to the
domain dataclasses, whose own validation then runs as well. Whatever is wrong,
the caller gets one :class:`~memledger.errors.InvalidInputError` whose message
is a single line naming the fields at fault (the first ten, with the count; its
``faults`` hold every one). An event looks like::

    {"tenant": "acme", "event_id": "evt-1", "subject": "user-42",
     "actor": {"id": "user-42", "authenticated": true, "grants": ["delivery_preference"]},
     "channel": "chat", "sequence": 1, "occurred_at": "2026-10-02T09:00:00Z",
     "text": "Please deliver on Fridays.",
     "claims": [{"family": "delivery_preference", "kind": "preference",
                 "statement": "Wants deliveries on Fridays", "value": "friday",
                 "grounding": "deliver on Fridays"}]}

``"claims"`` absent or ``null`` means "store the event and queue extraction".
Output helpers turn domain values into JSON objects (datetimes as ISO 8601
strings in UTC, ``Z``-suffixed).

The parts, each a private module of this package:

* ``_parse``: the input models (:class:`EventIn`, :class:`ClaimIn`, :class:`ActorIn`),
  :func:`parse_event_json` and :func:`parse_events_json`, and the one-line messages
  made of pydantic's errors (each problem also an error's ``faults``);
  :func:`required_fields`, those of a model a JSON object must hold;
* ``_records``: what is held: records, a family's change log and revision tokens, events,
  ingest receipts, claims, reviews, jobs, worker runs, keys, families and recalls;
* ``_changes``: what a change did: revocations, forgets, undos, rollbacks, compactions,
  consolidations, recorded changes and re-derivations;
* ``_corpus``: the shared document corpus: documents, chunks and search hits;
* ``_memories``: the short path: memories as an application reads them, what an add
  did, a memory's history;
* ``_json``: what the output helpers share: :data:`JsonObject`, :func:`isoformat`, and
  ``Fields``, the declaration of a type's object (its keys in order) that each output
  helper is built from.
"""

from __future__ import annotations

from memledger.wire._changes import (
    change_to_dict,
    compaction_to_dict,
    consolidation_to_dict,
    forget_to_dict,
    rederivation_to_dict,
    revocation_to_dict,
    rollback_to_dict,
    undo_to_dict,
)
from memledger.wire._corpus import chunk_to_dict, document_to_dict, hit_to_dict
from memledger.wire._json import JsonObject, isoformat
from memledger.wire._memories import added_to_dict, item_to_dict, memory_change_to_dict
from memledger.wire._parse import (
    ActorIn,
    ClaimIn,
    EventIn,
    ParsedEvent,
    parse_event_json,
    parse_events_json,
    required_fields,
)
from memledger.wire._records import (
    claim_to_dict,
    event_to_dict,
    family_to_dict,
    history_entry_to_dict,
    job_to_dict,
    key_to_dict,
    possible_update_to_dict,
    recall_to_dict,
    receipt_to_dict,
    record_to_dict,
    review_resolution_to_dict,
    review_to_dict,
    revision_to_dict,
    work_report_to_dict,
)

__all__ = [
    "ActorIn",
    "ClaimIn",
    "EventIn",
    "JsonObject",
    "ParsedEvent",
    "added_to_dict",
    "change_to_dict",
    "chunk_to_dict",
    "claim_to_dict",
    "compaction_to_dict",
    "consolidation_to_dict",
    "document_to_dict",
    "event_to_dict",
    "family_to_dict",
    "forget_to_dict",
    "history_entry_to_dict",
    "hit_to_dict",
    "isoformat",
    "item_to_dict",
    "job_to_dict",
    "key_to_dict",
    "memory_change_to_dict",
    "parse_event_json",
    "parse_events_json",
    "possible_update_to_dict",
    "recall_to_dict",
    "receipt_to_dict",
    "record_to_dict",
    "rederivation_to_dict",
    "required_fields",
    "review_resolution_to_dict",
    "review_to_dict",
    "revision_to_dict",
    "revocation_to_dict",
    "rollback_to_dict",
    "undo_to_dict",
    "work_report_to_dict",
]
