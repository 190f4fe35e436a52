"""Source events and what becomes of them on the wire: the ingest :class:`Receipt`
(its :class:`RevisionToken` and :class:`ClaimResult` items), the stored :class:`Event`
and its :class:`EventStatus`, extraction jobs (:class:`Job`, :class:`WorkReport`), and
the review queue (:class:`Review` with its :class:`ClaimOut` claims,
:class:`ReviewResolution`, :class:`PossibleUpdate`)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime
from pydantic import JsonValue as Json

from memledger.domain.records import (
    Channel,
    Disposition,
    EventOutcome,
    ExclusionReason,
    Kind,
    Role,
)
from memledger.wire_models._base import WireModel
from memledger.wire_models._records import Record
from memledger.write.worker import JobOutcome

__all__ = [
    "Actor",
    "ClaimOut",
    "ClaimResult",
    "Event",
    "EventStatus",
    "Job",
    "PossibleUpdate",
    "Receipt",
    "Review",
    "ReviewResolution",
    "RevisionToken",
    "WorkReport",
]


class RevisionToken(WireModel):
    subject: str
    family: str
    revision: int
    generation: int


class ClaimResult(WireModel):
    family: str
    scope: str
    disposition: Disposition
    memory_id: str | None
    reason: ExclusionReason | None


class Receipt(WireModel):
    """:func:`memledger.wire.receipt_to_dict`."""

    tenant: str
    event_id: str
    outcome: EventOutcome
    duplicate: bool
    revisions: list[RevisionToken]
    results: list[ClaimResult]
    review_id: str | None
    job_id: str | None
    reason: str | None


class Actor(WireModel):
    id: str
    authenticated: bool
    grants: list[str]


class Event(WireModel):
    """A source event as the ledger holds it (the input shape, with its tenant)."""

    tenant: str
    event_id: str
    subject: str
    actor: Actor
    channel: Channel
    occurred_at: AwareDatetime
    text: str
    sequence: int | None
    stream: str | None
    metadata: dict[str, Json]
    role: Role | None


class Job(WireModel):
    """:func:`memledger.wire.job_to_dict`."""

    tenant: str
    job_id: str
    event_id: str
    status: Literal["queued", "done", "failed"]
    generations: dict[str, int]
    created_at: AwareDatetime
    attempts: int
    last_error: str | None
    next_attempt_at: AwareDatetime | None
    lease_until: AwareDatetime | None


class EventStatus(WireModel):
    """An event, its stored receipt (``None``: not processed yet) and its extraction job."""

    event: Event
    receipt: Receipt | None
    job: Job | None


class WorkReport(WireModel):
    """:func:`memledger.wire.work_report_to_dict`."""

    mode: str
    stopped_by: str | None
    jobs: int
    outcomes: dict[JobOutcome, int]
    errors: list[str]
    expired: int
    indexed: int
    """Outbox rows the worker applied to the derived index."""


class ClaimOut(WireModel):
    """:func:`memledger.wire.claim_to_dict`: a claim in the input shape."""

    family: str
    kind: Kind
    statement: str
    value: Json
    scope: str
    subject: str | None
    valid_from: AwareDatetime | None
    valid_until: AwareDatetime | None
    grounding: str | None
    confidence: float
    polarity: Literal["assert", "retract"]
    expires_at: AwareDatetime | None


class Review(WireModel):
    """:func:`memledger.wire.review_to_dict`."""

    tenant: str
    review_id: str
    event_id: str
    subject: str
    reason: str
    claims: list[ClaimOut]
    created_at: AwareDatetime
    resolved_at: AwareDatetime | None
    resolution: str | None
    resolved_by: str | None
    resolution_reason: str | None


class PossibleUpdate(WireModel):
    """:func:`memledger.wire.possible_update_to_dict`."""

    reason: str
    current: Record
    turn: Record


class ReviewResolution(WireModel):
    """:func:`memledger.wire.review_resolution_to_dict`."""

    review: Review
    receipt: Receipt | None
    duplicate: bool
