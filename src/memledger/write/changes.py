"""The recorded changes a caller asks for, each one transaction acknowledged with a
receipt that names its change (:mod:`memledger.domain.changes`), so that :func:`undo`
can take it back:

* :func:`revoke` a memory (:func:`revoke_as` for an API key), :func:`forget` an event,
  :func:`revoke_family` a whole family (the rules: :mod:`memledger.write.revoke`);
* :func:`undo` a change, :func:`restore` a memory by undoing what closed it (the
  rules: :mod:`memledger.write.undo`);
* :func:`rollback` what an extractor version wrote, optionally re-deriving the same
  events with another extractor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from memledger.domain.addresses import check_moment, check_slot, check_tenant
from memledger.domain.changes import ChangeKind, ChangeLog, RollbackReceipt, UndoReceipt
from memledger.domain.keys import Principal
from memledger.domain.limits import check_reason
from memledger.domain.records import ForgetReceipt, RevocationReceipt, SourceEvent, require_id
from memledger.errors import InvalidInputError, InvalidQueryError, MemoryNotFoundError
from memledger.ports import Extractor, UnitOfWork
from memledger.write import revoke as revocation
from memledger.write import undo as undoing
from memledger.write.commit import Batch, commit_event
from memledger.write.ports import WritePorts
from memledger.write.worker import Worker, WorkerSettings

__all__ = ["forget", "restore", "revoke", "revoke_as", "revoke_family", "rollback", "undo"]


def revoke(
    ports: WritePorts,
    memory_id: str,
    *,
    tenant: str,
    reason: str = "revoked",
    may_change: Callable[[str], bool] | None = None,
) -> RevocationReceipt:
    """Revoke a memory: every claim its source event made in its family, remnants
    included, and its words wherever else that event put them (claims of other
    families that state them are revoked, the turn's episode is re-issued without
    them; see :mod:`memledger.write.revoke`). Revoking a turn's episode forgets
    the turn (:meth:`forget`). Bumps the generation of every family it revokes;
    acknowledged with a receipt (``also``: the other families, ``redacted``:
    the records re-issued without the words). ``may_change`` (a subject -> bool
    test, e.g. :meth:`Principal.may_write_to`) leaves every other record as it is."""
    check_tenant(tenant)
    require_id(memory_id, "memory_id", InvalidQueryError)
    check_reason(reason, ports.limits)
    return _recorded(
        ports,
        tenant,
        "revocation",
        reason,
        lambda unit, log, now: revocation.revoke_memory(
            unit, tenant, memory_id, reason=reason, now=now, log=log, may_change=may_change
        ),
    )


def revoke_as(
    ports: WritePorts, principal: Principal, memory_id: str, *, reason: str = "revoked"
) -> RevocationReceipt:
    """:func:`revoke` for an API key, in its tenant: a memory of a namespace the key may
    not read is answered as a missing one, one it may read but not change is refused
    (:class:`PermissionDeniedError`), and only the records the key may write are revoked
    (the words are not cut from another agent's private record)."""
    require_id(memory_id, "memory_id", InvalidQueryError)
    with ports.store.read() as unit:
        record = unit.get_record(principal.tenant, memory_id, namespaces=principal.namespaces)
    if record is None:
        raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {principal.tenant!r}")
    principal.require_write_to(record.subject)
    return revoke(
        ports, memory_id, tenant=principal.tenant, reason=reason, may_change=principal.may_write_to
    )


def forget(
    ports: WritePorts,
    event_id: str,
    *,
    tenant: str,
    reason: str = "forgotten",
    may_change: Callable[[str], bool] | None = None,
) -> ForgetReceipt:
    """Stop using everything a source event gave: every record derived from it is
    revoked, in every subject and family, and no job, replay or re-extraction
    writes from it again. The event stays in the ledger (deleting it is erasure).
    ``may_change`` limits it to the subjects it allows (:mod:`memledger.write.revoke`)."""
    check_tenant(tenant)
    require_id(event_id, "event_id", InvalidQueryError)
    check_reason(reason, ports.limits)
    return _recorded(
        ports,
        tenant,
        "forget",
        reason,
        lambda unit, log, now: revocation.forget_event(
            unit, tenant, event_id, reason=reason, now=now, log=log, may_change=may_change
        ),
    )


def revoke_family(
    ports: WritePorts, subject: str, family: str, *, tenant: str, reason: str = "revoked"
) -> RevocationReceipt:
    """Revoke everything a family held, and its words in the other records of the
    events that wrote into it (as :meth:`revoke`); bumps its generation."""
    check_slot(tenant, subject, family)
    ports.schema_for(tenant, [family]).family(family)
    check_reason(reason, ports.limits)
    return _recorded(
        ports,
        tenant,
        "revocation",
        reason,
        lambda unit, log, now: revocation.revoke_family(
            unit, tenant, subject, family, reason=reason, now=now, log=log
        ),
    )


Acknowledged = TypeVar("Acknowledged", RevocationReceipt, ForgetReceipt)


def _recorded(
    ports: WritePorts,
    tenant: str,
    kind: ChangeKind,
    reason: str,
    act: Callable[[UnitOfWork, ChangeLog, datetime], Acknowledged],
) -> Acknowledged:
    """``act`` in one write transaction, what it changed recorded as a change of
    ``kind`` whose id goes on its receipt."""
    with ports.store.write() as unit:
        log, now = ChangeLog(), ports.clock.now()
        receipt = act(unit, log, now)
        change = undoing.record_change(unit, tenant, log, kind=kind, reason=reason, at=now)
        return replace(receipt, change_id=change)


def undo(ports: WritePorts, change_id: str, *, tenant: str, reason: str = "undone") -> UndoReceipt:
    """Undo a recorded change: a revocation or a forgotten event (the ``change_id``
    of its receipt), a correction (the id of the event that made it) or an
    extractor's rollback. What it closed is restored as new records at the
    family's next revision, over the valid time no open record holds; what it
    wrote is closed; a revocation's sources are usable again. History keeps
    both (:mod:`memledger.write.undo`). Undoing it again returns the first
    undo's receipt (``duplicate``)."""
    check_tenant(tenant)
    require_id(change_id, "change_id", InvalidQueryError)
    check_reason(reason, ports.limits)
    with ports.store.write() as unit:
        return undoing.undo(unit, tenant, change_id, reason=reason, now=ports.clock.now())


def restore(
    ports: WritePorts, memory_id: str, *, tenant: str, reason: str = "restored"
) -> UndoReceipt:
    """Undo the change that closed a memory (a revocation, a forgotten event, a
    correction, a rollback): :meth:`undo` of that change, which restores the
    memory and whatever else it closed."""
    check_tenant(tenant)
    require_id(memory_id, "memory_id", InvalidQueryError)
    check_reason(reason, ports.limits)
    with ports.store.write() as unit:
        record = unit.get_record(tenant, memory_id)
        if record is None:
            raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {tenant!r}")
        target = undoing.change_closing(unit, record)
        return undoing.undo(unit, tenant, target, reason=reason, now=ports.clock.now())


def rollback(
    ports: WritePorts,
    extractor: str,
    *,
    tenant: str,
    since: datetime | None = None,
    rederive_with: Extractor | None = None,
    reason: str = "rollback",
    settings: WorkerSettings | None = None,
) -> RollbackReceipt:
    """Take back what an extractor version (``"NAME@VERSION"``, as on its records'
    ``extractor``) wrote, recorded at or after ``since``, as one recorded change
    that :meth:`undo` reverses; what its records had closed is restored. Turn
    episodes and what callers stated directly are untouched. With
    ``rederive_with``, the same events are extracted again by that extractor
    (prefilter and gates as a worker's) and committed where they belong in the
    business timeline. One transaction: an extractor failure changes nothing
    (:class:`~memledger.errors.ExtractionError`)."""
    check_tenant(tenant)
    name, version = _extractor_version(extractor)
    since = check_moment(since, "since")
    check_reason(reason, ports.limits)
    rederive: undoing.Rederive | None = None
    if rederive_with is not None:
        rederive = _rederiver(ports, tenant, name, version, since, rederive_with, settings)
    now = ports.clock.now()
    with ports.store.write() as unit:
        return undoing.rollback(
            unit, tenant, name, version, since=since, reason=reason, now=now, rederive=rederive
        )


def _rederiver(
    ports: WritePorts,
    tenant: str,
    name: str,
    version: str,
    since: datetime | None,
    extractor: Extractor,
    settings: WorkerSettings | None,
) -> undoing.Rederive:
    """Extract what a rollback will re-derive now, outside any transaction (an LLM
    call must not hold the write lock), and return what commits it in the rollback's
    transaction. An event the rollback finds that was not extracted here (written
    since) is reported ``review``: held, nothing written."""
    worker = Worker(ports, extractor, settings=settings)
    with ports.store.read() as unit:
        found = unit.extractor_records(tenant, name, version, since=since)
        wanted = sorted({r.source_event_id for r in found if r.proposed_kind != "episode"})
        events = [e.event for e in (unit.get_event(tenant, i) for i in wanted) if e]
    derived = {event.event_id: worker.derive(event) for event in events}
    schemas = {
        event_id: ports.schema_for(tenant, [c.family for c in claims])
        for event_id, claims in derived.items()
    }

    def commit(unit: UnitOfWork, event: SourceEvent, derivation: str) -> str:
        if event.event_id not in derived:
            return "review"
        claims = derived[event.event_id]
        if not claims:
            return "committed"
        batch = Batch(
            event=event,
            claims=claims,
            extractor=extractor.info,
            from_ledger=True,
            derivation=derivation,
        )
        receipt = commit_event(
            unit,
            batch,
            schema=schemas[event.event_id],
            policy=ports.policy,
            now=ports.clock.now(),
            rederived=True,
        )
        return receipt.outcome

    return commit


def _extractor_version(text: object) -> tuple[str, str]:
    """``"NAME@VERSION"`` split; a clear error for anything else."""
    if not isinstance(text, str) or text.count("@") != 1:
        raise InvalidInputError(f"extractor must be NAME@VERSION (rules@1), got {text!r}")
    name, version = text.split("@")
    if not name.strip() or not version.strip():
        raise InvalidInputError(f"extractor must be NAME@VERSION (rules@1), got {text!r}")
    return name, version
