"""The event commit: one source event and its complete candidate batch, in one transaction.

``commit_event`` runs inside a unit of work the caller opened with
``store.write()``; if anything raises, the whole event rolls back. In order:

1. append the event to the ledger (same id and content: idempotent; other
   content: :class:`EventConflictError`); an event already decided returns
   its stored receipt;
2. an incomplete or self-contradictory batch goes to the review queue and
   changes nothing else;
3. lock every family the batch touches (sorted, so writers never deadlock)
   and apply the order rule; a family whose order cannot be decided sends the
   whole event to review;
4. per candidate: reject work begun under an older generation or from a
   revoked source; keep unauthorised claims as observations and claims from
   behind the family's timeline as historical;
5. reconcile the valid-time intervals of the current claims, bump each
   family's revision, write history and outbox rows, and mark the event
   decided with its receipt.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from memledger.domain.families import Schema
from memledger.domain.intervals import Interval, Window, first_overlap, reconcile
from memledger.domain.policy import Ordering, Position, WritePolicy, authority, order
from memledger.domain.records import (
    CALLER,
    Claim,
    ClaimResult,
    Disposition,
    ExclusionReason,
    ExtractorInfo,
    FamilyRevision,
    HistoryEntry,
    MemoryRecord,
    Receipt,
    ReviewItem,
    SourceEvent,
    canonical_json,
    format_time,
)
from memledger.errors import EventConflictError, InvalidClaimError, InvalidIntervalError
from memledger.ports import FamilySlot, UnitOfWork


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id: the same inputs give the same id in every process and retry."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:20]
    return f"{prefix}-{digest}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """One event's candidate claims, as an extractor or a caller proposes them."""

    event: SourceEvent
    claims: tuple[Claim, ...]
    complete: bool = True
    extractor: ExtractorInfo = CALLER
    generations: Mapping[str, int] | None = None
    """The family generations the work started under; ``None`` means "now"."""
    job_id: str | None = None


def _claim_key(claim: Claim) -> str:
    return canonical_json(
        [
            claim.subject,
            claim.family,
            claim.scope,
            claim.kind,
            claim.statement,
            claim.value,
            None if claim.valid_from is None else format_time(claim.valid_from),
            None if claim.valid_until is None else format_time(claim.valid_until),
            claim.grounding,
            claim.confidence,
        ]
    )


def distinct_claims(claims: tuple[Claim, ...]) -> tuple[Claim, ...]:
    """``claims`` without exact repeats, first occurrence kept: a repeated candidate
    is one claim, not two overlapping windows."""
    seen: dict[str, Claim] = {}
    for claim in claims:
        seen.setdefault(_claim_key(claim), claim)
    return tuple(seen.values())


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _interval(event: SourceEvent, claim: Claim) -> Interval:
    start = claim.valid_from or event.occurred_at
    if claim.valid_until is not None and claim.valid_until <= start:
        raise InvalidIntervalError(
            f"claim {claim.family!r} ends at {claim.valid_until.isoformat()!r}, not after its "
            f"start {start.isoformat()!r} (valid_from defaults to the event's occurred_at)"
        )
    return Interval(start, claim.valid_until)


def validate(batch: Batch, schema: Schema) -> None:
    """Reject malformed input before any write: unknown families and kinds, inverted
    intervals, grounding quotes that are not in the event's text."""
    text = _normal(batch.event.text)
    for claim in batch.claims:
        if not isinstance(claim, Claim):
            raise InvalidClaimError(f"expected a Claim, got {type(claim).__name__}")
        schema.check(claim.family, claim.kind)
        _interval(batch.event, claim)
        if claim.grounding is not None and _normal(claim.grounding) not in text:
            raise InvalidClaimError(
                f"grounding {claim.grounding!r} of claim {claim.family!r} is not in the text "
                f"of event {batch.event.event_id!r}"
            )


def append_to_ledger(
    unit: UnitOfWork, event: SourceEvent, *, now: datetime, validate: Callable[[], None]
) -> None:
    """Append ``event`` unless the ledger already has it.

    The same id with other content is refused before ``validate`` runs, so a
    reused id is reported as such whatever else is wrong with the request.
    """
    content_hash = event.content_hash()
    stored = unit.get_event(event.tenant, event.event_id)
    if stored is not None and stored.content_hash != content_hash:
        raise EventConflictError(
            f"event {event.event_id!r} of tenant {event.tenant!r} is already in the ledger "
            "with different content; the ledger is append-only, use a new event id"
        )
    validate()
    if stored is None:
        unit.append_event(event, content_hash=content_hash, at=now)


def job_id_for(event: SourceEvent) -> str:
    """The one extraction job an event can have."""
    return stable_id("job", event.tenant, event.event_id)


def finish_job(unit: UnitOfWork, event: SourceEvent, *, now: datetime) -> None:
    """Mark the event's extraction job done, if one is still queued: once an event is
    decided, by whichever path, no job for it stays open."""
    job = unit.get_job(event.tenant, job_id_for(event))
    if job is not None and job.status == "queued":
        unit.finish_job(event.tenant, job.job_id, at=now)


def contradiction(batch: Batch) -> str | None:
    """Why the batch cannot be committed as it stands, or ``None``."""
    if not batch.complete:
        return "the extractor marked the candidate batch incomplete"
    groups: dict[tuple[str, str, str], list[Claim]] = defaultdict(list)
    for claim in batch.claims:
        groups[(claim.subject or batch.event.subject, claim.family, claim.scope)].append(claim)
    for (subject, family, scope), claims in sorted(groups.items()):
        clash = first_overlap([_interval(batch.event, c) for c in claims])
        if clash is not None:
            return (
                f"candidates for {family!r} of {subject!r} in scope {scope!r} overlap in valid "
                f"time ({format_time(clash[1].start)}): the batch contradicts itself"
            )
    return None


@dataclass(slots=True)
class _Plan:
    """What the commit will do to one family."""

    slot: FamilySlot
    ordering: Ordering
    current: list[tuple[int, Claim]]
    other: list[tuple[int, Claim, Disposition, ExclusionReason | None]]


def commit_event(
    unit: UnitOfWork, batch: Batch, *, schema: Schema, policy: WritePolicy, now: datetime
) -> Receipt:
    """Commit ``batch`` atomically inside ``unit``. See the module docstring.

    An event already decided returns its stored receipt with ``duplicate=True``,
    whatever claims come with the replay: the event, not the claim batch, is the
    unit of idempotency (a retried extractor may propose other claims).
    """
    event = batch.event
    append_to_ledger(unit, event, now=now, validate=lambda: validate(batch, schema))
    prior = unit.get_outcome(event.tenant, event.event_id)
    if prior is not None and prior.outcome != "queued":
        finish_job(unit, event, now=now)
        return replace(prior, duplicate=True)
    batch = replace(batch, claims=distinct_claims(batch.claims))

    problem = contradiction(batch)
    if problem is not None:
        return _to_review(unit, batch, problem, now)

    plans: dict[tuple[str, str], _Plan] = {}
    for key in sorted({(c.subject or event.subject, c.family) for c in batch.claims}):
        slot = unit.lock_family(event.tenant, *key)
        plans[key] = _Plan(slot, order(Position.of(event), slot.position, policy), [], [])

    results: list[ClaimResult] = []
    for index, claim in enumerate(batch.claims):
        subject = claim.subject or event.subject
        plan = plans[(subject, claim.family)]
        seen = None if batch.generations is None else batch.generations.get(claim.family, 0)
        if seen is not None and plan.slot.generation > seen:
            results.append(_rejected(claim, "stale_generation"))
            continue
        if unit.is_revoked_source(event.tenant, subject, claim.family, event.event_id):
            results.append(_rejected(claim, "revoked_source"))
            continue
        auth = authority(event, subject=subject, family=claim.family, scope=claim.scope)
        if not auth.authorised:
            plan.other.append((index, claim, "observation", auth.reason))
        elif plan.ordering.decision == "review":
            return _to_review(unit, batch, plan.ordering.explanation, now)
        elif plan.ordering.decision == "historical":
            plan.other.append((index, claim, "historical", plan.ordering.reason))
        else:
            plan.current.append((index, claim))

    revisions: list[FamilyRevision] = []
    by_index: dict[int, ClaimResult] = {}
    for plan in plans.values():
        if not plan.current and not plan.other:
            continue
        revisions.append(_apply(unit, batch, plan, by_index, now=now, policy=policy))
    results.extend(by_index[i] for i in sorted(by_index))
    receipt = Receipt(
        tenant=event.tenant,
        event_id=event.event_id,
        outcome="committed",
        revisions=tuple(revisions),
        results=tuple(sorted(results, key=lambda r: (r.family, r.scope, r.memory_id or ""))),
        job_id=batch.job_id,
    )
    unit.put_outcome(receipt, at=now)
    finish_job(unit, event, now=now)
    return receipt


def _rejected(claim: Claim, reason: ExclusionReason) -> ClaimResult:
    return ClaimResult(
        family=claim.family,
        scope=claim.scope,
        disposition="rejected",
        memory_id=None,
        reason=reason,
    )


def _to_review(unit: UnitOfWork, batch: Batch, reason: str, now: datetime) -> Receipt:
    event = batch.event
    review_id = stable_id("rev", event.tenant, event.event_id)
    unit.add_review(
        ReviewItem(
            tenant=event.tenant,
            review_id=review_id,
            event_id=event.event_id,
            subject=event.subject,
            reason=reason,
            claims=batch.claims,
            created_at=now,
        )
    )
    receipt = Receipt(
        tenant=event.tenant,
        event_id=event.event_id,
        outcome="review",
        review_id=review_id,
        reason=reason,
        job_id=batch.job_id,
    )
    unit.put_outcome(receipt, at=now)
    finish_job(unit, event, now=now)
    return receipt


def _apply(
    unit: UnitOfWork,
    batch: Batch,
    plan: _Plan,
    results: dict[int, ClaimResult],
    *,
    now: datetime,
    policy: WritePolicy,
) -> FamilyRevision:
    event, slot = batch.event, plan.slot
    revision = slot.revision + 1
    at = max(now, slot.updated_at) if slot.updated_at is not None else now
    writer = _Writer(unit, slot, revision=revision, at=at, cause=event.event_id)

    by_scope: dict[str, list[tuple[int, Claim]]] = defaultdict(list)
    for index, claim in plan.current:
        by_scope[claim.scope].append((index, claim))
    open_records = (
        [
            r
            for r in unit.family_records(slot.tenant, slot.subject, slot.family, open_only=True)
            if r.authorised
        ]
        if by_scope
        else []
    )
    for scope, claims in sorted(by_scope.items()):
        existing = {r.memory_id: r for r in open_records if r.scope == scope}
        plan_ = reconcile(
            [Window(r.memory_id, Interval(r.valid_from, r.valid_until)) for r in existing.values()],
            [_interval(event, c) for _, c in claims],
        )
        for key in plan_.closed:
            writer.close(existing[key])
        for remnant in plan_.remnants:
            source = existing[remnant.source]
            writer.insert(
                replace(
                    source,
                    memory_id=stable_id(
                        "mem",
                        slot.tenant,
                        source.memory_id,
                        str(revision),
                        format_time(remnant.interval.start),
                    ),
                    valid_from=remnant.interval.start,
                    valid_until=remnant.interval.end,
                    recorded_at=at,
                    superseded_at=None,
                    closed_by=None,
                    status="active",
                    revision=revision,
                    generation=slot.generation,
                    supersedes=source.memory_id,
                )
            )
        for index, claim in claims:
            results[index] = writer.claim(batch, index, claim, "current", None, policy)
    for index, claim, disposition, reason in plan.other:
        results[index] = writer.claim(batch, index, claim, disposition, reason, policy)

    position = Position.of(event) if plan.current else slot.position
    unit.put_family(replace(slot, revision=revision, position=position, updated_at=at))
    unit.add_family_event(
        slot.tenant, slot.subject, slot.family, event_id=event.event_id, revision=revision
    )
    return FamilyRevision(
        subject=slot.subject, family=slot.family, revision=revision, generation=slot.generation
    )


class _Writer:
    """Writes records of one family at one revision, each with its history and outbox rows."""

    def __init__(
        self, unit: UnitOfWork, slot: FamilySlot, *, revision: int, at: datetime, cause: str
    ) -> None:
        self.unit, self.slot, self.revision, self.at, self.cause = unit, slot, revision, at, cause
        self._written: set[str] = set()

    def _history(self, record: MemoryRecord, action: str) -> None:
        self.unit.add_history(
            HistoryEntry(
                seq=0,
                tenant=record.tenant,
                subject=record.subject,
                family=record.family,
                revision=self.revision,
                generation=self.slot.generation,
                action="closed" if action == "closed" else "recorded",
                memory_id=record.memory_id,
                status=record.status,
                at=self.at,
                cause=self.cause,
            )
        )

    def close(self, record: MemoryRecord) -> None:
        self.unit.close_record(
            record.tenant, record.memory_id, status="superseded", at=self.at, closed_by=self.cause
        )
        closed = replace(record, status="superseded", superseded_at=self.at)
        self._history(closed, "closed")
        self.unit.add_outbox(replace(closed, revision=self.revision), op="delete", at=self.at)

    def insert(self, record: MemoryRecord) -> None:
        if record.memory_id in self._written:
            return
        self._written.add(record.memory_id)
        self.unit.insert_record(record)
        self._history(record, "recorded")
        self.unit.add_outbox(record, op="upsert", at=self.at)

    def claim(
        self,
        batch: Batch,
        index: int,
        claim: Claim,
        disposition: Disposition,
        reason: ExclusionReason | None,
        policy: WritePolicy,
    ) -> ClaimResult:
        event = batch.event
        interval = _interval(event, claim)
        authorised = disposition != "observation"
        memory_id = stable_id(
            "mem", event.tenant, event.event_id, str(index), claim.family, claim.scope
        )
        self.insert(
            MemoryRecord(
                tenant=event.tenant,
                memory_id=memory_id,
                subject=self.slot.subject,
                family=claim.family,
                kind=claim.kind if authorised else "observation",
                proposed_kind=claim.kind,
                claim=claim.statement,
                value=claim.value,
                scope=claim.scope,
                status="historical" if disposition == "historical" else "active",
                source_event_id=event.event_id,
                source_actor_id=event.actor.id,
                source_channel=event.channel,
                source_identity_authenticated=event.actor.authenticated,
                scope_authorized=authorised,
                claim_faithful_to_source=claim.grounding is not None,
                operational_setting_confirmed=(
                    disposition == "current" and event.channel in policy.setting_channels
                ),
                recorded_at=self.at,
                superseded_at=None,
                closed_by=None,
                valid_from=interval.start,
                valid_until=interval.end,
                revision=self.revision,
                generation=self.slot.generation,
                confidence=float(claim.confidence),
                grounding=claim.grounding,
                extractor=batch.extractor,
                supersedes=None,
                exclusion=reason,
            )
        )
        return ClaimResult(
            family=claim.family,
            scope=claim.scope,
            disposition=disposition,
            memory_id=memory_id,
            reason=reason,
        )
