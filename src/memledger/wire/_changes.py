"""What a change did, as JSON: revocation and forget receipts
(:func:`revocation_to_dict`, :func:`forget_to_dict`), :func:`undo_to_dict`,
:func:`rollback_to_dict`, :func:`compaction_to_dict`, :func:`consolidation_to_dict`,
a recorded change (:func:`change_to_dict`) and a re-derivation's dry run
(:func:`rederivation_to_dict`).

Each type's object is declared once, as :class:`~memledger.wire._json.Fields` beside
its function: its keys in order, and how the keys that are not a plain attribute are
made."""

from __future__ import annotations

from memledger.domain.changes import Change, NotRestored, RollbackReceipt, UndoReceipt
from memledger.domain.records import ForgetReceipt, RevocationReceipt
from memledger.wire._json import Fields, JsonObject
from memledger.wire._records import REVISION_KEYS, record_to_dict, revision_to_dict
from memledger.write.compact import Compacted, CompactionReceipt
from memledger.write.consolidate import ConsolidationReceipt, Merge
from memledger.write.rederive import Change as RederivedChange
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

_REVOCATION: Fields[RevocationReceipt] = Fields(
    "tenant",
    REVISION_KEYS,
    "revoked acknowledged_at reason also redacted change_id",
    also=lambda r: [revocation_to_dict(a) for a in r.also],
)


def revocation_to_dict(receipt: RevocationReceipt) -> JsonObject:
    return _REVOCATION(receipt)


_FORGET: Fields[ForgetReceipt] = Fields(
    "tenant event_id revocations acknowledged_at reason change_id",
    revocations=lambda r: _REVOCATION.each(r.revocations),
)


def forget_to_dict(receipt: ForgetReceipt) -> JsonObject:
    return _FORGET(receipt)


_NOT_RESTORED: Fields[NotRestored] = Fields("memory_id why")
_UNDO: Fields[UndoReceipt] = Fields(
    "tenant change_id undid kind restored closed not_restored revisions acknowledged_at",
    "reason duplicate unforgotten",
    not_restored=lambda r: _NOT_RESTORED.each(r.not_restored),
    revisions=lambda r: [revision_to_dict(t) for t in r.revisions],
)


def undo_to_dict(receipt: UndoReceipt) -> JsonObject:
    return _UNDO(receipt)


_ROLLBACK: Fields[RollbackReceipt] = Fields(
    "tenant change_id extractor since events closed restored not_restored rederived held",
    "acknowledged_at reason",
    not_restored=lambda r: _NOT_RESTORED.each(r.not_restored),
)


def rollback_to_dict(receipt: RollbackReceipt) -> JsonObject:
    return _ROLLBACK(receipt)


_COMPACTED: Fields[Compacted] = Fields("subject session summary covers start end")
_COMPACTION: Fields[CompactionReceipt] = Fields(
    "tenant change_id sessions before dry_run at",
    sessions=lambda r: _COMPACTED.each(r.sessions),
)


def compaction_to_dict(receipt: CompactionReceipt) -> JsonObject:
    return _COMPACTION(receipt)


_MERGE: Fields[Merge] = Fields("subject family survivor duplicates into similarity")
_CONSOLIDATION: Fields[ConsolidationReceipt] = Fields(
    "tenant change_id merges families threshold dry_run at",
    merges=lambda r: _MERGE.each(r.merges),
)


def consolidation_to_dict(receipt: ConsolidationReceipt) -> JsonObject:
    return _CONSOLIDATION(receipt)


_CHANGE: Fields[Change] = Fields("tenant change_id kind at reason")


def change_to_dict(change: Change) -> JsonObject:
    """A recorded change: what every change has, then what its kind adds
    (:meth:`Change.body`)."""
    return {**_CHANGE(change), **change.body(), "undone_by": change.undone_by}


_REDERIVED: Fields[RederivedChange] = Fields(
    "before after",
    before=lambda c: record_to_dict(c.before),
    after=lambda c: record_to_dict(c.after),
)
_REDERIVATION: Fields[Rederivation] = Fields(
    "subject extractor events dry_run added closed changed unchanged",
    dry_run=lambda d: True,
    added=lambda d: [record_to_dict(r) for r in d.added],
    closed=lambda d: [record_to_dict(r) for r in d.closed],
    changed=lambda d: _REDERIVED.each(d.changed),
)


def rederivation_to_dict(diff: Rederivation, *, tenant: str) -> JsonObject:
    """A re-derivation's dry-run diff."""
    return {"tenant": tenant, **_REDERIVATION(diff)}
