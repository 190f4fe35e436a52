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
from typing import TYPE_CHECKING

from memledger.domain.records import MemoryRecord, canonical_json
from memledger.domain.redact import revoked_words, states
from memledger.errors import ExtractionError
from memledger.ports import Extractor
from memledger.store.sqlite import SQLiteStore
from memledger.testing import FrozenClock
from memledger.write.worker import WorkerSettings

if TYPE_CHECKING:
    from memledger.memory import Memory


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
    memory: Memory, *, tenant: str, subject: str, revoked: _Revoked | None
) -> dict[Key, MemoryRecord]:
    found: dict[Key, MemoryRecord] = {}
    for slot in memory.families(subject, tenant=tenant):
        if slot.family == "conversation":
            continue
        for record in memory.timeline(subject, slot.family, tenant=tenant):
            if revoked is None or revoked.allows(record):
                found[_key(record)] = record
    return found


def _revoked(memory: Memory, *, tenant: str, subject: str) -> _Revoked:
    revoked = _Revoked(sources=set(), words={})
    with memory.store.read() as unit:
        for slot in unit.families(tenant, subject):
            for event_id in unit.revoked_sources(tenant, subject, slot.family):
                revoked.sources.add((slot.family, event_id))
                words = revoked.words.setdefault(event_id, set())
                for record in unit.event_records(tenant, event_id, open_only=False):
                    if record.family == slot.family and record.subject == subject:
                        words |= revoked_words(record)
    return revoked


def rederive(
    memory: Memory,
    extractor: Extractor,
    *,
    tenant: str,
    subject: str,
    settings: WorkerSettings | None = None,
) -> Rederivation:
    """Replay ``subject``'s ledger through ``extractor`` into a scratch store and diff."""
    from memledger.memory import Memory as _Memory

    with memory.store.read() as unit:  # a forgotten event is not replayed at all
        events = [
            e
            for e in unit.subject_events(tenant, subject)
            if not unit.is_forgotten(tenant, e.event_id)
        ]
    revoked = _revoked(memory, tenant=tenant, subject=subject)
    with tempfile.TemporaryDirectory(prefix="memledger-rederive-") as folder:
        clock = FrozenClock(events[0].occurred_at if events else memory.clock.now())
        scratch = _Memory(
            SQLiteStore(Path(folder) / "scratch.db"),
            clock=clock,
            schema=memory.families_of(tenant),
            policy=memory.policy,
        )
        try:
            failures: list[str] = []
            for source in events:
                clock.set(max(clock.now(), source.occurred_at))
                scratch.ingest(source)
                report = scratch.process(extractor=extractor, tenant=tenant, settings=settings)
                if report.outcomes.get("retry") or report.outcomes.get("failed"):
                    failures.extend(report.errors)
            if failures:
                raise ExtractionError(
                    f"re-derivation of {subject!r} is incomplete: {len(failures)} of "
                    f"{len(events)} events could not be extracted (first: {failures[0]}); "
                    "no diff is given rather than a wrong one",
                    reason="rederive_incomplete",
                )
            replayed = _windows(scratch, tenant=tenant, subject=subject, revoked=revoked)
        finally:
            scratch.close()
    canonical = _windows(memory, tenant=tenant, subject=subject, revoked=None)
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
