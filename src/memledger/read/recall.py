"""recall(query): candidates from the derived index, rechecked against the canonical store.

1. **Candidates**, filtered by tenant before ranking: lexical hits from the
   tenant's own index table, and the current values of the families the query
   names for the subject (exact slot lookups).
2. **Canonical recheck**: every hit is read back from the store; a hit whose
   record is gone, closed (superseded, retracted), revoked, from a revoked
   source, an observation or historical, expired or not yet valid at
   ``valid_at`` is excluded with a typed reason. What is returned is always
   the canonical record, never the index's copy, so a lagging index cannot
   hand back a stale value.
3. **Overlay**: the current slot values of the families the query names are
   added even when the index has not caught up with them (read your
   corrections); with ``min_revision`` a store below the floor refuses.
4. **Rank**: relevance (half the share of the query's words a memory covers,
   half its BM25 score relative to the best hit) x time weight x confidence x
   trust, the time weight
   ``0.3 + 0.7 * exp(-age / tau)`` (old memories are down-weighted, never
   dropped). Trust is floored at 0.05 so untrusted sources rank last rather
   than vanish.
5. **Abstain**: below the relevance floor nothing is returned: "no relevant
   memory", not the nearest thing.

The vector candidates and query understanding of dates and names join in
later; the shape of the result will not change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from memledger.domain.gates import content_words
from memledger.domain.records import MemoryRecord, require_id
from memledger.errors import InvalidQueryError
from memledger.index.lexical import LexicalIndex, entry_text, query_terms
from memledger.read.views import check_floor

if TYPE_CHECKING:
    from memledger.memory import Memory

RecallExclusion = Literal[
    "not_found",
    "superseded",
    "retracted",
    "revoked",
    "revoked_source",
    "not_authorised",
    "expired",
    "not_yet_valid",
]

Source = Literal["lexical", "slot"]

MAX_QUERY = 4000
FAMILY_WORDS: Mapping[str, tuple[str, ...]] = {
    "home_city": ("live", "lives", "living", "based", "city", "move", "moved", "home"),
    "employer": ("work", "works", "job", "employer", "company", "employed"),
    "role": ("role", "job", "title", "position"),
    "primary_framework": ("framework", "frameworks", "library", "pytorch", "jax"),
    "delivery_preference": ("digest", "deliver", "delivery", "newsletter", "send"),
    "language": ("language",),
    "timezone": ("timezone", "time zone"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Recalled:
    record: MemoryRecord
    score: float
    relevance: float
    time_weight: float
    sources: tuple[Source, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Excluded:
    memory_id: str
    reason: RecallExclusion


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallResult:
    query: str
    items: tuple[Recalled, ...]
    excluded: tuple[Excluded, ...]
    abstained: bool
    index_lag: int


def time_weight(age_days: float, *, tau_days: float) -> float:
    """``0.3 + 0.7 * exp(-age / tau)``: 1.0 when new, never below 0.3."""
    return 0.3 + 0.7 * math.exp(-max(0.0, age_days) / tau_days)


def coverage(query: str, text: str) -> float:
    """The share of the query's content words the text contains (lightly stemmed)."""
    wanted = content_words(" ".join(query_terms(query)))
    if not wanted:
        return 0.0
    return len(wanted & content_words(text)) / len(wanted)


def _why_not(record: MemoryRecord | None, *, at: datetime, revoked: bool) -> RecallExclusion | None:
    if record is None:
        return "not_found"
    if record.status == "revoked":
        return "revoked"
    if revoked:
        return "revoked_source"
    if record.status in ("superseded", "retracted"):
        return "superseded" if record.status == "superseded" else "retracted"
    if not record.authorised:
        return "not_authorised"
    if record.valid_until is not None and record.valid_until <= at:
        return "expired"
    if record.valid_from > at:
        return "not_yet_valid"
    return None


def families_named(query: str) -> list[str]:
    words = set(query_terms(query))
    return [family for family, cue in FAMILY_WORDS.items() if words & set(cue)]


def recall(
    memory: Memory,
    index: LexicalIndex,
    query: str,
    *,
    tenant: str,
    subject: str | None = None,
    k: int = 10,
    valid_at: datetime | None = None,
    min_revision: int | None = None,
    tau_days: float = 180.0,
    floor: float = 0.25,
) -> RecallResult:
    """The ``k`` most useful memories for ``query``; see the module docstring."""
    require_id(tenant, "tenant", InvalidQueryError)
    if subject is not None:
        require_id(subject, "subject", InvalidQueryError)
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query must be a non-empty string")
    if len(query) > MAX_QUERY:
        raise InvalidQueryError(f"query has {len(query)} characters; at most {MAX_QUERY}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
        raise InvalidQueryError(f"k must be a whole number from 1 to 100, got {k!r}")
    at = valid_at or memory.clock.now()
    hits = index.search(
        query, tenant=tenant, k=k * 4, subjects=None if subject is None else [subject]
    )
    sources: dict[str, set[Source]] = {h.memory_id: {"lexical"} for h in hits}
    best = max((h.score for h in hits), default=0.0)
    lexical = {h.memory_id: h.score / best for h in hits} if best > 0 else {}
    excluded: list[Excluded] = []
    kept: dict[str, MemoryRecord] = {}
    with memory.store.read() as unit:
        revoked_by_family: dict[tuple[str, str], frozenset[str]] = {}
        for hit in hits:
            record = unit.get_record(tenant, hit.memory_id)
            revoked = False
            if record is not None:
                key = (record.subject, record.family)
                if key not in revoked_by_family:
                    revoked_by_family[key] = unit.revoked_sources(tenant, *key)
                revoked = record.source_event_id in revoked_by_family[key]
            why = _why_not(record, at=at, revoked=revoked)
            if why is not None or record is None:
                excluded.append(Excluded(memory_id=hit.memory_id, reason=why or "not_found"))
                continue
            kept[record.memory_id] = record
        if subject is not None:
            for family in families_named(query):
                slot = unit.get_family(tenant, subject, family)
                check_floor(slot, min_revision, source=memory.url)
                gone = unit.revoked_sources(tenant, subject, family)
                for record in unit.family_records(tenant, subject, family, open_only=True):
                    if _why_not(record, at=at, revoked=record.source_event_id in gone):
                        continue
                    kept.setdefault(record.memory_id, record)
                    sources.setdefault(record.memory_id, set()).add("slot")
        index_lag = max(0, unit.outbox_head() - index.cursor)
    ranked: list[Recalled] = []
    for record in kept.values():
        via = sources[record.memory_id]
        words = coverage(query, entry_text(record))
        relevance = max(
            0.5 * words + 0.5 * lexical.get(record.memory_id, 0.0),
            0.5 if "slot" in via else 0.0,
        )
        age = (at - record.valid_from).total_seconds() / 86400
        weight = time_weight(age, tau_days=tau_days)
        score = relevance * weight * record.confidence * max(record.trust, 0.05)
        ranked.append(
            Recalled(
                record=record,
                score=score,
                relevance=relevance,
                time_weight=weight,
                sources=tuple(sorted(via)),
            )
        )
    ranked.sort(key=lambda r: (-r.score, r.record.memory_id))
    relevant = [r for r in ranked if r.relevance >= floor]
    return RecallResult(
        query=query,
        items=tuple(relevant[:k]),
        excluded=tuple(excluded),
        abstained=not relevant,
        index_lag=index_lag,
    )
