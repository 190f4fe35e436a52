"""recall(query): candidates from the derived index, rechecked against the canonical store.

:func:`recall` runs seven stages, each a function of its own module:

1. **Understand the query** (:func:`memledger.read.understand.understand`, no LLM
   needed): the people it names (matched against the speakers and subjects the index
   knows, so "Mel" finds Melanie), the time it asks about ("in July 2023", "last May",
   "two weeks ago": :mod:`memledger.read.when`), its shape
   (:class:`~memledger.read.understand.Shape`), and, with a rewriter
   (:mod:`memledger.read.rewrite`), alternative phrasings. A failing rewriter is noted
   and the original query used.
2. **Candidates** (:func:`memledger.read.candidates.gather`), filtered by tenant (and
   subject) inside every source: BM25 over entries and over each turn's window, the
   nearest vectors, the standing instructions in scope; fused linearly. Without a
   working embedder recall runs lexical only and says so (``mode="lexical"``,
   ``degraded`` gives the reason).
3. **Context** (:func:`memledger.read.neighbours.lend`): a turn near strongly matching
   turns of the same thread gains a share of their score, the neighbours joining as
   candidates. Only candidates that pass the recheck (4) lend their score.
4. **Canonical recheck** (:class:`memledger.read.recheck.Checker`): every candidate is
   read back from the store in one query and excluded with a typed reason when it may
   not be recalled; what is returned is always the canonical record.
5. **Overlay** (:func:`memledger.read.recheck.overlay`): the current values of the
   families the query names join even when the index has not caught up with them; with
   ``min_revision`` (which needs ``subject``) a store below the floor refuses.
6. **Rank** (:func:`memledger.read.rank.decay`, :func:`memledger.read.rank.rank`):
   fused relevance x person and time boosts x time weight x confidence x trust; old
   memories are down-weighted, never dropped; what is true now before what was
   (:func:`memledger.read.rank.current_first`, :mod:`memledger.read.outdated`,
   :mod:`memledger.read.changes`); a question across sessions spreads its top k
   (:func:`memledger.read.rank.spread`).
7. **Abstain** (:func:`memledger.read.abstain.choose`): only memories relevant by an
   absolute measure are handed back; with nothing relevant the answer is "no relevant
   memory", not the nearest thing.

How each stage weighs what it finds is :class:`~memledger.read.recall_settings.RecallSettings`;
what comes back is :class:`~memledger.read.results.RecallResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from memledger.deadline import check as check_budget
from memledger.domain.addresses import check_tenant
from memledger.domain.gates import content_words
from memledger.domain.records import MemoryRecord, require_aware, require_text
from memledger.domain.scoring import down_weight
from memledger.errors import InvalidQueryError
from memledger.index.backends import Index
from memledger.read import abstain, candidates, neighbours, rank, recheck
from memledger.read.access import flush_quietly
from memledger.read.changes import DEPTH, changes, reorder
from memledger.read.outdated import replaced
from memledger.read.ports import read_ports
from memledger.read.recall_settings import DEFAULT_HALF_LIVES, DEFAULT_SETTINGS, RecallSettings
from memledger.read.results import Excluded, Recalled, RecallExclusion, RecallResult, Source
from memledger.read.understand import families_named, name_words, understand
from memledger.read.views import check_min_revision
from memledger.store import floors

if TYPE_CHECKING:
    from memledger.read.ports import HasReading, ReadPorts
    from memledger.read.rewrite import QueryRewriter

__all__ = [
    "DEFAULT_HALF_LIVES",
    "MAX_K",
    "MAX_QUERY",
    "Excluded",
    "RecallExclusion",
    "RecallResult",
    "RecallSettings",
    "Recalled",
    "Source",
    "check_query",
    "recall",
    "session_of",
    "time_weight",
]

MAX_QUERY = 4000
MAX_K = 100

session_of = rank.session_of

time_weight = down_weight
"""``0.3 + 0.7 * exp(-age / tau)`` (:func:`memledger.domain.scoring.down_weight`)."""


def check_query(
    query: object,
    tenant: object,
    subject: object,
    k: object,
    *,
    min_revision: object = None,
    settings: object = None,
) -> str:
    """``query`` if a recall with these arguments is possible, else InvalidQueryError."""
    check_tenant(tenant, subject)
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query must be a non-empty string")
    require_text(query, "query", InvalidQueryError)
    check_min_revision(min_revision)
    if settings is not None and not isinstance(settings, RecallSettings):
        raise InvalidQueryError(f"settings must be a RecallSettings, got {type(settings).__name__}")
    if len(query) > MAX_QUERY:
        raise InvalidQueryError(f"query has {len(query)} characters; at most {MAX_QUERY}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidQueryError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    return query


def recall(
    ports: ReadPorts | HasReading,
    index: Index,
    query: str,
    *,
    tenant: str,
    subject: str | None = None,
    k: int = 10,
    valid_at: datetime | None = None,
    min_revision: int | None = None,
    settings: RecallSettings | None = None,
    rewriter: QueryRewriter | None = None,
    visible: Callable[[str], bool] | None = None,
    touch: bool = True,
) -> RecallResult:
    """The ``k`` most useful memories for ``query``; see the module docstring.
    ``visible`` (a subject -> bool test, e.g. :meth:`Principal.may_read`) keeps out, at
    the canonical recheck, every record of a subject the caller may not read.
    ``touch=False`` does not count the result as read (:mod:`memledger.read.access`):
    for a look ahead, or a packet that notes only what it places. ``ports`` is the
    facade's :attr:`~memledger.Memory.reading`."""
    ports = read_ports(ports)
    check_query(query, tenant, subject, k)
    if min_revision is not None and subject is None:
        raise InvalidQueryError(
            "min_revision needs a subject: revision tokens belong to a subject's family"
        )
    if valid_at is not None:
        require_aware(valid_at, "valid_at", InvalidQueryError)
    tuning = settings or DEFAULT_SETTINGS
    now = ports.clock.now()  # record time
    at = valid_at or now  # valid time
    subjects = None if subject is None else [subject]
    # 1. who a query can name (a subject's read: its own people), how far the feed has come
    glance = index.glance(tenant, subject=subject)
    names = glance.known.visible_to(visible)  # a private namespace's names: its readers
    understood = understand(query, names=names, at=at, rewriter=rewriter)
    # 2. candidates from each source, fused
    found = candidates.gather(
        index, query, understood, glance, tenant=tenant, subjects=subjects, tuning=tuning
    )
    sources = found.sources
    base = found.fused(tuning)

    excluded: list[Excluded] = []
    kept: dict[str, MemoryRecord] = {}
    check_budget("recall")
    fused = dict(base)
    floor = check_min_revision(min_revision)
    wanted = (
        {}
        if floor is None or subject is None
        else {(tenant, subject, f): floor for f in families_named(query)}
    )
    with floors.at_least(wanted), ports.store.read() as unit:
        # 4. canonical recheck: only what passes it can lend its score to a neighbour
        checker = recheck.Checker(
            unit,
            tenant=tenant,
            subject=subject,
            at=at,
            now=now,
            indexed=found.indexed,
            visible=visible,
        )
        checker.admit(list(sources), kept, excluded)
        # 3. context: neighbouring turns share their anchors' scores
        near = neighbours.lend(
            index,
            tenant=tenant,
            kept=kept,
            base=base,
            fused=fused,
            sources=sources,
            shape=understood.shape,
            tuning=tuning,
        )
        checker.admit(
            [m for m in sources if m not in kept and m not in checker.seen], kept, excluded
        )
        # 5. overlay the current values of the families the query names
        if subject is not None:
            recheck.overlay(
                unit,
                query,
                tenant=tenant,
                subject=subject,
                at=at,
                now=now,
                min_revision=min_revision,
                source=ports.store.url,
                kept=kept,
                sources=sources,
            )
        # turns whose statements were overtaken since, read in the same snapshot: the
        # turns most likely to reach the top (by fused score), not every candidate
        turns = sorted(
            (r for r in kept.values() if r.kind == "episode"),
            key=lambda r: (-fused.get(r.memory_id, 0.0), r.memory_id),
        )[: 3 * k]
        overtaken = replaced(unit, tenant, turns, at=at, now=now)
        # when each was last stated again or read (as of ``at``): the clock of decay
        touched = dict(unit.last_touched(tenant, list(kept), before=at))
        index_lag = recheck.lag(unit, tenant, after=glance.cursor, visible=visible)

    for memory_id, last in ports.accesses.pending(tenant, kept, before=at).items():
        touched[memory_id] = max(last, touched.get(memory_id, last))
    # 6. rank
    decayed = rank.decay(kept, touched, at=at, tuning=tuning, excluded=excluded)
    speakers = index.speakers(tenant, kept) if len(understood.people) == 1 else {}
    ranked = rank.rank(
        kept,
        fused,
        found.lexical,
        sources,
        decayed,
        understood,
        speakers=speakers,
        at=at,
        tuning=tuning,
    )
    ranked = rank.current_first(ranked, sources, overtaken, tuning=tuning)
    # a later turn that changes a value: above what it changes, even with no claim
    about = frozenset(content_words(query)) - name_words(understood.people) - understood.shape.words
    best = [m for _, m, _ in ranked[:DEPTH]]
    ranked, possibly = reorder(ranked, changes([kept[m] for m in best], about))
    # 7. abstain: only what is relevant by an absolute measure
    judge = abstain.Relevance(
        understood.queries,
        ignore=name_words(understood.people) | understood.shape.words,
        kept=kept,
        adjacent=neighbours.adjacency(near),
        sources=sources,
        cosines=found.cosines if candidates.semantic(index) else {},
    )
    shape = understood.shape
    if shape.across_sessions and tuning.session_spread < 1.0:
        ranked = rank.spread(
            ranked, kept, k=k, spread=tuning.session_spread, relevant=judge, floor=tuning.floor
        )
    chosen = abstain.choose(ranked, judge, kept=kept, sources=sources, k=k, floor=tuning.floor)
    chosen = abstain.with_standing(
        chosen, ranked, found.in_scope, kept=kept, sources=sources, k=k, rank=tuning.standing_rank
    )
    unread = [r.record.memory_id for r in chosen if r.record.memory_id not in near]
    items = abstain.present(
        chosen,
        query,
        beside={**near, **index.neighbours(tenant, unread, window=1)},
        spans=found.spans,
        overtaken=overtaken,
        possibly=possibly,
        confidences=decayed.confidences,
        words=tuning.passage_words,
    )
    result = RecallResult(
        query=query,
        items=items,
        excluded=tuple(excluded),
        abstained=not items,
        index_lag=index_lag,
        mode="hybrid" if found.used_vectors else "lexical",
        degraded=found.degraded,
        understood=understood,
        order="time" if shape.ordered else "relevance",
    )
    ports.stats.count(result)
    if touch:  # what a read hands out is touched: it keeps its weight (decay's clock)
        ports.accesses.note(tenant, (r.record.memory_id for r in items), at=now)
        flush_quietly(ports.accesses, ports.store, due_only=True)
    return result
