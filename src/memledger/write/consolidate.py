"""Consolidation: near-duplicate records of one family and subject merged into one.

The write path already refuses most repeats (a candidate at least ``noop`` similar to
an open record that covers its time is a NOOP and raises that record's mentions,
``memledger.domain.decide``). Near-duplicates still accumulate: a repeat under
another scope whose time the first did not cover, records written before a better
similarity was configured, claims of several extractors. Consolidation finds them
among a family's open, authorised current records:

* two records are near-duplicates when their texts (statement and value) are at least
  ``threshold`` similar (the policy's similarity; default threshold: the ``noop``
  one), they carry the same negation words ("never X" is not "always X"), and their
  valid-time windows overlap;
* each group keeps its *survivor* (most mentions, then the oldest record), re-issued as
  one new record: the survivor's claim, value and scope over the hull of the group's
  windows, the mentions summed, the best confidence, ``supersedes`` naming the
  survivor; the group's records are closed (``superseded``, closed by the merge);
* the merged record inherits the group's sources as mentions, so revoking it later
  revokes every source that said it (``memledger.write.revoke``);
* the merge is one recorded change (kind ``merge``): ``Memory.undo`` closes the
  merged records and restores the originals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memledger.domain.addresses import check_tenant
from memledger.domain.changes import ChangePart
from memledger.domain.decide import Similarity, claim_text, negations
from memledger.domain.intervals import Interval
from memledger.domain.limits import check_reason
from memledger.domain.records import MemoryRecord, format_time
from memledger.domain.scoring import confidence
from memledger.errors import InvalidInputError
from memledger.ports import FamilySlot, UnitOfWork, all_subjects
from memledger.write.batch import stable_id
from memledger.write.history import FamilyStep, family_time, record_parts
from memledger.write.ports import WritePorts


@dataclass(frozen=True, slots=True, kw_only=True)
class Merge:
    """One group merged: ``into`` the new record, from the survivor and its duplicates."""

    subject: str
    family: str
    survivor: str
    duplicates: tuple[str, ...]
    into: str | None
    """``None`` in a dry run."""
    similarity: float
    """The lowest similarity of a duplicate to the survivor."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsolidationReceipt:
    tenant: str
    change_id: str | None
    """The recorded change (``None``: nothing merged, or a dry run)."""
    merges: tuple[Merge, ...]
    families: int
    """Families looked at."""
    threshold: float
    dry_run: bool
    at: datetime


def _mergeable(record: MemoryRecord) -> bool:
    return (
        record.status == "active"
        and record.scope_authorized
        and record.proposed_kind != "episode"
        and record.kind != "observation"
    )


def _window(record: MemoryRecord) -> Interval:
    return Interval(record.valid_from, record.valid_until)


def groups(
    records: Sequence[MemoryRecord], *, threshold: float, similar: Similarity
) -> list[tuple[MemoryRecord, list[tuple[MemoryRecord, float]]]]:
    """The near-duplicate groups of one family's open records: each survivor with its
    duplicates and their similarity to it (see the module docstring)."""
    pool = sorted(
        (r for r in records if _mergeable(r)),
        key=lambda r: (-r.mentions, r.recorded_at, r.memory_id),
    )
    taken: set[str] = set()
    found: list[tuple[MemoryRecord, list[tuple[MemoryRecord, float]]]] = []
    for survivor in pool:
        if survivor.memory_id in taken:
            continue
        ours = claim_text(survivor.claim, survivor.value)
        duplicates: list[tuple[MemoryRecord, float]] = []
        for other in pool:
            if other.memory_id == survivor.memory_id or other.memory_id in taken:
                continue
            if not _window(survivor).overlaps(_window(other)):
                continue
            theirs = claim_text(other.claim, other.value)
            score = similar(ours, theirs)
            if score >= threshold and negations(ours) == negations(theirs):
                duplicates.append((other, score))
        if duplicates:
            taken.add(survivor.memory_id)
            taken.update(d.memory_id for d, _ in duplicates)
            found.append((survivor, duplicates))
    return found


def consolidate(
    unit: UnitOfWork,
    tenant: str,
    families: Sequence[tuple[str, str]],
    *,
    threshold: float,
    similar: Similarity,
    reason: str,
    now: datetime,
    dry_run: bool = False,
) -> ConsolidationReceipt:
    """Merge the near-duplicates of each (subject, family) in ``families``, as one
    recorded change (nothing is written with ``dry_run``)."""
    change_id = stable_id("chg", tenant, "merge", *(f"{s}\x1f{f}" for s, f in families),
                          format_time(now))  # fmt: skip
    merges: list[Merge] = []
    parts: list[ChangePart] = []
    latest = now
    for subject, family in families:
        live = unit.family_records(tenant, subject, family, open_only=True)
        found = groups(live, threshold=threshold, similar=similar)
        if not found:
            continue
        if dry_run:
            merges.extend(_merge(None, survivor, dups) for survivor, dups in found)
            continue
        slot = unit.lock_family(tenant, subject, family)
        at = family_time(slot, now)
        latest = max(latest, at)
        writer = _Merger(unit, slot, change_id=change_id, reason=reason, at=at)
        closed: list[str] = []
        opened: list[str] = []
        for survivor, dups in found:
            into = writer.merge(survivor, [d for d, _ in dups])
            closed.extend([survivor.memory_id, *(d.memory_id for d, _ in dups)])
            opened.append(into.memory_id)
            merges.append(_merge(into.memory_id, survivor, dups))
        unit.put_family(replace(slot, revision=writer.revision, updated_at=at))
        parts.append(
            ChangePart(subject=subject, family=family, closed=tuple(closed), opened=tuple(opened))
        )
    recorded = record_parts(
        unit, tenant, change_id=change_id, kind="merge", at=latest, reason=reason, parts=parts
    )
    return ConsolidationReceipt(
        tenant=tenant,
        change_id=recorded,
        merges=tuple(merges),
        families=len(families),
        threshold=threshold,
        dry_run=dry_run,
        at=latest,
    )


def _merge(
    into: str | None, survivor: MemoryRecord, dups: list[tuple[MemoryRecord, float]]
) -> Merge:
    return Merge(
        subject=survivor.subject,
        family=survivor.family,
        survivor=survivor.memory_id,
        duplicates=tuple(d.memory_id for d, _ in dups),
        into=into,
        similarity=min(score for _, score in dups),
    )


class _Merger(FamilyStep):
    def __init__(
        self, unit: UnitOfWork, slot: FamilySlot, *, change_id: str, reason: str, at: datetime
    ) -> None:
        super().__init__(unit, slot, cause=f"{change_id}: {reason}", at=at)
        self.change_id = change_id

    def merge(self, survivor: MemoryRecord, dups: list[MemoryRecord]) -> MemoryRecord:
        group = [survivor, *dups]
        ends = [r.valid_until for r in group]
        mentions = sum(r.mentions for r in group)
        merged = replace(
            survivor,
            memory_id=stable_id(
                "mem", survivor.tenant, survivor.memory_id, "merged", self.change_id
            ),
            valid_from=min(r.valid_from for r in group),
            valid_until=None if None in ends else max(e for e in ends if e is not None),
            mentions=mentions,
            confidence=max(*(r.confidence for r in group), confidence(mentions)),
            recorded_at=self.at,
            superseded_at=None,
            closed_by=None,
            revision=self.revision,
            generation=self.slot.generation,
            supersedes=survivor.memory_id,
        )
        for record in group:
            self.unit.close_record(
                record.tenant,
                record.memory_id,
                status="superseded",
                at=self.at,
                closed_by=self.change_id,
            )
            closed = replace(
                record, status="superseded", superseded_at=self.at, closed_by=self.change_id
            )
            self._history(closed, "closed")
            self.unit.add_outbox(replace(closed, revision=self.revision), op="delete", at=self.at)
        self.unit.insert_record(merged)
        self._history(merged, "recorded")
        self.unit.add_outbox(merged, op="upsert", at=self.at)
        # the group's sources said it too: revoking the merged record revokes them all
        sources = {r.source_event_id for r in dups}
        sources.update(self.unit.mention_events(survivor.tenant, [r.memory_id for r in group]))
        sources.discard(survivor.source_event_id)
        for event_id in sorted(sources):
            self.unit.add_mention(survivor.tenant, merged.memory_id, event_id=event_id, at=self.at)
        return merged


def run(
    ports: WritePorts,
    *,
    tenant: str,
    subject: str | None = None,
    family: str | None = None,
    threshold: float | None = None,
    dry_run: bool = False,
    reason: str = "consolidated",
) -> ConsolidationReceipt:
    """Merge near-duplicate open records of one family and subject into one, with
    their mentions summed and their sources kept (:mod:`memledger.write.consolidate`),
    for one ``subject`` (and ``family``) or every subject of the tenant. One recorded
    change: :meth:`undo` restores the originals. ``threshold`` defaults to the write
    policy's NOOP similarity; ``dry_run`` reports the groups and writes nothing."""
    check_tenant(tenant, subject)
    if subject is None and family is not None:
        raise InvalidInputError("a family is consolidated for one subject: give subject")
    if family is not None:
        ports.schema_for(tenant, [family]).family(family)
    chosen = ports.policy.thresholds.noop if threshold is None else threshold
    if isinstance(chosen, bool) or not isinstance(chosen, int | float) or not 0 < chosen <= 1:
        raise InvalidInputError(f"threshold must be in (0, 1], got {threshold!r}")
    check_reason(reason, ports.limits)
    with ports.store.read() as unit:
        subjects = [subject] if subject is not None else all_subjects(unit, tenant)
        families = [
            (s, slot.family)
            for s in subjects
            for slot in unit.families(tenant, s)
            if family is None or slot.family == family
        ]
    with ports.store.read() if dry_run else ports.store.write() as unit:  # a dry run reads
        return consolidate(
            unit,
            tenant,
            families,
            threshold=float(chosen),
            similar=ports.policy.similarity,
            reason=reason,
            now=ports.clock.now(),
            dry_run=dry_run,
        )
