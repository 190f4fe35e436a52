"""Canonical views of a family: current values, the valid-time timeline, history.

Bitemporal selection is one pure function, :func:`select`: a record is in the
view if memledger held it at record time ``as_of`` and it is meant to be true
at valid time ``valid_at``. Observations and historical records are never part
of a value view; revoked records (and every record cut from a revoked source)
only when an audit asks for them. A record past its expiry (``expires_at``) is no
longer held: like a superseded one, it is in no view of a later record time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from memledger.domain.records import MemoryRecord, require_id
from memledger.errors import InvalidQueryError, RevisionNotMetError
from memledger.ports import FamilySlot


def select(
    records: Iterable[MemoryRecord],
    *,
    as_of: datetime | None,
    now: datetime,
    valid_at: datetime | None,
    scope: str | None = None,
    revoked_sources: frozenset[str] = frozenset(),
    include_revoked: bool = False,
) -> tuple[MemoryRecord, ...]:
    """The authorised records held at record time ``as_of`` (``None``: held ``now``)
    and, if ``valid_at`` is given, meant to be true then.

    A record from a revoked source is left out even where memledger held it
    before the revocation, unless an audit passes ``include_revoked=True``.
    """
    if scope is not None:
        require_id(scope, "scope", InvalidQueryError)
    chosen = [
        r
        for r in records
        if r.authorised
        and (r.superseded_at is None and not r.expired(now) if as_of is None else r.open_at(as_of))
        and (valid_at is None or r.valid(valid_at))
        and (scope is None or r.scope == scope)
        and (
            include_revoked or (r.status != "revoked" and r.source_event_id not in revoked_sources)
        )
    ]
    return tuple(sorted(chosen, key=lambda r: (r.scope, r.valid_from, r.memory_id)))


def check_min_revision(min_revision: object) -> int | None:
    """``min_revision`` if it is ``None`` or a revision (a whole number >= 0), else
    :class:`InvalidQueryError`."""
    if min_revision is None:
        return None
    if isinstance(min_revision, int) and not isinstance(min_revision, bool) and min_revision >= 0:
        return min_revision
    raise InvalidQueryError(
        f"min_revision must be a whole number >= 0 (a receipt's revision), got {min_revision!r}"
    )


def check_floor(slot: FamilySlot | None, min_revision: int | None, *, source: str) -> None:
    """Refuse to answer below a revision floor instead of answering stale."""
    floor = check_min_revision(min_revision)
    if floor is None:
        return
    have = 0 if slot is None else slot.revision
    if have < floor:
        where = "?" if slot is None else f"{slot.subject!r}/{slot.family!r}"
        raise RevisionNotMetError(
            f"{source} holds revision {have} of {where}, below the requested "
            f"min_revision {min_revision}; retry against the primary or later"
        )
