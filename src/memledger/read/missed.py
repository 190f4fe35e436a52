"""Updates the extractor may have missed: turns that change a current value no claim
changed, listed for an operator to review.

A family's current value ("Monthly budget is $600") stays current until a claim
closes its window. When a later turn says otherwise ("my budget went up to $650")
and extraction did not understand it, recall already ranks that turn above the
value and marks the value *possibly* outdated (:mod:`memledger.read.changes`); the
ledger, though, still holds the old value as current. This listing names each such
pair so that someone can fix the extraction (a correction ingested, a family or a
phrasing taught, the turn re-derived): for every current value of a subject (not
an episode), the latest turn of the same speaker after it that changes it, by the
same reading of the words recall uses, where the turn's event produced no claim
in the value's family. The value's own statement stands for the question: its
content words are what the two must share. Read-only: nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memledger.domain.gates import content_words
from memledger.domain.records import MemoryRecord
from memledger.ports import UnitOfWork
from memledger.read.changes import Said
from memledger.read.views import select

__all__ = ["EPISODES", "REASON", "PossibleUpdate", "possible_updates"]

EPISODES = "conversation"
"""The family that holds a subject's turns (episodes)."""
REASON = "possible update not understood"


@dataclass(frozen=True, slots=True, kw_only=True)
class PossibleUpdate:
    """``turn`` (an episode said after ``current`` by the same speaker) states another
    value of what ``current`` (a family's current value) holds, and its event gave no
    claim in that family: an update extraction may not have understood."""

    current: MemoryRecord
    turn: MemoryRecord
    reason: str = REASON


def possible_updates(
    unit: UnitOfWork, tenant: str, subject: str, *, now: datetime, valid_at: datetime
) -> list[PossibleUpdate]:
    """The possible updates of ``subject``'s current values (as of ``valid_at``), the
    latest turn for each value, in the order of the values' families and scopes."""
    currents: list[MemoryRecord] = []
    for slot in sorted(unit.families(tenant, subject), key=lambda s: s.family):
        if slot.family == EPISODES:
            continue
        held = unit.family_records(tenant, subject, slot.family, open_only=True)
        revoked = unit.revoked_sources(tenant, subject, slot.family)
        currents.extend(
            r
            for r in select(held, as_of=None, now=now, valid_at=valid_at, revoked_sources=revoked)
            if r.kind != "episode"
        )
    if not currents:
        return []
    earliest = min(r.valid_from for r in currents)
    gone = unit.revoked_sources(tenant, subject, EPISODES)
    turns = [
        r
        for r in unit.family_records(tenant, subject, EPISODES, open_only=True)
        if r.kind == "episode"
        and r.valid_from > earliest
        and r.source_event_id not in gone
        and not r.expired(now)
    ]
    if not turns:
        return []
    understood: dict[str, set[str]] = {}  # event id -> the families its claims are in
    for claim in unit.claims_of_events(tenant, sorted({t.source_event_id for t in turns})):
        understood.setdefault(claim.source_event_id, set()).add(claim.family)
    by_id = {t.memory_id: t for t in turns}
    said = Said.of(turns)
    found: list[PossibleUpdate] = []
    for current in currents:
        for change in said.changing(current, frozenset(content_words(current.claim))):
            turn = by_id[change.newer]
            if current.family not in understood.get(turn.source_event_id, set()):
                found.append(PossibleUpdate(current=current, turn=turn))
                break  # the latest turn that changes it and was not understood
    return found
