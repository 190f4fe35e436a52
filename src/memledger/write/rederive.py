"""Re-derivation: what another extractor would make of a subject's ledger, as a dry-run diff.

The subject's source events are replayed, in business-time order, into a
scratch store in a temporary folder, through the normal write path (prefilter,
extractor, gates, commit) with the other extractor. Forgotten events are not
replayed; a replayed claim from a source the canonical store revoked in its
family, or one stating words a revocation took from its event (in any family:
the other extractor may file them elsewhere), stays out. The canonical store
is only read.

The diff compares the current timelines (open, authorised windows) family by
family: a window only the replay has is *added*, one only the canonical store
has is *closed*, and the same (family, scope, valid_from) with another value
or end is *changed*. Episodes are the raw turns and are left out of the diff.
If the extractor fails on any event, :class:`ExtractionError` is raised: a
diff over a partial replay would report missing windows as closed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from memledger.domain.families import Schema
from memledger.domain.limits import Limits
from memledger.domain.records import MemoryRecord, canonical_json
from memledger.domain.redact import revoked_words, states
from memledger.errors import ExtractionError, StoreError
from memledger.freshness import ReadStats
from memledger.ports import Extractor, Store
from memledger.read import ledger
from memledger.read.access import AccessLog
from memledger.read.ports import ReadPorts
from memledger.store.sqlite import SQLiteStore
from memledger.testing import FrozenClock
from memledger.write.ingest import ingest
from memledger.write.ports import WritePorts
from memledger.write.worker import WorkerSettings, process


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    before: MemoryRecord
    after: MemoryRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class Rederivation:
    """The dry-run diff of re-deriving one subject with another extractor."""

    subject: str
    extractor: str
    events: int
    added: tuple[MemoryRecord, ...]
    closed: tuple[MemoryRecord, ...]
    changed: tuple[Change, ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        return not (self.added or self.closed or self.changed)


Key = tuple[str, str, str]


def _key(record: MemoryRecord) -> Key:
    return (record.family, record.scope, record.valid_from.isoformat())


def _same(a: MemoryRecord, b: MemoryRecord) -> bool:
    return canonical_json(a.value) == canonical_json(b.value) and a.valid_until == b.valid_until


@dataclass(frozen=True, slots=True)
class _Revoked:
    """What the canonical store revoked of a subject: (family, source event) pairs, and
    per source event the words its revocations took away."""

    sources: set[tuple[str, str]]
    words: dict[str, set[str]]

    def allows(self, record: MemoryRecord) -> bool:
        if (record.family, record.source_event_id) in self.sources:
            return False
        return not states(record, self.words.get(record.source_event_id, ()))


def _windows(
    ports: WritePorts, schema: Schema, *, tenant: str, subject: str, revoked: _Revoked | None
) -> dict[Key, MemoryRecord]:
    """The subject's current timelines (its conversation aside), by window."""
    reading = ReadPorts(
        store=ports.store,
        clock=ports.clock,
        accesses=AccessLog(),
        stats=ReadStats(),
        schema_for=lambda _tenant, _families: schema,
    )
    found: dict[Key, MemoryRecord] = {}
    for slot in ledger.families(reading, subject, tenant=tenant):
        if slot.family == "conversation":
            continue
        for record in ledger.timeline(reading, subject, slot.family, tenant=tenant):
            if revoked is None or revoked.allows(record):
                found[_key(record)] = record
    return found


def _revoked(store: Store, *, tenant: str, subject: str) -> _Revoked:
    revoked = _Revoked(sources=set(), words={})
    with store.read() as unit:
        for slot in unit.families(tenant, subject):
            for event_id in unit.revoked_sources(tenant, subject, slot.family):
                revoked.sources.add((slot.family, event_id))
                words = revoked.words.setdefault(event_id, set())
                for record in unit.event_records(tenant, event_id, open_only=False):
                    if record.family == slot.family and record.subject == subject:
                        words |= revoked_words(record)
    return revoked


def rederive(
    ports: WritePorts,
    extractor: Extractor,
    *,
    schema: Schema,
    tenant: str,
    subject: str,
    settings: WorkerSettings | None = None,
) -> Rederivation:
    """Replay ``subject``'s ledger through ``extractor`` into a scratch store, under
    the tenant's ``schema`` and the write policy of ``ports``, and diff."""
    with ports.store.read() as unit:  # a forgotten event is not replayed at all
        events = [
            e
            for e in unit.subject_events(tenant, subject)
            if not unit.is_forgotten(tenant, e.event_id)
        ]
    revoked = _revoked(ports.store, tenant=tenant, subject=subject)
    with tempfile.TemporaryDirectory(prefix="memledger-rederive-") as folder:
        clock = FrozenClock(events[0].occurred_at if events else ports.clock.now())
        store = SQLiteStore(Path(folder) / "scratch.db")
        scratch = WritePorts(
            store=store,
            clock=clock,
            policy=ports.policy,
            limits=Limits(),
            schema_for=lambda _tenant, _families: schema,
            index=_no_index,
            expire=lambda _tenant: (),
        )
        try:
            failures: list[str] = []
            for source in events:
                clock.set(max(clock.now(), source.occurred_at))
                ingest(scratch, source)
                report = process(scratch, extractor=extractor, tenant=tenant, settings=settings)
                if report.outcomes.get("retry") or report.outcomes.get("failed"):
                    failures.extend(report.errors)
            if failures:
                raise ExtractionError(
                    f"re-derivation of {subject!r} is incomplete: {len(failures)} of "
                    f"{len(events)} events could not be extracted (first: {failures[0]}); "
                    "no diff is given rather than a wrong one",
                    reason="rederive_incomplete",
                )
            replayed = _windows(scratch, schema, tenant=tenant, subject=subject, revoked=revoked)
        finally:
            store.close()
    canonical = _windows(ports, schema, tenant=tenant, subject=subject, revoked=None)
    added = [r for k, r in replayed.items() if k not in canonical]
    closed = [r for k, r in canonical.items() if k not in replayed]
    changed = [
        Change(before=canonical[k], after=r)
        for k, r in replayed.items()
        if k in canonical and not _same(canonical[k], r)
    ]
    return Rederivation(
        subject=subject,
        extractor=f"{extractor.info.kind}:{extractor.info.name}@{extractor.info.version}",
        events=len(events),
        added=_ordered(added),
        closed=_ordered(closed),
        changed=tuple(sorted(changed, key=lambda c: _key(c.before))),
        unchanged=sum(1 for k, r in replayed.items() if k in canonical and _same(canonical[k], r)),
    )


def _ordered(records: Iterable[MemoryRecord]) -> tuple[MemoryRecord, ...]:
    return tuple(sorted(records, key=_key))


def _no_index() -> NoReturn:
    """A replay keeps no derived index: nothing in it searches."""
    raise StoreError("a re-derivation's scratch store has no index")
