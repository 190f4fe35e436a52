"""What a change did, as JSON: revocation and forget receipts
(:func:`revocation_to_dict`, :func:`forget_to_dict`), :func:`undo_to_dict`,
:func:`rollback_to_dict`, :func:`compaction_to_dict`, :func:`consolidation_to_dict`,
a recorded change (:func:`change_to_dict`) and a re-derivation's dry run
(:func:`rederivation_to_dict`)."""

from __future__ import annotations

from collections.abc import Sequence

from memledger.domain.changes import Change, NotRestored, RollbackReceipt, UndoReceipt
from memledger.domain.records import ForgetReceipt, JsonValue, RevocationReceipt
from memledger.wire._json import JsonObject, iso_or_none, isoformat
from memledger.wire._records import record_to_dict, revision_to_dict
from memledger.write.compact import CompactionReceipt
from memledger.write.consolidate import ConsolidationReceipt
from memledger.write.rederive import Rederivation

__all__ = [
    "change_to_dict",
    "compaction_to_dict",
    "consolidation_to_dict",
    "forget_to_dict",
    "rederivation_to_dict",
    "revocation_to_dict",
    "rollback_to_dict",
    "undo_to_dict",
]


def revocation_to_dict(receipt: RevocationReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        **revision_to_dict(receipt),
        "revoked": list(receipt.revoked),
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
        "also": [revocation_to_dict(r) for r in receipt.also],
        "redacted": list(receipt.redacted),
        "change_id": receipt.change_id,
    }


def forget_to_dict(receipt: ForgetReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "event_id": receipt.event_id,
        "revocations": [revocation_to_dict(r) for r in receipt.revocations],
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
        "change_id": receipt.change_id,
    }


def _not_restored(missing: Sequence[NotRestored]) -> list[JsonValue]:
    return [{"memory_id": n.memory_id, "why": n.why} for n in missing]


def undo_to_dict(receipt: UndoReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "undid": receipt.undid,
        "kind": receipt.kind,
        "restored": list(receipt.restored),
        "closed": list(receipt.closed),
        "not_restored": _not_restored(receipt.not_restored),
        "revisions": [revision_to_dict(t) for t in receipt.revisions],
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
        "duplicate": receipt.duplicate,
        "unforgotten": list(receipt.unforgotten),
    }


def rollback_to_dict(receipt: RollbackReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "extractor": receipt.extractor,
        "since": iso_or_none(receipt.since),
        "events": list(receipt.events),
        "closed": list(receipt.closed),
        "restored": list(receipt.restored),
        "not_restored": _not_restored(receipt.not_restored),
        "rederived": list(receipt.rederived),
        "held": list(receipt.held),
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
    }


def compaction_to_dict(receipt: CompactionReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "sessions": [
            {
                "subject": c.subject,
                "session": c.session,
                "summary": c.summary,
                "covers": list(c.covers),
                "start": isoformat(c.start),
                "end": isoformat(c.end),
            }
            for c in receipt.sessions
        ],
        "before": isoformat(receipt.before),
        "dry_run": receipt.dry_run,
        "at": isoformat(receipt.at),
    }


def consolidation_to_dict(receipt: ConsolidationReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "merges": [
            {
                "subject": m.subject,
                "family": m.family,
                "survivor": m.survivor,
                "duplicates": list(m.duplicates),
                "into": m.into,
                "similarity": m.similarity,
            }
            for m in receipt.merges
        ],
        "families": receipt.families,
        "threshold": receipt.threshold,
        "dry_run": receipt.dry_run,
        "at": isoformat(receipt.at),
    }


def change_to_dict(change: Change) -> JsonObject:
    return {
        "tenant": change.tenant,
        "change_id": change.change_id,
        "kind": change.kind,
        "at": isoformat(change.at),
        "reason": change.reason,
        **change.body(),
        "undone_by": change.undone_by,
    }


def rederivation_to_dict(diff: Rederivation, *, tenant: str) -> JsonObject:
    """A re-derivation's dry-run diff."""
    return {
        "tenant": tenant,
        "subject": diff.subject,
        "extractor": diff.extractor,
        "events": diff.events,
        "dry_run": True,
        "added": [record_to_dict(r) for r in diff.added],
        "closed": [record_to_dict(r) for r in diff.closed],
        "changed": [
            {"before": record_to_dict(c.before), "after": record_to_dict(c.after)}
            for c in diff.changed
        ],
        "unchanged": diff.unchanged,
    }
