"""``memledger bench recall``: read-path latency on synthetic but realistic memories.

For each size N one fresh SQLite store is filled through the whole write path
(``ingest``, then :meth:`Memory.process` with the rule extractor): the measured
tenant holds about N open memory records over N/50 subjects, and three other
tenants N/10 each over the same subject ids, so tenant filtering is part of
every read. A subject is a chat stream: six turns stating two or three facts
each (home city, employer and role, four likes or dislikes, two tools, two
relatives, two habits, two plans, half of them a digest preference, a third
moving city later) among everyday turns that become episodes. Records are
counted from the outbox: open records, what the index holds. The store is fed
on tmpfs when there is room (a commit's fsync would otherwise dominate the
run) and copied to the scratch folder, where it is indexed and read.

Each embedder mode then gets its own derived index over the same store,
built and timed with :meth:`DerivedIndex.sync` (on PostgreSQL, ``--store``, a
:class:`~memledger.index.postgres.PostgresIndex` per mode, in the store's
database): ``none`` is lexical only
(BM25), ``hashing`` adds exact vector search with the plain
:class:`HashingEmbedder` (no cache). Questions are drawn from the data, asked
for one subject as an agent would (``recall(..., subject=, sync=False)``):
four in five about a fact the subject stated (a hit when the fact is among
the ten returned), one in five about something never said (it should
abstain). Exact slot reads are ``Memory.current(subject, family)``. Twenty
warm-up queries run first; each call is timed with ``perf_counter_ns``.
Nothing is asserted about timings.

Then the same questions are asked tenant-wide (``recall`` without ``subject``)
with exact vector search, and with the ``hashing`` embedder again through the
approximate index (:mod:`memledger.index._ann`; measured at every size, though
by default it serves only tenants of 20,000 rows or more): its
build time, recall latency, the vector search alone on both paths, and its top
10 against the exact top 10, as ``ann_overlap`` (the share of its hits at
least as near as the exact tenth: equal cosines count alike) and
``ann_overlap_ids`` (the share of the exact ids it returned).

The population is :mod:`memledger.eval.recall_population`, the report
:mod:`memledger.eval.recall_report`.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from memledger._openai_http import redact_url
from memledger.errors import InvalidInputError
from memledger.eval import _scratch
from memledger.eval.machine import describe
from memledger.eval.recall_population import (
    MEASURED,
    OTHERS,
    SLOT_FAMILIES,
    WARMUP,
    K,
    Question,
    Subject,
    events,
    population,
)
from memledger.eval.recall_report import (
    EMBEDDER_MODES,
    EmbedderMode,
    FeedMode,
    Growth,
    Percentiles,
    Progress,
    Report,
    Result,
    StoreKind,
    growth,
    json_body,
    markdown,
    percentiles,
    tenant_markdown,
)
from memledger.index import _ann
from memledger.index.backends import Index
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import Embedder, HashingEmbedder
from memledger.index.lexical import entry_text
from memledger.memory import Memory
from memledger.ports import Store
from memledger.store import open_store
from memledger.store.copy import copy_store
from memledger.store.sqlite import SQLiteStore
from memledger.write.extract.rules import RuleExtractor

__all__ = [
    "EMBEDDER_MODES",
    "EmbedderMode",
    "FeedMode",
    "Growth",
    "K",
    "Percentiles",
    "Progress",
    "Question",
    "Report",
    "Result",
    "StoreKind",
    "build_store",
    "growth",
    "json_body",
    "markdown",
    "open_records",
    "percentiles",
    "population",
    "run",
    "run_size",
    "tenant_markdown",
]


# -- the run --------------------------------------------------------------------------------


def _say(progress: Progress | None, phase: str, done: int, total: int) -> None:
    if progress is not None:
        progress(phase, done, total)


def _feed(memory: Memory, people: dict[str, list[Subject]], progress: Progress | None) -> None:
    rules = RuleExtractor()
    total = sum(len(s.turns) for group in people.values() for s in group)
    phase = f"feed    {len(people)} tenants"
    done = 0
    for tenant, group in people.items():
        for event in events(tenant, group):
            memory.ingest(event)
            done += 1
            if done % 256 == 0 or done == total:
                report = memory.process(extractor=rules)
                stuck = {o: n for o, n in report.outcomes.items() if o in ("retry", "failed")}
                if stuck:
                    raise RuntimeError(f"extraction did not finish: {stuck}: {report.errors[:3]}")
                _say(progress, phase, done, total)


def open_records(memory: Memory) -> dict[str, int]:
    """Open records per tenant, from the outbox (upserts minus deletes)."""
    live: dict[str, set[str]] = {}
    seq = 0
    while True:
        with memory.store.read() as unit:
            rows = unit.outbox_after(seq, limit=5000)
        if not rows:
            return {tenant: len(ids) for tenant, ids in live.items()}
        for row in rows:
            ids = live.setdefault(row.tenant, set())
            if row.op == "upsert":
                ids.add(row.memory_id)
            else:
                ids.discard(row.memory_id)
        seq = rows[-1].seq


def _embedder(mode: EmbedderMode) -> HashingEmbedder | None:
    if mode == "none":
        return None
    if mode == "hashing":
        return HashingEmbedder()
    assert_never(mode)


def _ask(memory: Memory, question: Question, *, scoped: bool = True) -> tuple[int, bool, str]:
    """One timed recall (for the question's subject, or tenant-wide): nanoseconds,
    whether it answered as it should, its mode."""
    subject = question.subject if scoped else None
    started = time.perf_counter_ns()
    result = memory.recall(question.text, tenant=MEASURED, subject=subject, k=K, sync=False)
    elapsed = time.perf_counter_ns() - started
    if question.family is None:
        return elapsed, result.abstained, result.mode
    word = question.keyword.casefold()
    found = any(
        item.record.family == question.family and word in entry_text(item.record).casefold()
        for item in result.items
    )
    return elapsed, found, result.mode


@dataclass(frozen=True, slots=True)
class _Run:
    index_seconds: float
    recall_ns: list[int]
    ok: list[bool]
    slot_ns: list[int]
    mode: str
    tenant_ns: list[int]
    vector_ns: list[int]
    ann: _AnnRun | None


@dataclass(frozen=True, slots=True)
class _AnnRun:
    build_seconds: float
    vectors: int
    recall_ns: list[int]
    vector_ns: list[int]
    overlap: float
    overlap_ids: float
    overlap_stated: float
    cosine_ratio: float


_Top = tuple[list[str], list[float]]
"""A question's vector top ``K``: ids and cosines, nearest first."""


def _tenant_wide(
    memory: Memory, index: Index, questions: Sequence[Question]
) -> tuple[list[int], list[int], list[_Top]]:
    """Tenant-wide recalls, then vector searches alone: their nanoseconds, and each
    question's vector top ``K`` (nothing without an embedder)."""
    for question in questions[:WARMUP]:
        _ask(memory, question, scoped=False)
    recall_ns = [_ask(memory, q, scoped=False)[0] for q in questions[WARMUP:]]
    if index.embedder is None:
        return recall_ns, [], []
    vector_ns: list[int] = []
    tops: list[_Top] = []
    for n, question in enumerate(questions):
        started = time.perf_counter_ns()
        hits = index.search_vectors(question.text, tenant=MEASURED, k=K)
        if n >= WARMUP:
            vector_ns.append(time.perf_counter_ns() - started)
        tops.append(([h.memory_id for h in hits], [h.cosine or 0.0 for h in hits]))
    return recall_ns, vector_ns, tops


def overlap(found: Sequence[_Top], exact: Sequence[_Top]) -> tuple[float, float]:
    """Mean, over questions, of the share of the exact top that ``found`` matches:
    by nearness (hits at least as near as the exact last one: equal cosines count
    alike) and by ids."""
    near: list[float] = []
    same: list[float] = []
    for (ids, cosines), (wanted, wanted_cosines) in zip(found, exact, strict=True):
        if not wanted:
            continue
        last = wanted_cosines[-1] - 1e-6
        near.append(min(1.0, sum(c >= last for c in cosines) / len(wanted)))
        same.append(len(set(ids) & set(wanted)) / len(wanted))
    return (_mean(near), _mean(same))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _index(
    store: Store, path: Path, *, embedder: Embedder | None, ann_threshold: int | None
) -> Index:
    """A mode's own index over ``store``: the file ``path`` beside a SQLite store; in a
    PostgreSQL store, its tables in a schema named after the file (one per mode)."""
    if store.url.startswith("postgresql://"):
        from memledger.index.postgres import PostgresIndex

        namespace = "bench_" + path.name.replace("-", "_")
        return PostgresIndex(
            store, embedder=embedder, ann_threshold=ann_threshold, namespace=namespace
        )
    return DerivedIndex(path, embedder=embedder, ann_threshold=ann_threshold)


def _measure_ann(
    store: Store,
    path: Path,
    *,
    questions: Sequence[Question],
    exact: Sequence[_Top],
) -> _AnnRun | None:
    """The approximate index over the ``hashing`` index at ``path``: its build, its
    tenant-wide recalls and vector searches, its top ``K`` against ``exact``."""
    if not store.url.startswith("postgresql://") and not _ann.available():
        return None
    index = _index(store, path, embedder=HashingEmbedder(), ann_threshold=1)
    memory = Memory(store, index=index)
    try:
        status = index.warm(MEASURED)  # reads the vectors, builds the graph
        if status is None:
            return None
        recall_ns, vector_ns, tops = _tenant_wide(memory, index, questions)
        near, same = overlap(tops, exact)
        stated = [n for n, q in enumerate(questions) if q.family is not None]
        near_stated, _ = overlap([tops[n] for n in stated], [exact[n] for n in stated])
        return _AnnRun(
            build_seconds=status.build_seconds,
            vectors=status.vectors,
            recall_ns=recall_ns,
            vector_ns=vector_ns,
            overlap=near,
            overlap_ids=same,
            overlap_stated=near_stated,
            cosine_ratio=_mean(
                [sum(c) / sum(w) for (_, c), (_, w) in zip(tops, exact, strict=True) if sum(w) > 0]
            ),
        )
    finally:
        index.close()


def _measure(
    store: Store,
    folder: Path,
    *,
    mode: EmbedderMode,
    questions: Sequence[Question],
    label: str,
    progress: Progress | None,
) -> _Run:
    """Build ``mode``'s index over ``store``, then time recalls and slot reads, for one
    subject and tenant-wide (exact, then for ``hashing`` through the approximate
    index)."""
    path = folder / f"index-{mode}"
    index = _index(store, path, embedder=_embedder(mode), ann_threshold=None)
    memory = Memory(store, index=index)
    closed = False
    try:
        started = time.perf_counter()
        index.sync(
            store, progress=lambda done, total: _say(progress, f"index   {label}", done, total)
        )
        built = time.perf_counter() - started
        if lag := index.lag(store):
            raise RuntimeError(f"the index still lags by {lag} rows after sync")
        modes = {_ask(memory, question)[2] for question in questions[:WARMUP]}
        timed: list[tuple[int, bool, str]] = []
        for n, question in enumerate(questions[WARMUP:], start=1):
            timed.append(_ask(memory, question))
            if n % 10 == 0 or n == len(questions) - WARMUP:
                _say(progress, f"queries {label}", n, len(questions) - WARMUP)
        slots: list[int] = []
        for n, question in enumerate(questions):
            family = SLOT_FAMILIES[n % len(SLOT_FAMILIES)]
            started_ns = time.perf_counter_ns()
            memory.current(question.subject, family, tenant=MEASURED)
            if n >= WARMUP:
                slots.append(time.perf_counter_ns() - started_ns)
        _say(progress, f"tenant  {label}", 0, 1)
        tenant_ns, vector_ns, exact = _tenant_wide(memory, index, questions)
        index.close()  # its vectors leave memory before the approximate index's are read
        closed = True
        ann = None
        if mode == "hashing":
            _say(progress, f"ann     {label}", 0, 1)
            ann = _measure_ann(store, path, questions=questions, exact=exact)
        _say(progress, f"tenant  {label}", 1, 1)
        return _Run(
            index_seconds=built,
            recall_ns=[t for t, _, _ in timed],
            ok=[ok for _, ok, _ in timed],
            slot_ns=slots,
            mode="/".join(sorted(modes | {m for _, _, m in timed})),
            tenant_ns=tenant_ns,
            vector_ns=vector_ns,
            ann=ann,
        )
    finally:
        if not closed:
            index.close()


def _questions(people: Sequence[Subject], count: int, seed: int) -> list[Question]:
    rng = random.Random(seed)
    present = [q for s in people for q in s.questions if q.family is not None]
    absent = [q for s in people for q in s.questions if q.family is None]
    chosen: list[Question] = []
    for n in range(count + WARMUP):
        chosen.append(rng.choice(absent if n % 5 == 4 else present))
    return chosen


def _ms(nanoseconds: Sequence[int]) -> Percentiles | None:
    return percentiles([t / 1e6 for t in nanoseconds]) if nanoseconds else None


def _rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def tmpfs(records: int) -> Path | None:
    """``/dev/shm`` when it is a writable folder with room for a store of ``records``
    records (and the other tenants'), else ``None``."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None
    return shm if shutil.disk_usage(shm).free > 4096 * records * 1.3 + (1 << 28) else None


def _build(
    people: dict[str, list[Subject]],
    folder: Path,
    *,
    feed_in: Path | None,
    progress: Progress | None,
) -> tuple[Path, float]:
    """Feed the store in ``feed_in`` (where a commit's fsync is cheap), then copy it
    into ``folder``, where it is indexed and read; returns its path and the feed time."""
    target = folder / "store.db"
    with tempfile.TemporaryDirectory(prefix="memledger-feed-", dir=feed_in) as feeding:
        path = target if feed_in is None else Path(feeding) / "store.db"
        memory = Memory(SQLiteStore(path))
        try:
            fed = _feed_timed(memory, people, progress)
        finally:
            memory.close()
        if path != target:
            for suffix in ("", "-wal"):
                if Path(f"{path}{suffix}").exists():
                    shutil.copy(f"{path}{suffix}", f"{target}{suffix}")
    return target, fed


def build_store(
    records: int, folder: Path, *, seed: int = 7, progress: Progress | None = None
) -> tuple[Path, float]:
    """A SQLite store in ``folder`` of about ``records`` records for the measured tenant
    and a tenth each for three others, fed through the write path (on tmpfs when there
    is room); its path and the feed's seconds."""
    people = {MEASURED: population(MEASURED, records, seed=seed)}
    for tenant in OTHERS:
        people[tenant] = population(tenant, max(1, records // 10), seed=seed)
    folder.mkdir(parents=True, exist_ok=True)
    return _build(people, folder, feed_in=tmpfs(records), progress=progress)


def run_size(
    records: int,
    embedders: Sequence[EmbedderMode],
    *,
    queries: int,
    folder: Path,
    feed_in: Path | None = None,
    seed: int = 7,
    progress: Progress | None = None,
    server: str | None = None,
    feed: FeedMode = "write",
) -> list[Result]:
    """One store of about ``records`` records for the measured tenant, every mode over it:
    a SQLite file, or a scratch database on the PostgreSQL ``server`` (``feed="copy"``:
    the SQLite file first, then its copy there)."""
    people = {MEASURED: population(MEASURED, records, seed=seed)}
    for tenant in OTHERS:
        people[tenant] = population(tenant, max(1, records // 10), seed=seed)

    def measure(store: Store, fed: float, copied: float | None = None) -> list[Result]:
        return _measure_all(
            store, people, records, embedders, queries=queries, folder=folder, seed=seed,
            fed=fed, copied=copied, progress=progress,
        )  # fmt: skip

    with ExitStack() as scratch:
        if server is not None and feed == "write":
            store: Store = open_store(scratch.enter_context(_scratch.scratch_database(server)))
            scratch.callback(store.close)
            fed = _feed_timed(Memory(store), people, progress)
            return measure(store, fed)
        path, fed = _build(people, folder, feed_in=feed_in, progress=progress)
        store = SQLiteStore(path)
        scratch.callback(store.close)
        results = measure(store, fed)
        if server is None:
            return results
        target = open_store(scratch.enter_context(_scratch.scratch_database(server)))
        scratch.callback(target.close)
        _say(progress, f"copy    {records:,}", 0, 1)
        started = time.perf_counter()
        copy_store(store, target)
        copied = time.perf_counter() - started
        _say(progress, f"copy    {records:,}", 1, 1)
        return results + measure(target, fed, copied)


def _feed_timed(
    memory: Memory, people: dict[str, list[Subject]], progress: Progress | None
) -> float:
    started = time.perf_counter()
    _feed(memory, people, progress)
    fed = time.perf_counter() - started
    left = sum(len(memory.jobs(tenant=tenant)) for tenant in people)
    if left:
        raise RuntimeError(f"{left} extraction jobs were left undone")
    return fed


def _measure_all(
    store: Store,
    people: dict[str, list[Subject]],
    records: int,
    embedders: Sequence[EmbedderMode],
    *,
    queries: int,
    folder: Path,
    seed: int,
    fed: float,
    progress: Progress | None,
    copied: float | None = None,
) -> list[Result]:
    counts = open_records(Memory(store))
    kind: StoreKind = "postgresql" if store.url.startswith("postgresql://") else "sqlite"
    questions = _questions(people[MEASURED], queries, seed)
    asked = questions[WARMUP:]
    results = []
    for mode in embedders:
        label = f"{mode:7} {records:,}" + (" pg" if kind == "postgresql" else "")
        run = _measure(
            store, folder, mode=mode, questions=questions, label=label, progress=progress
        )
        results.append(
            Result(
                store=kind,
                records=counts.get(MEASURED, 0),
                requested=records,
                embedder=mode,
                recall_ms=percentiles([t / 1e6 for t in run.recall_ns]),
                slot_ms=percentiles([t / 1e6 for t in run.slot_ns]),
                index_seconds=run.index_seconds,
                feed_seconds=fed,
                queries=len(run.recall_ns),
                subjects=len(people[MEASURED]),
                other_records=sum(n for t, n in counts.items() if t != MEASURED),
                hit_rate=_rate([ok for ok, q in zip(run.ok, asked, strict=True) if q.family]),
                abstain_rate=_rate(
                    [ok for ok, q in zip(run.ok, asked, strict=True) if q.family is None]
                ),
                mode=run.mode,
                tenant_recall_ms=_ms(run.tenant_ns),
                tenant_vector_ms=_ms(run.vector_ns),
                ann_build_seconds=None if run.ann is None else run.ann.build_seconds,
                ann_vectors=None if run.ann is None else run.ann.vectors,
                tenant_recall_ann_ms=None if run.ann is None else _ms(run.ann.recall_ns),
                tenant_vector_ann_ms=None if run.ann is None else _ms(run.ann.vector_ns),
                ann_overlap=None if run.ann is None else run.ann.overlap,
                ann_overlap_ids=None if run.ann is None else run.ann.overlap_ids,
                ann_overlap_stated=None if run.ann is None else run.ann.overlap_stated,
                ann_cosine_ratio=None if run.ann is None else run.ann.cosine_ratio,
                copy_seconds=copied,
            )
        )
    return results


def run(
    sizes: Sequence[int],
    embedders: Sequence[EmbedderMode] = EMBEDDER_MODES,
    *,
    queries: int = 500,
    progress: Progress | None = None,
    folder: Path | None = None,
    fast_feed: bool = True,
    seed: int = 7,
    server: str | None = None,
    feed: FeedMode = "write",
) -> Report:
    """Every size with every embedder mode, each size in a fresh scratch folder under
    ``folder`` (default: the system's temporary folder), where stores are indexed
    and read. With ``fast_feed`` a store is fed on tmpfs (:func:`tmpfs`) and copied
    there: the write path's per-event fsync would otherwise dominate the run. With
    ``server`` (a PostgreSQL server URL) each store is a scratch database there
    instead, fed in place, and each mode's index is a schema of that database; with
    ``feed="copy"`` each size is fed and measured as a SQLite store, then copied into
    a scratch database there and measured again (:data:`FeedMode`)."""
    if feed not in ("write", "copy"):
        raise InvalidInputError(f"feed must be 'write' or 'copy', got {feed!r}")
    if feed == "copy" and server is None:
        raise InvalidInputError("feed='copy' copies into PostgreSQL: give a server")
    if not sizes or min(sizes) < 1:
        raise InvalidInputError(f"sizes must be positive whole numbers, got {list(sizes)!r}")
    if queries < 1:
        raise InvalidInputError(f"queries must be positive, got {queries!r}")
    if not embedders or any(mode not in EMBEDDER_MODES for mode in embedders):
        raise InvalidInputError(f"embedders must be some of {EMBEDDER_MODES!r}, got {embedders!r}")
    results: list[Result] = []
    fed_in: list[str] = []
    for size in sizes:
        in_place = server is not None and feed == "write"
        feed_in = tmpfs(size) if fast_feed and not in_place else None
        fed_in.append(
            redact_url(server) if in_place else str(feed_in or folder or tempfile.gettempdir())
        )
        with tempfile.TemporaryDirectory(prefix="memledger-recall-", dir=folder) as scratch:
            results.extend(
                run_size(
                    size,
                    embedders,
                    queries=queries,
                    folder=Path(scratch),
                    feed_in=feed_in,
                    seed=seed,
                    progress=progress,
                    server=server,
                    feed=feed,
                )
            )
    return Report(
        machine=describe(),
        read_in=str(folder or tempfile.gettempdir()),
        fed_in=tuple(fed_in),
        results=tuple(results),
        growth=growth(results),
    )


# -- rendering ------------------------------------------------------------------------------
