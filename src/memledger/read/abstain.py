"""Recall's seventh stage: keep what is relevant, or abstain.

A memory counts as relevant (:class:`Relevance`) when it covers at least ``floor`` of
the query's content words (names aside; a neighbour's words count half), matches with a
semantic embedder, or is a slot the query names. :func:`choose` takes the top ``k``
relevant memories in rank order, the standing instructions in scope moved up to
``standing_rank`` (:func:`with_standing`); with nothing relevant the answer is "no
relevant memory", not the nearest thing. :func:`present` dresses each chosen memory
with its neighbours, the passage to show of a long turn (:func:`passage`) and what
outdates it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memledger.domain.gates import content_words, word_set
from memledger.domain.passages import Passage, best_passage
from memledger.domain.records import MemoryRecord
from memledger.index.lexical import entry_text, query_terms
from memledger.read.neighbours import Near
from memledger.read.rank import Ranked
from memledger.read.results import Recalled, Source

__all__ = ["SEMANTIC_FLOOR", "Relevance", "choose", "passage", "present", "with_standing"]

SEMANTIC_FLOOR = 0.5
"""The least cosine of a vector match, with a semantic embedder, that counts as relevant."""


class Relevance:
    """How relevant a kept memory is, on an absolute scale (for abstention), computed
    only for the memories that reach the top: its own share of the content words
    of the query (or of the rewriter's phrasing it covers best), half of a
    neighbouring turn's share, 0.5 for a slot the query names, 1.0
    for a semantic vector match."""

    def __init__(
        self,
        queries: Sequence[str],
        *,
        ignore: frozenset[str],
        kept: Mapping[str, MemoryRecord],
        adjacent: Mapping[str, set[str]],
        sources: Mapping[str, set[Source]],
        cosines: Mapping[str, float],
    ) -> None:
        self._wanted = []
        for query in queries:
            wanted = content_words(" ".join(query_terms(query)))
            if wanted:
                self._wanted.append((wanted - ignore) or wanted)
        self._kept = kept
        self._adjacent = adjacent
        self._sources = sources
        self._cosines = cosines
        self._own: dict[str, float] = {}

    def own(self, memory_id: str) -> float:
        if memory_id not in self._own:
            words = word_set(entry_text(self._kept[memory_id]))
            shares = (len(wanted & words) / len(wanted) for wanted in self._wanted)
            self._own[memory_id] = max(shares, default=0.0)
        return self._own[memory_id]

    def __call__(self, memory_id: str) -> float:
        if "slot" in self._sources[memory_id]:
            return max(0.5, self.own(memory_id))
        if self._cosines.get(memory_id, 0.0) >= SEMANTIC_FLOOR:
            return 1.0
        own = self.own(memory_id)
        if own >= 0.5:  # a neighbour's words count half: they cannot do better
            return own
        beside = (self.own(n) for n in self._adjacent.get(memory_id, ()) if n in self._kept)
        return max(own, 0.5 * max(beside, default=0.0))


def choose(
    ranked: Ranked,
    judge: Relevance,
    *,
    kept: Mapping[str, MemoryRecord],
    sources: Mapping[str, set[Source]],
    k: int,
    floor: float,
) -> list[Recalled]:
    """The first ``k`` of ``ranked`` whose relevance reaches ``floor``."""
    chosen: list[Recalled] = []
    for score, memory_id, weight in ranked:
        relevance = judge(memory_id)
        if relevance < floor:
            continue
        chosen.append(
            Recalled(
                record=kept[memory_id],
                score=score,
                relevance=relevance,
                time_weight=weight,
                sources=tuple(sorted(sources[memory_id])),
            )
        )
        if len(chosen) == k:
            break
    return chosen


def with_standing(
    chosen: list[Recalled],
    ranked: Ranked,
    standing: Mapping[str, float],
    *,
    kept: Mapping[str, MemoryRecord],
    sources: Mapping[str, set[Source]],
    k: int,
    rank: int,
) -> list[Recalled]:
    """``chosen`` with the standing instructions in scope that passed the recheck that
    ranking put below ``rank`` (or left out) moved up to ``rank``, within the top ``k``."""
    high = {r.record.memory_id for r in chosen[: rank - 1]}
    missing = [m for m in standing if m in kept and m not in high]
    chosen = [r for r in chosen if r.record.memory_id not in missing]
    if not missing:
        return chosen
    scores = {m: (score, weight) for score, m, weight in ranked}
    extra = [
        Recalled(
            record=kept[m],
            score=scores[m][0],
            relevance=standing[m],
            time_weight=scores[m][1],
            sources=tuple(sorted(sources[m])),
        )
        for m in missing
    ]
    at = max(0, min(k - len(extra), rank - 1))
    return [*chosen[:at], *extra, *chosen[at:]][:k]


def passage(
    record: MemoryRecord, query: str, *, words: int, span: tuple[int, int] | None = None
) -> Passage | None:
    """What to show of a turn; for a long one, the best of the passage that matched
    (``span``, :attr:`~memledger.index._base.Hit.span`), offsets into the whole text."""
    text = record.value.get("text") if isinstance(record.value, dict) else None
    if record.kind != "episode" or not isinstance(text, str):
        return None
    if span is None or span == (0, len(text)):
        return best_passage(text, query, words=words)
    start, end = span
    shown = best_passage(text[start:end], query, words=words)
    return Passage(start=start + shown.start, end=start + shown.end, text=shown.text, whole=False)


def present(
    chosen: Sequence[Recalled],
    query: str,
    *,
    beside: Near,
    spans: Mapping[str, tuple[int, int] | None],
    overtaken: Mapping[str, str],
    possibly: Mapping[str, str],
    confidences: Mapping[str, float],
    words: int,
) -> tuple[Recalled, ...]:
    """``chosen`` with the turns just before and after each (from ``beside``), the
    passage to show of a long turn, what replaced or may have changed it, and the
    confidence it ranked with."""
    return tuple(
        Recalled(
            record=r.record,
            score=r.score,
            relevance=r.relevance,
            time_weight=r.time_weight,
            sources=r.sources,
            context=tuple(
                m for m, offset in beside.get(r.record.memory_id, ()) if abs(offset) == 1
            ),
            passage=passage(r.record, query, words=words, span=spans.get(r.record.memory_id)),
            outdated_by=overtaken.get(r.record.memory_id),
            possibly_outdated_by=possibly.get(r.record.memory_id),
            confidence=confidences[r.record.memory_id],
        )
        for r in chosen
    )
