"""The :class:`Memory` facade: what users hold.

Every read takes the tenant as a keyword and filters by it before anything
else; writes take it from the event. Each call is one transaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from memledger import _keys
from memledger._schemas import TenantSchemas
from memledger.domain.budget import Budget
from memledger.domain.changes import Change, ChangeLog, RollbackReceipt, UndoReceipt
from memledger.domain.families import Family, Schema
from memledger.domain.keys import ApiKey, KeyRole, Principal, PrincipalKind
from memledger.domain.limits import Limits, check_claims, check_event, check_reason
from memledger.domain.policy import WritePolicy
from memledger.domain.quotas import Quotas, RateGate
from memledger.domain.records import (
    CALLER,
    KINDS,
    Claim,
    ExtractorInfo,
    ForgetReceipt,
    Grant,
    HistoryEntry,
    Job,
    MemoryRecord,
    Receipt,
    ReviewDecision,
    ReviewItem,
    ReviewResolution,
    RevocationReceipt,
    SourceEvent,
    require_aware,
    require_claims,
    require_id,
)
from memledger.errors import (
    EventNotFoundError,
    InvalidEventError,
    InvalidInputError,
    InvalidQueryError,
    MemoryNotFoundError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
)
from memledger.freshness import Freshness, ReadStats, freshness
from memledger.gate import Check, GateDecision, decide
from memledger.index.backends import Index, open_index
from memledger.index.catchup import CatchUp, catch_up
from memledger.index.derived import Progress, default_index_path
from memledger.index.embedders import default_embedder
from memledger.ports import (
    Clock,
    Extractor,
    FamilySlot,
    Store,
    SubjectSummary,
    SystemClock,
    UnitOfWork,
    generations_of,
)
from memledger.read.access import AccessLog, flush_quietly
from memledger.read.context import (
    Constraint,
    DocumentSource,
    LiveState,
    Material,
    Packet,
    build,
    check_request,
)
from memledger.read.hot import HotTier, Tier
from memledger.read.missed import PossibleUpdate, possible_updates
from memledger.read.ports import ReadPorts
from memledger.read.procedures import DependencyChecker
from memledger.read.recall import RecallResult, RecallSettings, check_query, recall
from memledger.read.trace import Replay, replay
from memledger.read.views import check_floor, check_min_revision, select
from memledger.store import floors, open_store
from memledger.write.commit import Batch, append_to_ledger, commit_event, job_id_for
from memledger.write.compact import MAX_TOKENS, MIN_TURNS, CompactionReceipt
from memledger.write.compact import compact as compact_sessions
from memledger.write.consolidate import ConsolidationReceipt
from memledger.write.consolidate import consolidate as consolidate_records
from memledger.write.erase import (
    ErasureReceipt,
    ErasureScope,
    erase_in_ledger,
    expire_in_ledger,
    run_step,
)
from memledger.write.erase import receipts as erasure_receipts
from memledger.write.erase import save as save_erasure
from memledger.write.ports import WritePorts
from memledger.write.rederive import Rederivation, rederive
from memledger.write.review import resolve_review
from memledger.write.revoke import forget_event, revoke_family, revoke_memory
from memledger.write.undo import Rederive, change_closing, record_change
from memledger.write.undo import rollback as rollback_extractor
from memledger.write.undo import undo as undo_change
from memledger.write.worker import Worker, WorkerSettings, WorkReport

if TYPE_CHECKING:
    from memledger.ports import Tokenizer
    from memledger.read.rewrite import QueryRewriter
    from memledger.session import SessionView, Summarizer


class Memory:
    """A memory ledger over one canonical store."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        schema: Schema | None = None,
        policy: WritePolicy | None = None,
        index: Index | None = None,
        limits: Limits | None = None,
        hot: HotTier | None = None,
        catch_up: CatchUp | None = None,
    ) -> None:
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self.schema = schema or Schema.default()
        self.policy = policy or WritePolicy()
        self._index = index
        self._index_lock = threading.Lock()
        self.read_stats = ReadStats()
        self.accesses = AccessLog()
        """Memories this process's reads handed out, not yet written
        (:mod:`memledger.read.access`)."""
        self._quotas: dict[str, tuple[float, Quotas]] = {}
        self._rates = RateGate()
        """This process's recalls: abstentions, lexical-only runs, exclusions by reason."""
        if limits is not None and not isinstance(limits, Limits):
            raise InvalidInputError(f"limits must be a Limits, got {type(limits).__name__}")
        self.limits = limits or Limits()
        """The size limits ``ingest`` and ``commit_job`` check input against."""
        if hot is not None and not isinstance(hot, HotTier):
            raise InvalidInputError(f"hot must be a HotTier, got {type(hot).__name__}")
        self.hot = hot if hot is not None else HotTier()
        """The hot cache of current values and prepared results (latency tiers); pass
        ``hot=HotTier(cache=RedisHotCache(url))`` to share it between processes."""
        self._schemas = TenantSchemas(self.schema, store)
        if catch_up is not None and not isinstance(catch_up, CatchUp):
            raise InvalidInputError(f"catch_up must be a CatchUp, got {type(catch_up).__name__}")
        self.catch_up = catch_up or CatchUp()
        """How much of its tenant's index backlog a read applies (:class:`CatchUp`)."""

    @classmethod
    def open(
        cls,
        url: str | Path | None = None,
        *,
        clock: Clock | None = None,
        schema: Schema | None = None,
        policy: WritePolicy | None = None,
        create: bool = True,
        index: Index | None = None,
        limits: Limits | None = None,
        hot: HotTier | None = None,
        replicas: Sequence[str] = (),
        replica_wait: float = 1.0,
        stale: Literal["primary", "fail"] = "primary",
    ) -> Memory:
        """Open a store by URL: ``None`` is ``./memledger.db``; ``"sqlite:///path.db"``;
        ``"postgresql://user@host/db"`` (the ``postgres`` extra).

        A missing store is created unless ``create=False``, which raises
        :class:`StoreNotFoundError` instead (for read-only tools). ``limits``
        (default :class:`Limits()`) bounds what one event may carry. ``replicas``:
        streaming replicas of a PostgreSQL store that serve reads once they hold
        this process's own commits and the revision floors a read asks for, waiting
        up to ``replica_wait`` seconds, then reading the primary (``stale="primary"``)
        or failing with :class:`RevisionNotMetError` (``stale="fail"``).
        """
        if limits is not None and not isinstance(limits, Limits):
            raise InvalidInputError(f"limits must be a Limits, got {type(limits).__name__}")
        return cls(
            open_store(
                url, create=create, replicas=replicas, replica_wait=replica_wait, stale=stale
            ),
            clock=clock,
            schema=schema,
            policy=policy,
            index=index,
            limits=limits,
            hot=hot,
        )

    @property
    def url(self) -> str:
        return self.store.url

    @property
    def writing(self) -> WritePorts:
        """What the worker is handed: the store, the clock, the write policy and limits,
        the tenant's schema, the derived index (opened on first use) and expiry
        (:class:`~memledger.write.ports.WritePorts`)."""
        return WritePorts(
            store=self.store,
            clock=self.clock,
            policy=self.policy,
            limits=self.limits,
            schema_for=self.schema_for,
            index=lambda: self.index,
            expire=lambda tenant: self.expire(tenant=tenant),
        )

    @property
    def reading(self) -> ReadPorts:
        """What the read path is handed: the store, the clock, the access log and the
        read counters of this object (:class:`~memledger.read.ports.ReadPorts`)."""
        return ReadPorts(
            store=self.store, clock=self.clock, accesses=self.accesses, stats=self.read_stats
        )

    @property
    def index(self) -> Index:
        """The derived index recall reads: the one given, else
        :func:`~memledger.index.backends.open_index`'s (``<store file>.index`` beside a
        SQLite store, the store's own database for PostgreSQL) with
        :func:`~memledger.index.embedders.default_embedder`, opened on first use."""
        if self._index is None:
            with self._index_lock:  # two first readers on two threads open one index
                if self._index is None:
                    self._index = open_index(self.store, embedder=default_embedder())
        return self._index

    def set_quotas(self, quotas: Quotas | None, *, tenant: str) -> Quotas:
        """Set the tenant's quotas (``None``: no quotas); see
        :mod:`memledger.domain.quotas`. Other processes see them within
        :data:`QUOTA_SECONDS` seconds."""
        _tenant(tenant)
        if quotas is not None and not isinstance(quotas, Quotas):
            raise InvalidInputError(f"quotas must be Quotas or None, got {type(quotas).__name__}")
        chosen = quotas if quotas is not None and not quotas.unlimited else None
        with self.store.write() as unit:
            unit.set_quotas(
                tenant, None if chosen is None else chosen.to_json(), at=self.clock.now()
            )
        self._quotas.pop(tenant, None)
        return self.quotas(tenant=tenant)

    def quotas(self, *, tenant: str) -> Quotas:
        """The tenant's quotas (read at most every :data:`QUOTA_SECONDS` seconds)."""
        _tenant(tenant)
        held = self._quotas.get(tenant)
        if held is not None and time.monotonic() - held[0] < QUOTA_SECONDS:
            return held[1]
        with self.store.read() as unit:
            body = unit.quotas(tenant)
        found = Quotas() if body is None else Quotas.from_json(body)
        self._quotas[tenant] = (time.monotonic(), found)
        return found

    def _take_read(self, tenant: str) -> None:
        """A recall or packet of ``tenant``, within its ``recalls_per_second``."""
        rate = self.quotas(tenant=tenant).recalls_per_second
        if rate is not None and (wait := self._rates.take(tenant, rate)) > 0:
            raise QuotaExceededError(
                f"tenant {tenant!r} is past its quota of {rate:g} recalls per second;"
                f" retry in {wait:.2f} s",
                retry_after=wait,
            )

    @property
    def opened_index(self) -> Index | None:
        """The index if this handle has opened it (:attr:`index` opens it)."""
        return self._index

    def freshness(self, *, tenant: str | None = None) -> Freshness:
        """How fresh memory is now: extraction lag and backlog, index lag, this process's
        reads, erasure times (:mod:`memledger.freshness`)."""
        if tenant is not None:
            _tenant(tenant)
        return freshness(
            self.store, self.clock, index=self.opened_index, reads=self.read_stats, tenant=tenant
        )

    def flush_accesses(self) -> int:
        """Write the access notes this process holds now, rather than at the next batch
        (:mod:`memledger.read.access`); returns how many memories were written."""
        return self.accesses.flush(self.store)

    def close(self) -> None:
        flush_quietly(self.accesses, self.store, due_only=False)
        if self._index is not None:
            self._index.close()
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- recall -------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        tenant: str,
        subject: str | None = None,
        k: int = 10,
        valid_at: datetime | None = None,
        min_revision: int | None = None,
        settings: RecallSettings | None = None,
        rewriter: QueryRewriter | None = None,
        sync: bool = True,
        visible: Callable[[str], bool] | None = None,
        touch: bool = True,
    ) -> RecallResult:
        """The ``k`` most useful memories for ``query`` (:func:`memledger.read.recall.recall`).

        ``sync=True`` first applies at most :attr:`catch_up`'s share of what the
        outbox holds beyond the index's cursor (one cheap query when it is caught up);
        a lagging index is then read as it is, and ``index_lag`` says by how much.
        ``visible`` (a subject -> bool test, e.g. a key's ``Principal.may_read``) keeps
        every record of a subject it refuses out of the result.
        """
        check_query(
            query, tenant, subject, k, min_revision=min_revision, settings=settings
        )  # before any index work
        self._take_read(tenant)
        if sync:  # this tenant's rows only, within the bound
            catch_up(self.index, self.store, tenant=tenant, bound=self.catch_up)
        return recall(
            self.reading,
            self.index,
            query,
            tenant=tenant,
            subject=subject,
            k=k,
            valid_at=valid_at,
            min_revision=min_revision,
            settings=settings,
            rewriter=rewriter,
            visible=visible,
            touch=touch,
        )

    # -- context -------------------------------------------------------------------------

    def context(
        self,
        request: str,
        *,
        tenant: str,
        subject: str | None = None,
        budget: Budget | int = 2000,
        live: Sequence[LiveState] = (),
        constraints: Sequence[Constraint] = (),
        material: Sequence[Material] = (),
        corpus: DocumentSource | None = None,
        tokenizer: Tokenizer | None = None,
        valid_at: datetime | None = None,
        k: int = 20,
        settings: RecallSettings | None = None,
        sync: bool = True,
        tier: Tier = "full",
        checkers: Mapping[str, DependencyChecker] | None = None,
        session: SessionView | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> Packet:
        """The context packet for ``request`` within ``budget`` tokens (a total, or a
        :class:`~memledger.domain.budget.Budget` with caps per section), stored as a
        trace (:mod:`memledger.read.context`, :mod:`memledger.read.trace`). ``tier``
        ``"hot"`` or ``"prepared"`` serves memories from :attr:`hot` without reading the
        index (:mod:`memledger.read.hot`)."""
        check_request(request, tenant, subject)
        total = budget if isinstance(budget, Budget) else Budget(total=budget)
        most = self.quotas(tenant=tenant).packet_tokens
        if most is not None and total.total > most:
            raise QuotaExceededError(
                f"a packet of {total.total:,} tokens is past tenant {tenant!r}'s quota of"
                f" {most:,} (packet_tokens); ask for a smaller budget"
            )
        self._take_read(tenant)
        if sync and tier == "full":
            catch_up(self.index, self.store, tenant=tenant, bound=self.catch_up)
        return build(
            self.reading,
            self.index if tier == "full" else self._index,  # the hot tiers need none
            request,
            tenant=tenant,
            subject=subject,
            budget=total,
            live=live,
            constraints=constraints,
            material=material,
            corpus=corpus,
            tokenizer=tokenizer,
            valid_at=valid_at,
            k=k,
            settings=settings,
            tier=tier,
            hot=self.hot,
            checkers=checkers,
            session=session,
            visible=visible,
        )

    def prepare(
        self,
        request: str,
        *,
        tenant: str,
        subject: str,
        k: int = 20,
        settings: RecallSettings | None = None,
    ) -> RecallResult:
        """Run the full recall for the request expected next, between turns, so that
        ``context(..., tier="prepared")`` serves it (:meth:`HotTier.keep`)."""
        return self.hot.keep(
            self.reading,
            request,
            tenant=tenant,
            subject=subject,
            recall=lambda: self.recall(
                request, tenant=tenant, subject=subject, k=k, settings=settings, touch=False
            ),
        )

    def gate(
        self,
        action: str,
        checks: Mapping[str, Check],
        *,
        tenant: str,
        trace_id: str | None = None,
    ) -> GateDecision:
        """Whether a consequential action may proceed, decided on live state only, and
        recorded against the packet's trace (:mod:`memledger.gate`)."""
        return decide(self.store, self.clock, action, checks, tenant=tenant, trace_id=trace_id)

    def replay(self, trace_id: str, *, tenant: str, tokenizer: Tokenizer | None = None) -> Replay:
        """Rebuild a stored context packet from the store (:func:`memledger.read.trace.replay`)."""
        return replay(self.store, trace_id, tenant=tenant, tokenizer=tokenizer)

    def reindex(self, *, tenant: str | None = None, progress: Progress | None = None) -> int:
        """Drop the derived index and rebuild it from the outbox, or only ``tenant``'s
        entries (the others stay as they are); returns rows applied."""
        if tenant is None:
            return self.index.rebuild(self.store, progress=progress)
        _tenant(tenant)
        return self.index.rebuild_tenant(self.store, tenant, progress=progress)

    # -- writes -----------------------------------------------------------------------

    def ingest(
        self,
        event: SourceEvent,
        claims: Sequence[Claim] | None = None,
        *,
        complete: bool = True,
        extractor: ExtractorInfo = CALLER,
    ) -> Receipt:
        """Append ``event`` to the ledger and commit its claims atomically.

        With ``claims=None`` the event is stored and an extraction job is queued
        (outcome ``"queued"``), carrying the family generations it started under;
        finish it with :meth:`commit_job`. Processing an event again, with or
        without claims, returns its stored receipt with ``duplicate=True``.
        """
        if not isinstance(event, SourceEvent):
            raise InvalidEventError(f"expected a SourceEvent, got {type(event).__name__}")
        check_event(event, self.limits)
        if claims is not None:
            claims = require_claims(claims, complete=complete, extractor=extractor)
            check_claims(claims, self.limits)  # all before the write transaction
        if claims is not None:
            schema = self.schema_for(event.tenant, [c.family for c in claims])
        now = self.clock.now()
        quotas = self.quotas(tenant=event.tenant)
        with self.store.write() as unit:
            if not quotas.unlimited and unit.event_hash(event.tenant, event.event_id) is None:
                _check_ingest(unit, event, quotas, queued=claims is None, now=now)
            if claims is None:
                return self._enqueue(unit, event, now)
            batch = Batch(event=event, claims=tuple(claims), complete=complete, extractor=extractor)
            return commit_event(unit, batch, schema=schema, policy=self.policy, now=now)

    def _enqueue(self, unit: UnitOfWork, event: SourceEvent, now: datetime) -> Receipt:
        append_to_ledger(unit, event, now=now, validate=lambda: None)
        prior = unit.get_outcome(event.tenant, event.event_id)
        if prior is not None:
            return Receipt(
                tenant=prior.tenant,
                event_id=prior.event_id,
                outcome=prior.outcome,
                revisions=prior.revisions,
                results=prior.results,
                review_id=prior.review_id,
                job_id=prior.job_id,
                reason=prior.reason,
                duplicate=True,
            )
        job = Job(
            tenant=event.tenant,
            job_id=job_id_for(event),
            event_id=event.event_id,
            generations=generations_of(unit.families(event.tenant, event.subject)),
            created_at=now,
            revocation_mark=unit.revocation_mark(event.tenant),
        )
        unit.add_job(job)
        receipt = Receipt(
            tenant=event.tenant, event_id=event.event_id, outcome="queued", job_id=job.job_id
        )
        unit.put_outcome(receipt, at=now)
        return receipt

    def commit_job(
        self,
        job_id: str,
        claims: Sequence[Claim],
        *,
        tenant: str,
        complete: bool = True,
        extractor: ExtractorInfo = CALLER,
    ) -> Receipt:
        """Commit an extraction job's claims under the generations the job started with.

        Claims for a family revoked since the job was queued are rejected as
        ``stale_generation``; a job that already finished returns its receipt.
        """
        _tenant(tenant)
        require_id(job_id, "job_id", InvalidQueryError)
        claims = require_claims(claims, complete=complete, extractor=extractor)
        check_claims(claims, self.limits)  # before the write transaction
        schema = self.schema_for(tenant, [c.family for c in claims])
        now = self.clock.now()
        with self.store.write() as unit:
            job = unit.get_job(tenant, job_id)
            if job is None:
                raise NotFoundError(f"no job {job_id!r} for tenant {tenant!r}")
            stored = unit.get_event(tenant, job.event_id)
            if stored is None:  # pragma: no cover - the ledger is append-only
                raise EventNotFoundError(f"job {job_id!r} names missing event {job.event_id!r}")
            batch = Batch(
                event=stored.event,
                claims=tuple(claims),
                complete=complete,
                extractor=extractor,
                generations=job.generations,
                revocation_mark=job.revocation_mark,
                job_id=job_id,
                from_ledger=True,  # read from this ledger: nothing to append or compare
            )
            return commit_event(unit, batch, schema=schema, policy=self.policy, now=now)

    def revoke(
        self,
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
        _tenant(tenant)
        require_id(memory_id, "memory_id", InvalidQueryError)
        check_reason(reason, self.limits)
        with self.store.write() as unit:
            log, now = ChangeLog(), self.clock.now()
            receipt = revoke_memory(
                unit, tenant, memory_id, reason=reason, now=now, log=log, may_change=may_change
            )
            change = record_change(unit, tenant, log, kind="revocation", reason=reason, at=now)
            return replace(receipt, change_id=change)

    def forget(
        self,
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
        _tenant(tenant)
        require_id(event_id, "event_id", InvalidQueryError)
        check_reason(reason, self.limits)
        with self.store.write() as unit:
            log, now = ChangeLog(), self.clock.now()
            receipt = forget_event(
                unit, tenant, event_id, reason=reason, now=now, log=log, may_change=may_change
            )
            change = record_change(unit, tenant, log, kind="forget", reason=reason, at=now)
            return replace(receipt, change_id=change)

    def erase(
        self,
        *,
        tenant: str,
        event: str | None = None,
        memory_id: str | None = None,
        subject: str | None = None,
        reason: str = "erased",
    ) -> ErasureReceipt:
        """Delete what memory holds of one ``event``, one memory (``memory_id``: the
        event its words came from) or one ``subject``, in every store this project
        writes, and return the receipt: what it covered, by id, and each store's status
        and time (:mod:`memledger.write.erase`). Its use stops first, as with
        :meth:`forget`; a replay of an erased event is refused
        (:class:`~memledger.errors.EventErasedError`). Erasing the same target again
        finishes whatever a failed store left. Bad input changes nothing."""
        _tenant(tenant)
        given: list[tuple[ErasureScope, str | None]] = [
            ("event", event),
            ("memory", memory_id),
            ("subject", subject),
        ]
        chosen = [(scope, target) for scope, target in given if target is not None]
        if len(chosen) != 1:
            raise InvalidInputError(
                "erase one thing: give exactly one of event, memory_id, subject"
            )
        scope, target = chosen[0]
        require_id(target, {"memory": "memory_id"}.get(scope, scope), InvalidQueryError)
        check_reason(reason, self.limits)
        with self.store.write() as unit:
            receipt = erase_in_ledger(
                unit, tenant, scope, target, reason=reason, now=self.clock.now()
            )
        return self._finish_erasure(receipt)

    def expire(self, *, tenant: str | None = None, batch: int = 1000) -> tuple[ErasureReceipt, ...]:
        """Erase every record whose expiry has come (its TTL, or the tenant's retention of
        its kind; such records already left every read), with the events no record is
        derived from any more, as erasures (:meth:`erase`); of one tenant, or of every
        tenant holding one. ``batch`` records per transaction. The worker runs this on
        a schedule (``memledger worker --expire-every``)."""
        if tenant is not None:
            _tenant(tenant)
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise InvalidInputError(f"batch must be a positive whole number, got {batch!r}")
        now = self.clock.now()
        if tenant is None:
            with self.store.read() as unit:
                tenants = list(unit.expiring_tenants(now=now))
        else:
            tenants = [tenant]
        done: list[ErasureReceipt] = []
        for each in tenants:
            while True:
                with self.store.write() as unit:
                    receipt = expire_in_ledger(unit, each, now=now, limit=batch)
                if receipt is None:
                    break
                done.append(self._finish_erasure(receipt))
        return tuple(done)

    def set_retention(self, kind: str, days: int | None, *, tenant: str) -> int:
        """Keep the tenant's records of ``kind`` (episode, fact, preference, ...) ``days``
        days from when each was written (``None``: no retention). Records already held
        get the earlier of their own expiry and that day, at once; returns how many
        changed. A longer retention does not extend expiries already set."""
        _tenant(tenant)
        if kind not in KINDS:
            raise InvalidInputError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}")
        if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days < 1):
            raise InvalidInputError(f"days must be a whole number >= 1 or None, got {days!r}")
        with self.store.write() as unit:
            return unit.set_retention(tenant, kind, days, at=self.clock.now())

    def retention(self, *, tenant: str) -> dict[str, int]:
        """Days the tenant keeps records of each kind that has a retention."""
        _tenant(tenant)
        with self.store.read() as unit:
            return dict(sorted(unit.retention(tenant).items()))

    def _finish_erasure(self, receipt: ErasureReceipt) -> ErasureReceipt:
        """The derived stores' steps of an erasure whose ledger part committed."""
        tenant = receipt.tenant
        receipt = run_step(receipt, "ledger_files", self._scrub_store, clock=self.clock.now)
        receipt = run_step(
            receipt, "index", lambda: self._erase_from_index(tenant), clock=self.clock.now
        )

        def drop_cached() -> Literal["erased"]:
            for erased in receipt.subjects:
                self.hot.invalidate(tenant, erased)
            return "erased"

        receipt = run_step(receipt, "hot_cache", drop_cached, clock=self.clock.now)
        with self.store.write() as unit:
            save_erasure(unit, receipt)
        return receipt

    def _scrub_store(self) -> Literal["erased"]:
        self.store.scrub()
        return "erased"

    def _erase_from_index(self, tenant: str) -> Literal["erased", "nothing_held"]:
        never_built = self._index is None and self.store.url.startswith("sqlite:///")
        if never_built and not default_index_path(self.store).exists():
            return "nothing_held"
        index = self.index
        index.sync(self.store, tenant=tenant)
        index.purge(tenant)
        return "erased"

    def erasures(self, *, tenant: str) -> tuple[ErasureReceipt, ...]:
        """The tenant's erasure receipts, oldest first."""
        _tenant(tenant)
        with self.store.read() as unit:
            return erasure_receipts(unit.erasure_bodies(tenant))

    def revoke_family(
        self, subject: str, family: str, *, tenant: str, reason: str = "revoked"
    ) -> RevocationReceipt:
        """Revoke everything a family held, and its words in the other records of the
        events that wrote into it (as :meth:`revoke`); bumps its generation."""
        _slot(tenant, subject, family)
        self.schema_for(tenant, [family]).family(family)
        check_reason(reason, self.limits)
        with self.store.write() as unit:
            log, now = ChangeLog(), self.clock.now()
            receipt = revoke_family(unit, tenant, subject, family, reason=reason, now=now, log=log)
            change = record_change(unit, tenant, log, kind="revocation", reason=reason, at=now)
            return replace(receipt, change_id=change)

    def undo(self, change_id: str, *, tenant: str, reason: str = "undone") -> UndoReceipt:
        """Undo a recorded change: a revocation or a forgotten event (the ``change_id``
        of its receipt), a correction (the id of the event that made it) or an
        extractor's rollback. What it closed is restored as new records at the
        family's next revision, over the valid time no open record holds; what it
        wrote is closed; a revocation's sources are usable again. History keeps
        both (:mod:`memledger.write.undo`). Undoing it again returns the first
        undo's receipt (``duplicate``)."""
        _tenant(tenant)
        require_id(change_id, "change_id", InvalidQueryError)
        check_reason(reason, self.limits)
        with self.store.write() as unit:
            return undo_change(unit, tenant, change_id, reason=reason, now=self.clock.now())

    def restore(self, memory_id: str, *, tenant: str, reason: str = "restored") -> UndoReceipt:
        """Undo the change that closed a memory (a revocation, a forgotten event, a
        correction, a rollback): :meth:`undo` of that change, which restores the
        memory and whatever else it closed."""
        _tenant(tenant)
        require_id(memory_id, "memory_id", InvalidQueryError)
        check_reason(reason, self.limits)
        with self.store.write() as unit:
            record = unit.get_record(tenant, memory_id)
            if record is None:
                raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {tenant!r}")
            target = change_closing(unit, record)
            return undo_change(unit, tenant, target, reason=reason, now=self.clock.now())

    def _rederiver(
        self,
        tenant: str,
        name: str,
        version: str,
        since: datetime | None,
        extractor: Extractor,
        settings: WorkerSettings | None,
    ) -> Rederive:
        """Extract what a rollback will re-derive now, outside any transaction (an LLM
        call must not hold the write lock), and return what commits it in the rollback's
        transaction. An event the rollback finds that was not extracted here (written
        since) is reported ``review``: held, nothing written."""
        worker = Worker(self.writing, extractor, settings=settings)
        with self.store.read() as unit:
            found = unit.extractor_records(tenant, name, version, since=since)
            wanted = sorted({r.source_event_id for r in found if r.proposed_kind != "episode"})
            events = [e.event for e in (unit.get_event(tenant, i) for i in wanted) if e]
        derived = {event.event_id: worker.derive(event) for event in events}
        schemas = {
            event_id: self.schema_for(tenant, [c.family for c in claims])
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
                policy=self.policy,
                now=self.clock.now(),
                rederived=True,
            )
            return receipt.outcome

        return commit

    def consolidate(
        self,
        *,
        tenant: str,
        subject: str | None = None,
        family: str | None = None,
        threshold: float | None = None,
        dry_run: bool = False,
        reason: str = "consolidated",
    ) -> ConsolidationReceipt:
        """Merge near-duplicate open records of one family and subject into one, with
        their mentions summed and their sources kept (:mod:`memledger.write.consolidate`),
        for one ``subject`` (and ``family``) or every subject of the tenant. One recorded
        change: :meth:`undo` restores the originals. ``threshold`` defaults to the write
        policy's NOOP similarity; ``dry_run`` reports the groups and writes nothing."""
        if subject is None:
            _tenant(tenant)
            if family is not None:
                raise InvalidInputError("a family is consolidated for one subject: give subject")
        else:
            _tenant(tenant, subject)
        if family is not None:
            self.schema_for(tenant, [family]).family(family)
        chosen = self.policy.thresholds.noop if threshold is None else threshold
        if isinstance(chosen, bool) or not isinstance(chosen, int | float) or not 0 < chosen <= 1:
            raise InvalidInputError(f"threshold must be in (0, 1], got {threshold!r}")
        check_reason(reason, self.limits)
        with self.store.read() as unit:
            subjects = [subject] if subject is not None else _all_subjects(unit, tenant)
            families = [
                (s, slot.family)
                for s in subjects
                for slot in unit.families(tenant, s)
                if family is None or slot.family == family
            ]
        with self.store.read() if dry_run else self.store.write() as unit:  # a dry run reads
            return consolidate_records(
                unit,
                tenant,
                families,
                threshold=float(chosen),
                similar=self.policy.similarity,
                reason=reason,
                now=self.clock.now(),
                dry_run=dry_run,
            )

    def compact(
        self,
        *,
        tenant: str,
        subject: str | None = None,
        older_than: timedelta | None = None,
        before: datetime | None = None,
        min_turns: int = MIN_TURNS,
        max_tokens: int = MAX_TOKENS,
        summarizer: Summarizer | None = None,
        dry_run: bool = False,
        reason: str = "compacted",
    ) -> CompactionReceipt:
        """Compress the old sessions of one ``subject`` (or of every subject of the
        tenant) into session summary records (:mod:`memledger.write.compact`): a session
        whose every turn is older than ``before`` (default: ``older_than``, 30 days,
        before now) and that has at least ``min_turns`` turns not yet covered gets one
        summary of at most ``max_tokens`` tokens; its episodes leave the index and stay
        in the store. One recorded change: :meth:`undo` takes it back. ``dry_run``
        reports the sessions and writes nothing."""
        if subject is None:
            _tenant(tenant)
        else:
            _tenant(tenant, subject)
        now = self.clock.now()
        if before is not None and older_than is not None:
            raise InvalidInputError("give before or older_than, not both")
        if before is None:
            age = timedelta(days=30) if older_than is None else older_than
            if not isinstance(age, timedelta) or age < timedelta(0):
                raise InvalidInputError(f"older_than must be a timedelta >= 0, got {age!r}")
            before = now - age
        else:
            before = _moment(before, "before")
            assert before is not None
        for name, count, least in (("min_turns", min_turns, 2), ("max_tokens", max_tokens, 20)):
            if (
                isinstance(count, bool)
                or not isinstance(count, int)
                or not least <= count <= 100_000
            ):
                raise InvalidInputError(
                    f"{name} must be a whole number from {least} to 100,000, got {count!r}"
                )
        check_reason(reason, self.limits)
        with self.store.read() as unit:
            subjects = [subject] if subject is not None else _all_subjects(unit, tenant)
        with self.store.read() if dry_run else self.store.write() as unit:  # a dry run reads
            return compact_sessions(
                unit,
                tenant,
                subjects,
                before=before,
                now=now,
                reason=reason,
                min_turns=min_turns,
                max_tokens=max_tokens,
                summarizer=summarizer,
                dry_run=dry_run,
            )

    def change_log(self, *, tenant: str, limit: int = 100) -> tuple[Change, ...]:
        """The tenant's recorded changes (revocations, forgotten events, undone
        corrections, rollbacks, undos), newest first."""
        _tenant(tenant)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
            raise InvalidInputError(f"limit must be an integer from 1 to 10000, got {limit!r}")
        with self.store.read() as unit:
            return tuple(unit.changes(tenant, limit=limit))

    def rollback(
        self,
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
        _tenant(tenant)
        name, version = _extractor_version(extractor)
        since = _moment(since, "since")
        check_reason(reason, self.limits)
        rederive: Rederive | None = None
        if rederive_with is not None:
            rederive = self._rederiver(tenant, name, version, since, rederive_with, settings)
        now = self.clock.now()
        with self.store.write() as unit:
            return rollback_extractor(
                unit, tenant, name, version, since=since, reason=reason, now=now, rederive=rederive
            )

    def process(
        self,
        *,
        extractor: Extractor | None = None,
        tenant: str | None = None,
        limit: int | None = None,
        settings: WorkerSettings | None = None,
    ) -> WorkReport:
        """Run due extraction jobs now, in this thread, until none is left.

        The default extractor is the offline rule-based one. ``tenant=None``
        runs every tenant's jobs (a service's worker); a tenant limits it.
        """
        if tenant is not None:
            _tenant(tenant)
        if extractor is None:
            from memledger.write.extract.rules import RuleExtractor

            extractor = RuleExtractor()
        return Worker(self.writing, extractor, settings=settings).drain(tenant=tenant, limit=limit)

    def rederive(
        self,
        subject: str,
        *,
        tenant: str,
        extractor: Extractor,
        settings: WorkerSettings | None = None,
    ) -> Rederivation:
        """What ``extractor`` would make of ``subject``'s ledger, as a dry-run diff
        against the current timelines. The canonical store is only read."""
        _tenant(tenant, subject)
        return rederive(self, extractor, tenant=tenant, subject=subject, settings=settings)

    def retry_failed(self, *, tenant: str) -> int:
        """Queue every failed job of ``tenant`` again; returns how many."""
        _tenant(tenant)
        with self.store.write() as unit:
            return unit.requeue_failed(tenant, now=self.clock.now())

    def stats(self, *, tenant: str) -> dict[str, int]:
        """Counters of the write path: rejections by reason, extraction errors, drops."""
        _tenant(tenant)
        with self.store.read() as unit:
            return dict(unit.counters(tenant))

    # -- reads ------------------------------------------------------------------------

    def get(
        self, memory_id: str, *, tenant: str, namespaces: frozenset[str] | None = None
    ) -> MemoryRecord:
        """One record by id, whatever its status (in the private ``namespaces`` only,
        :attr:`Principal.namespaces`; ``None``: any)."""
        _tenant(tenant)
        with self.store.read() as unit:
            record = unit.get_record(tenant, memory_id, namespaces=namespaces)
        if record is None:
            raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {tenant!r}")
        return record

    def current(
        self,
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
        at = _moment(valid_at, "valid_at") or self.clock.now()
        return self._view(
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
        self,
        subject: str,
        family: str,
        *,
        tenant: str,
        scope: str | None = None,
        as_of: datetime | None = None,
        min_revision: int | None = None,
    ) -> tuple[MemoryRecord, ...]:
        """Every valid-time window of a family held at ``as_of`` (default: now), in order."""
        return self._view(
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
        self,
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
        _slot(tenant, subject, family)
        self.schema_for(tenant, [family]).family(family)
        record_time = _moment(as_of, "as_of")
        floor = check_min_revision(min_revision)
        wanted = {} if floor is None else {(tenant, subject, family): floor}
        with floors.at_least(wanted), self.store.read() as unit:
            check_floor(unit.get_family(tenant, subject, family), min_revision, source=self.url)
            records = unit.family_records(tenant, subject, family, open_only=record_time is None)
            revoked = unit.revoked_sources(tenant, subject, family)
        return select(
            records,
            as_of=record_time,
            now=self.clock.now(),
            valid_at=valid_at,
            scope=scope,
            revoked_sources=revoked,
            include_revoked=include_revoked,
        )

    def history(
        self, subject: str, family: str, *, tenant: str, include_revoked: bool = False
    ) -> tuple[MemoryRecord, ...]:
        """Every record the family held, closed ones included, in record-time order.

        Revoked records, and every record from a source revoked in the family, are
        left out unless an audit asks for them with ``include_revoked=True``;
        :meth:`changes` still shows that they existed (ids and actions, no values).
        """
        _slot(tenant, subject, family)
        self.schema_for(tenant, [family]).family(family)
        with self.store.read() as unit:
            records = unit.family_records(tenant, subject, family, open_only=False)
            revoked = unit.revoked_sources(tenant, subject, family)
        now = self.clock.now()
        return tuple(
            r
            for r in records
            if include_revoked
            or (r.status != "revoked" and r.source_event_id not in revoked and not r.expired(now))
        )

    def changes(self, subject: str, family: str, *, tenant: str) -> tuple[HistoryEntry, ...]:
        """The family's append-only change log: every record written, closed or revoked."""
        _slot(tenant, subject, family)
        self.schema_for(tenant, [family]).family(family)
        with self.store.read() as unit:
            return tuple(unit.history(tenant, subject, family))

    def family_events(self, subject: str, family: str, *, tenant: str) -> tuple[str, ...]:
        """The ids of the events committed into a family, oldest first."""
        _slot(tenant, subject, family)
        self.schema_for(tenant, [family]).family(family)
        with self.store.read() as unit:
            return tuple(unit.family_events(tenant, subject, family))

    def families(self, subject: str, *, tenant: str) -> tuple[FamilySlot, ...]:
        """The family slots of a subject, with their revisions and generations."""
        _tenant(tenant, subject)
        with self.store.read() as unit:
            return tuple(unit.families(tenant, subject))

    def subjects(
        self,
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
        _tenant(tenant)
        if not isinstance(prefix, str):
            raise InvalidQueryError(f"prefix must be a string, got {prefix!r}")
        if prefix:
            require_id(prefix, "prefix", InvalidQueryError)
        if after is not None:
            require_id(after, "after", InvalidQueryError)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidQueryError(f"limit must be a whole number 1-1000, got {limit!r}")
        with self.store.read() as unit:
            found = unit.subjects(
                tenant, prefix=prefix, after=after, limit=limit, namespaces=namespaces
            )
            return tuple(found)

    def event(
        self, event_id: str, *, tenant: str, namespaces: frozenset[str] | None = None
    ) -> SourceEvent:
        """A source event from the ledger (of the private ``namespaces`` only; ``None``: any)."""
        _tenant(tenant)
        with self.store.read() as unit:
            stored = unit.get_event(tenant, event_id, namespaces=namespaces)
        if stored is None:
            raise EventNotFoundError(f"no event {event_id!r} for tenant {tenant!r}")
        return stored.event

    def outcome(self, event_id: str, *, tenant: str) -> Receipt | None:
        """The receipt stored for an event once it was decided (``None``: not yet, or no
        such event)."""
        _tenant(tenant)
        require_id(event_id, "event_id", InvalidQueryError)
        with self.store.read() as unit:
            return unit.get_outcome(tenant, event_id)

    def job(self, job_id: str, *, tenant: str) -> Job | None:
        """An extraction job of ``tenant`` (``None``: no such job)."""
        _tenant(tenant)
        require_id(job_id, "job_id", InvalidQueryError)
        with self.store.read() as unit:
            return unit.get_job(tenant, job_id)

    def reviews(self, *, tenant: str, open_only: bool = True) -> tuple[ReviewItem, ...]:
        """Events whose batch waits for review; they changed nothing."""
        _tenant(tenant)
        with self.store.read() as unit:
            return tuple(unit.reviews(tenant, open_only=open_only))

    def possible_updates(
        self, subject: str, *, tenant: str, valid_at: datetime | None = None
    ) -> tuple[PossibleUpdate, ...]:
        """Later turns that may change ``subject``'s current values (at ``valid_at``,
        default now) where no claim did: updates extraction may have missed, for an
        operator to review (:mod:`memledger.read.missed`). Read-only."""
        _tenant(tenant, subject)
        at = _moment(valid_at, "valid_at") or self.clock.now()
        with self.store.read() as unit:
            found = possible_updates(unit, tenant, subject, now=self.clock.now(), valid_at=at)
        return tuple(found)

    def jobs(self, *, tenant: str, open_only: bool = True) -> tuple[Job, ...]:
        """Extraction jobs, oldest first: those not done yet (queued or failed), or all."""
        _tenant(tenant)
        with self.store.read() as unit:
            return tuple(unit.jobs(tenant, open_only=open_only))

    # -- the service: keys, the tenant's families, the review queue -------------------------

    def create_key(
        self,
        tenant: str,
        actor: str,
        *,
        principal: PrincipalKind = "user",
        role: KeyRole = "write",
        grants: Iterable[Grant | str] = (),
        label: str = "",
        reads: Iterable[str] = (),
    ) -> tuple[ApiKey, str]:
        """A new API key of ``tenant`` for ``actor``, and its token ``mlk_<id>.<secret>``.

        The token is returned once and never stored (only its hash is): keep it. Whoever
        presents it acts as ``actor`` of ``tenant``, authenticated, with ``grants``
        (:class:`Grant` or ``"family[:scope]"``; the families must exist for the tenant)
        and ``role`` (``read``, ``write`` or ``admin``). ``principal`` says whether the
        actor is a ``user``, an ``agent`` or a ``service``. ``reads`` names other agents'
        namespaces (``"agent:<id>"``) the key may read besides the shared one and its own
        (:mod:`memledger.domain.keys`).
        """
        _tenant(tenant)
        schema = self.families_of(tenant)  # before the write: it reads the store
        with self.store.write() as unit:
            return _keys.create_key(
                unit,
                tenant,
                actor,
                principal=principal,
                role=role,
                grants=grants,
                label=label,
                schema=schema,
                now=self.clock.now(),
                reads=reads,
            )

    def keys(self, tenant: str) -> tuple[ApiKey, ...]:
        """The tenant's API keys (revoked ones included), oldest first; never their tokens."""
        _tenant(tenant)
        with self.store.read() as unit:
            return tuple(unit.keys(tenant))

    def revoke_key(self, tenant: str, key_id: str) -> ApiKey:
        """Revoke a key: it authenticates nothing from now on. Revoking it again is a no-op."""
        _tenant(tenant)
        require_id(key_id, "key_id", InvalidQueryError)
        with self.store.write() as unit:
            return _keys.revoke_key(unit, tenant, key_id, now=self.clock.now())

    def authenticate(self, token: str, *, touch: bool = True) -> Principal:
        """The :class:`Principal` an API key token stands for: its tenant, and its actor,
        authenticated, with its grants and role. An unknown, malformed or revoked key
        raises :class:`AuthenticationError`, with the same message for all three.
        ``touch`` records the use (``last_used_at``, at most once a minute)."""
        return _keys.authenticate(self.store, token, now=self.clock.now(), touch=touch)

    def ingest_as(
        self,
        principal: Principal,
        event: SourceEvent,
        claims: Sequence[Claim] | None = None,
        *,
        complete: bool = True,
        extractor: ExtractorInfo = CALLER,
    ) -> Receipt:
        """:meth:`ingest` on behalf of an authenticated key: the event's actor becomes the
        key's (authenticated, with the key's grants), whatever the event said.

        Refused with :class:`PermissionDeniedError`, writing nothing: a read-only key;
        an event naming another tenant than the key's; a setting channel (``system``,
        ``account_service``) from a key that is not a ``service``'s; an event or claim
        about another agent's private namespace (``agent:<id>...``).
        """
        if not isinstance(principal, Principal):
            raise InvalidInputError(f"expected a Principal, got {type(principal).__name__}")
        if not isinstance(event, SourceEvent):
            raise InvalidEventError(f"expected a SourceEvent, got {type(event).__name__}")
        who = f"API key {principal.key_id!r}"
        if not principal.may_write:
            raise PermissionDeniedError(f"{who} is read-only: it cannot write")
        if event.tenant != principal.tenant:
            raise PermissionDeniedError(
                f"{who} acts for tenant {principal.tenant!r}; the event names tenant "
                f"{event.tenant!r}"
            )
        if event.channel in self.policy.setting_channels and principal.kind != "service":
            raise PermissionDeniedError(
                f"{who} is a {principal.kind}'s; only a service's key may send events on "
                f"the {event.channel!r} channel, whose claims are business settings"
            )
        for subject in {event.subject, *(c.subject for c in claims or () if c.subject)}:
            principal.require_write_to(subject)
        event = replace(event, actor=principal.actor)
        return self.ingest(event, claims, complete=complete, extractor=extractor)

    def schema_for(self, tenant: str, families: Iterable[str] = ()) -> Schema:
        """The schema ``tenant`` writes under, from a cache that is reloaded from the
        store when it lacks one of ``families`` (see :mod:`memledger._schemas`)."""
        return self._schemas.covering(tenant, families)

    def families_of(self, tenant: str) -> Schema:
        """The tenant's schema as the store holds it now: :attr:`schema` (the code's,
        for every tenant) and the families registered for the tenant."""
        return self._schemas.of(tenant)

    def register_family(self, tenant: str, family: Family) -> Family:
        """Register a claim family for ``tenant`` only, in the store: its events may then
        carry claims of it, in every process. The same definition again is a no-op
        (returns the family as it stands); another definition of an existing name
        (other kinds or ``own_say``) is a :class:`ConflictError`."""
        _tenant(tenant)
        with self.store.write() as unit:
            found = self._schemas.register(unit, tenant, family, at=self.clock.now())
        self._schemas.forget_cached(tenant)
        return found

    def resolve_review(
        self,
        tenant: str,
        review_id: str,
        *,
        decision: ReviewDecision,
        by: str,
        reason: str,
    ) -> ReviewResolution:
        """Accept or reject a review item, recording who (``by``), why and when.

        ``accept`` commits the held batch as if the order rule had said "apply", with
        every other check as usual; a batch that contradicts itself cannot be accepted
        (:class:`ConflictError`). ``reject`` changes nothing but the item. The same
        decision again is acknowledged (``duplicate``), the other is a
        :class:`ConflictError`. The rules in full: :mod:`memledger.write.review`.
        """
        _tenant(tenant)
        require_id(review_id, "review_id", InvalidQueryError)
        if decision not in ("accept", "reject"):
            raise InvalidInputError(f"decision must be 'accept' or 'reject', got {decision!r}")
        require_id(by, "by (who decided)", InvalidInputError)
        check_reason(reason, self.limits)
        schema = self.families_of(tenant)
        with self.store.write() as unit:
            return resolve_review(
                unit,
                tenant,
                review_id,
                decision=decision,
                by=by,
                reason=reason,
                schema=schema,
                policy=self.policy,
                limits=self.limits,
                now=self.clock.now(),
            )


QUOTA_SECONDS = 5.0
"""How long a process keeps a tenant's quotas before reading them again."""
MINUTE = timedelta(minutes=1)


def _check_ingest(
    unit: UnitOfWork, event: SourceEvent, quotas: Quotas, *, queued: bool, now: datetime
) -> None:
    """Refuse a new event of a tenant past ``max_records``, or past ``jobs_per_minute``
    when it queues a job; inside the write transaction, so nothing is written."""
    tenant = event.tenant
    if quotas.max_records is not None and unit.open_records_count(tenant) >= quotas.max_records:
        raise QuotaExceededError(
            f"tenant {tenant!r} holds {quotas.max_records:,} open records, its quota"
            " (max_records); expire, erase or close records to make room"
        )
    limit = quotas.jobs_per_minute
    recent = 0 if not queued or limit is None else unit.jobs_queued_since(tenant, now - MINUTE)
    if limit is not None and recent >= limit:
        raise QuotaExceededError(
            f"tenant {tenant!r} queued {limit:,} extraction jobs in the last minute, its"
            " quota (jobs_per_minute); retry in up to 60 s",
            retry_after=60.0,
        )


def _tenant(tenant: object, subject: object = None) -> None:
    require_id(tenant, "tenant", InvalidQueryError)
    if subject is not None:
        require_id(subject, "subject", InvalidQueryError)


def _slot(tenant: object, subject: object, family: object) -> None:
    """A family slot's address: all three are required identifiers."""
    require_id(tenant, "tenant", InvalidQueryError)
    require_id(subject, "subject", InvalidQueryError)
    require_id(family, "family", InvalidQueryError)


def _moment(value: datetime | None, what: str) -> datetime | None:
    return None if value is None else require_aware(value, what, InvalidQueryError)


def _extractor_version(text: object) -> tuple[str, str]:
    """``"NAME@VERSION"`` split; a clear error for anything else."""
    if not isinstance(text, str) or text.count("@") != 1:
        raise InvalidInputError(f"extractor must be NAME@VERSION (rules@1), got {text!r}")
    name, version = text.split("@")
    if not name.strip() or not version.strip():
        raise InvalidInputError(f"extractor must be NAME@VERSION (rules@1), got {text!r}")
    return name, version


def _all_subjects(unit: UnitOfWork, tenant: str) -> list[str]:
    found: list[str] = []
    after: str | None = None
    while page := unit.subjects(tenant, after=after, limit=500):
        found.extend(s.subject for s in page)
        after = page[-1].subject
    return found
