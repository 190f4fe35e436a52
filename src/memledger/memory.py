"""The :class:`Memory` facade: what users hold.

Every read takes the tenant as a keyword and filters by it before anything
else; writes take it from the event. Each call is one transaction.

The facade holds the ports (the store, the clock, the derived index, the access log,
the read counters, the hot tier, the tenants' schemas and quotas) and hands them, as
:attr:`Memory.reading` and :attr:`Memory.writing`, to the module that owns each
behaviour; most of its methods are those modules' functions
(:func:`memledger._through.through`):

* the short path (add messages, search, list, delete, a memory's history):
  :mod:`memledger.write.messages`, :mod:`memledger.read.memories`;
* the ledger as it is: :mod:`memledger.read.ledger`;
* recall and context packets: :mod:`memledger.read.recall`,
  :mod:`memledger.read.context`, the hot tier :mod:`memledger.read.hot`;
* writes: :mod:`memledger.write.ingest`, :mod:`memledger.write.worker`;
* recorded changes (revoke, forget, undo, restore, rollback):
  :mod:`memledger.write.changes`; erasure and retention: :mod:`memledger.write.erase`;
  upkeep: :mod:`memledger.write.consolidate`, :mod:`memledger.write.compact`;
* the service's keys, families and review queue: :mod:`memledger._keys`,
  :mod:`memledger._schemas`, :mod:`memledger.write.review`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, overload

from memledger import _keys
from memledger._quotas import QUOTA_SECONDS, TenantQuotas
from memledger._schemas import TenantSchemas
from memledger._through import through
from memledger.domain.addresses import check_tenant
from memledger.domain.budget import Budget
from memledger.domain.families import Family, Schema
from memledger.domain.items import MemoryChange, MemoryItem
from memledger.domain.keys import ApiKey, KeyRole, Principal, PrincipalKind
from memledger.domain.limits import Limits, check_reason
from memledger.domain.policy import WritePolicy
from memledger.domain.quotas import Quotas
from memledger.domain.records import (
    Grant,
    MemoryRecord,
    ReviewDecision,
    ReviewResolution,
    require_id,
)
from memledger.errors import InvalidInputError, InvalidQueryError
from memledger.freshness import Freshness, ReadStats, freshness
from memledger.gate import Check, GateDecision, decide
from memledger.index.backends import Index, open_index
from memledger.index.catchup import CatchUp, catch_up
from memledger.index.derived import Progress, default_index_path
from memledger.index.embedders import default_embedder
from memledger.ports import Clock, Extractor, Store, SystemClock
from memledger.read import ledger, memories
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
from memledger.read.ports import ReadPorts
from memledger.read.procedures import DependencyChecker
from memledger.read.recall import RecallResult, RecallSettings, check_query, recall
from memledger.read.trace import Replay, replay
from memledger.store import open_store
from memledger.write import changes as changing
from memledger.write import compact as compacting
from memledger.write import consolidate as consolidating
from memledger.write import erase as erasing
from memledger.write import ingest as ingesting
from memledger.write import messages
from memledger.write import worker as working
from memledger.write.ports import WritePorts
from memledger.write.rederive import Rederivation, rederive
from memledger.write.review import resolve_review
from memledger.write.worker import WorkerSettings

if TYPE_CHECKING:
    from memledger.ports import Tokenizer
    from memledger.read.rewrite import QueryRewriter
    from memledger.session import SessionView


__all__ = ["QUOTA_SECONDS", "Memory"]


class Memory:
    """A memory ledger over one canonical store: a :class:`~memledger.ports.Store`, or a
    store URL as :meth:`open` takes it (``None``: ``./memledger.db``), so that
    ``Memory()`` alone is a memory in the current folder."""

    def __init__(
        self,
        store: Store | str | Path | None = None,
        *,
        clock: Clock | None = None,
        schema: Schema | None = None,
        policy: WritePolicy | None = None,
        index: Index | None = None,
        limits: Limits | None = None,
        hot: HotTier | None = None,
        catch_up: CatchUp | None = None,
    ) -> None:
        if store is None or isinstance(store, str | Path):
            store = open_store(store)
        self.store: Store = store
        self.clock: Clock = clock or SystemClock()
        self.schema = schema or Schema.default()
        self.policy = policy or WritePolicy()
        self._index = index
        self._index_lock = threading.Lock()
        self.read_stats = ReadStats()
        self.accesses = AccessLog()
        """Memories this process's reads handed out, not yet written
        (:mod:`memledger.read.access`)."""
        self._tenant_quotas = TenantQuotas(store, self.clock)
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
        """What the write path is handed: the store, the clock, the write policy and
        limits, the tenant's schema and quotas, the derived index (opened on first use),
        expiry and the derived stores' parts of an erasure
        (:class:`~memledger.write.ports.WritePorts`)."""
        return WritePorts(
            store=self.store,
            clock=self.clock,
            policy=self.policy,
            limits=self.limits,
            schema_for=self.schema_for,
            index=lambda: self.index,
            expire=lambda tenant: self.expire(tenant=tenant),
            quotas=self._tenant_quotas.get,
            purge_index=self._purge_index,
            invalidate=self.hot.invalidate,
        )

    @property
    def reading(self) -> ReadPorts:
        """What the read path is handed: the store, the clock, the access log, the
        read counters and the tenants' schemas of this object
        (:class:`~memledger.read.ports.ReadPorts`)."""
        return ReadPorts(
            store=self.store,
            clock=self.clock,
            accesses=self.accesses,
            stats=self.read_stats,
            schema_for=self.schema_for,
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

    @property
    def opened_index(self) -> Index | None:
        """The index if this handle has opened it (:attr:`index` opens it)."""
        return self._index

    def set_quotas(self, quotas: Quotas | None, *, tenant: str) -> Quotas:
        """Set the tenant's quotas (``None``: no quotas); see
        :mod:`memledger.domain.quotas`. Other processes see them within
        :data:`~memledger._quotas.QUOTA_SECONDS` seconds."""
        return self._tenant_quotas.set(tenant, quotas)

    def quotas(self, *, tenant: str) -> Quotas:
        """The tenant's quotas (read at most every
        :data:`~memledger._quotas.QUOTA_SECONDS` seconds)."""
        return self._tenant_quotas.get(tenant)

    def freshness(self, *, tenant: str | None = None) -> Freshness:
        """How fresh memory is now: extraction lag and backlog, index lag, this process's
        reads, erasure times (:mod:`memledger.freshness`)."""
        if tenant is not None:
            check_tenant(tenant)
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

    # -- the short path ------------------------------------------------------------------

    add = through("writing", messages.add)
    add_as = through("writing", messages.add_as)
    delete = through("writing", messages.delete)
    get_all = through("reading", memories.get_all)

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        k: int = 10,
        tenant: str = "default",
        settings: RecallSettings | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> tuple[MemoryItem, ...]:
        """The ``k`` memories nearest to ``query`` with their scores, of ``user_id`` (or
        ``agent_id``; neither: the tenant's) (:func:`memledger.read.memories.search`)."""
        return memories.search(
            self.recall,
            query,
            user_id=user_id,
            agent_id=agent_id,
            k=k,
            tenant=tenant,
            settings=settings,
            visible=visible,
        )

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
        self._tenant_quotas.take_read(tenant)
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
        self._tenant_quotas.check_packet(tenant, total)
        self._tenant_quotas.take_read(tenant)
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
        check_tenant(tenant)
        return self.index.rebuild_tenant(self.store, tenant, progress=progress)

    # -- writes -----------------------------------------------------------------------

    ingest = through("writing", ingesting.ingest)
    commit_job = through("writing", ingesting.commit_job)
    ingest_as = through("writing", ingesting.ingest_as)
    process = through("writing", working.process)
    retry_failed = through("writing", working.retry_failed)

    # -- recorded changes, erasure, upkeep -----------------------------------------------

    revoke = through("writing", changing.revoke)
    revoke_as = through("writing", changing.revoke_as)
    forget = through("writing", changing.forget)
    revoke_family = through("writing", changing.revoke_family)
    undo = through("writing", changing.undo)
    restore = through("writing", changing.restore)
    rollback = through("writing", changing.rollback)
    erase = through("writing", erasing.erase)
    expire = through("writing", erasing.expire)
    erasures = through("writing", erasing.erasures)
    set_retention = through("writing", erasing.set_retention)
    consolidate = through("writing", consolidating.run)
    compact = through("writing", compacting.run)

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
        check_tenant(tenant, subject)
        return rederive(
            self.writing,
            extractor,
            schema=self.families_of(tenant),
            tenant=tenant,
            subject=subject,
            settings=settings,
        )

    def _purge_index(self, tenant: str) -> Literal["erased", "nothing_held"]:
        """An erasure's index step: the deletions applied and purged; nothing to do for
        a SQLite store whose index was never built."""
        never_built = self._index is None and self.store.url.startswith("sqlite:///")
        if never_built and not default_index_path(self.store).exists():
            return "nothing_held"
        index = self.index
        index.sync(self.store, tenant=tenant)
        index.purge(tenant)
        return "erased"

    # -- reads of the ledger as it is -----------------------------------------------------

    get = through("reading", ledger.get)
    current = through("reading", ledger.current)
    timeline = through("reading", ledger.timeline)

    @overload
    def history(
        self, memory_id: str, /, *, tenant: str = "default"
    ) -> tuple[MemoryChange, ...]: ...
    @overload
    def history(
        self, subject: str, family: str, *, tenant: str, include_revoked: bool = False
    ) -> tuple[MemoryRecord, ...]: ...
    def history(
        self,
        subject: str,
        family: str | None = None,
        *,
        tenant: str = "default",
        include_revoked: bool = False,
    ) -> tuple[MemoryChange, ...] | tuple[MemoryRecord, ...]:
        """``history(memory_id)``: how one memory came to be and what became of it
        (:func:`memledger.read.memories.memory_history`). ``history(subject, family,
        tenant=...)``: every record the family held (:func:`memledger.read.ledger.history`)."""
        if family is None:
            if include_revoked:
                raise InvalidQueryError("include_revoked needs a subject and a family")
            return memories.memory_history(self.reading, subject, tenant=tenant)
        return ledger.history(
            self.reading, subject, family, tenant=tenant, include_revoked=include_revoked
        )

    changes = through("reading", ledger.changes)
    family_events = through("reading", ledger.family_events)
    families = through("reading", ledger.families)
    subjects = through("reading", ledger.subjects)
    event = through("reading", ledger.event)
    outcome = through("reading", ledger.outcome)
    job = through("reading", ledger.job)
    jobs = through("reading", ledger.jobs)
    reviews = through("reading", ledger.reviews)
    possible_updates = through("reading", ledger.possible_updates)
    change_log = through("reading", ledger.change_log)
    retention = through("reading", ledger.retention)
    stats = through("reading", ledger.counters)

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
        check_tenant(tenant)
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
        check_tenant(tenant)
        with self.store.read() as unit:
            return tuple(unit.keys(tenant))

    def revoke_key(self, tenant: str, key_id: str) -> ApiKey:
        """Revoke a key: it authenticates nothing from now on. Revoking it again is a no-op."""
        check_tenant(tenant)
        require_id(key_id, "key_id", InvalidQueryError)
        with self.store.write() as unit:
            return _keys.revoke_key(unit, tenant, key_id, now=self.clock.now())

    def authenticate(self, token: str, *, touch: bool = True) -> Principal:
        """The :class:`Principal` an API key token stands for: its tenant, and its actor,
        authenticated, with its grants and role. An unknown, malformed or revoked key
        raises :class:`AuthenticationError`, with the same message for all three.
        ``touch`` records the use (``last_used_at``, at most once a minute)."""
        return _keys.authenticate(self.store, token, now=self.clock.now(), touch=touch)

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
        check_tenant(tenant)
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
        check_tenant(tenant)
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
