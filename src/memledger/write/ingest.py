"""What :meth:`memledger.Memory.ingest` and :meth:`~memledger.Memory.commit_job` run:
an event appended to the ledger with its claims committed atomically, or queued for
extraction; an extraction job's claims committed under the generations it started
with.

* :func:`ingest`: every input checked before the write transaction; inside it, the
  tenant's quotas (:func:`check_quotas`), then the commit
  (:func:`memledger.write.commit.commit_event`) or the queueing (:func:`enqueue`);
* :func:`commit_job`: a queued event's claims, from the ledger's own copy of it;
* :func:`ingest_as`: :func:`ingest` on behalf of an authenticated API key
  (:func:`on_behalf_of`: the event as the key may send it, or the
  :class:`~memledger.errors.PermissionDeniedError` that refuses it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memledger.domain.addresses import check_tenant
from memledger.domain.keys import Principal
from memledger.domain.limits import check_claims, check_event
from memledger.domain.quotas import Quotas
from memledger.domain.records import (
    CALLER,
    Claim,
    ExtractorInfo,
    Job,
    Receipt,
    SourceEvent,
    require_claims,
    require_id,
)
from memledger.errors import (
    EventNotFoundError,
    InvalidEventError,
    InvalidInputError,
    InvalidQueryError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
)
from memledger.ports import UnitOfWork, generations_of
from memledger.write.commit import Batch, append_to_ledger, commit_event, job_id_for
from memledger.write.ports import WritePorts

__all__ = [
    "MINUTE",
    "check_quotas",
    "commit_job",
    "enqueue",
    "ingest",
    "ingest_as",
    "on_behalf_of",
]

MINUTE = timedelta(minutes=1)


def ingest(
    ports: WritePorts,
    event: SourceEvent,
    claims: Sequence[Claim] | None = None,
    *,
    complete: bool = True,
    extractor: ExtractorInfo = CALLER,
) -> Receipt:
    """Append ``event`` to the ledger and commit its claims atomically.

    With ``claims=None`` the event is stored and an extraction job is queued
    (outcome ``"queued"``), carrying the family generations it started under;
    finish it with :meth:`commit_job`. Processing an event again, with or
    without claims, returns its stored receipt with ``duplicate=True``. A new
    event past its tenant's quotas is refused and writes nothing.
    """
    if not isinstance(event, SourceEvent):
        raise InvalidEventError(f"expected a SourceEvent, got {type(event).__name__}")
    check_event(event, ports.limits)
    if claims is not None:
        claims = require_claims(claims, complete=complete, extractor=extractor)
        check_claims(claims, ports.limits)  # all before the write transaction
        schema = ports.schema_for(event.tenant, [c.family for c in claims])
    now = ports.clock.now()
    limits = Quotas() if ports.quotas is None else ports.quotas(event.tenant)
    with ports.store.write() as unit:
        if not limits.unlimited and unit.event_hash(event.tenant, event.event_id) is None:
            check_quotas(unit, event, limits, queued=claims is None, now=now)
        if claims is None:
            return enqueue(unit, event, now)
        batch = Batch(event=event, claims=tuple(claims), complete=complete, extractor=extractor)
        return commit_event(unit, batch, schema=schema, policy=ports.policy, now=now)


def ingest_as(
    ports: WritePorts,
    principal: Principal,
    event: SourceEvent,
    claims: Sequence[Claim] | None = None,
    *,
    complete: bool = True,
    extractor: ExtractorInfo = CALLER,
) -> Receipt:
    """:meth:`ingest` on behalf of an authenticated key: the event's actor becomes the
    key's (authenticated, with the key's grants), whatever the event said.

    Refused with :class:`PermissionDeniedError`, writing nothing: a read-only key;
    an event naming another tenant than the key's; a setting channel (``system``,
    ``account_service``) from a key that is not a ``service``'s; an event or claim
    about another agent's private namespace (``agent:<id>...``).
    """
    event = on_behalf_of(principal, event, claims, setting_channels=ports.policy.setting_channels)
    return ingest(ports, event, claims, complete=complete, extractor=extractor)


def enqueue(unit: UnitOfWork, event: SourceEvent, now: datetime) -> Receipt:
    """Append ``event`` and queue its extraction job, carrying the family generations
    and the revocation mark it starts under; an event decided before returns its
    stored receipt (``duplicate``)."""
    append_to_ledger(unit, event, now=now, validate=lambda: None)
    prior = unit.get_outcome(event.tenant, event.event_id)
    if prior is not None:
        return replace(prior, duplicate=True)
    job = Job(
        tenant=event.tenant,
        job_id=job_id_for(event),
        event_id=event.event_id,
        generations=generations_of(unit.families(event.tenant, event.subject)),
        created_at=now,
        revocation_mark=unit.revocation_mark(event.tenant),
    )
    unit.add_job(job)
    receipt = Receipt(
        tenant=event.tenant, event_id=event.event_id, outcome="queued", job_id=job.job_id
    )
    unit.put_outcome(receipt, at=now)
    return receipt


def commit_job(
    ports: WritePorts,
    job_id: str,
    claims: Sequence[Claim],
    *,
    tenant: str,
    complete: bool = True,
    extractor: ExtractorInfo = CALLER,
) -> Receipt:
    """Commit an extraction job's claims under the generations the job started with:
    claims for a family revoked since are rejected as ``stale_generation``; a job that
    already finished returns its receipt."""
    check_tenant(tenant)
    require_id(job_id, "job_id", InvalidQueryError)
    claims = require_claims(claims, complete=complete, extractor=extractor)
    check_claims(claims, ports.limits)  # before the write transaction
    schema = ports.schema_for(tenant, [c.family for c in claims])
    now = ports.clock.now()
    with ports.store.write() as unit:
        job = unit.get_job(tenant, job_id)
        if job is None:
            raise NotFoundError(f"no job {job_id!r} for tenant {tenant!r}")
        stored = unit.get_event(tenant, job.event_id)
        if stored is None:  # pragma: no cover - the ledger is append-only
            raise EventNotFoundError(f"job {job_id!r} names missing event {job.event_id!r}")
        batch = Batch(
            event=stored.event,
            claims=tuple(claims),
            complete=complete,
            extractor=extractor,
            generations=job.generations,
            revocation_mark=job.revocation_mark,
            job_id=job_id,
            from_ledger=True,  # read from this ledger: nothing to append or compare
        )
        return commit_event(unit, batch, schema=schema, policy=ports.policy, now=now)


def on_behalf_of(
    principal: Principal,
    event: SourceEvent,
    claims: Sequence[Claim] | None,
    *,
    setting_channels: Iterable[str],
) -> SourceEvent:
    """``event`` with the key's actor as its actor, if ``principal`` may send it.

    Refused with :class:`PermissionDeniedError`: a read-only key; an event naming
    another tenant than the key's; a setting channel (``setting_channels``: ``system``,
    ``account_service``) from a key that is not a ``service``'s; an event or claim
    about another agent's private namespace (``agent:<id>...``)."""
    if not isinstance(principal, Principal):
        raise InvalidInputError(f"expected a Principal, got {type(principal).__name__}")
    if not isinstance(event, SourceEvent):
        raise InvalidEventError(f"expected a SourceEvent, got {type(event).__name__}")
    who = f"API key {principal.key_id!r}"
    if not principal.may_write:
        raise PermissionDeniedError(f"{who} is read-only: it cannot write")
    if event.tenant != principal.tenant:
        raise PermissionDeniedError(
            f"{who} acts for tenant {principal.tenant!r}; the event names tenant {event.tenant!r}"
        )
    if event.channel in setting_channels and principal.kind != "service":
        raise PermissionDeniedError(
            f"{who} is a {principal.kind}'s; only a service's key may send events on "
            f"the {event.channel!r} channel, whose claims are business settings"
        )
    for subject in {event.subject, *(c.subject for c in claims or () if c.subject)}:
        principal.require_write_to(subject)
    return replace(event, actor=principal.actor)


def check_quotas(
    unit: UnitOfWork, event: SourceEvent, quotas: Quotas, *, queued: bool, now: datetime
) -> None:
    """Refuse a new event of a tenant past ``max_records``, or past ``jobs_per_minute``
    when it queues a job; inside the write transaction, so nothing is written."""
    tenant = event.tenant
    if quotas.max_records is not None and unit.open_records_count(tenant) >= quotas.max_records:
        raise QuotaExceededError(
            f"tenant {tenant!r} holds {quotas.max_records:,} open records, its quota"
            " (max_records); expire, erase or close records to make room"
        )
    limit = quotas.jobs_per_minute
    recent = 0 if not queued or limit is None else unit.jobs_queued_since(tenant, now - MINUTE)
    if limit is not None and recent >= limit:
        raise QuotaExceededError(
            f"tenant {tenant!r} queued {limit:,} extraction jobs in the last minute, its"
            " quota (jobs_per_minute); retry in up to 60 s",
            retry_after=60.0,
        )
