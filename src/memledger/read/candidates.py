"""Recall's second stage, :func:`gather`: the candidates of a query from each source of
the derived index, filtered by tenant (and subject) inside every source, and fused.

* BM25 over the tenant's own FTS5 tables, on each entry and on each turn's window (the
  turn with the turns around it), once for each phrasing of the query;
* the nearest vectors from the tenant's own rows, only those nearer than the median
  entry (without a working embedder recall runs lexical only and says why:
  :attr:`Candidates.degraded`);
* the standing instructions and preferences in scope for the query
  (:func:`standing_in_scope`), whether or not they share its words.

Lexical and vector scores are fused linearly, each relative to its best hit (measured
on LoCoMo: reciprocal rank fusion over the same lists scored 0.59 against 0.67 for the
linear blend).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memledger.domain.gates import content_words, word_set
from memledger.errors import EmbedderError
from memledger.index.backends import Glance, Hit, Index
from memledger.read.recall_settings import RecallSettings
from memledger.read.results import Source
from memledger.read.understand import Understood

__all__ = ["Candidates", "gather", "relative", "semantic", "standing_in_scope"]


@dataclass(slots=True)
class Candidates:
    """What the sources found for one query: by memory id, the sources that named it, the
    index's copy of the hit (checked against the record later), the passage of a long
    turn that matched, and each source's score relative to its best hit."""

    sources: dict[str, set[Source]] = field(default_factory=dict)
    indexed: dict[str, Hit] = field(default_factory=dict)
    spans: dict[str, tuple[int, int] | None] = field(default_factory=dict)
    lexical: dict[str, float] = field(default_factory=dict)
    windowed: dict[str, float] = field(default_factory=dict)
    vectors: dict[str, float] = field(default_factory=dict)
    cosines: dict[str, float] = field(default_factory=dict)
    in_scope: dict[str, float] = field(default_factory=dict)
    """The standing instructions in scope, with how far (:func:`standing_in_scope`)."""
    degraded: str | None = None
    used_vectors: bool = False

    def add(self, memory_id: str, source: Source) -> None:
        self.sources.setdefault(memory_id, set()).add(source)

    def fused(self, tuning: RecallSettings) -> dict[str, float]:
        """Every candidate's fused score: BM25, BM25 over windows and vectors, weighted."""
        return {
            m: self.lexical.get(m, 0.0)
            + tuning.window_weight * self.windowed.get(m, 0.0)
            + tuning.vector_weight * self.vectors.get(m, 0.0)
            for m in self.sources
        }


def gather(
    index: Index,
    query: str,
    understood: Understood,
    glance: Glance,
    *,
    tenant: str,
    subjects: Sequence[str] | None,
    tuning: RecallSettings,
) -> Candidates:
    """The candidates of ``query`` from every source (see the module docstring). The
    vectors see the query with the people it names replaced by "they", and BM25 does
    too when it names one person (``keep_names`` off): the person boost stands for the
    name."""
    found = Candidates()
    unnamed = None if tuning.keep_names else understood.unnamed
    for phrasing in understood.queries:
        if phrasing == query and unnamed is not None and len(understood.people) == 1:
            phrasing = unnamed  # the person boost stands for the name
        for scores, windows in ((found.lexical, False), (found.windowed, True)):
            if windows and not tuning.window_weight:
                continue
            hits = index.search(
                phrasing, tenant=tenant, k=tuning.candidates, subjects=subjects, windows=windows
            )
            shares = relative(hits)
            for hit in hits:
                score = shares.get(hit.memory_id, 0.0)
                scores[hit.memory_id] = max(score, scores.get(hit.memory_id, 0.0))
                found.add(hit.memory_id, "lexical")
                if not windows:
                    found.indexed[hit.memory_id] = hit
                    found.spans.setdefault(hit.memory_id, hit.span)
                    if hit.kind != "episode":  # a memory outside any thread is its own window
                        found.windowed[hit.memory_id] = max(
                            score, found.windowed.get(hit.memory_id, 0.0)
                        )
    _nearest(
        found,
        index,
        unnamed or query,
        glance,
        tenant=tenant,
        subjects=subjects,
        k=tuning.candidates,
        nearest=tuning.nearest,
    )
    # standing instructions and preferences apply whether or not they share the words
    found.in_scope = standing_in_scope(
        index, query, tenant=tenant, subjects=subjects, tuning=tuning
    )
    for memory_id in found.in_scope:
        found.add(memory_id, "standing")
    return found


def _nearest(
    found: Candidates,
    index: Index,
    asked: str,
    glance: Glance,
    *,
    tenant: str,
    subjects: Sequence[str] | None,
    k: int,
    nearest: bool = False,
) -> None:
    """The vector source: hits nearer than a typical entry (``nearest``: every hit,
    scored by its cosine relative to the best), or why there are none."""
    if index.embedder is None:
        found.degraded = "no embedder: lexical only"
        return
    try:
        hits = index.search_vectors(asked, tenant=tenant, k=k, subjects=subjects)
    except EmbedderError as exc:
        found.degraded = f"embedder failed ({exc.reason}): lexical only"
        return
    gap = glance.degraded
    found.used_vectors = gap is None or bool(hits)
    if gap is not None:
        found.degraded = f"some entries have no vector yet ({gap})"
        found.degraded += "" if hits else ": lexical only"
    if nearest:
        best = max((h.cosine or 0.0 for h in hits), default=0.0)
        found.vectors = {
            h.memory_id: max(0.0, h.cosine or 0.0) / best if best > 0 else 0.0 for h in hits
        }
    else:
        hits = [h for h in hits if h.score > 0]  # no nearer than a typical entry
        found.vectors = relative(hits)
    found.indexed.update((h.memory_id, h) for h in hits)
    for h in hits:
        found.spans.setdefault(h.memory_id, h.span)
    found.cosines = {h.memory_id: h.cosine or 0.0 for h in hits}
    for hit in hits:
        found.add(hit.memory_id, "vector")


def relative(hits: Sequence[Hit]) -> dict[str, float]:
    """Each hit's score relative to the best (0 for a negative score)."""
    best = max((h.score for h in hits), default=0.0)
    return {h.memory_id: max(0.0, h.score) / best for h in hits} if best > 0 else {}


def semantic(index: Index) -> bool:
    """Whether the index's cosines mean something (not the spelling-only hashing embedder)."""
    return index.embedder is not None and not index.embedder.name.startswith("hashing:")


def standing_in_scope(
    index: Index,
    query: str,
    *,
    tenant: str,
    subjects: Sequence[str] | None,
    tuning: RecallSettings,
) -> dict[str, float]:
    """The ``standing_k`` standing instructions or preferences most in scope for
    ``query``, with how much: the largest of the share of the query's content words
    the instruction holds, the share of its scope ("when I ask about ...") the
    query holds, and, with a semantic embedder, ``standing_cosine`` credit for the
    one whose scope is nearest the query in meaning ("When is my meeting?" is
    about "scheduling details" without a shared word) when its cosine reaches
    ``standing_min_cosine``. Below ``standing_floor`` an instruction is not in
    scope."""
    if not tuning.standing_k:
        return {}
    asked = content_words(query)
    if not asked:
        return {}
    rules = index.standing(tenant, subjects=subjects)
    found: dict[str, float] = {}
    for memory_id, text, when in rules:
        held = len(asked & word_set(text)) / len(asked)
        scope = word_set(when)
        applies = len(scope & asked) / len(scope) if scope else 0.0
        found[memory_id] = max(held, applies)
    if rules and tuning.standing_cosine and semantic(index):
        assert index.embedder is not None
        try:
            vectors = index.embedder.embed([query, *(when or text for _, text, when in rules)])
        except EmbedderError:
            vectors = None  # words alone then, as without an embedder
        if vectors is not None:
            cosines = [float(v @ vectors[0]) for v in vectors[1:]]
            nearest = max(range(len(rules)), key=lambda i: (cosines[i], rules[i][0]))
            if cosines[nearest] >= tuning.standing_min_cosine:
                memory_id = rules[nearest][0]
                found[memory_id] = max(found[memory_id], tuning.standing_cosine)
    best = sorted(
        ((r, m) for m, r in found.items() if r >= tuning.standing_floor),
        key=lambda x: (-x[0], x[1]),
    )
    return {m: r for r, m in best[: tuning.standing_k]}
