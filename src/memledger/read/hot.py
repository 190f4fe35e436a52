"""Latency tiers: the hot cache of current slot values, prepared retrieval, deferred
writes, and the voice budget that decides which of them fit.

**Hot cache** (:class:`HotTier`): the current values of every family of a subject.
Every read compares the subject's family stamps (each family's revision and
generation, one indexed query of the canonical store) with the ones the cached
values were read at, and checks that the clock is still inside the valid-time window
the values hold for (a value whose ``valid_until`` passed, or one whose
``valid_from`` came, is a change too); any commit or revocation of that subject moves
a stamp, so the next read reloads and writes the fresh values back: no stale value is
served after a revocation is acknowledged, whichever process made it.

Where the values are kept is a :class:`HotCache`: :class:`InProcessHotCache` (the
default, least recently used out past ``capacity`` subjects) or ``RedisHotCache``
(``pip install 'memledger[redis]'``, :mod:`memledger.read._hot_redis`), one cache
shared by several service processes. A cache is never trusted: whatever it returns
is served only under the stamp check above, so a value cached by one process reaches
another only while the canonical store agrees. Keys hold the store (a fingerprint of
its URL), the tenant and the subject. A cache that fails (Redis down or slow) raises
:class:`HotCacheError`; the read is then served from the canonical store and counted
in :attr:`HotStats.fallbacks`, never failed.

**Prepared retrieval** (:meth:`HotTier.prepare`): a full recall run between turns
for the request the agent expects next; :meth:`HotTier.prepared` hands it back
only while the subject's stamps are unchanged, so a result prepared before a
commit or revocation is never served after it. Prepared results stay in process
(whichever cache holds the values): a turn served by another process finds none and
falls back to the hot values.

**Deferred writes** (:class:`DeferredWriter`): ingest after the response, on a
background thread, with the receipts (and errors) kept for the caller.

**Voice budget** (:func:`voice_budget`): ``max(0, target - (vad + stt + llm first
token + tts))`` in milliseconds and the tiers that fit: green (>= 100 ms: the full
read path), amber (>= 50 ms: prepared results and the hot cache), red (> 0 ms:
the hot cache only), none (0: no memory this turn).
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Literal, Protocol

from memledger.domain.records import MemoryRecord, Receipt, SourceEvent, require_id
from memledger.errors import InvalidInputError, MemledgerError, StoreError
from memledger.ports import Store
from memledger.read.ports import HasReading, ReadPorts, read_ports
from memledger.read.views import select

if TYPE_CHECKING:
    from memledger.read._hot_redis import RedisHotCache
    from memledger.read.recall import RecallResult, RecallSettings

__all__ = [
    "Band",
    "DeferredReport",
    "DeferredWriter",
    "HotCache",
    "HotCacheError",
    "HotKey",
    "HotStats",
    "HotTier",
    "HotValues",
    "InProcessHotCache",
    "RedisHotCache",
    "Stamp",
    "Tier",
    "VoiceBudget",
    "hot_key",
    "stamp_of",
    "store_fingerprint",
    "store_name",
    "voice_budget",
]


class Prepares(HasReading, Protocol):
    """What the deprecated :meth:`HotTier.prepare` was given: a ``Memory``."""

    def recall(
        self,
        query: str,
        *,
        tenant: str,
        subject: str | None = ...,
        k: int = ...,
        settings: RecallSettings | None = ...,
        touch: bool = ...,
    ) -> RecallResult: ...


class _HasIngest(Protocol):
    def ingest(self, event: SourceEvent) -> Receipt: ...


Ingests = Callable[[SourceEvent], Receipt] | _HasIngest
"""What :class:`DeferredWriter` hands each event to: ``memory.ingest`` (or, deprecated,
the ``Memory``)."""


def __getattr__(name: str) -> object:
    """``RedisHotCache`` is imported on first use: it needs the ``redis`` extra."""
    if name == "RedisHotCache":
        from memledger.read._hot_redis import RedisHotCache

        return RedisHotCache
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Stamp = tuple[tuple[str, int, int], ...]
"""A subject's families with their revision and generation."""


def stamp_of(store: Store, tenant: str, subject: str) -> Stamp:
    """A subject's families with their revision and generation, from ``store``."""
    with store.read() as unit:
        slots = unit.families(tenant, subject)
    return tuple((s.family, s.revision, s.generation) for s in slots)


_NAMES: weakref.WeakKeyDictionary[Store, str] = weakref.WeakKeyDictionary()


def store_name(store: Store) -> str:
    """Which canonical store this is, for cache keys: its URL, but a SQLite file by its
    absolute path (``memledger.db`` in two working folders is two stores) and an
    in-memory SQLite database as private to its process and object. Taken when a
    store is first seen, so a later change of working folder does not rename it."""
    try:
        return _NAMES[store]
    except KeyError:
        name = _NAMES[store] = _name(store)
        return name
    except TypeError:  # a store that cannot be weakly referenced or hashed
        return _name(store)


def _name(store: Store) -> str:
    path = getattr(store, "path", None)
    if not isinstance(path, PurePath):
        return store.url
    if str(path) == ":memory:":
        return f"sqlite-memory:{os.getpid()}:{id(store)}"
    return f"sqlite:///{os.path.abspath(path)}"


@lru_cache(maxsize=64)
def store_fingerprint(name: str) -> str:
    """A short, stable stand-in for a :func:`store_name` (hashed: a URL may carry a
    password), so that a cache shared by several stores never mixes their subjects."""
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def hot_key(store: Store, tenant: str, subject: str) -> HotKey:
    """The cache key of a subject of ``store``."""
    return HotKey(store_fingerprint(store_name(store)), tenant, subject)


@dataclass(frozen=True, slots=True)
class HotKey:
    """What a hot cache entry is for: a store (:func:`store_fingerprint`), a tenant and
    a subject."""

    store: str
    tenant: str
    subject: str


@dataclass(frozen=True, slots=True)
class HotValues:
    """A subject's current values, family by family, and the stamp they were read at.

    They are the current values at every valid time in ``[holds_from, holds_until)``
    (``None``: unbounded) for as long as the stamp is unchanged: the window ends where
    a value read starts or stops being valid."""

    stamp: Stamp
    values: Mapping[str, tuple[MemoryRecord, ...]]
    holds_from: datetime | None = None
    holds_until: datetime | None = None

    def holds_at(self, at: datetime) -> bool:
        return (self.holds_from is None or self.holds_from <= at) and (
            self.holds_until is None or at < self.holds_until
        )


class HotCacheError(StoreError):
    """A hot cache could not answer (its server is down or slow) or could not keep an
    entry. :class:`HotTier` never lets it reach a reader: it reads the canonical store
    instead and counts it in :class:`HotStats`."""


class HotCache(Protocol):
    """Where a :class:`HotTier` keeps :class:`HotValues`. An entry is advice, never
    truth: the tier serves it only if its stamp equals the store's. Any method may
    raise :class:`HotCacheError` when the cache cannot answer."""

    def get(self, key: HotKey, /) -> HotValues | None:
        """The entry for ``key``, or ``None``."""
        ...

    def put(self, key: HotKey, values: HotValues, /) -> None:
        """Keep ``values`` for ``key``, replacing any entry."""
        ...

    def delete(self, key: HotKey, /) -> None:
        """Drop the entry for ``key``, if any."""
        ...


class InProcessHotCache:
    """The default :class:`HotCache`: a dict in this process, the least recently used
    subject dropped past ``capacity``. Thread-safe; never raises :class:`HotCacheError`."""

    def __init__(self, *, capacity: int = 10_000) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise InvalidInputError(f"capacity must be a whole number >= 1, got {capacity!r}")
        self.capacity = capacity
        self._entries: OrderedDict[HotKey, HotValues] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: HotKey, /) -> HotValues | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: HotKey, values: HotValues, /) -> None:
        with self._lock:
            self._entries[key] = values
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def delete(self, key: HotKey, /) -> None:
        with self._lock:
            self._entries.pop(key, None)


def load_values(ports: ReadPorts, tenant: str, subject: str, *, at: datetime) -> HotValues:
    """A subject's current values at valid time ``at``, read from the canonical store
    in one snapshot with the stamp and the window they hold for."""
    values: dict[str, tuple[MemoryRecord, ...]] = {}
    edges: list[datetime] = []
    with ports.store.read() as unit:
        slots = unit.families(tenant, subject)
        for slot in slots:
            records = unit.family_records(tenant, subject, slot.family, open_only=True)
            revoked = unit.revoked_sources(tenant, subject, slot.family)
            now = ports.clock.now()  # record time; ``at`` is valid time (the same when cached)
            live = select(records, as_of=None, now=now, valid_at=None, revoked_sources=revoked)
            live = tuple(r for r in live if r.kind not in ("episode", "working"))
            for r in live:
                edges.append(r.valid_from)
                if r.valid_until is not None:
                    edges.append(r.valid_until)
                if r.expires_at is not None:  # record time: here the clock is both
                    edges.append(r.expires_at)
            held = tuple(r for r in live if r.valid(at))
            if held:
                values[slot.family] = held
        stamp = tuple((s.family, s.revision, s.generation) for s in slots)
    return HotValues(
        stamp=stamp,
        values=values,
        holds_from=max((e for e in edges if e <= at), default=None),
        holds_until=min((e for e in edges if e > at), default=None),
    )


@dataclass(frozen=True, slots=True)
class _Prepared:
    request: str
    store: str
    stamp: Stamp
    result: RecallResult


@dataclass(slots=True)
class HotStats:
    hits: int = 0
    """Reads served from the cache (whichever process wrote the entry)."""
    reloads: int = 0
    """Reads served from the canonical store (no entry, a moved stamp, a failed cache)."""
    fallbacks: int = 0
    """Reads whose cache lookup failed (:class:`HotCacheError`): served from the store."""
    cache_errors: int = 0
    """Failed cache calls of any kind: lookups, write-backs, deletes."""
    prepared_served: int = 0
    prepared_dropped: int = 0


_Counter = Literal[
    "hits", "reloads", "fallbacks", "cache_errors", "prepared_served", "prepared_dropped"
]


class HotTier:
    """The hot cache and prepared results of one :class:`Memory` (or several, over one
    store). ``cache`` is where the values live (default: :class:`InProcessHotCache`
    holding ``capacity`` subjects, 10,000 if not given)."""

    def __init__(self, *, cache: HotCache | None = None, capacity: int | None = None) -> None:
        if cache is not None and capacity is not None:
            raise InvalidInputError(
                "capacity sizes the default in-process cache; size the cache you pass instead"
            )
        if cache is None:
            cache = InProcessHotCache(capacity=10_000 if capacity is None else capacity)
        self.cache = cache
        self._prepared: dict[tuple[str, str], _Prepared] = {}
        self._stores: set[str] = set()
        self._lock = threading.Lock()
        self.stats = HotStats()

    def _count(self, counter: _Counter) -> None:
        with self._lock:
            setattr(self.stats, counter, getattr(self.stats, counter) + 1)

    def current(
        self,
        ports: ReadPorts | HasReading,
        *,
        tenant: str,
        subject: str,
        valid_at: datetime | None = None,
    ) -> HotValues:
        """The subject's current value of every family (see the module docstring), read
        through ``ports`` (``memory.reading``). ``valid_at`` reads another valid time,
        from the store, and caches nothing."""
        ports = read_ports(ports)
        require_id(tenant, "tenant", InvalidInputError)
        require_id(subject, "subject", InvalidInputError)
        at = valid_at or ports.clock.now()
        if valid_at is not None:
            self._count("reloads")
            return load_values(ports, tenant, subject, at=at)
        key = hot_key(ports.store, tenant, subject)
        with self._lock:
            self._stores.add(key.store)
        stamp = stamp_of(ports.store, tenant, subject)
        cache_up = True
        try:
            cached = self.cache.get(key)
        except HotCacheError:
            cached, cache_up = None, False
            self._count("fallbacks")
            self._count("cache_errors")
        if cached is not None and cached.stamp == stamp and cached.holds_at(at):
            self._count("hits")
            return cached
        loaded = load_values(ports, tenant, subject, at=at)
        self._count("reloads")
        if cache_up:  # a cache that just failed is not asked again in the same read
            try:
                self.cache.put(key, loaded)
            except HotCacheError:
                self._count("cache_errors")
        return loaded

    def invalidate(self, tenant: str, subject: str) -> None:
        """Drop what is cached for a subject, under every store this tier has read (the
        stamps would catch it anyway)."""
        with self._lock:
            stores = sorted(self._stores)
            self._prepared.pop((tenant, subject), None)
        for store in stores:
            try:
                self.cache.delete(HotKey(store, tenant, subject))
            except HotCacheError:
                self._count("cache_errors")

    def prepare(
        self,
        source: Prepares,
        request: str,
        *,
        tenant: str,
        subject: str,
        k: int = 20,
        settings: RecallSettings | None = None,
    ) -> RecallResult:
        """Run the full recall for the request expected next and keep it for
        :meth:`prepared` (call it between turns, off the response path). Deprecated:
        ``Memory.prepare(request, ...)`` does this; here ``source`` is the ``Memory``."""
        warnings.warn(
            "HotTier.prepare(memory, ...) is deprecated: call memory.prepare(request, ...)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.keep(
            source.reading,
            request,
            tenant=tenant,
            subject=subject,
            recall=lambda: source.recall(
                request, tenant=tenant, subject=subject, k=k, settings=settings, touch=False
            ),
        )

    def keep(
        self,
        ports: ReadPorts,
        request: str,
        *,
        tenant: str,
        subject: str,
        recall: Callable[[], RecallResult],
    ) -> RecallResult:
        """Run ``recall`` (the full recall of the request expected next, as a look ahead
        that touches nothing) and keep its result for :meth:`prepared` under the
        subject's stamp taken before it ran."""
        stamp = stamp_of(ports.store, tenant, subject)
        result = recall()  # a look ahead: the packet that uses it notes what it places
        store = hot_key(ports.store, tenant, subject).store
        with self._lock:
            self._prepared[(tenant, subject)] = _Prepared(request, store, stamp, result)
        return result

    def prepared(
        self, ports: ReadPorts | HasReading, *, tenant: str, subject: str
    ) -> RecallResult | None:
        """The prepared result for the subject if none of the subject's families changed
        since it was made (a commit or revocation moves a family's stamp); else
        ``None``, and it is dropped."""
        ports = read_ports(ports)
        with self._lock:
            found = self._prepared.get((tenant, subject))
        if found is None or found.store != hot_key(ports.store, tenant, subject).store:
            return None
        if stamp_of(ports.store, tenant, subject) != found.stamp:
            with self._lock:
                if self._prepared.get((tenant, subject)) is found:
                    del self._prepared[(tenant, subject)]
            self._count("prepared_dropped")
            return None
        self._count("prepared_served")
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

    def __init__(self, ingest: Ingests, *, capacity: int = 10_000) -> None:
        if not callable(ingest):  # a Memory, as this took before
            warnings.warn(
                "DeferredWriter(memory) is deprecated: pass memory.ingest",
                DeprecationWarning,
                stacklevel=2,
            )
            ingest = ingest.ingest
        self._ingest: Callable[[SourceEvent], Receipt] = ingest
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
                    self.report.done.append(self._ingest(event))
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
