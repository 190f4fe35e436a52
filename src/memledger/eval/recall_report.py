"""What ``memledger bench recall`` reports: per store, size and embedder a
:class:`Result` (latency percentiles, hit and abstention rates, the approximate index's
figures), the :class:`Growth` from one size to the next, and the :class:`Report` as
JSON (:func:`json_body`) and Markdown (:func:`markdown`, :func:`tenant_markdown`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

EmbedderMode = Literal["none", "hashing"]
StoreKind = Literal["sqlite", "postgresql"]
FeedMode = Literal["write", "copy"]
"""How a PostgreSQL store is filled: through the write path (``write``), or fed as a
SQLite store that is measured, then copied into PostgreSQL and measured there
(``copy``: both stores hold the same rows, in one run; a million records take hours
through PostgreSQL's write path on a small machine)."""
EMBEDDER_MODES: tuple[EmbedderMode, ...] = ("none", "hashing")

Progress = Callable[[str, int, int], None]
"""Called as ``progress(phase, done, total)``; the phase names the size and the mode."""


# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Percentiles:
    p50: float
    p95: float
    p99: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    store: StoreKind
    """Where the canonical store (and the index) lived."""
    records: int
    """Open records of the measured tenant (what its index holds)."""
    requested: int
    embedder: EmbedderMode
    recall_ms: Percentiles
    slot_ms: Percentiles
    index_seconds: float
    feed_seconds: float
    queries: int
    subjects: int
    other_records: int
    """Open records of the other tenants, in all."""
    hit_rate: float
    """Questions about a stated fact whose record was among the first ten."""
    abstain_rate: float
    """Questions about something never said that returned nothing."""
    mode: str
    """What recall reported: ``hybrid`` or ``lexical``."""
    tenant_recall_ms: Percentiles | None = None
    """The same questions without ``subject`` (tenant-wide), exact vector search."""
    tenant_vector_ms: Percentiles | None = None
    """Tenant-wide exact vector search alone (the query's embedding included)."""
    ann_build_seconds: float | None = None
    """Building the approximate index (``hashing`` only, with usearch installed)."""
    ann_vectors: int | None = None
    """Distinct vectors in it."""
    tenant_recall_ann_ms: Percentiles | None = None
    tenant_vector_ann_ms: Percentiles | None = None
    ann_overlap: float | None = None
    """Mean share of the approximate top 10 at least as near as the exact tenth."""
    ann_overlap_ids: float | None = None
    """Mean share of the exact top 10 ids the approximate top 10 holds."""
    ann_cosine_ratio: float | None = None
    """Mean over questions of the approximate top 10's summed cosines over the exact
    top 10's: how much nearer the exact hits are (1.0: as near)."""
    ann_overlap_stated: float | None = None
    """``ann_overlap`` over the questions about a stated fact only (the others ask
    about something never said: their exact top 10 is a flat field of near ties)."""
    copy_seconds: float | None = None
    """``feed="copy"``: copying the fed SQLite store into PostgreSQL (``copy-store``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Growth:
    store: StoreKind
    embedder: EmbedderMode
    records_from: int
    records_to: int
    records_ratio: float
    recall_p50_ratio: float
    recall_p95_ratio: float
    slot_p50_ratio: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    machine: dict[str, str | int]
    read_in: str
    """Where stores were indexed and read."""
    fed_in: tuple[str, ...]
    """Where each size's store was fed (then copied to ``read_in``)."""
    results: tuple[Result, ...]
    growth: tuple[Growth, ...]


def percentiles(values: Sequence[float]) -> Percentiles:
    """Nearest-rank p50, p95 and p99 (0.0 for no values)."""
    ordered = sorted(values)

    def rank(q: float) -> float:
        if not ordered:
            return 0.0
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return Percentiles(p50=rank(0.5), p95=rank(0.95), p99=rank(0.99))


def growth(results: Sequence[Result]) -> tuple[Growth, ...]:
    """Per mode: the largest size against the smallest (nothing with one size)."""
    out: list[Growth] = []
    for store, mode in dict.fromkeys((r.store, r.embedder) for r in results):
        mine = sorted(
            (r for r in results if (r.store, r.embedder) == (store, mode)), key=lambda r: r.records
        )
        small, large = mine[0], mine[-1]
        if len(mine) < 2 or small.records == 0:
            continue
        out.append(
            Growth(
                store=store,
                embedder=mode,
                records_from=small.records,
                records_to=large.records,
                records_ratio=large.records / small.records,
                recall_p50_ratio=large.recall_ms.p50 / max(small.recall_ms.p50, 1e-9),
                recall_p95_ratio=large.recall_ms.p95 / max(small.recall_ms.p95, 1e-9),
                slot_p50_ratio=large.slot_ms.p50 / max(small.slot_ms.p50, 1e-9),
            )
        )
    return tuple(out)


def json_body(report: Report) -> dict[str, object]:
    """The report as JSON; ``growth`` is keyed by embedder mode, or by ``store:mode``
    when the report holds both stores (``feed="copy"``)."""
    stores = {r.store for r in report.results}
    return {
        "benchmark": "recall",
        "machine": report.machine,
        "read_in": report.read_in,
        "fed_in": list(report.fed_in),
        "results": [asdict(r) for r in report.results],
        "growth": {
            (g.embedder if len(stores) == 1 else f"{g.store}:{g.embedder}"): {
                k: v for k, v in asdict(g).items() if k not in ("embedder", "store")
            }
            for g in report.growth
        },
    }


def markdown(report: Report) -> str:
    lines = [
        "| store | records | embedder | index s | recall p50 ms | p95 | p99 | slot p50 ms | p95 "
        "| hit rate | abstain rate |",
        "| :--- | ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report.results:
        lines.append(
            f"| {r.store} | {r.records:,} | {r.embedder} | {r.index_seconds:.1f} | "
            f"{r.recall_ms.p50:.2f} | "
            f"{r.recall_ms.p95:.2f} | {r.recall_ms.p99:.2f} | {r.slot_ms.p50:.3f} | "
            f"{r.slot_ms.p95:.3f} | {r.hit_rate:.0%} | {r.abstain_rate:.0%} |"
        )
    if report.growth:
        lines.append("")
    for g in report.growth:
        lines.append(
            f"growth ({g.store}, {g.embedder}): {g.records_from:,} to {g.records_to:,} records "
            f"(x{g.records_ratio:.1f}): recall p50 "
            f"x{g.recall_p50_ratio:.2f}, p95 x{g.recall_p95_ratio:.2f}, "
            f"slot p50 x{g.slot_p50_ratio:.2f}"
        )
    return "\n".join(lines)


def tenant_markdown(report: Report) -> str:
    """Tenant-wide recall (no subject): exact vector search, and the approximate index."""

    def pair(p: Percentiles | None) -> str:
        return "- | -" if p is None else f"{p.p50:.2f} | {p.p95:.2f}"

    lines = [
        "| store | records | embedder | recall p50 ms | p95 | vectors p50 ms | p95 | ANN build s "
        "| ANN recall p50 ms | p95 | ANN vectors p50 ms | p95 "
        "| top-10 overlap: near / ids / near, stated facts | cosine ratio |",
        "| :--- | ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: |",
    ]
    for r in report.results:
        build = "-" if r.ann_build_seconds is None else f"{r.ann_build_seconds:.1f}"
        same = (
            "-"
            if r.ann_overlap is None or r.ann_overlap_ids is None or r.ann_overlap_stated is None
            else f"{r.ann_overlap:.3f} / {r.ann_overlap_ids:.3f} / {r.ann_overlap_stated:.3f}"
        )
        lines.append(
            f"| {r.store} | {r.records:,} | {r.embedder} | {pair(r.tenant_recall_ms)} | "
            f"{pair(r.tenant_vector_ms)} | {build} | {pair(r.tenant_recall_ann_ms)} | "
            f"{pair(r.tenant_vector_ann_ms)} | {same} | "
            + ("-" if r.ann_cosine_ratio is None else f"{r.ann_cosine_ratio:.3f}")
            + " |"
        )
    return "\n".join(lines)
