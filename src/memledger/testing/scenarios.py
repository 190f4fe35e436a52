"""Building blocks of the conformance suite: the seed stories' actors and events,
a comparable snapshot of a store, and workers that run in child processes.

Workers are module-level functions so that ``multiprocessing`` can start them
with the ``spawn`` method on any platform.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memledger.domain.records import (
    Actor,
    Channel,
    Claim,
    Grant,
    HistoryEntry,
    MemoryRecord,
    ReviewItem,
    SourceEvent,
)
from memledger.errors import EventNotFoundError
from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock

TENANT = "acme"
SUBJECT = "user-42"
FAMILY = "delivery_preference"


def day(month: int, dom: int, hour: int = 12, minute: int = 0) -> datetime:
    """A UTC instant in 2026, the year of the seed stories."""
    return datetime(2026, month, dom, hour, minute, tzinfo=UTC)


def actor(*grants: str, authenticated: bool = True, actor_id: str = SUBJECT) -> Actor:
    """An actor holding ``grants`` (``"family"`` or ``"family:scope"``)."""
    return Actor(
        id=actor_id,
        authenticated=authenticated,
        grants=frozenset(Grant.parse(g) for g in grants),
    )


GRANTED = actor(FAMILY)
UNGRANTED = actor()


def event(
    event_id: str,
    text: str,
    *,
    occurred_at: datetime,
    sequence: int | None = None,
    who: Actor = GRANTED,
    channel: Channel = "chat",
    subject: str = SUBJECT,
    tenant: str = TENANT,
) -> SourceEvent:
    return SourceEvent(
        tenant=tenant,
        event_id=event_id,
        subject=subject,
        actor=who,
        channel=channel,
        occurred_at=occurred_at,
        text=text,
        sequence=sequence,
    )


def pref(
    value: str,
    *,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    family: str = FAMILY,
    scope: str = "global",
    grounding: str | None = None,
) -> Claim:
    return Claim(
        family=family,
        kind="preference",
        statement=f"Delivery: {value}",
        value=value,
        scope=scope,
        valid_from=valid_from,
        valid_until=valid_until,
        grounding=grounding,
    )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything a tenant's reads can see about some subjects, comparable with ``==``."""

    families: tuple[tuple[str, str, int, int], ...]
    records: tuple[MemoryRecord, ...]
    changes: tuple[HistoryEntry, ...]
    events: tuple[str, ...]
    reviews: tuple[ReviewItem, ...]
    jobs: tuple[tuple[str, str], ...]


def snapshot(
    memory: Memory,
    *,
    tenant: str = TENANT,
    subjects: Sequence[str] = (SUBJECT,),
    event_ids: Sequence[str] = (),
) -> Snapshot:
    families: list[tuple[str, str, int, int]] = []
    records: list[MemoryRecord] = []
    changes: list[HistoryEntry] = []
    for subject in subjects:
        for slot in memory.families(subject, tenant=tenant):
            families.append((subject, slot.family, slot.revision, slot.generation))
            records.extend(memory.history(subject, slot.family, tenant=tenant))
            changes.extend(memory.changes(subject, slot.family, tenant=tenant))
    present: list[str] = []
    for event_id in event_ids:
        try:
            memory.event(event_id, tenant=tenant)
        except EventNotFoundError:
            continue
        present.append(event_id)
    return Snapshot(
        families=tuple(families),
        records=tuple(records),
        changes=tuple(changes),
        events=tuple(present),
        reviews=memory.reviews(tenant=tenant, open_only=False),
        jobs=tuple((j.job_id, j.status) for j in memory.jobs(tenant=tenant, open_only=False)),
    )


def overlaps(memory: Memory, *, tenant: str = TENANT, subject: str = SUBJECT) -> list[str]:
    """Pairs of open authorised windows of one (family, scope) that overlap: must be empty."""
    found: list[str] = []
    for slot in memory.families(subject, tenant=tenant):
        windows = memory.timeline(subject, slot.family, tenant=tenant)
        for i, a in enumerate(windows):
            for b in windows[i + 1 :]:
                if a.scope != b.scope:
                    continue
                if (a.valid_until is None or b.valid_from < a.valid_until) and (
                    b.valid_until is None or a.valid_from < b.valid_until
                ):
                    found.append(f"{a.memory_id} overlaps {b.memory_id}")
    return found


# -- child-process workers ------------------------------------------------------------


def ingest_worker(
    url: str, jobs: Sequence[tuple[SourceEvent, tuple[Claim, ...]]], clock_at: datetime
) -> None:
    """Ingest ``jobs`` in order with a frozen clock (run in a child process)."""
    memory = Memory(open_store(url), clock=FrozenClock(clock_at))
    try:
        for source, claims in jobs:
            memory.ingest(source, claims)
    finally:
        memory.close()


def crash_worker(
    url: str, source: SourceEvent, claims: tuple[Claim, ...], crash_at: int, clock_at: datetime
) -> None:
    """Ingest one event and kill the process, without cleanup, before write step
    ``crash_at`` (1-based): a crash in the middle of the transaction."""
    steps = 0

    def failpoint(step: str) -> None:
        nonlocal steps
        steps += 1
        if steps == crash_at:
            os._exit(17)

    memory = Memory(open_store(url, failpoint=failpoint), clock=FrozenClock(clock_at))
    memory.ingest(source, claims)
    os._exit(0)
