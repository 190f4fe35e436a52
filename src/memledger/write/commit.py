"""The event commit: one source event and its complete candidate batch, in one transaction.

``commit_event`` runs inside a unit of work the caller opened with
``store.write()``; if anything raises, the whole event rolls back. In order:

1. append the event to the ledger (same id and content: idempotent; other
   content: :class:`EventConflictError`); an event already decided returns
   its stored receipt;
2. an incomplete or self-contradictory batch goes to the review queue and
   changes nothing else (until a reviewer accepts it: ``reviewed=True``);
3. lock every family the batch touches (sorted, so writers never deadlock)
   and apply the order rule; a family whose order cannot be decided sends the
   whole event to review;
4. per candidate: reject work begun before a revocation of its family (of
   the event's subject or any other: ``stale_generation``) or from a revoked or
   forgotten source (``revoked_source``); keep unauthorised claims as observations and claims from
   behind the family's timeline as historical;
5. decide what each current claim does (ADD, UPDATE, DELETE or NOOP; see
   ``memledger.write.apply``), reconcile the valid-time intervals, bump each
   family's revision, write history and outbox rows, and mark the event
   decided with its receipt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from memledger._schemas import own_say_taken
from memledger.domain.families import Schema
from memledger.domain.policy import Ordering, Position, WritePolicy, authority, order
from memledger.domain.records import (
    Claim,
    ClaimResult,
    ExclusionReason,
    FamilyRevision,
    Receipt,
    ReviewItem,
    SourceEvent,
)
from memledger.errors import ConflictError, EventConflictError, EventErasedError
from memledger.ports import UnitOfWork
from memledger.write.apply import FamilyPlan, apply_family
from memledger.write.batch import (
    Batch,
    contradiction,
    distinct_claims,
    interval_of,
    stable_id,
    validate,
)

__all__ = ["Batch", "append_to_ledger", "commit_event", "finish_job", "job_id_for", "stable_id"]


def append_to_ledger(
    unit: UnitOfWork, event: SourceEvent, *, now: datetime, validate: Callable[[], None]
) -> None:
    """Append ``event`` unless the ledger already has it.

    The same id with other content is refused before ``validate`` runs, so a
    reused id is reported as such whatever else is wrong with the request.
    """
    content_hash = event.content_hash()
    stored = unit.event_hash(event.tenant, event.event_id)
    if stored is not None and stored != content_hash:
        raise EventConflictError(
            f"event {event.event_id!r} of tenant {event.tenant!r} is already in the ledger "
            "with different content; the ledger is append-only, use a new event id"
        )
    if stored is None and (erasure := unit.tombstone(event.tenant, event.event_id)) is not None:
        raise EventErasedError(
            f"event {event.event_id!r} of tenant {event.tenant!r} was erased ({erasure});"
            " an erased event is not accepted again"
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
    unit.finish_job(event.tenant, job_id_for(event), at=now)


def commit_event(
    unit: UnitOfWork,
    batch: Batch,
    *,
    schema: Schema,
    policy: WritePolicy,
    now: datetime,
    reviewed: bool = False,
    rederived: bool = False,
) -> Receipt:
    """Commit ``batch`` atomically inside ``unit``. See the module docstring.

    An event already decided returns its stored receipt with ``duplicate=True``,
    whatever claims come with the replay: the event, not the claim batch, is the
    unit of idempotency (a retried extractor may propose other claims).

    ``reviewed=True`` commits a batch a reviewer accepted from the review queue
    (``Memory.resolve_review``): the event's ``review`` outcome no longer stands in
    the way, and where the order rule cannot decide (``review``) the reviewer's
    decision applies the claims. Where the rule does decide (the family moved on
    meanwhile) it still does, and every other check (authority, generations,
    revoked and forgotten sources) runs as for any batch. A batch that contradicts
    itself cannot be accepted: :class:`ConflictError`, nothing written.

    ``rederived=True`` commits another extractor's claims for an event already decided
    (an extractor's rollback, ``memledger.write.undo``): the batch needs a
    ``derivation`` (the new records' ids derive from it), the event's stored outcome
    stays as it is, and a batch that would go to review changes nothing (its receipt
    says ``review``).
    """
    if rederived:
        return _rederive(unit, batch, schema=schema, policy=policy, now=now)
    event = batch.event
    if batch.from_ledger:
        validate(batch, schema)
    else:
        append_to_ledger(unit, event, now=now, validate=lambda: validate(batch, schema))
    prior = unit.get_outcome(event.tenant, event.event_id)
    if (
        prior is not None
        and prior.outcome != "queued"
        and not (reviewed and prior.outcome == "review")
    ):
        finish_job(unit, event, now=now)
        return replace(prior, duplicate=True)
    review_id = prior.review_id if reviewed and prior is not None else None
    return _apply(
        unit, batch, schema=schema, policy=policy, now=now, reviewed=reviewed, review_id=review_id
    )


def _rederive(
    unit: UnitOfWork, batch: Batch, *, schema: Schema, policy: WritePolicy, now: datetime
) -> Receipt:
    if batch.derivation is None:
        raise ValueError("a re-derived batch needs a derivation")  # a caller's mistake
    validate(batch, schema)
    return _apply(unit, batch, schema=schema, policy=policy, now=now, rederived=True)


def _apply(
    unit: UnitOfWork,
    batch: Batch,
    *,
    schema: Schema,
    policy: WritePolicy,
    now: datetime,
    reviewed: bool = False,
    review_id: str | None = None,
    rederived: bool = False,
) -> Receipt:
    """Steps 2 to 5 of the module docstring (``rederived``: see :func:`commit_event`)."""
    event = batch.event
    batch = replace(batch, claims=distinct_claims(batch.claims))

    problem = contradiction(batch)
    if problem is not None:
        if reviewed:
            raise ConflictError(
                f"the batch of event {event.event_id!r} cannot be accepted as it stands: "
                f"{problem}; reject the review item and ingest corrected claims as a new event"
            )
        return _held(batch, problem) if rederived else _to_review(unit, batch, problem, now)

    plans: dict[tuple[str, str], FamilyPlan] = {}
    for key in sorted({(c.subject or event.subject, c.family) for c in batch.claims}):
        slot = unit.lock_family(event.tenant, *key)
        ordering = order(Position.of(event), slot.position, policy)
        if rederived and slot.position is not None and slot.position.event_id == event.event_id:
            ordering = Ordering("apply", None, "the family's latest event, re-derived")
        plans[key] = FamilyPlan(slot, ordering)

    results: list[ClaimResult] = []
    forgotten = unit.is_forgotten(event.tenant, event.event_id)
    say = {c.family for c in batch.claims if schema.family(c.family).own_say}
    say -= own_say_taken(unit, event.tenant) if say else set()
    for index, claim in enumerate(batch.claims):
        subject = claim.subject or event.subject
        plan = plans[(subject, claim.family)]
        if _stale(unit, batch, plan.slot.generation, subject, claim.family):
            results.append(_rejected(claim, "stale_generation"))
            continue
        if forgotten or unit.is_revoked_source(event.tenant, subject, claim.family, event.event_id):
            results.append(_rejected(claim, "revoked_source"))
            continue
        auth = authority(
            event,
            subject=subject,
            family=claim.family,
            scope=claim.scope,
            kind=claim.kind,
            own_say=claim.family in say,
        )
        if not auth.authorised:
            plan.other.append((index, claim, "observation", auth.reason))
        elif claim.kind == "episode":  # a record that the turn happened: never out of order
            plan.current.append((index, claim))
        elif plan.ordering.decision == "review" and not reviewed:
            if rederived:
                return _held(batch, plan.ordering.explanation)
            return _to_review(unit, batch, plan.ordering.explanation, now)
        elif plan.ordering.decision == "historical" and _overtaken(
            unit, event, subject, claim, policy
        ):
            clipped = _clipped(unit, event, subject, claim, policy) if rederived else None
            if clipped is None:
                plan.other.append((index, claim, "historical", plan.ordering.reason))
            else:  # re-derived: the time it had, up to the newer state of its scope
                plan.current.append((index, clipped))
                plan.behind = True
        elif plan.ordering.decision == "historical":  # late, but nothing newer in its scope
            plan.current.append((index, claim))
            plan.behind = True
        else:
            plan.current.append((index, claim))

    revisions: list[FamilyRevision] = []
    by_index: dict[int, ClaimResult] = {}
    for plan in plans.values():
        if not plan.current and not plan.other:
            continue
        revisions.append(apply_family(unit, batch, plan, by_index, now=now, policy=policy))
    results.extend(by_index[i] for i in sorted(by_index))
    for result in results:
        if result.disposition == "rejected":
            unit.bump_counter(event.tenant, f"rejected:{result.reason}")
    receipt = Receipt(
        tenant=event.tenant,
        event_id=event.event_id,
        outcome="committed",
        revisions=tuple(revisions),
        results=tuple(sorted(results, key=lambda r: (r.family, r.scope, r.memory_id or ""))),
        job_id=batch.job_id,
        reason=batch.note,
        review_id=review_id,
    )
    if not rederived:
        unit.put_outcome(receipt, at=now)
        finish_job(unit, event, now=now)
    return receipt


def _held(batch: Batch, reason: str) -> Receipt:
    """A re-derived batch the order rule or its own contradictions would hold for review:
    nothing is written."""
    return Receipt(
        tenant=batch.event.tenant, event_id=batch.event.event_id, outcome="review", reason=reason
    )


def _stale(unit: UnitOfWork, batch: Batch, generation: int, subject: str, family: str) -> bool:
    """Whether work that began earlier (a job) must not write into this family: it was
    revoked after the work began. The event subject's generations are in the job's
    snapshot; any subject's later revocations are in the tenant's revocation log."""
    event = batch.event
    if (
        subject == event.subject
        and batch.generations is not None
        and generation > batch.generations.get(family, 0)
    ):
        return True
    mark = batch.revocation_mark
    return mark is not None and unit.revoked_after(event.tenant, subject, family, mark)


def _clipped(
    unit: UnitOfWork, event: SourceEvent, subject: str, claim: Claim, policy: WritePolicy
) -> Claim | None:
    """A re-derived claim of an event the family has moved past, with the valid time its
    event had: from its start up to the first open record of its scope from an event
    after it. ``None`` when no such record starts after it (it stays historical)."""
    incoming = Position.of(event)
    window = interval_of(event, claim)
    starts: list[datetime] = []
    for record in unit.family_records(event.tenant, subject, claim.family, open_only=True):
        if record.scope != claim.scope or record.valid_from <= window.start:
            continue
        stored = unit.get_event(event.tenant, record.source_event_id)
        if stored is not None and order(incoming, Position.of(stored.event), policy).decision != (
            "apply"
        ):
            starts.append(record.valid_from)
    if not starts:
        return None
    end = min(starts) if window.end is None else min(window.end, *starts)
    return replace(claim, valid_from=window.start, valid_until=end)


def _overtaken(
    unit: UnitOfWork, event: SourceEvent, subject: str, claim: Claim, policy: WritePolicy
) -> bool:
    """Whether a claim of an event that is late for its family meets newer state in its
    own scope: a record of that scope written, or closed, by an event that the order
    rule puts after this one. A family's position is one point for all its scopes; a
    late "likes: jazz" is not overtaken by a newer "likes: tea"."""
    incoming = Position.of(event)
    events: set[str] = set()
    for record in unit.family_records(event.tenant, subject, claim.family, open_only=False):
        if record.scope == claim.scope:
            events.add(record.source_event_id)
            if record.closed_by and record.status in ("superseded", "retracted"):
                if _merged(unit, event.tenant, record.closed_by):
                    continue  # a consolidation's merge: no newer state
                events.add(record.closed_by)  # closed by an event's decision
    events.discard(event.event_id)
    for event_id in sorted(events):
        stored = unit.get_event(event.tenant, event_id)
        if stored is None:
            return True  # cannot tell: keep the family's answer
        if order(incoming, Position.of(stored.event), policy).decision != "apply":
            return True
    return False


def _merged(unit: UnitOfWork, tenant: str, cause: str) -> bool:
    change = unit.get_change(tenant, cause)
    return change is not None and change.kind == "merge"


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
            extractor=batch.extractor,
            job_id=batch.job_id,
            generations=batch.generations,
            # work that began "now" began at this review: a family revoked later makes
            # the held claims stale, should a reviewer accept them
            revocation_mark=(
                unit.revocation_mark(event.tenant)
                if batch.revocation_mark is None
                else batch.revocation_mark
            ),
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
