"""Recall's fourth and fifth stages: the canonical recheck (:class:`Checker`) and the
overlay of the slots a query names (:func:`overlay`), in one read snapshot of the store.

* **Recheck**: every candidate is read back from the store in one query; a record that
  is gone, closed (superseded, retracted), revoked, from a revoked source,
  unauthorised, expired or not yet valid at the valid time, or found through an index
  entry older than the record with other words (:func:`stale`), is excluded with a
  typed reason (:func:`why_not`). What is returned is always the canonical record,
  never the index's copy, so a lagging index cannot hand back a stale value.
* **Overlay**: the current slot values of the families the query names join even when
  the index has not caught up with them (read your corrections); with a revision floor
  a store below it for a family the query names refuses.
* :func:`lag`: how far the index's feed was behind as the read began.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memledger.domain.records import MemoryRecord
from memledger.index.backends import Hit
from memledger.index.lexical import entry_text
from memledger.index.passages import documents
from memledger.read.results import Excluded, RecallExclusion, Source
from memledger.read.understand import families_named
from memledger.read.views import check_floor

if TYPE_CHECKING:
    from memledger.ports import UnitOfWork

__all__ = ["Checker", "lag", "overlay", "stale", "why_not"]


def stale(hit: Hit, record: MemoryRecord) -> bool:
    """The index found this record by words it no longer has: its entry is older than the
    record and its text differs. (A record's words never change under its memory id here,
    corrections write new records; an older entry otherwise only means a lower mention
    count, and recall returns the canonical record anyway.)"""
    if hit.revision >= record.revision:
        return False
    if hit.span is None:
        return hit.text != entry_text(record)
    return not any(d.text == hit.text for d in documents(record) if d.span == hit.span)


def why_not(
    record: MemoryRecord | None, *, at: datetime, now: datetime, revoked: bool
) -> RecallExclusion | None:
    """Why ``record`` may not be recalled at valid time ``at`` and record time ``now``."""
    if record is None:
        return "not_found"
    if record.expired(now):
        return "past_expiry"
    if record.status == "revoked":
        return "revoked"
    if revoked:
        return "revoked_source"
    if record.status in ("superseded", "retracted"):
        return "superseded" if record.status == "superseded" else "retracted"
    if not record.authorised:
        return "not_authorised"
    if record.valid_until is not None and record.valid_until <= at:
        return "expired"
    if record.valid_from > at:
        return "not_yet_valid"
    return None


class Checker:
    """Reads candidates back from the store and sorts them into kept and excluded."""

    def __init__(
        self,
        unit: UnitOfWork,
        *,
        tenant: str,
        at: datetime,
        now: datetime,
        indexed: Mapping[str, Hit],
        subject: str | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> None:
        self.unit = unit
        self.tenant = tenant
        self.subject = subject
        self.visible = visible
        self.at, self.now = at, now
        self.indexed = indexed
        self.seen: set[str] = set()
        self._revoked: dict[tuple[str, str], frozenset[str]] = {}

    def admit(
        self, memory_ids: Sequence[str], kept: dict[str, MemoryRecord], excluded: list[Excluded]
    ) -> None:
        records = self.unit.get_records(self.tenant, memory_ids)
        unread = {
            (r.subject, r.family)
            for r in records.values()
            if self.subject in (None, r.subject) and (r.subject, r.family) not in self._revoked
        }
        if unread:  # one read for every family not seen yet
            self._revoked.update(self.unit.revoked_sources_of(self.tenant, sorted(unread)))
        for memory_id in sorted(memory_ids):
            self.seen.add(memory_id)
            record = records.get(memory_id)
            if record is not None and self.subject not in (None, record.subject):
                continue  # another subject's: not even named among the exclusions
            if record is not None and self.visible is not None and not self.visible(record.subject):
                continue  # a namespace the caller may not read: not named either
            gone = False
            if record is not None:
                gone = record.source_event_id in self._revoked[(record.subject, record.family)]
            why = why_not(record, at=self.at, now=self.now, revoked=gone)
            hit = self.indexed.get(memory_id)
            if why is None and record is not None and hit is not None and stale(hit, record):
                why = "stale_index"
            if why is not None or record is None:
                excluded.append(Excluded(memory_id=memory_id, reason=why or "not_found"))
            else:
                kept[memory_id] = record


def overlay(
    unit: UnitOfWork,
    query: str,
    *,
    tenant: str,
    subject: str,
    at: datetime,
    now: datetime,
    min_revision: int | None,
    source: str,
    kept: dict[str, MemoryRecord],
    sources: dict[str, set[Source]],
) -> None:
    """Adds to ``kept`` the open records of the families ``query`` names for ``subject``
    that may be recalled at ``at`` (their source ``"slot"``); a family whose slot is
    below ``min_revision`` refuses the read (``source`` names the store in the error)."""
    for family in families_named(query):
        slot = unit.get_family(tenant, subject, family)
        check_floor(slot, min_revision, source=source)
        gone_sources = unit.revoked_sources(tenant, subject, family)
        for record in unit.family_records(tenant, subject, family, open_only=True):
            gone = record.source_event_id in gone_sources
            if why_not(record, at=at, now=now, revoked=gone):
                continue
            kept.setdefault(record.memory_id, record)
            sources.setdefault(record.memory_id, set()).add("slot")


def lag(unit: UnitOfWork, tenant: str, *, after: int, visible: Callable[[str], bool] | None) -> int:
    """The outbox rows past the index's cursor as the read began (at most what it missed),
    of the subjects ``visible`` passes only: another agent's private writes are not
    counted for a key that may not read them."""
    if visible is None:
        return unit.outbox_pending(tenant, after=after)
    pending = unit.outbox_pending_subjects(tenant, after=after)
    return sum(n for subject, n in pending.items() if visible(subject))
