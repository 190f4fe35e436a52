"""Resolving the review queue: a reviewer accepts or rejects a held batch.

An event goes to review when its batch could not be committed as it stood: the
extractor marked it incomplete (or it had too many claims), it contradicts
itself (two candidates for one slot overlap in valid time), or the order rule
could not place it against the family's latest accepted event (same sequence
in one stream, unsequenced ties, equal precedence across sequenced streams).
It then changed nothing. The decision rules:

* **accept** commits the held batch, in one transaction, as the commit would
  have if the order rule had said "apply": the reviewer's decision stands in
  for the rule wherever the rule still cannot decide. Where it can decide now
  (the family accepted a later event meanwhile) it still does, so an accepted
  late event becomes ``historical`` rather than overriding newer accepted state.
  An incomplete batch is taken as the reviewer vouches for it: complete.
  Everything else is checked as for any batch: authority (an actor without the
  grant still yields observations only), revoked and forgotten sources, and
  revocations since the held work began (a family revoked meanwhile rejects its
  claims as ``stale_generation``), and the size limits. A batch that contradicts
  itself cannot be accepted as it stands: :class:`~memledger.errors.ConflictError`,
  nothing written; reject it and ingest the corrected claims as a new event.
  The event's receipt becomes the committed one (naming the review id); its
  revisions are the consistency tokens.
* **reject** closes the item and changes nothing else: no record, no revision.

Both record who decided, why and when on the review item, leave one history
entry in each family the held claims name (``review_accepted`` or
``review_rejected``, with the review id and a note of who and why; an accept's
records have their own ``recorded``/``closed`` entries beside it) and bump a
``review:accepted`` / ``review:rejected`` counter. Resolving an item again the
same way is acknowledged (``duplicate=True``); the other way is a
:class:`~memledger.errors.ConflictError`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memledger.domain.families import Schema
from memledger.domain.limits import Limits, check_claims
from memledger.domain.policy import WritePolicy
from memledger.domain.records import (
    HistoryEntry,
    Receipt,
    ReviewDecision,
    ReviewItem,
    ReviewResolution,
    ReviewResolutionState,
)
from memledger.errors import ConflictError, ReviewNotFoundError
from memledger.ports import UnitOfWork
from memledger.write.batch import Batch
from memledger.write.commit import commit_event
from memledger.write.history import family_time

__all__ = ["resolve_review"]


def resolve_review(
    unit: UnitOfWork,
    tenant: str,
    review_id: str,
    *,
    decision: ReviewDecision,
    by: str,
    reason: str,
    schema: Schema,
    policy: WritePolicy,
    limits: Limits,
    now: datetime,
) -> ReviewResolution:
    """Accept or reject a review item inside ``unit``. See the module docstring."""
    item = unit.get_review(tenant, review_id)
    if item is None:
        raise ReviewNotFoundError(f"no review item {review_id!r} for tenant {tenant!r}")
    state: ReviewResolutionState = "accepted" if decision == "accept" else "rejected"
    if item.resolution is not None:
        if item.resolution != state:
            raise ConflictError(
                f"review item {review_id!r} was already {item.resolution} by "
                f"{item.resolved_by!r}; it cannot be {state} now"
            )
        prior = unit.get_outcome(tenant, item.event_id) if state == "accepted" else None
        again = None if prior is None else replace(prior, duplicate=True)
        return ReviewResolution(item=item, receipt=again, duplicate=True)
    receipt: Receipt | None = None
    if decision == "accept":
        check_claims(item.claims, limits)
        stored = unit.get_event(tenant, item.event_id)
        assert stored is not None, "the ledger is append-only"
        batch = Batch(
            event=stored.event,
            claims=item.claims,
            extractor=item.extractor,
            generations=item.generations,
            revocation_mark=item.revocation_mark,
            job_id=item.job_id,
            note=f"accepted on review {review_id} by {by}",
            from_ledger=True,
        )
        receipt = commit_event(unit, batch, schema=schema, policy=policy, now=now, reviewed=True)
    unit.resolve_review(tenant, review_id, resolution=state, by=by, reason=reason, at=now)
    _history(unit, item, state=state, note=f"{state} by {by}: {reason}", now=now)
    unit.bump_counter(tenant, f"review:{state}")
    resolved = replace(
        item, resolved_at=now, resolution=state, resolved_by=by, resolution_reason=reason
    )
    return ReviewResolution(item=resolved, receipt=receipt)


def _history(
    unit: UnitOfWork, item: ReviewItem, *, state: ReviewResolutionState, note: str, now: datetime
) -> None:
    """One entry per family the held claims name, at the family's revision as it now stands."""
    for subject, family in sorted({(c.subject or item.subject, c.family) for c in item.claims}):
        slot = unit.get_family(item.tenant, subject, family)
        at = now if slot is None else family_time(slot, now)
        unit.add_history(
            HistoryEntry(
                seq=0,
                tenant=item.tenant,
                subject=subject,
                family=family,
                revision=0 if slot is None else slot.revision,
                generation=0 if slot is None else slot.generation,
                action="review_accepted" if state == "accepted" else "review_rejected",
                memory_id=item.review_id,
                status="active" if state == "accepted" else "historical",
                at=at,
                cause=item.event_id,
                note=note,
            )
        )
