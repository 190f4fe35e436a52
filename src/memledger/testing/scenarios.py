"""Building blocks of the conformance suite: the seed stories' actors and events
(``seed_000``, each event ``Told`` with its claims, and the ``SEED_000_WINDOWS`` it
leaves), a comparable snapshot of a store, and workers that run in child processes.

Workers are module-level functions so that ``multiprocessing`` can start them
with the ``spawn`` method on any platform.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from memledger.domain.records import (
    Actor,
    Channel,
    Claim,
    Grant,
    HistoryEntry,
    Job,
    JsonValue,
    MemoryRecord,
    Receipt,
    ReviewDecision,
    ReviewItem,
    Role,
    SourceEvent,
)
from memledger.errors import EventNotFoundError
from memledger.memory import Memory
from memledger.ports import OutboxEntry
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.write.worker import WorkerSettings

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
    role: Role | None = None,
    metadata: Mapping[str, JsonValue] | None = None,
) -> SourceEvent:
    """A source event; by default ``user-42`` of tenant ``acme`` in a chat, granted the
    delivery preference, with no role and no metadata."""
    return SourceEvent(
        tenant=tenant,
        event_id=event_id,
        subject=subject,
        actor=who,
        channel=channel,
        occurred_at=occurred_at,
        text=text,
        sequence=sequence,
        metadata={} if metadata is None else metadata,
        role=role,
    )


def pref(
    value: str,
    *,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    family: str = FAMILY,
    scope: str = "global",
    grounding: str | None = None,
    statement: str | None = None,
) -> Claim:
    """A ``preference`` claim of ``value``, stated as ``Delivery: <value>`` unless a
    ``statement`` is given."""
    return Claim(
        family=family,
        kind="preference",
        statement=f"Delivery: {value}" if statement is None else statement,
        value=value,
        scope=scope,
        valid_from=valid_from,
        valid_until=valid_until,
        grounding=grounding,
    )


def fact(
    family: str,
    statement: str,
    value: JsonValue,
    *,
    grounding: str | None = None,
    scope: str = "global",
    subject: str | None = None,
    valid_from: datetime | None = None,
) -> Claim:
    """A ``fact`` claim, e.g. ``fact("home_city", "Lives in Lyon", "Lyon")``."""
    return Claim(
        family=family,
        kind="fact",
        statement=statement,
        value=value,
        grounding=grounding,
        scope=scope,
        subject=subject,
        valid_from=valid_from,
    )


@dataclass(frozen=True, slots=True)
class Told:
    """One event of a seed story, the claims it makes, and when (the clock) it is written."""

    at: datetime
    event: SourceEvent
    claims: tuple[Claim, ...]


PLANNER_SUBJECT = f"agent:planner/{SUBJECT}"
"""The subject as the planner agent's private namespace holds it."""


def planner_private_friday(memory: Memory) -> str:
    """The planner agent's private preference "Fridays until October 10", said on
    October 5 (its window ends on October 10); the id of the memory it left."""
    said = memory.ingest(
        event(
            "evt-planner",
            "Fridays until October 10",
            occurred_at=day(10, 5, 9),
            subject=PLANNER_SUBJECT,
            who=actor(FAMILY, actor_id="agent:planner"),
        ),
        [pref("friday", valid_until=day(10, 10), statement="Planner: friday deliveries")],
    )
    memory_id = said.results[0].memory_id
    assert memory_id is not None
    return memory_id


def seed_000(who: Actor = GRANTED) -> tuple[Told, ...]:
    """Seed 000, the delivery-preference story, said by ``who``: on Oct 2, Fridays
    (``evt-oct02``); on Oct 19, one event (``evt-oct19``): daily through October, then
    Friday again from Nov 1. Each event is said at 09:00 of the day it is told on, its
    sequence its place in the story."""
    said = (
        (2, "evt-oct02", "Deliver my digest on Fridays.", [pref("friday", grounding="on Fridays")]),
        (
            19,
            "evt-oct19",
            "Daily for the rest of October please, then Friday again from November 1.",
            [
                pref("daily", valid_until=day(11, 1, 0), grounding="Daily for the rest of October"),
                pref("friday", valid_from=day(11, 1, 0), grounding="Friday again from November 1"),
            ],
        ),
    )
    return tuple(
        Told(
            day(10, dom),
            event(event_id, text, occurred_at=day(10, dom, 9), sequence=n, who=who),
            tuple(claims),
        )
        for n, (dom, event_id, text, claims) in enumerate(said, start=1)
    )


SEED_000_WINDOWS = (
    ("friday", day(10, 2, 9), day(10, 19, 9)),
    ("daily", day(10, 19, 9), day(11, 1, 0)),
    ("friday", day(11, 1, 0), None),
)
"""Seed 000's timeline once told: the value, valid from and valid until of each window."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything a tenant's reads can see about some subjects, comparable with ``==``."""

    families: tuple[tuple[str, str, int, int], ...]
    records: tuple[MemoryRecord, ...]
    changes: tuple[HistoryEntry, ...]
    events: tuple[str, ...]
    reviews: tuple[ReviewItem, ...]
    jobs: tuple[tuple[str, str], ...]
    outcomes: tuple[tuple[str, Receipt | None], ...] = ()
    """The stored receipt of each event asked about (``None``: no outcome yet)."""
    job_details: tuple[Job, ...] = ()
    """Every job with its attempts, last error, backoff and lease."""
    outbox: tuple[OutboxEntry, ...] = ()
    revoked_sources: tuple[tuple[str, str, frozenset[str]], ...] = ()
    compactions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each session summary with the episodes it covers."""
    counters: tuple[tuple[str, int], ...] = ()


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
    outcomes: list[tuple[str, Receipt | None]] = []
    outbox: list[OutboxEntry] = []
    revoked: list[tuple[str, str, frozenset[str]]] = []
    with memory.store.read() as unit:
        outcomes.extend((event_id, unit.get_outcome(tenant, event_id)) for event_id in event_ids)
        head = 0
        while page := unit.outbox_after(head, limit=500):
            outbox.extend(entry for entry in page if entry.tenant == tenant)
            head = page[-1].seq
        for subject, family, _, _ in families:
            revoked.append((subject, family, unit.revoked_sources(tenant, subject, family)))
        counters = tuple(sorted(unit.counters(tenant).items()))
        summaries = sorted({r.memory_id for r in records if r.summary_of is not None})
        compactions = tuple((s, tuple(unit.compacted(tenant, s))) for s in summaries)
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
        changes=_ranked(changes),
        events=tuple(present),
        reviews=memory.reviews(tenant=tenant, open_only=False),
        jobs=tuple((j.job_id, j.status) for j in memory.jobs(tenant=tenant, open_only=False)),
        outcomes=tuple(outcomes),
        job_details=memory.jobs(tenant=tenant, open_only=False),
        outbox=_ranked(outbox),
        revoked_sources=tuple(revoked),
        counters=counters,
        compactions=compactions,
    )


_Seq = TypeVar("_Seq", HistoryEntry, OutboxEntry)


def _ranked(entries: Sequence[_Seq]) -> tuple[_Seq, ...]:
    """``entries`` with each sequence number replaced by its rank among them. Order is
    the contract, not the numbers: PostgreSQL's sequences skip the values a rolled-back
    transaction drew, SQLite's do not."""
    rank = {seq: n for n, seq in enumerate(sorted({e.seq for e in entries}), start=1)}
    return tuple(dataclasses.replace(e, seq=rank[e.seq]) for e in entries)


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


class StepFailpoint:
    """A store failpoint that calls ``act(step)`` before write step ``at`` (1-based),
    counting steps only while armed: a failure or kill in the middle of a transaction.
    ``arm()`` starts counting from 0, ``disarm()`` stops (for the retry)."""

    def __init__(self, at: int, act: Callable[[str], None], *, armed: bool = True) -> None:
        self.at = at
        self.act = act
        self.count = 0 if armed else -1

    def arm(self) -> None:
        self.count = 0

    def disarm(self) -> None:
        self.count = -1

    def __call__(self, step: str) -> None:
        if self.count < 0:
            return
        self.count += 1
        if self.count == self.at:
            self.act(step)


def _exit_17(step: str) -> None:
    del step
    os._exit(17)


def crash_worker(
    url: str, source: SourceEvent, claims: tuple[Claim, ...], crash_at: int, clock_at: datetime
) -> None:
    """Ingest one event and kill the process, without cleanup, before write step
    ``crash_at`` (1-based): a crash in the middle of the transaction."""
    failpoint = StepFailpoint(crash_at, _exit_17)

    memory = Memory(open_store(url, failpoint=failpoint), clock=FrozenClock(clock_at))
    memory.ingest(source, claims)
    os._exit(0)


# -- every write transaction, for failure and kill injection -----------------------------

OTHER_SUBJECT = "user-7"
SETUP_AT = day(10, 5)
RUN_AT = day(10, 19)

WORKER_SETTINGS = WorkerSettings(lease=timedelta(0))
"""No lease: a job leased by a worker that failed or died can be leased again at the same
frozen instant, so a retry is comparable with an uninterrupted run."""


def turn_claims(source: SourceEvent) -> list[Claim]:
    """The scenario extractor: a delivery preference for the day a turn names."""
    found = [pref("friday", grounding="Fridays")] if "Fridays" in source.text else []
    return found + ([pref("daily", grounding="daily")] if "daily" in source.text else [])


def _process(memory: Memory) -> object:
    return memory.process(extractor=FunctionExtractor(turn_claims), settings=WORKER_SETTINGS)


def _first(memory: Memory) -> None:
    memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])


_DAILY = event("evt-2", "Deliver it daily from now on", occurred_at=day(10, 5), sequence=2)


def _first_then_daily_turn(memory: Memory) -> None:
    _first(memory)
    memory.ingest(_DAILY)
    _process(memory)  # the daily claim and the turn's episode, both from evt-2


def _batch_setup(memory: Memory) -> None:
    _first(memory)
    memory.ingest(_DAILY)  # updates the family: closes evt-1's window
    memory.ingest(
        event(
            "evt-3",
            "Fridays suit me best",
            occurred_at=day(10, 5),
            sequence=1,
            subject=OTHER_SUBJECT,
            who=actor(FAMILY, actor_id=OTHER_SUBJECT),
        )
    )  # a family of another subject
    memory.ingest(event("evt-4", "lol", occurred_at=day(10, 5, 13), sequence=3))  # prefiltered


def _revoke_daily(memory: Memory) -> object:
    (target,) = [
        r for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT) if r.source_event_id == "evt-2"
    ]
    return memory.revoke(target.memory_id, tenant=TENANT)


def _daily_revoked(memory: Memory) -> None:
    _first_then_daily_turn(memory)
    _revoke_daily(memory)


def _undo_latest(memory: Memory) -> object:
    (change, *_) = memory.change_log(tenant=TENANT)
    return memory.undo(change.change_id, tenant=TENANT)


def _two_turns(memory: Memory) -> None:
    """evt-2's turn and evt-5's, one session of two episodes."""
    _first_then_daily_turn(memory)
    memory.ingest(event("evt-5", "Weekly would be fine too", occurred_at=day(10, 5, 14)))
    _process(memory)


def _compact_all(memory: Memory) -> object:
    return memory.compact(tenant=TENANT, older_than=timedelta(0))


def _compacted(memory: Memory) -> None:
    _two_turns(memory)
    _compact_all(memory)


def _first_then_held(memory: Memory) -> None:
    _first(memory)
    held = event("evt-2", "Mondays", occurred_at=day(10, 3), sequence=1)  # sequence 1 again
    assert memory.ingest(held, [pref("monday")]).outcome == "review"


def _resolve(decision: ReviewDecision) -> Callable[[Memory], object]:
    def run(memory: Memory) -> object:
        (item,) = memory.reviews(tenant=TENANT, open_only=False)
        return memory.resolve_review(
            TENANT, item.review_id, decision=decision, by="reviewer-1", reason="checked"
        )

    return run


@dataclass(frozen=True, slots=True)
class Operation:
    """One write transaction (or a few, for the worker) under test.

    ``setup`` builds the state before it at ``setup_at``; ``run`` is the write, at
    ``run_at``, and also its retry, in ``transactions`` write transactions (one, but
    two for the worker: the lease, then the batch's commit); ``subjects`` and
    ``event_ids`` say what a :func:`snapshot` of it must cover.
    """

    setup: Callable[[Memory], object]
    run: Callable[[Memory], object]
    transactions: int = 1
    subjects: tuple[str, ...] = (SUBJECT,)
    event_ids: tuple[str, ...] = ("evt-1", "evt-2")
    setup_at: datetime = SETUP_AT
    run_at: datetime = RUN_AT


OPERATIONS: dict[str, Operation] = {
    "enqueue": Operation(setup=_first, run=lambda memory: memory.ingest(_DAILY)),
    "worker_batch": Operation(
        setup=_batch_setup,
        run=_process,
        transactions=2,
        subjects=(SUBJECT, OTHER_SUBJECT),
        event_ids=("evt-1", "evt-2", "evt-3", "evt-4"),
    ),
    "review_accept": Operation(setup=_first_then_held, run=_resolve("accept")),
    "review_reject": Operation(setup=_first_then_held, run=_resolve("reject")),
    "revoke": Operation(setup=_first_then_daily_turn, run=_revoke_daily),
    "revoke_family": Operation(
        setup=_first_then_daily_turn,
        run=lambda memory: memory.revoke_family(SUBJECT, FAMILY, tenant=TENANT),
    ),
    "undo_revocation": Operation(setup=_daily_revoked, run=_undo_latest),
    "undo_correction": Operation(
        setup=_first_then_daily_turn, run=lambda memory: memory.undo("evt-2", tenant=TENANT)
    ),
    "rollback": Operation(
        setup=_first_then_daily_turn,
        run=lambda memory: memory.rollback(
            "function@1",
            tenant=TENANT,
            rederive_with=FunctionExtractor(lambda e: [pref("weekly", grounding="daily")]),
        ),
    ),
    "erase": Operation(  # the ledger's transaction, then the receipt's final statuses
        setup=_first_then_daily_turn,
        run=lambda memory: memory.erase(tenant=TENANT, event="evt-2"),
        transactions=2,
    ),
    "compact": Operation(setup=_two_turns, run=_compact_all, event_ids=("evt-1", "evt-2", "evt-5")),
    "forget_covered": Operation(  # dissolves the summary
        setup=_compacted,
        run=lambda memory: memory.forget("evt-2", tenant=TENANT),
        event_ids=("evt-1", "evt-2", "evt-5"),
    ),
    "erase_covered": Operation(  # erases the summary
        setup=_compacted,
        run=lambda memory: memory.erase(tenant=TENANT, event="evt-5"),
        transactions=2,
        event_ids=("evt-1", "evt-2", "evt-5"),
    ),
}
"""By name, so that a child process can find them: the claims and revocations that
:data:`OPERATIONS` exercise besides ``ingest`` with claims (the atomicity checks' own)."""


def crash_operation(url: str, name: str, crash_at: int) -> None:
    """Run ``OPERATIONS[name]`` on a store prepared with its setup, and kill the process,
    without cleanup, before its write step ``crash_at`` (1-based, counted over all the
    operation's transactions)."""
    operation = OPERATIONS[name]
    failpoint = StepFailpoint(crash_at, _exit_17)

    memory = Memory(open_store(url, failpoint=failpoint), clock=FrozenClock(operation.run_at))
    operation.run(memory)
    os._exit(0)
