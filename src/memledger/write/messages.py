"""The short path's writes: :func:`add` remembers chat messages in one call,
:func:`delete` takes a memory back.

``add`` makes the messages source events (:mod:`memledger.domain.messages`: derived
ids, so the same call made again is a duplicate; the user the authenticated speaker
of their own turns), ingests them as the full event API does (quotas, limits, one
extraction job each) and, unless told not to wait, runs the tenant's queued jobs with
the rule extractor, so that what was said is a memory when it returns (a turn whose
job another worker took first, as a service's background worker may, is waited for
while that worker holds it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memledger.domain.addresses import check_tenant
from memledger.domain.items import MemoryItem, item_of
from memledger.domain.keys import Principal
from memledger.domain.messages import events_of, normalise, subject_of
from memledger.domain.records import JsonValue, Receipt, RevocationReceipt, SourceEvent
from memledger.errors import InvalidEventError, PermissionDeniedError
from memledger.ports import Extractor
from memledger.write.changes import revoke
from memledger.write.ingest import ingest
from memledger.write.ports import WritePorts
from memledger.write.worker import process

__all__ = ["Added", "add", "add_as", "delete"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Added:
    """What :func:`add` did: the ``event_ids`` of the turns, in order; each one's
    ``receipt`` (its decision once extracted, else its place in the queue); the
    ``memories`` they hold now (each turn's words, and the facts read from them);
    ``skipped``, how many system or developer messages were left out."""

    event_ids: tuple[str, ...]
    receipts: tuple[Receipt, ...]
    memories: tuple[MemoryItem, ...]
    skipped: int = 0

    @property
    def duplicate(self) -> bool:
        """Whether every turn had been added before (a retry): nothing new was written."""
        return all(r.duplicate for r in self.receipts)

    @property
    def pending(self) -> tuple[str, ...]:
        """The turns whose extraction has not run yet (``wait=False``, or a worker
        still behind): their memories come when it does."""
        return tuple(r.event_id for r in self.receipts if r.outcome == "queued")


def add(
    ports: WritePorts,
    messages: str | Mapping[str, object] | list[str | Mapping[str, object]],
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    session: str | None = None,
    at: datetime | None = None,
    metadata: Mapping[str, JsonValue] | None = None,
    tenant: str = "default",
    wait: bool = True,
) -> Added:
    """Remember ``messages`` (a string, an OpenAI-style ``{"role", "content"}`` message
    or a list of either) as ``user_id``'s (or, with only ``agent_id``, as the agent's
    private namespace ``agent:<agent_id>``), spoken at ``at`` (default: now) in
    ``session``. The same messages added again for the same user, agent, session and
    metadata are a duplicate, not a second memory. ``wait=False`` returns once the turns
    are in the ledger; a worker extracts them later (:attr:`Added.pending`)."""
    check_tenant(tenant)
    return _add(
        ports,
        messages,
        tenant=tenant,
        user_id=user_id,
        agent_id=agent_id,
        session=session,
        at=at,
        metadata=metadata,
        wait=wait,
    )


def add_as(
    ports: WritePorts,
    principal: Principal,
    messages: object,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    session: str | None = None,
    at: datetime | None = None,
    metadata: Mapping[str, JsonValue] | None = None,
    wait: bool = True,
    extractor: Extractor | None = None,
    most_jobs: int | None = None,
) -> Added:
    """:func:`add` for an API key of the service, in its tenant. An application's
    ``service`` key (or an admin key) vouches for its users: their turns are theirs,
    authenticated. A ``user``'s key adds its own turns only (``user_id`` defaults to
    its actor); an ``agent``'s key speaks as itself (``agent_id`` defaults to its actor,
    and with no user the turns go to its own namespace). Waiting runs at most
    ``most_jobs`` of the tenant's queued jobs with ``extractor``."""
    if not principal.may_write:
        raise PermissionDeniedError(f"API key {principal.key_id!r} is read-only: it cannot add")
    me = principal.actor.id
    if principal.kind == "user":
        if user_id is not None and user_id != me:
            raise PermissionDeniedError(
                f"API key {principal.key_id!r} is {me!r}'s: it adds {me!r}'s turns, "
                f"not {user_id!r}'s (a service's key adds for its users)"
            )
        user_id = me
    elif principal.kind == "agent":
        if agent_id is not None and agent_id != me:
            raise PermissionDeniedError(
                f"API key {principal.key_id!r} is agent {me!r}'s: it cannot speak as "
                f"agent {agent_id!r}"
            )
        agent_id = me
    principal.require_write_to(subject_of(user_id, agent_id))
    return _add(
        ports,
        messages,
        tenant=principal.tenant,
        user_id=user_id,
        agent_id=agent_id,
        session=session,
        at=at,
        metadata=metadata,
        wait=wait,
        extractor=extractor,
        most_jobs=most_jobs,
    )


def _add(
    ports: WritePorts,
    messages: object,
    *,
    tenant: str,
    user_id: str | None,
    agent_id: str | None,
    session: str | None,
    at: datetime | None,
    metadata: Mapping[str, JsonValue] | None,
    wait: bool,
    extractor: Extractor | None = None,
    most_jobs: int | None = None,
) -> Added:
    parsed = normalise(messages)
    if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
        raise InvalidEventError(f"at must be a timezone-aware datetime, got {at!r}")
    now = ports.clock.now()
    events = events_of(
        parsed,
        tenant=tenant,
        user_id=user_id,
        agent_id=agent_id,
        session=session,
        at=at or now,
        at_given=at is not None,
        metadata=metadata,
    )
    if at is None:  # a retry keeps the time the turns were first added
        events = _as_stored(ports, events)
    receipts = [ingest(ports, event) for event in events]
    if wait and any(r.outcome == "queued" for r in receipts):
        _run_jobs(ports, tenant, receipts, extractor=extractor, most_jobs=most_jobs)
    with ports.store.read() as unit:
        decided = [unit.get_outcome(tenant, r.event_id) or r for r in receipts]
        records = [
            record
            for event in events
            for record in unit.event_records(tenant, event.event_id, open_only=True)
            if not record.expired(now)
        ]
    return Added(
        event_ids=tuple(e.event_id for e in events),
        receipts=tuple(
            replace(d, duplicate=r.duplicate) for d, r in zip(decided, receipts, strict=True)
        ),
        memories=tuple(item_of(record) for record in records),
        skipped=parsed.skipped,
    )


HELD_WAIT_S = 30.0
"""Seconds ``add`` waits, past its own extraction, for its turns' jobs still to run
(held by another worker, such as a service's background worker that took them first)."""


def _run_jobs(
    ports: WritePorts,
    tenant: str,
    receipts: Sequence[Receipt],
    *,
    extractor: Extractor | None,
    most_jobs: int | None,
) -> None:
    """Run the tenant's due jobs (at most ``most_jobs`` of them in all; ``None``: no
    bound), then wait, up to :data:`HELD_WAIT_S`, while any of these turns' jobs is
    still to run: one another worker holds (it has leased it and its lease runs) is
    waited for, its memories come when it commits; one still due and unleased (another
    worker's claim had it locked but not yet committed, or this add's claim gave up on
    a busy store) is run again while the bound allows, else it stays pending. A job
    waiting for a later retry is not waited for."""
    waiting = [r.job_id for r in receipts if r.outcome == "queued" and r.job_id is not None]
    deadline = time.monotonic() + HELD_WAIT_S
    run = True
    while True:
        if run:
            ran = process(ports, tenant=tenant, extractor=extractor, limit=most_jobs).jobs
            most_jobs = None if most_jobs is None else max(0, most_jobs - ran)
        now = ports.clock.now()
        with ports.store.read() as unit:
            jobs = [unit.get_job(tenant, job_id) for job_id in waiting]
        queued = [job for job in jobs if job is not None and job.status == "queued"]
        held = [j.job_id for j in queued if j.lease_until is not None and j.lease_until > now]
        due = [
            j.job_id
            for j in queued
            if j.job_id not in held
            and (j.next_attempt_at is None or j.next_attempt_at <= now)
            and most_jobs != 0
        ]
        waiting = [*held, *due]
        if not waiting or time.monotonic() >= deadline:
            return
        run = bool(due)
        time.sleep(_HELD_POLL_S)


_HELD_POLL_S = 0.02


def _as_stored(ports: WritePorts, events: tuple[SourceEvent, ...]) -> tuple[SourceEvent, ...]:
    with ports.store.read() as unit:
        stored = [unit.get_event(e.tenant, e.event_id) for e in events]
    return tuple(
        e if s is None else replace(e, occurred_at=s.event.occurred_at)
        for e, s in zip(events, stored, strict=True)
    )


def delete(
    ports: WritePorts, memory_id: str, *, tenant: str = "default", reason: str = "deleted"
) -> RevocationReceipt:
    """Take a memory back: a revocation (:func:`memledger.write.changes.revoke`) with its
    receipt; nothing brings it back, and an admin can undo it."""
    return revoke(ports, memory_id, tenant=tenant, reason=reason)
