"""Which recalled turns were overtaken: what a turn stated has been replaced since.

"I live in Lisbon these days." (January) and "Actually I moved to Porto last
month." (March): asked in April where the user lives, the January turn still
shares the question's words, but what it stated no longer holds. A turn is
*outdated* when its source event stated claims (authorised, not revoked) that
none of them still hold at the time asked in their slot, while another event's
record does: that record replaced it. Recall marks such a turn (``outdated_by``)
and ranks it below the record that replaced it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from memledger.domain.records import MemoryRecord
from memledger.ports import ClaimWindow, UnitOfWork


def replaced(
    unit: UnitOfWork,
    tenant: str,
    turns: Iterable[MemoryRecord],
    *,
    at: datetime,
    now: datetime,
) -> dict[str, str]:
    """For each outdated turn among ``turns`` (episodes), the memory id of a record
    that holds its slot at valid time ``at`` instead, not expired at record time
    ``now`` (see the module docstring)."""
    found: dict[str, str] = {}
    turns = list(turns)
    by_event: dict[str, list[ClaimWindow]] = {}
    for claim in unit.claim_windows(tenant, [t.source_event_id for t in turns]):
        by_event.setdefault(claim.event_id, []).append(claim)
    for turn in turns:
        claims = by_event.get(turn.source_event_id, [])
        instead: str | None = None
        for subject, family, scope in sorted({(r.subject, r.family, r.scope) for r in claims}):
            mine = [r for r in claims if (r.subject, r.family, r.scope) == (subject, family, scope)]
            if any(r.holds(at, now) for r in mine):
                instead = None  # something it said still holds: the turn is not outdated
                break
            if instead is None:
                holders = [
                    r
                    for r in unit.family_records(tenant, subject, family, open_only=True)
                    if r.scope == scope
                    and r.authorised
                    and r.status == "active"
                    and r.valid(at)
                    and not r.expired(now)
                    and r.source_event_id != turn.source_event_id
                ]
                if holders:
                    instead = holders[-1].memory_id
        if instead is not None:
            found[turn.memory_id] = instead
    return found
