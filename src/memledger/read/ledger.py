"""What the ledger holds now, read as it is: one record, a family's current values and
timeline, its history and change log, a subject's slots, the tenant's subjects, an
event, its receipt, jobs, the review queue, recorded changes, erasure receipts,
retention and the write counters. Each is one read transaction; each checks its
arguments first (:mod:`memledger.domain.addresses`). The :class:`~memledger.Memory`
methods of the same names are these functions, handed the facade's
:attr:`~memledger.Memory.reading`.
"""

from __future__ import annotations

from datetime import datetime

from memledger.domain.addresses import check_moment, check_slot, check_tenant
from memledger.domain.changes import Change
from memledger.domain.records import (
    HistoryEntry,
    Job,
    MemoryRecord,
    Receipt,
    ReviewItem,
    SourceEvent,
    require_id,
)
from memledger.errors import (
    EventNotFoundError,
    InvalidInputError,
    InvalidQueryError,
    MemoryNotFoundError,
)
from memledger.ports import FamilySlot, SubjectSummary
from memledger.read.missed import PossibleUpdate
from memledger.read.missed import possible_updates as find_possible_updates
from memledger.read.ports import ReadPorts
from memledger.read.views import check_floor, check_min_revision, select
from memledger.store import floors

__all__ = [
    "change_log",
    "changes",
    "counters",
    "current",
    "event",
    "families",
    "family_events",
    "get",
    "history",
    "job",
    "jobs",
    "outcome",
    "possible_updates",
    "retention",
    "reviews",
    "subjects",
    "timeline",
]


def get(
    ports: ReadPorts,
    memory_id: str,
    *,
    tenant: str = "default",
    namespaces: frozenset[str] | None = None,
) -> MemoryRecord:
    """One record by id, whatever its status (in the private ``namespaces`` only,
    :attr:`Principal.namespaces`; ``None``: any)."""
    check_tenant(tenant)
    with ports.store.read() as unit:
        record = unit.get_record(tenant, memory_id, namespaces=namespaces)
    if record is None:
        raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {tenant!r}")
    return record


def current(
    ports: ReadPorts,
    subject: str,
    family: str,
    *,
    tenant: str,
    scope: str | None = None,
    valid_at: datetime | None = None,
    as_of: datetime | None = None,
    min_revision: int | None = None,
    include_revoked: bool = False,
) -> tuple[MemoryRecord, ...]:
    """The authorised values of a family, one per scope.

    ``valid_at`` (default: now) picks the valid time, ``as_of`` (default:
    now) the record time. ``min_revision`` is a receipt's revision token:
    a store that has not reached it raises :class:`RevisionNotMetError`.
    Revoked records appear only with ``include_revoked=True`` (audits).
    """
    at = check_moment(valid_at, "valid_at") or ports.clock.now()
    return _view(
        ports,
        subject,
        family,
        tenant=tenant,
        scope=scope,
        valid_at=at,
        as_of=as_of,
        min_revision=min_revision,
        include_revoked=include_revoked,
    )


def timeline(
    ports: ReadPorts,
    subject: str,
    family: str,
    *,
    tenant: str,
    scope: str | None = None,
    as_of: datetime | None = None,
    min_revision: int | None = None,
) -> tuple[MemoryRecord, ...]:
    """Every valid-time window of a family held at ``as_of`` (default: now), in order."""
    return _view(
        ports,
        subject,
        family,
        tenant=tenant,
        scope=scope,
        valid_at=None,
        as_of=as_of,
        min_revision=min_revision,
        include_revoked=False,
    )


def _view(
    ports: ReadPorts,
    subject: str,
    family: str,
    *,
    tenant: str,
    scope: str | None,
    valid_at: datetime | None,
    as_of: datetime | None,
    min_revision: int | None,
    include_revoked: bool,
) -> tuple[MemoryRecord, ...]:
    _known_slot(ports, tenant, subject, family)
    record_time = check_moment(as_of, "as_of")
    floor = check_min_revision(min_revision)
    wanted = {} if floor is None else {(tenant, subject, family): floor}
    with floors.at_least(wanted), ports.store.read() as unit:
        slot = unit.get_family(tenant, subject, family)
        check_floor(slot, min_revision, source=ports.store.url)
        records = unit.family_records(tenant, subject, family, open_only=record_time is None)
        revoked = unit.revoked_sources(tenant, subject, family)
    return select(
        records,
        as_of=record_time,
        now=ports.clock.now(),
        valid_at=valid_at,
        scope=scope,
        revoked_sources=revoked,
        include_revoked=include_revoked,
    )


def _known_slot(ports: ReadPorts, tenant: str, subject: str, family: str) -> None:
    """A slot's address, of a family the tenant's schema knows."""
    check_slot(tenant, subject, family)
    ports.schema(tenant, [family]).family(family)


def history(
    ports: ReadPorts, subject: str, family: str, *, tenant: str, include_revoked: bool = False
) -> tuple[MemoryRecord, ...]:
    """Every record the family held, closed ones included, in record-time order.

    Revoked records, and every record from a source revoked in the family, are
    left out unless an audit asks for them with ``include_revoked=True``;
    :meth:`changes` still shows that they existed (ids and actions, no values).
    """
    _known_slot(ports, tenant, subject, family)
    with ports.store.read() as unit:
        records = unit.family_records(tenant, subject, family, open_only=False)
        revoked = unit.revoked_sources(tenant, subject, family)
    now = ports.clock.now()
    return tuple(
        r
        for r in records
        if include_revoked
        or (r.status != "revoked" and r.source_event_id not in revoked and not r.expired(now))
    )


def changes(
    ports: ReadPorts, subject: str, family: str, *, tenant: str
) -> tuple[HistoryEntry, ...]:
    """The family's append-only change log: every record written, closed or revoked."""
    _known_slot(ports, tenant, subject, family)
    with ports.store.read() as unit:
        return tuple(unit.history(tenant, subject, family))


def family_events(ports: ReadPorts, subject: str, family: str, *, tenant: str) -> tuple[str, ...]:
    """The ids of the events committed into a family, oldest first."""
    _known_slot(ports, tenant, subject, family)
    with ports.store.read() as unit:
        return tuple(unit.family_events(tenant, subject, family))


def families(ports: ReadPorts, subject: str, *, tenant: str) -> tuple[FamilySlot, ...]:
    """The family slots of a subject, with their revisions and generations."""
    check_tenant(tenant, subject)
    with ports.store.read() as unit:
        return tuple(unit.families(tenant, subject))


def subjects(
    ports: ReadPorts,
    *,
    tenant: str,
    prefix: str = "",
    after: str | None = None,
    limit: int = 100,
    namespaces: frozenset[str] | None = None,
) -> tuple[SubjectSummary, ...]:
    """The tenant's subjects in order (those with events or family slots), each with
    its family and event counts: ``prefix`` narrows, ``after`` (the last subject of
    the previous page) pages, ``limit`` (1-1000) bounds; of the private namespaces
    only ``namespaces`` are listed (``None``: all)."""
    check_tenant(tenant)
    if not isinstance(prefix, str):
        raise InvalidQueryError(f"prefix must be a string, got {prefix!r}")
    if prefix:
        require_id(prefix, "prefix", InvalidQueryError)
    if after is not None:
        require_id(after, "after", InvalidQueryError)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidQueryError(f"limit must be a whole number 1-1000, got {limit!r}")
    with ports.store.read() as unit:
        found = unit.subjects(
            tenant, prefix=prefix, after=after, limit=limit, namespaces=namespaces
        )
        return tuple(found)


def event(
    ports: ReadPorts, event_id: str, *, tenant: str, namespaces: frozenset[str] | None = None
) -> SourceEvent:
    """A source event from the ledger (of the private ``namespaces`` only; ``None``: any)."""
    check_tenant(tenant)
    with ports.store.read() as unit:
        stored = unit.get_event(tenant, event_id, namespaces=namespaces)
    if stored is None:
        raise EventNotFoundError(f"no event {event_id!r} for tenant {tenant!r}")
    return stored.event


def outcome(ports: ReadPorts, event_id: str, *, tenant: str) -> Receipt | None:
    """The receipt stored for an event once it was decided (``None``: not yet, or no
    such event)."""
    check_tenant(tenant)
    require_id(event_id, "event_id", InvalidQueryError)
    with ports.store.read() as unit:
        return unit.get_outcome(tenant, event_id)


def job(ports: ReadPorts, job_id: str, *, tenant: str) -> Job | None:
    """An extraction job of ``tenant`` (``None``: no such job)."""
    check_tenant(tenant)
    require_id(job_id, "job_id", InvalidQueryError)
    with ports.store.read() as unit:
        return unit.get_job(tenant, job_id)


def reviews(ports: ReadPorts, *, tenant: str, open_only: bool = True) -> tuple[ReviewItem, ...]:
    """Events whose batch waits for review; they changed nothing."""
    check_tenant(tenant)
    with ports.store.read() as unit:
        return tuple(unit.reviews(tenant, open_only=open_only))


def possible_updates(
    ports: ReadPorts, subject: str, *, tenant: str, valid_at: datetime | None = None
) -> tuple[PossibleUpdate, ...]:
    """Later turns that may change ``subject``'s current values (at ``valid_at``,
    default now) where no claim did: updates extraction may have missed, for an
    operator to review (:mod:`memledger.read.missed`). Read-only."""
    check_tenant(tenant, subject)
    at = check_moment(valid_at, "valid_at") or ports.clock.now()
    with ports.store.read() as unit:
        found = find_possible_updates(unit, tenant, subject, now=ports.clock.now(), valid_at=at)
    return tuple(found)


def jobs(ports: ReadPorts, *, tenant: str, open_only: bool = True) -> tuple[Job, ...]:
    """Extraction jobs, oldest first: those not done yet (queued or failed), or all."""
    check_tenant(tenant)
    with ports.store.read() as unit:
        return tuple(unit.jobs(tenant, open_only=open_only))


def change_log(ports: ReadPorts, *, tenant: str, limit: int = 100) -> tuple[Change, ...]:
    """The tenant's recorded changes (revocations, forgotten events, undone
    corrections, rollbacks, undos), newest first."""
    check_tenant(tenant)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
        raise InvalidInputError(f"limit must be an integer from 1 to 10000, got {limit!r}")
    with ports.store.read() as unit:
        return tuple(unit.changes(tenant, limit=limit))


def retention(ports: ReadPorts, *, tenant: str) -> dict[str, int]:
    """Days the tenant keeps records of each kind that has a retention."""
    check_tenant(tenant)
    with ports.store.read() as unit:
        return dict(sorted(unit.retention(tenant).items()))


def counters(ports: ReadPorts, *, tenant: str) -> dict[str, int]:
    """Counters of the write path: rejections by reason, extraction errors, drops."""
    check_tenant(tenant)
    with ports.store.read() as unit:
        return dict(unit.counters(tenant))
