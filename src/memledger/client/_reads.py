"""The read routes, as calls, and the two that act on one memory by its id.

* Questions: :func:`recall` and :func:`context` (with the JSON of a packet's live
  state, constraints and material).
* A family's views of a subject: :func:`current`, :func:`timeline`, :func:`history`
  (the three through one view builder), :func:`changes`.
* A subject, the tenant: :func:`records`, :func:`families`, :func:`subjects`.
* One memory: :func:`get`, :func:`revoke`.

A read carries the :class:`~memledger.client._requests.Floors` of the consistency
token that concern it: its subject's, and its family's for a family's views.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

from memledger import wire_models as wm
from memledger.client._requests import (
    Call,
    ConsistencyInput,
    Floors,
    Param,
    get_call,
    given,
    params,
    post_call,
    reader,
    segment,
    subject_path,
    when,
)
from memledger.domain.budget import Budget
from memledger.errors import InvalidQueryError
from memledger.read.context import Constraint, LiveState, Material
from memledger.wire_models import SubjectPage

__all__ = [
    "changes",
    "context",
    "current",
    "families",
    "get",
    "history",
    "recall",
    "records",
    "revoke",
    "subjects",
    "timeline",
]

T = TypeVar("T")


def _question(
    path: str,
    answer: type[T],
    body: dict[str, object],
    *,
    subject: str | None,
    valid_at: datetime | None,
    consistency: ConsistencyInput,
) -> Call[T]:
    """A question about ``subject`` (``None``: across the tenant) as of ``valid_at``."""
    return Call(
        method="POST",
        path=path,
        read=reader(answer),
        body={**body, **given(subject=subject, valid_at=when(valid_at, "valid_at"))},
        floors=Floors(subject),
        consistency=consistency,
    )


def recall(
    query: str,
    *,
    subject: str | None = None,
    k: int = 10,
    valid_at: datetime | None = None,
    consistency: ConsistencyInput = None,
) -> Call[wm.Recall]:
    """The ``k`` memories most useful for ``query`` (of ``subject``, or across the key's
    tenant); below the relevance floor it abstains rather than answer the nearest thing.
    Never below the client's consistency token (the floors of ``subject``, or all of them
    for a read across the tenant)."""
    return _question(
        "/v1/recall",
        wm.Recall,
        {"query": query, "k": k},
        subject=subject,
        valid_at=valid_at,
        consistency=consistency,
    )


def _live(item: LiveState | Mapping[str, object]) -> object:
    if isinstance(item, LiveState):
        return {
            "name": item.name,
            "value": dict(item.value),
            "observed_at": when(item.observed_at, "observed_at"),
            "source": item.source,
        }
    return dict(item)


def _constraint(item: Constraint | Mapping[str, object]) -> object:
    if isinstance(item, Constraint):
        return {
            "id": item.id,
            "rule": item.rule,
            "effective_from": when(item.effective_from, "effective_from"),
        }
    return dict(item)


def _material(item: Material | Mapping[str, object]) -> object:
    if isinstance(item, Material):
        return {"name": item.name, "text": item.text}
    return dict(item)


def context(
    request: str,
    *,
    subject: str | None = None,
    budget: int | Budget = 2000,
    live: Sequence[LiveState | Mapping[str, object]] = (),
    constraints: Sequence[Constraint | Mapping[str, object]] = (),
    material: Sequence[Material | Mapping[str, object]] = (),
    k: int = 20,
    valid_at: datetime | None = None,
    corpus: bool = True,
    consistency: ConsistencyInput = None,
) -> Call[wm.Packet]:
    """The context packet for ``request`` within ``budget`` tokens (a total, or a
    :class:`~memledger.domain.budget.Budget` with caps per section): constraints and live
    state first, memories and documents next, the request last; stored as a trace."""
    body: dict[str, object] = {
        "request": request,
        "budget": (
            {"total": budget.total, "sections": dict(budget.sections)}
            if isinstance(budget, Budget)
            else budget
        ),
        "live": [_live(i) for i in live],
        "constraints": [_constraint(i) for i in constraints],
        "material": [_material(i) for i in material],
        "k": k,
        "corpus": corpus,
    }
    return _question(
        "/v1/context",
        wm.Packet,
        body,
        subject=subject,
        valid_at=valid_at,
        consistency=consistency,
    )


def _slot(subject: str, family: str, view: str) -> str:
    return f"{subject_path(subject)}/families/{segment(family)}/{view}"


def _view(
    subject: str, family: str, view: str, consistency: ConsistencyInput, **query: Param
) -> Call[list[wm.Record]]:
    """One of a family's views of ``subject``: its records."""
    return Call(
        method="GET",
        path=_slot(subject, family, view),
        read=reader(list[wm.Record]),
        params=params(**query),
        floors=Floors(subject, family),
        consistency=consistency,
    )


def current(
    subject: str,
    family: str,
    *,
    valid_at: datetime | None = None,
    as_of: datetime | None = None,
    scope: str | None = None,
    include_revoked: bool = False,
    consistency: ConsistencyInput = None,
) -> Call[list[wm.Record]]:
    """The authorised values of a family, one per scope, meant to be true at ``valid_at``
    (default now) as memledger held them at ``as_of`` (default now). ``include_revoked``:
    an audit (admin keys)."""
    return _view(
        subject,
        family,
        "current",
        consistency,
        valid_at=valid_at,
        as_of=as_of,
        scope=scope,
        include_revoked=include_revoked,
    )


def timeline(
    subject: str,
    family: str,
    *,
    as_of: datetime | None = None,
    scope: str | None = None,
    consistency: ConsistencyInput = None,
) -> Call[list[wm.Record]]:
    """Every authorised valid-time window of a family held at record time ``as_of``, in
    valid-time order."""
    return _view(subject, family, "timeline", consistency, as_of=as_of, scope=scope)


def history(
    subject: str,
    family: str | None = None,
    *,
    include_revoked: bool = False,
    consistency: ConsistencyInput = None,
) -> Call[list[wm.Record] | list[wm.MemoryChange]]:
    """``history(subject, family)``: every record a family held, in record-time order:
    closed, superseded, historical and observed ones too; revoked ones only in an audit
    (``include_revoked``, admin keys). ``history(memory_id)``: how one memory came to
    be, every change to the records of its slot, oldest first."""
    if family is None:
        if include_revoked:
            raise InvalidQueryError("include_revoked needs a subject and a family")
        changes: Callable[[bytes], list[wm.MemoryChange]] = reader(list[wm.MemoryChange])
        return Call(method="GET", path=f"/v1/memories/{segment(subject)}/history", read=changes)
    records: Callable[[bytes], list[wm.Record]] = reader(list[wm.Record])
    return Call(
        method="GET",
        path=_slot(subject, family, "history"),
        read=records,
        params=params(include_revoked=include_revoked),
        floors=Floors(subject, family),
        consistency=consistency,
    )


def changes(subject: str, family: str) -> Call[list[wm.HistoryEntry]]:
    """The append-only change log of a family: every record written, closed or revoked,
    and every review resolved (ids and actions, no values)."""
    return get_call(_slot(subject, family, "changes"), list[wm.HistoryEntry])


def records(
    subject: str, *, valid_at: datetime | None = None, consistency: ConsistencyInput = None
) -> Call[list[wm.Record]]:
    """The current records of every family of ``subject`` at ``valid_at``."""
    return Call(
        method="GET",
        path=f"{subject_path(subject)}/records",
        read=reader(list[wm.Record]),
        params=params(valid_at=valid_at),
        floors=Floors(subject),
        consistency=consistency,
    )


def families(subject: str) -> Call[list[wm.FamilySlot]]:
    """The families ``subject`` has had a write in, with revision and generation."""
    return get_call(f"{subject_path(subject)}/families", list[wm.FamilySlot])


def subjects(
    *, prefix: str | None = None, after: str | None = None, limit: int = 50
) -> Call[SubjectPage]:
    """One page of the tenant's subjects, in order; pass a page's ``next`` as ``after``
    for the next one."""
    return get_call("/v1/subjects", SubjectPage, prefix=prefix or None, after=after, limit=limit)


def get(memory_id: str) -> Call[wm.Record]:
    """One memory record, whatever its status."""
    return get_call(f"/v1/memories/{segment(memory_id)}", wm.Record)


def revoke(memory_id: str, *, reason: str = "revoked") -> Call[wm.Revocation]:
    """Revoke a memory: the claims its source event made in its family stop being used, and
    no late job, retry or stale index entry brings them back. History keeps it, as revoked."""
    path = f"/v1/memories/{segment(memory_id)}/revoke"
    return post_call(path, wm.Revocation, {"reason": reason})
