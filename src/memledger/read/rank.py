"""Recall's sixth stage: rank what passed the recheck.

:func:`decay` first: a memory's age is the time since it was last touched (stated,
stated again or handed out by a read, :mod:`memledger.read.access`), and a volatile
kind's confidence halves with each half-life of that age (``half_lives``); below
``min_confidence`` the memory is left out as ``faded`` (it stays in the store).

:func:`rank` then scores each memory: fused relevance (of a turn that ends by asking a
question, only ``asking_weight`` of what it owes to windows, vectors and neighbours:
its answer comes after it; the assistant's own turns ``assistant_weight``) x person and
time boosts x time weight ``0.3 + 0.7 * exp(-age / tau)`` (old memories are
down-weighted, never dropped; ``tau`` is 180 days or 10 times the span of the history
the candidates come from, whichever is longer) x confidence x trust (floored at 0.05:
untrusted sources rank last rather than vanish). What is true now ranks before what was
(:func:`current_first`), and a later turn that changes a value ranks above what it
changes (:mod:`memledger.read.changes`). A question across sessions then spreads its
top k over the sessions that match (:func:`spread`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from memledger.domain.records import MemoryRecord
from memledger.domain.scoring import decayed_confidence, down_weight
from memledger.domain.text import ends_asking
from memledger.read.neighbours import role_of
from memledger.read.recall_settings import RecallSettings
from memledger.read.results import Excluded, Source
from memledger.read.understand import Understood
from memledger.read.when import time_boost

__all__ = ["Ranked", "asks", "current_first", "decay", "rank", "session_of", "spread"]

Ranked = list[tuple[float, str, float]]
"""``(score, memory_id, time weight)``, best first."""


@dataclass(frozen=True, slots=True)
class Decayed:
    """How old each kept memory is (days since last touched, as of the valid time) and
    the confidence it ranks with."""

    ages: Mapping[str, float]
    confidences: Mapping[str, float]


def decay(
    kept: dict[str, MemoryRecord],
    touched: Mapping[str, datetime],
    *,
    at: datetime,
    tuning: RecallSettings,
    excluded: list[Excluded],
) -> Decayed:
    """Ages and confidences of ``kept``; a faded memory leaves ``kept`` for ``excluded``."""
    ages: dict[str, float] = {}
    confidences: dict[str, float] = {}
    for memory_id, record in list(kept.items()):
        last = max(record.valid_from, touched.get(memory_id, record.valid_from))
        ages[memory_id] = (at - last).total_seconds() / 86400
        half_life = tuning.half_life(record)
        confidences[memory_id] = (
            record.confidence
            if half_life is None
            else decayed_confidence(record.confidence, ages[memory_id], half_life_days=half_life)
        )
        if confidences[memory_id] < tuning.min_confidence:  # faded: out of recall, still held
            del kept[memory_id]
            excluded.append(Excluded(memory_id=memory_id, reason="faded"))
    return Decayed(ages=ages, confidences=confidences)


def rank(
    kept: Mapping[str, MemoryRecord],
    fused: Mapping[str, float],
    lexical: Mapping[str, float],
    sources: Mapping[str, set[Source]],
    decayed: Decayed,
    understood: Understood,
    *,
    speakers: Mapping[str, str],
    at: datetime,
    tuning: RecallSettings,
) -> Ranked:
    """Every kept memory scored (see the module docstring), best first; ``speakers``
    names who said each turn when the query names one person."""
    people = frozenset(understood.people)
    ranked: Ranked = []
    oldest = min((r.valid_from for r in kept.values()), default=at)
    span_days = max(0.0, (at - oldest).total_seconds() / 86400)
    tau = max(tuning.tau_days, tuning.tau_span * span_days)
    for memory_id, record in kept.items():
        score = fused.get(memory_id, 0.0)
        if record.kind == "episode" and asks(record):  # its own words keep their weight
            own = lexical.get(memory_id, 0.0)
            score = own + tuning.asking_weight * (score - own)
        if role_of(record) == "assistant" and not understood.shape.to_agent:
            score *= tuning.assistant_weight  # the agent's own words: rarely evidence
        score = max(score, 0.5 if "slot" in sources[memory_id] else 0.0)
        if people and (speakers.get(memory_id) in people or record.subject in people):
            score *= 1.0 + tuning.person_boost
        if understood.time is not None:
            score *= 1.0 + tuning.time_boost * time_boost(record.valid_from, understood.time)
        weight = down_weight(decayed.ages[memory_id], tau_days=tau)
        score *= weight * decayed.confidences[memory_id] * max(record.trust, 0.05)
        ranked.append((score, memory_id, weight))
    ranked.sort(key=lambda item: (-item[0], item[1]))
    return ranked


def current_first(
    ranked: Ranked,
    sources: Mapping[str, set[Source]],
    overtaken: Mapping[str, str],
    *,
    tuning: RecallSettings,
) -> Ranked:
    """What is true now before what was: the current values of the families the query
    names rank first, and a turn whose statement was ``overtaken``
    (:mod:`memledger.read.outdated`) keeps ``outdated_weight`` of its score and ranks
    below the record that replaced it."""
    if not ranked:
        return ranked
    top = ranked[0][0]
    score_of = {m: s for s, m, _ in ranked}
    adjusted: Ranked = []
    for score, memory_id, weight in ranked:
        if "slot" in sources[memory_id]:
            score = top + score  # a value the query names, as it stands now: first
        elif memory_id in overtaken:
            score *= tuning.outdated_weight
            instead = score_of.get(overtaken[memory_id])
            if instead is not None:
                score = min(
                    score,
                    0.99 * (top + instead if "slot" in sources[overtaken[memory_id]] else instead),
                )
        adjusted.append((score, memory_id, weight))
    adjusted.sort(key=lambda item: (-item[0], item[1]))
    return adjusted


def spread(
    ranked: Ranked,
    kept: Mapping[str, MemoryRecord],
    *,
    k: int,
    spread: float,
    relevant: Callable[[str], float],
    floor: float,
) -> Ranked:
    """``ranked`` re-ordered for a question across sessions: greedily, the memory whose
    score times ``spread`` to the power of the turns already taken from its session
    is highest comes next (a memory outside any session takes no penalty). Only the
    memories that pass the relevance ``floor`` are taken, the first ``5 * k`` of them;
    the rest follow in their order. Scores are left as they were."""
    pool: Ranked = []
    rest: Ranked = []
    for item in ranked:
        if len(pool) < 5 * k and relevant(item[1]) >= floor:
            pool.append(item)
        else:
            rest.append(item)
    taken: dict[str, int] = {}
    heap = [(-score, n, 0) for n, (score, _, _) in enumerate(pool)]
    heapq.heapify(heap)
    out: Ranked = []
    while heap:
        _, n, seen = heapq.heappop(heap)
        session = session_of(kept[pool[n][1]])
        now = taken.get(session, 0) if session is not None else 0
        if now != seen:  # its session gained turns since: re-weigh it
            heapq.heappush(heap, (-pool[n][0] * spread**now, n, now))
            continue
        out.append(pool[n])
        if session is not None:
            taken[session] = now + 1
    return out + rest


def session_of(record: MemoryRecord) -> str | None:
    """The session (within its subject) a turn was said in; ``None`` for other records
    (the index's thread of a turn)."""
    session = record.session
    return None if session is None else f"{record.subject}\x1f{session}"


def asks(record: MemoryRecord) -> bool:
    text = record.value.get("text") if isinstance(record.value, dict) else None
    return isinstance(text, str) and ends_asking(text)
