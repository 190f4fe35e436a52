"""Latency tiers: the hot cache of current slot values, prepared retrieval, deferred
writes, and the voice budget that decides which of them fit.

**Hot cache** (:class:`HotTier`): the current values of every family of a subject,
kept in process. Every read compares the subject's family stamps (each family's
revision and generation, one indexed query of the canonical store) with the ones
the cached values were read at; any commit or revocation of that subject moves a
stamp, so the next read reloads: no stale value is served after a revocation is
acknowledged, whichever process made it. (A shared cache across service processes,
Redis, belongs to the scale-out work.)

**Prepared retrieval** (:meth:`HotTier.prepare`): a full recall run between turns
for the request the agent expects next; :meth:`HotTier.prepared` hands it back
only while the subject's stamps are unchanged, so a result prepared before a
commit or revocation is never served after it.

**Deferred writes** (:class:`DeferredWriter`): ingest after the response, on a
background thread, with the receipts (and errors) kept for the caller.

**Voice budget** (:func:`voice_budget`): ``max(0, target - (vad + stt + llm first
token + tts))`` in milliseconds and the tiers that fit: green (>= 100 ms: the full
read path), amber (>= 50 ms: prepared results and the hot cache), red (> 0 ms:
the hot cache only), none (0: no memory this turn).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from memledger.domain.records import MemoryRecord, Receipt, SourceEvent, require_id
from memledger.errors import InvalidInputError, MemledgerError
from memledger.read.views import select

if TYPE_CHECKING:
    from memledger.memory import Memory
    from memledger.read.recall import RecallResult, RecallSettings

Stamp = tuple[tuple[str, int, int], ...]
"""A subject's families with their revision and generation."""


def stamp_of(memory: Memory, tenant: str, subject: str) -> Stamp:
    with memory.store.read() as unit:
        slots = unit.families(tenant, subject)
    return tuple((s.family, s.revision, s.generation) for s in slots)


@dataclass(frozen=True, slots=True)
class HotValues:
    """A subject's current values, family by family, and the stamp they were read at."""

    stamp: Stamp
    values: Mapping[str, tuple[MemoryRecord, ...]]


@dataclass(frozen=True, slots=True)
class _Prepared:
    request: str
    stamp: Stamp
    result: RecallResult


@dataclass(slots=True)
class HotStats:
    hits: int = 0
    reloads: int = 0
    prepared_served: int = 0
    prepared_dropped: int = 0


class HotTier:
    """The in-process hot cache and prepared results of one :class:`Memory`."""

    def __init__(self, *, capacity: int = 10_000) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise InvalidInputError(f"capacity must be a whole number >= 1, got {capacity!r}")
        self._capacity = capacity
        self._values: dict[tuple[str, str], HotValues] = {}
        self._prepared: dict[tuple[str, str], _Prepared] = {}
        self._lock = threading.Lock()
        self.stats = HotStats()

    def current(
        self, memory: Memory, *, tenant: str, subject: str, valid_at: datetime | None = None
    ) -> HotValues:
        """The subject's current value of every family (see the module docstring)."""
        require_id(tenant, "tenant", InvalidInputError)
        require_id(subject, "subject", InvalidInputError)
        at = valid_at or memory.clock.now()
        key = (tenant, subject)
        stamp = stamp_of(memory, tenant, subject)
        with self._lock:
            cached = self._values.get(key)
        if cached is not None and cached.stamp == stamp and valid_at is None:
            self.stats.hits += 1
            return cached
        values: dict[str, tuple[MemoryRecord, ...]] = {}
        with memory.store.read() as unit:
            slots = unit.families(tenant, subject)
            for slot in slots:
                records = unit.family_records(tenant, subject, slot.family, open_only=True)
                revoked = unit.revoked_sources(tenant, subject, slot.family)
                held = select(records, as_of=None, valid_at=at, revoked_sources=revoked)
                held = tuple(r for r in held if r.kind not in ("episode", "working"))
                if held:
                    values[slot.family] = held
            read_at = tuple((s.family, s.revision, s.generation) for s in slots)
        loaded = HotValues(stamp=read_at, values=values)
        self.stats.reloads += 1
        if valid_at is None:
            with self._lock:
                if len(self._values) >= self._capacity and key not in self._values:
                    self._values.pop(next(iter(self._values)))
                self._values[key] = loaded
        return loaded

    def invalidate(self, tenant: str, subject: str) -> None:
        """Drop what is cached for a subject (the stamps would catch it anyway)."""
        with self._lock:
            self._values.pop((tenant, subject), None)
            self._prepared.pop((tenant, subject), None)

    def prepare(
        self,
        memory: Memory,
        request: str,
        *,
        tenant: str,
        subject: str,
        k: int = 20,
        settings: RecallSettings | None = None,
    ) -> RecallResult:
        """Run the full recall for the request expected next and keep it for
        :meth:`prepared` (call it between turns, off the response path)."""
        stamp = stamp_of(memory, tenant, subject)
        result = memory.recall(request, tenant=tenant, subject=subject, k=k, settings=settings)
        with self._lock:
            self._prepared[(tenant, subject)] = _Prepared(request, stamp, result)
        return result

    def prepared(self, memory: Memory, *, tenant: str, subject: str) -> RecallResult | None:
        """The prepared result for the subject if none of the subject's families changed
        since it was made (a commit or revocation moves a family's stamp); else
        ``None``, and it is dropped."""
        with self._lock:
            found = self._prepared.get((tenant, subject))
        if found is None:
            return None
        if stamp_of(memory, tenant, subject) != found.stamp:
            with self._lock:
                if self._prepared.get((tenant, subject)) is found:
                    del self._prepared[(tenant, subject)]
            self.stats.prepared_dropped += 1
            return None
        self.stats.prepared_served += 1
        return found.result

    def prepared_request(self, tenant: str, subject: str) -> str | None:
        with self._lock:
            found = self._prepared.get((tenant, subject))
        return None if found is None else found.request


# -- deferred writes -----------------------------------------------------------------------


@dataclass(slots=True)
class DeferredReport:
    done: list[Receipt] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(event id, error) of events that could not be ingested."""


class DeferredWriter:
    """Ingests events on a background thread so the caller's response never waits on a
    write. :meth:`flush` waits for what was handed over; :meth:`close` flushes and
    stops. A failed ingest is kept in :attr:`report` with its error (nothing is lost
    silently); the queue is bounded (``capacity``) so a flood applies back-pressure
    instead of growing without limit."""

    def __init__(self, memory: Memory, *, capacity: int = 10_000) -> None:
        self._memory = memory
        self._queue: queue.Queue[SourceEvent | None] = queue.Queue(maxsize=capacity)
        self.report = DeferredReport()
        self._thread = threading.Thread(target=self._run, name="memledger-deferred", daemon=True)
        self._thread.start()

    def submit(self, event: SourceEvent) -> None:
        if not isinstance(event, SourceEvent):
            raise InvalidInputError("submit takes a SourceEvent")
        self._queue.put(event)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                try:
                    self.report.done.append(self._memory.ingest(event))
                except MemledgerError as exc:
                    self.report.failed.append((event.event_id, str(exc)))
            finally:
                self._queue.task_done()

    def flush(self) -> DeferredReport:
        self._queue.join()
        return self.report

    def close(self) -> DeferredReport:
        self.flush()
        self._queue.put(None)
        self._thread.join()
        return self.report


# -- the voice budget ----------------------------------------------------------------------

Band = Literal["green", "amber", "red", "none"]
Tier = Literal["full", "prepared", "hot"]


@dataclass(frozen=True, slots=True)
class VoiceBudget:
    residual_ms: float
    band: Band
    tiers: tuple[Tier, ...]
    """The memory tiers that fit, fastest last."""


def voice_budget(
    target_ms: float,
    *,
    vad_ms: float,
    stt_ms: float,
    llm_first_token_ms: float,
    tts_ms: float,
) -> VoiceBudget:
    """What is left for memory in a real-time turn and which tiers fit it (see the
    module docstring)."""
    parts = {
        "target_ms": target_ms,
        "vad_ms": vad_ms,
        "stt_ms": stt_ms,
        "llm_first_token_ms": llm_first_token_ms,
        "tts_ms": tts_ms,
    }
    for name, value in parts.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise InvalidInputError(f"{name} must be a number of milliseconds >= 0")
    residual = max(0.0, target_ms - (vad_ms + stt_ms + llm_first_token_ms + tts_ms))
    tiers: Sequence[Tier]
    if residual >= 100:
        band: Band = "green"
        tiers = ("full", "prepared", "hot")
    elif residual >= 50:
        band, tiers = "amber", ("prepared", "hot")
    elif residual > 0:
        band, tiers = "red", ("hot",)
    else:
        band, tiers = "none", ()
    return VoiceBudget(residual_ms=residual, band=band, tiers=tuple(tiers))
