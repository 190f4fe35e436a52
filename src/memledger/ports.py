"""The ports the core talks through: a clock and a store with units of work.

A backend implements :class:`Store` and :class:`UnitOfWork`: a few primitives
inside a transaction. Everything convenient (the event commit, revocation, the
views) is written once above them, in ``memledger.write`` and ``memledger.read``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, NamedTuple, Protocol, TypeVar

from memledger.domain.changes import Change
from memledger.domain.families import Family
from memledger.domain.keys import ApiKey
from memledger.domain.policy import Position
from memledger.domain.records import (
    Claim,
    ExtractorInfo,
    HistoryEntry,
    Job,
    MemoryRecord,
    Receipt,
    RecordStatus,
    ReviewItem,
    SourceEvent,
)
from memledger.errors import InvalidInputError


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    """An extractor's candidate batch for one event. ``complete=False`` says the
    extractor knows it missed something (truncated output): the event goes to review."""

    claims: tuple[Claim, ...]
    complete: bool = True
    dropped: tuple[str, ...] = ()
    """Why proposals the extractor itself discarded were dropped (one reason each)."""


class Extractor(Protocol):
    """Proposes candidate claims from one source event. Never decides authority.

    ``extract`` is pure with respect to memledger's state: it sees the event
    only. It raises :class:`~memledger.errors.ExtractionError` when it cannot
    produce a batch (the job is retried later), never returns half a batch.
    """

    @property
    def info(self) -> ExtractorInfo: ...

    def extract(self, event: SourceEvent) -> Extraction: ...


class Tokenizer(Protocol):
    """Counts tokens for context budgets (:mod:`memledger.tokens` has the defaults)."""

    def count(self, text: str, /) -> int:
        """Number of tokens in ``text``."""
        ...


class Clock(Protocol):
    """Where record time comes from. Tests use ``memledger.testing.FrozenClock``."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class FamilySlot:
    """The serialisation point of one (tenant, subject, family)."""

    tenant: str
    subject: str
    family: str
    revision: int = 0
    generation: int = 0
    position: Position | None = None
    updated_at: datetime | None = None


class ClaimWindow(NamedTuple):
    """Where and when a claim holds, read without the rest of its record: what a turn's
    event stated, weighed by :func:`memledger.read.outdated.replaced`."""

    event_id: str
    subject: str
    family: str
    scope: str
    superseded_at: datetime | None
    valid_from: datetime
    valid_until: datetime | None
    expires_at: datetime | None

    def holds(self, at: datetime, now: datetime) -> bool:
        """Open in record time, valid at ``at`` and not expired at record time ``now``
        (as :meth:`MemoryRecord.valid` and :meth:`MemoryRecord.expired` say)."""
        return (
            self.superseded_at is None
            and self.valid_from <= at
            and (self.valid_until is None or at < self.valid_until)
            and (self.expires_at is None or now < self.expires_at)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SubjectSummary:
    """A subject of a tenant as a listing shows it: what it has and when it last moved."""

    subject: str
    families: int
    """Family slots the subject has (written, closed or revoked)."""
    events: int
    """Source events about it in the ledger."""
    last_at: datetime | None
    """The later of its last ingested event and its last family change."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredEvent:
    event: SourceEvent
    content_hash: str
    ingested_at: datetime


OutboxOp = Literal["upsert", "delete"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredTrace:
    """A context packet's trace as stored: its body is JSON (see
    :mod:`memledger.read.trace`)."""

    tenant: str
    trace_id: str
    subject: str | None
    created_at: datetime
    rendered_sha256: str
    body: str
    namespaces: frozenset[str] = frozenset()
    """The private namespaces the packet held memories of (what a key must read to see
    the trace); written with the trace, not read back."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredDecision:
    """An action gate's decision as stored (:mod:`memledger.gate`)."""

    tenant: str
    decision_id: str
    trace_id: str | None
    decided_at: datetime
    action: str
    allowed: bool
    body: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxEntry:
    """One change a derived index must apply: the record at ``revision`` appeared or left."""

    seq: int
    tenant: str
    memory_id: str
    subject: str
    family: str
    revision: int
    generation: int
    op: OutboxOp


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredKey:
    """An API key as stored: the key, and the hash of its token (never the token)."""

    key: ApiKey
    token_hash: str


class UnitOfWork(Protocol):
    """Primitives inside one transaction. Every method filters by tenant first."""

    def savepoint(self) -> AbstractContextManager[None]:
        """A nested transaction inside this one, rolled back alone if its block raises."""
        ...

    # source-event ledger
    def get_event(
        self, tenant: str, event_id: str, *, namespaces: frozenset[str] | None = None
    ) -> StoredEvent | None:
        """The event, ``None`` when there is none or its subject is in a private namespace
        not among ``namespaces`` (``None``: every namespace)."""
        ...

    def event_hash(self, tenant: str, event_id: str) -> str | None:
        """The content hash of a ledger event, or ``None`` if the ledger lacks it."""
        ...

    def append_event(self, event: SourceEvent, *, content_hash: str, at: datetime) -> None: ...
    def get_outcome(self, tenant: str, event_id: str) -> Receipt | None: ...
    def put_outcome(self, receipt: Receipt, *, at: datetime) -> None: ...

    # family slots
    def lock_family(self, tenant: str, subject: str, family: str) -> FamilySlot: ...
    def get_family(self, tenant: str, subject: str, family: str) -> FamilySlot | None: ...
    def put_family(self, slot: FamilySlot) -> None: ...
    def families(self, tenant: str, subject: str) -> Sequence[FamilySlot]: ...
    def family_events(self, tenant: str, subject: str, family: str) -> Sequence[str]:
        """The events committed into a family, oldest first (from its history)."""
        ...

    # records, history, outbox
    def insert_record(self, record: MemoryRecord) -> None: ...
    def close_record(
        self, tenant: str, memory_id: str, *, status: RecordStatus, at: datetime, closed_by: str
    ) -> None: ...
    def get_record(
        self, tenant: str, memory_id: str, *, namespaces: frozenset[str] | None = None
    ) -> MemoryRecord | None:
        """The record, ``None`` when there is none or it is in a private namespace not
        among ``namespaces`` (``None``: every namespace)."""
        ...

    def get_records(self, tenant: str, memory_ids: Sequence[str]) -> Mapping[str, MemoryRecord]: ...
    def event_records(
        self, tenant: str, event_id: str, *, open_only: bool
    ) -> Sequence[MemoryRecord]:
        """The records derived from one source event, in every subject and family."""
        ...

    def claims_of_events(self, tenant: str, event_ids: Sequence[str]) -> Sequence[MemoryRecord]:
        """The records other than episodes derived from these source events, any status."""
        ...

    def claim_windows(self, tenant: str, event_ids: Sequence[str]) -> Sequence[ClaimWindow]:
        """The windows of the authorised claims these source events made that are not
        revoked (records other than episodes and observations, neither historical nor
        revoked), in no particular order."""
        ...

    def family_records(
        self, tenant: str, subject: str, family: str, *, open_only: bool
    ) -> Sequence[MemoryRecord]: ...
    def add_history(self, entry: HistoryEntry) -> None: ...
    def history(self, tenant: str, subject: str, family: str) -> Sequence[HistoryEntry]: ...
    def add_outbox(self, record: MemoryRecord, *, op: OutboxOp, at: datetime) -> None: ...
    def add_mention(self, tenant: str, memory_id: str, *, event_id: str, at: datetime) -> bool:
        """Record that ``event_id`` stated the memory again; ``False`` if it already had."""
        ...

    def mention_events(self, tenant: str, memory_ids: Sequence[str]) -> Sequence[str]:
        """The events that stated these memories again (their NOOP mentions), sorted."""
        ...

    def set_mentions(
        self, tenant: str, memory_id: str, *, mentions: int, confidence: float, revision: int
    ) -> None: ...
    def record_accesses(self, tenant: str, accesses: Mapping[str, tuple[datetime, int]]) -> int:
        """Note that reads handed these memories out: per memory id, the last time and how
        many times. Raises each memory's last access to the later time and adds the
        counts; a memory the store no longer holds gets no row. Returns rows written."""
        ...

    def last_touched(
        self, tenant: str, memory_ids: Sequence[str], *, before: datetime
    ) -> Mapping[str, datetime]:
        """When each memory was last read (its last access) or stated again (the
        occurrence of its latest mention), counting only touches at or before
        ``before``; memories never touched are absent."""
        ...

    def access_counts(self, tenant: str, memory_ids: Sequence[str]) -> Mapping[str, int]:
        """How many times reads handed out each memory (never read: absent)."""
        ...

    def add_compaction(self, tenant: str, summary_id: str, memory_ids: Sequence[str]) -> None:
        """Record that the session summary ``summary_id`` covers these episodes. From
        then on closing the summary, or closing one of them, dissolves it (the summary
        closes, the open episodes go back to the index), and erasing one of them erases
        the summary too (:mod:`memledger.write.compact`)."""
        ...

    def covered_by(self, tenant: str, memory_ids: Sequence[str]) -> Mapping[str, str]:
        """The summary covering each of ``memory_ids`` (not covered: absent)."""
        ...

    def compacted(self, tenant: str, summary_id: str) -> Sequence[str]:
        """The episodes ``summary_id`` covers, sorted."""
        ...

    def outbox_size(self, tenant: str) -> int: ...
    def outbox_after(
        self, seq: int, *, limit: int, tenant: str | None = None
    ) -> Sequence[OutboxEntry]:
        """Outbox rows with a sequence above ``seq``, oldest first: of every tenant, or of
        ``tenant`` only."""
        ...

    def outbox_pending(self, tenant: str, *, after: int) -> int:
        """How many of ``tenant``'s outbox rows have a sequence above ``after``."""
        ...

    def outbox_pending_subjects(self, tenant: str, *, after: int) -> Mapping[str, int]:
        """:meth:`outbox_pending` by subject (what a reader of some subjects only counts)."""
        ...

    def outbox_head(self) -> int:
        """The newest outbox sequence (0 when empty)."""
        ...

    def outbox_count(self, *, after: int) -> int:
        """How many outbox rows of every tenant have a sequence above ``after``."""
        ...

    # revocation
    def add_revoked_source(
        self, tenant: str, subject: str, family: str, *, event_id: str, generation: int
    ) -> None: ...
    def is_revoked_source(self, tenant: str, subject: str, family: str, event_id: str) -> bool: ...
    def revoked_sources(self, tenant: str, subject: str, family: str) -> frozenset[str]: ...
    def revoked_sources_of(
        self, tenant: str, keys: Iterable[tuple[str, str]]
    ) -> Mapping[tuple[str, str], frozenset[str]]:
        """:meth:`revoked_sources` of each ``(subject, family)`` in ``keys``, in one read
        (every key asked is in the result, an empty set when nothing was revoked)."""
        ...

    def add_revocation(
        self, tenant: str, subject: str, family: str, *, generation: int, at: datetime
    ) -> int:
        """Log a revocation of a family; returns its number, counted per tenant from 1."""
        ...

    def revocation_mark(self, tenant: str) -> int:
        """How many revocations the tenant has logged (0: none)."""
        ...

    def revoked_after(self, tenant: str, subject: str, family: str, mark: int) -> bool:
        """Whether the family was revoked after the tenant's revocation ``mark``."""
        ...

    def forget_event(self, tenant: str, event_id: str, *, at: datetime, reason: str) -> None:
        """Record that nothing derived from the event may be written again."""
        ...

    def is_forgotten(self, tenant: str, event_id: str) -> bool: ...
    def unforget_event(self, tenant: str, event_id: str) -> None:
        """Let the event be used again (an undone ``forget``)."""
        ...

    # recorded changes and their undo (memledger.write.undo)
    def put_change(self, change: Change, *, causes: Sequence[str] = ()) -> None:
        """Keep a change (its body again if it exists); ``causes`` are the ``closed_by``
        values it wrote besides its id, each leading back to it."""
        ...

    def get_change(self, tenant: str, change_id: str) -> Change | None: ...
    def change_of_cause(self, tenant: str, cause: str) -> str | None: ...
    def mark_undone(self, tenant: str, change_id: str, *, by: str) -> None: ...
    def changes(self, tenant: str, *, limit: int) -> Sequence[Change]:
        """The newest ``limit`` changes, newest first."""
        ...

    def records_closed_by(self, tenant: str, cause: str) -> Sequence[MemoryRecord]: ...
    def lift_revoked_sources(
        self, tenant: str, subject: str, family: str, *, generation: int
    ) -> Sequence[str]:
        """Delete the family's revoked sources of one revocation ``generation``; return
        their event ids."""
        ...

    def revocation_generations(self, tenant: str, subject: str, family: str) -> Sequence[int]:
        """Every generation a revocation of the family started, oldest first."""
        ...

    def extractor_records(
        self, tenant: str, name: str, version: str, *, since: datetime | None
    ) -> Sequence[MemoryRecord]:
        """Every record (open or closed) an extractor version wrote, recorded at or after
        ``since``, oldest first."""
        ...

    # erasure (memledger.write.erase)
    def erasable_events(self, tenant: str, subject: str) -> Sequence[str]:
        """The events of ``subject`` and the events that wrote records about it, by id."""
        ...

    def erase_events(
        self, tenant: str, event_ids: Sequence[str], *, erasure_id: str, at: datetime
    ) -> Mapping[str, int]:
        """Delete the events, every record derived from them (its history keeps an
        ``erased`` entry; forget the events first, so the index drops them), their
        outcomes, mentions,
        jobs and review items, leaving a tombstone (ids and content hash) per event;
        returns how many rows of each kind went."""
        ...

    def tombstone(self, tenant: str, event_id: str) -> str | None:
        """The erasure that erased the event, or ``None``."""
        ...

    def scrub_traces(self, tenant: str, subject: str, *, erasure_id: str) -> int:
        """Remove the request and the non-memory fields from the subject's traces (memory
        ids and revisions stay); returns how many traces changed."""
        ...

    def put_erasure(self, tenant: str, erasure_id: str, *, at: datetime, body: str) -> None: ...

    # quotas (memledger.domain.quotas)
    def quotas(self, tenant: str) -> str | None:
        """The tenant's quotas as JSON, or ``None``."""
        ...

    def set_quotas(self, tenant: str, body: str | None, *, at: datetime) -> None: ...
    def jobs_queued_since(self, tenant: str, since: datetime) -> int: ...
    def open_records_count(self, tenant: str) -> int: ...

    # freshness (memledger.freshness)
    def queue_state(self, tenant: str | None) -> tuple[int, datetime | None]:
        """Queued extraction jobs (of ``tenant``, else of every tenant) and when the
        oldest was queued."""
        ...

    def job_lags(self, tenant: str | None, *, since: datetime) -> Sequence[float]:
        """Seconds from queued to done of the jobs done since ``since``."""
        ...

    # expiry and retention (memledger.write.erase)
    def retention(self, tenant: str) -> Mapping[str, int]:
        """Days the tenant keeps records of each kind that has a retention."""
        ...

    def set_retention(self, tenant: str, kind: str, days: int | None, *, at: datetime) -> int:
        """Keep the tenant's records of ``kind`` ``days`` days (``None``: no retention).
        Records already held get the earlier of their expiry and ``recorded_at + days``;
        returns how many changed."""
        ...

    def expired_records(self, tenant: str, *, now: datetime, limit: int) -> Sequence[MemoryRecord]:
        """Records of the tenant whose expiry has come at ``now``, oldest expiry first."""
        ...

    def expiring_tenants(self, *, now: datetime) -> Sequence[str]:
        """Tenants holding a record whose expiry has come at ``now``."""
        ...

    def erase_records(
        self,
        tenant: str,
        memory_ids: Sequence[str],
        *,
        erasure_id: str,
        at: datetime,
        keep_summaries: bool = False,
    ) -> Mapping[str, int]:
        """Delete the records (history keeps an ``erased`` entry, the index gets a
        ``delete``) and their mentions; returns how many rows of each kind went. A
        session summary covering one of them goes too, unless ``keep_summaries``
        (expiry); the open episodes of an erased summary go back to the index."""
        ...

    def live_event_records(self, tenant: str, event_ids: Sequence[str]) -> Sequence[str]:
        """Of ``event_ids``, the events some record is still derived from."""
        ...

    def erasure_bodies(self, tenant: str) -> Sequence[tuple[str, str]]:
        """``(erasure_id, body)`` of the tenant's erasures, oldest first."""
        ...

    # context traces
    def put_trace(self, trace: StoredTrace) -> None:
        """Store a context packet's trace; a second trace with the same id is refused."""
        ...

    def get_trace(
        self, tenant: str, trace_id: str, *, namespaces: frozenset[str] | None = None
    ) -> StoredTrace | None:
        """The trace, ``None`` when there is none or its subject, or a memory its packet
        held, is in a private namespace not among ``namespaces`` (``None``: every
        namespace)."""
        ...

    def put_decision(self, decision: StoredDecision) -> None:
        """Store an action gate's decision."""
        ...

    def decisions(self, tenant: str, *, trace_id: str) -> Sequence[StoredDecision]:
        """The gate decisions recorded against a trace, oldest first."""
        ...

    def traces(
        self,
        tenant: str,
        *,
        subject: str | None = None,
        limit: int = 50,
        namespaces: frozenset[str] | None = None,
    ) -> Sequence[StoredTrace]:
        """The tenant's (or subject's) most recent traces, newest first; only those whose
        subject and held memories are shared or in ``namespaces`` (``None``: every
        namespace)."""
        ...

    # review queue and jobs
    def add_review(self, item: ReviewItem) -> None: ...
    def reviews(self, tenant: str, *, open_only: bool) -> Sequence[ReviewItem]: ...
    def get_review(self, tenant: str, review_id: str) -> ReviewItem | None: ...
    def resolve_review(
        self, tenant: str, review_id: str, *, resolution: str, by: str, reason: str, at: datetime
    ) -> None:
        """Record a review decision on an open item (who, why, when)."""
        ...

    def add_job(self, job: Job) -> None: ...
    def get_job(self, tenant: str, job_id: str) -> Job | None: ...
    def claim_jobs(
        self, *, tenant: str | None, now: datetime, lease_until: datetime, owner: str, limit: int
    ) -> Sequence[Job]:
        """Lease up to ``limit`` of the oldest due queued jobs (of ``tenant``, or of any),
        oldest first."""
        ...

    def retry_job(
        self, tenant: str, job_id: str, *, error: str, next_attempt_at: datetime, failed: bool
    ) -> None: ...
    def requeue_failed(self, tenant: str, *, now: datetime) -> int: ...
    def finish_job(self, tenant: str, job_id: str, *, at: datetime) -> None: ...
    def jobs(self, tenant: str, *, open_only: bool) -> Sequence[Job]: ...

    # counters and ledger scans
    def bump_counter(self, tenant: str, name: str, *, by: int = 1) -> None: ...
    def counters(self, tenant: str) -> Mapping[str, int]: ...
    def count_events(
        self, tenant: str, subject: str, *, since: datetime, until: datetime
    ) -> int: ...
    def subject_events(self, tenant: str, subject: str) -> Sequence[SourceEvent]: ...
    def subjects(
        self,
        tenant: str,
        *,
        prefix: str = "",
        after: str | None = None,
        limit: int,
        namespaces: frozenset[str] | None = None,
    ) -> Sequence[SubjectSummary]:
        """The tenant's subjects (with events or family slots) in subject order, those
        starting with ``prefix`` and past ``after``, at most ``limit``; of the private
        namespaces only those in ``namespaces`` (``None``: every namespace)."""
        ...

    # API keys. Key ids are unique across tenants: authentication reads a key by its
    # id alone, since that is how it learns the tenant; everything else filters by tenant.
    def add_key(self, key: ApiKey, *, token_hash: str) -> None:
        """Store a new key; an id already taken (by any tenant) is a ``ConflictError``."""
        ...

    def get_key(self, key_id: str) -> StoredKey | None: ...
    def keys(self, tenant: str) -> Sequence[ApiKey]:
        """The tenant's keys, revoked ones included, oldest first."""
        ...

    def revoke_key(self, tenant: str, key_id: str, *, at: datetime) -> None:
        """Mark a key of the tenant revoked at ``at`` (a revoked key stays revoked). A
        tenant's revocations take turns: once it returns, :meth:`keys` in this unit sees
        every other revocation of the tenant's keys that committed."""
        ...

    def touch_key(self, key_id: str, *, at: datetime) -> None:
        """Record that a key was used at ``at``."""
        ...

    # families registered per tenant
    def register_family(self, tenant: str, family: Family, *, at: datetime) -> None: ...
    def registered_families(self, tenant: str) -> Sequence[Family]:
        """The families registered for the tenant, by name."""
        ...


class Store(Protocol):
    """A canonical store. ``write()`` commits only if its block raises nothing."""

    url: str

    def write(self) -> AbstractContextManager[UnitOfWork]: ...
    def read(self) -> AbstractContextManager[UnitOfWork]: ...
    def close(self) -> None: ...
    def scrub(self) -> None:
        """After an erasure: leave no copy of deleted rows where the store can reach it
        (SQLite: the write-ahead log checkpointed and truncated; freed pages are zeroed
        as rows go; PostgreSQL: the tables vacuumed)."""
        ...


def generations_of(slots: Sequence[FamilySlot]) -> Mapping[str, int]:
    """A job's snapshot: the generation of every family of a subject it started under."""
    return {slot.family: slot.generation for slot in slots}


def all_subjects(unit: UnitOfWork, tenant: str) -> list[str]:
    """Every subject of ``tenant`` (with events or family slots), in order, read a page
    at a time."""
    found: list[str] = []
    after: str | None = None
    while page := unit.subjects(tenant, after=after, limit=500):
        found.extend(s.subject for s in page)
        after = page[-1].subject
    return found


_P = TypeVar("_P")


def handed(given: object, kind: type[_P], attribute: str, what: str) -> _P:
    """``given`` when it is a ``kind`` (the ports a path is handed); an object that
    holds them as ``attribute`` (a ``Memory``, as the path took before) still gives
    them, with a ``DeprecationWarning`` for its caller's caller; anything else is
    refused naming ``what``."""
    if isinstance(given, kind):
        return given
    held = getattr(given, attribute, None)
    if isinstance(held, kind):
        warnings.warn(
            f"passing the Memory is deprecated: pass memory.{attribute}",
            DeprecationWarning,
            stacklevel=4,  # past handed and the path's own check: the path's caller
        )
        return held
    raise InvalidInputError(f"expected {what} (memory.{attribute}), got a {type(given).__name__}")
