"""Recorded changes on the wire: revocation and forget receipts (:class:`Revocation`,
:class:`Forget`), :class:`Undo`, :class:`Rollback`, :class:`Consolidation`,
:class:`Compaction`, the change log (:class:`ChangeOut`) and erasure receipts
(:class:`Erasure`, each store's :class:`StoreErasure`)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime

from memledger.domain.changes import ChangeKind, NotRestoredWhy
from memledger.wire_models._base import WireModel
from memledger.wire_models._events import RevisionToken

__all__ = [
    "ChangeOut",
    "ChangePartOut",
    "CompactedOut",
    "Compaction",
    "Consolidation",
    "Erasure",
    "Forget",
    "MergeOut",
    "NotRestoredOut",
    "Revocation",
    "Rollback",
    "StoreErasure",
    "Undo",
]


class Revocation(WireModel):
    """:func:`memledger.wire.revocation_to_dict`."""

    tenant: str
    subject: str
    family: str
    revision: int
    generation: int
    revoked: list[str]
    acknowledged_at: AwareDatetime
    reason: str
    also: list[Revocation]
    redacted: list[str]
    change_id: str | None


class Forget(WireModel):
    """:func:`memledger.wire.forget_to_dict`."""

    tenant: str
    event_id: str
    revocations: list[Revocation]
    acknowledged_at: AwareDatetime
    reason: str
    change_id: str | None


class NotRestoredOut(WireModel):
    memory_id: str
    why: NotRestoredWhy


class Undo(WireModel):
    """:func:`memledger.wire.undo_to_dict`."""

    tenant: str
    change_id: str
    undid: str
    kind: ChangeKind
    restored: list[str]
    closed: list[str]
    not_restored: list[NotRestoredOut]
    revisions: list[RevisionToken]
    acknowledged_at: AwareDatetime
    reason: str
    duplicate: bool
    unforgotten: list[str]


class Rollback(WireModel):
    """:func:`memledger.wire.rollback_to_dict`."""

    tenant: str
    change_id: str | None
    extractor: str
    since: AwareDatetime | None
    events: list[str]
    closed: list[str]
    restored: list[str]
    not_restored: list[NotRestoredOut]
    rederived: list[str]
    held: list[str]
    acknowledged_at: AwareDatetime
    reason: str


class MergeOut(WireModel):
    subject: str
    family: str
    survivor: str
    duplicates: list[str]
    into: str | None
    similarity: float


class Consolidation(WireModel):
    """:func:`memledger.wire.consolidation_to_dict`."""

    tenant: str
    change_id: str | None
    merges: list[MergeOut]
    families: int
    threshold: float
    dry_run: bool
    at: AwareDatetime


class CompactedOut(WireModel):
    subject: str
    session: str
    summary: str | None
    covers: list[str]
    start: AwareDatetime
    end: AwareDatetime


class Compaction(WireModel):
    """:func:`memledger.wire.compaction_to_dict`."""

    tenant: str
    change_id: str | None
    sessions: list[CompactedOut]
    before: AwareDatetime
    dry_run: bool
    at: AwareDatetime


class ChangePartOut(WireModel):
    subject: str
    family: str
    closed: list[str]
    opened: list[str]
    generation: int | None


class ChangeOut(WireModel):
    """:func:`memledger.wire.change_to_dict`: a recorded change (``GET /v1/changes``)."""

    tenant: str
    change_id: str
    kind: ChangeKind
    at: AwareDatetime
    reason: str
    parts: list[ChangePartOut]
    forgotten: list[str]
    undoes: str | None
    undone_by: str | None


class StoreErasure(WireModel):
    store: str
    status: Literal["erased", "nothing_held", "failed", "not_configured"]
    at: AwareDatetime
    detail: str


class Erasure(WireModel):
    """:meth:`memledger.write.erase.ErasureReceipt.to_dict`: what an erasure covered, by
    id only, and each store's status."""

    erasure_id: str
    tenant: str
    scope: Literal["event", "memory", "subject"]
    target: str
    reason: str
    requested_at: AwareDatetime
    events: list[str]
    memory_ids: list[str]
    subjects: list[str]
    complete: bool
    stores: list[StoreErasure]
