"""Reads: recall, context packets, a subject's families and records, one memory; and
revoking a memory. Every read takes the key's tenant and honours a consistency token.

Every route of one subject (``/v1/subjects/{subject}/...``) is declared by
:func:`_subject_read`, which documents a consistency token and its 409 where the route
honours one, and each view of a family by :func:`_family_read` over it. A family's
views (current, timeline, history, changes) take the subject and family of their
path, with the memory and the key, as one :class:`FamilyView` (:data:`View`);
:meth:`FamilyView.floor` makes their checks before reading."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from fastapi.types import DecoratedCallable
from pydantic import AwareDatetime

from memledger import wire_models as wm
from memledger.api._answers import answer
from memledger.api._auth import Reader, Writer, readable, same_tenant
from memledger.api._bodies import ContextIn, ReasonIn, RecallIn, id_path, id_query
from memledger.api._consistency import (
    Consistency,
    check_floors,
    read_token,
    token_response,
    write_token,
)
from memledger.api._events import revision_tokens
from memledger.api._problems import problem_responses
from memledger.api._services import Svc
from memledger.domain.budget import Budget
from memledger.domain.keys import Principal
from memledger.domain.records import MemoryRecord
from memledger.errors import PermissionDeniedError
from memledger.memory import Memory
from memledger.read.context import Constraint, LiveState, Material
from memledger.wire import (
    JsonObject,
    history_entry_to_dict,
    possible_update_to_dict,
    recall_to_dict,
    record_to_dict,
    revision_to_dict,
    revocation_to_dict,
)

__all__ = ["router"]

router = APIRouter(tags=["reads"])

Subject = Annotated[str, id_path("Whose.")]
FamilyName = Annotated[str, id_path("The family.")]
MemoryId = Annotated[str, id_path("The memory.")]
ValidAt = Annotated[
    AwareDatetime | None,
    Query(description="Valid time: what was meant to be true then (default now)."),
]
AsOf = Annotated[
    AwareDatetime | None, Query(description="Record time: what memledger held then (default now).")
]
Scope = Annotated[str | None, id_query("Only this scope.")]
Revoked = Annotated[bool, Query(description="An audit: include revoked records (admin keys only).")]

_FLOOR = (
    " With a consistency token (header or body), it does not answer below it: "
    "`revision_not_met` (409, Retry-After) where this server has not reached it."
)
_VIEW = (
    " An unknown family is `unknown_family` (400); a subject or family with nothing in it "
    "answers `[]`, the same for another tenant's subject. A path that is no identifier "
    "answers 404 (`no_route`)."
)


def _request_token(
    who: Principal, body: RecallIn | ContextIn, *, consistency: str | None
) -> wm.ConsistencyToken | None:
    """The consistency token of a recall or a context request (the header's and the
    body's, merged), once the body is found to name no other tenant; then the key must
    be able to read the request's subject."""
    same_tenant(who, body.tenant)
    token = read_token(consistency, body.consistency)
    readable(who, body.subject)
    return token


def _view_floor(
    memory: Memory,
    who: Principal,
    *,
    consistency: str | None,
    subject: str,
    family: str | None = None,
) -> int | None:
    """Refuse a read of ``subject`` the key may not make, then one the store cannot
    serve at the consistency token's floors; the ``min_revision`` to pass on."""
    readable(who, subject)
    token = read_token(consistency)
    return check_floors(memory, token, tenant=who.tenant, subject=subject, family=family)


@dataclass(frozen=True, slots=True)
class FamilyView:
    """What a family's view reads: the subject and family its path names, in the app's
    memory, with the request's key."""

    subject: str
    family: str
    memory: Memory
    who: Principal

    @property
    def tenant(self) -> str:
        return self.who.tenant

    def floor(self, consistency: str | None) -> int | None:
        """:func:`_view_floor` of this family."""
        return _view_floor(
            self.memory, self.who, consistency=consistency, subject=self.subject, family=self.family
        )


async def family_view(subject: Subject, family: FamilyName, svc: Svc, who: Reader) -> FamilyView:
    return FamilyView(subject=subject, family=family, memory=svc.memory, who=who)


View = Annotated[FamilyView, Depends(family_view)]
"""The path and the key of a family's view (its query and header are the route's own)."""


def _subject_read(
    tail: str, *, model: Any, summary: str, description: str, floor: bool = False
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """The route of ``GET /v1/subjects/{subject}/<tail>``, a read of one subject; with
    ``floor``, one that honours a consistency token (documented, and its 409 declared)."""
    return router.get(
        f"/v1/subjects/{{subject:path}}/{tail}",
        response_model=model,
        summary=summary,
        description=f"{description}{_FLOOR}" if floor else description,
        responses=problem_responses(404, 409) if floor else problem_responses(404),
    )


def _family_read(
    view: str,
    *,
    summary: str,
    description: str,
    model: Any = list[wm.Record],
    floor: bool = True,
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """The route of a family's view, ``GET /v1/subjects/{subject}/families/{family}/<view>``
    (:func:`_subject_read`), documenting what an unknown or an empty family answers;
    by default a list of records that honours a consistency token."""
    return _subject_read(
        f"families/{{family}}/{view}",
        model=model,
        summary=summary,
        description=f"{description}{_VIEW}",
        floor=floor,
    )


@router.post(
    "/v1/recall",
    response_model=wm.Recall,
    summary="The memories most useful for a query",
    description="Candidates from the index (lexical and vector) are checked against the "
    "canonical store, current slot values are added, and the rest ranked; below the "
    "relevance floor it abstains (`abstained: true`) instead of returning the nearest "
    "thing. Only the key's tenant is searched, filtered before ranking. It does not write, "
    f"and never returns a superseded, revoked or unauthorised record as current.{_FLOOR}",
    responses=problem_responses(409),
)
def recall(body: RecallIn, svc: Svc, who: Reader, consistency: Consistency = None) -> Response:
    token = _request_token(who, body, consistency=consistency)
    floor = check_floors(svc.memory, token, tenant=who.tenant, subject=body.subject)
    return recall_answer(svc.memory, who, body, floor)


def recall_answer(memory: Memory, who: Principal, body: RecallIn, floor: int | None) -> Response:
    """The answer of a recall that the route's checks let through (the route's, and
    :mod:`memledger.api._hot`'s before the routing)."""
    result = memory.recall(
        body.query,
        tenant=who.tenant,
        subject=body.subject,
        k=body.k,
        valid_at=body.valid_at,
        min_revision=floor,
        visible=who.may_read,
    )
    return answer(recall_to_dict(result))


@router.post(
    "/v1/context",
    response_model=wm.Packet,
    summary="A context packet within a token budget",
    description="Constraints and live state (yours, authoritative) at the top, then "
    "supplied material, shared documents and memories (the most relevant nearest the "
    "request), the request last, never over `budget` tokens; stored as a trace "
    "(`trace_id`, replayable) with every memory's id and revision and every candidate "
    "left out with its reason. The answer holds the packet as data and as the rendered "
    "`text` to give the model. Memories in it are what was said, not business settings: "
    f"check consequential actions against live state. Material over the server's limit "
    f"(`limit_exceeded`, 413) is refused before any work.{_FLOOR}",
    responses=problem_responses(409),
)
def context(body: ContextIn, svc: Svc, who: Reader, consistency: Consistency = None) -> Response:
    token = _request_token(who, body, consistency=consistency)
    svc.limits.check_material([len(m.text) for m in body.material])
    check_floors(svc.memory, token, tenant=who.tenant, subject=body.subject)
    budget = (
        Budget(total=body.budget)
        if isinstance(body.budget, int)
        else Budget(total=body.budget.total, sections=body.budget.sections)
    )
    packet = svc.memory.context(
        body.request,
        tenant=who.tenant,
        subject=body.subject,
        budget=budget,
        live=[
            LiveState(name=s.name, value=s.value, observed_at=s.observed_at, source=s.source)
            for s in body.live
        ],
        constraints=[
            Constraint(id=c.id, rule=c.rule, effective_from=c.effective_from)
            for c in body.constraints
        ],
        material=[Material(name=m.name, text=m.text) for m in body.material],
        corpus=svc.shelf.open(create=False) if body.corpus else None,
        valid_at=body.valid_at,
        k=body.k,
        visible=who.may_read,
    )
    return answer(packet.to_dict())


@_subject_read(
    "families",
    model=list[wm.FamilySlot],
    summary="The families of a subject, with revision and generation",
    description="Every family the subject has had a write in. `[]` for a subject with "
    "nothing, the same for another tenant's subject.",
)
def families(subject: Subject, svc: Svc, who: Reader) -> list[JsonObject]:
    readable(who, subject)
    return [
        {
            **revision_to_dict(slot),
            "updated_at": None if slot.updated_at is None else slot.updated_at.isoformat(),
        }
        for slot in svc.memory.families(subject, tenant=who.tenant)
    ]


@_subject_read(
    "possible-updates",
    model=list[wm.PossibleUpdate],
    summary="Updates extraction may have missed",
    description="Later turns of the subject that may change one of its current values where "
    "no claim did (`possible update not understood`), each beside the value it may change, "
    "for an operator to review. Read-only; `[]` when there are none.",
)
def possible_updates(subject: Subject, svc: Svc, who: Reader) -> list[JsonObject]:
    readable(who, subject)
    found = svc.memory.possible_updates(subject, tenant=who.tenant)
    return [possible_update_to_dict(i) for i in found]


@_subject_read(
    "records",
    model=list[wm.Record],
    summary="The current records of a subject, every family",
    description="The authorised values of each of the subject's families at `valid_at`, "
    "one per scope.",
    floor=True,
)
def records(
    subject: Subject,
    svc: Svc,
    who: Reader,
    valid_at: ValidAt = None,
    consistency: Consistency = None,
) -> list[JsonObject]:
    _view_floor(svc.memory, who, consistency=consistency, subject=subject)
    found: list[JsonObject] = []
    for slot in svc.memory.families(subject, tenant=who.tenant):
        found.extend(
            record_to_dict(r)
            for r in svc.memory.current(subject, slot.family, tenant=who.tenant, valid_at=valid_at)
        )
    return found


def _audit(who: Principal, include_revoked: bool) -> bool:
    if include_revoked and not who.may_admin:
        raise PermissionDeniedError(
            f"API key {who.key_id!r} has role {who.role!r}; include_revoked needs an admin key"
        )
    return include_revoked


@_family_read(
    "current",
    summary="The current values of a family",
    description="The authorised values of the family, one per scope, meant to be true at "
    "`valid_at` as memledger held them at `as_of`. Observations and historical claims are "
    "never values.",
)
def current(
    view: View,
    valid_at: ValidAt = None,
    as_of: AsOf = None,
    scope: Scope = None,
    include_revoked: Revoked = False,
    consistency: Consistency = None,
) -> Response:
    floor = view.floor(consistency)
    found = view.memory.current(
        view.subject,
        view.family,
        tenant=view.tenant,
        scope=scope,
        valid_at=valid_at,
        as_of=as_of,
        min_revision=floor,
        include_revoked=_audit(view.who, include_revoked),
    )
    return answer([record_to_dict(r) for r in found])


@_family_read(
    "timeline",
    summary="The valid-time windows of a family",
    description="Every authorised window of the family held at record time `as_of`, in "
    "valid-time order.",
)
def timeline(
    view: View, as_of: AsOf = None, scope: Scope = None, consistency: Consistency = None
) -> list[JsonObject]:
    floor = view.floor(consistency)
    found = view.memory.timeline(
        view.subject, view.family, tenant=view.tenant, scope=scope, as_of=as_of, min_revision=floor
    )
    return [record_to_dict(r) for r in found]


@_family_read(
    "history",
    summary="Every record a family held",
    description="Closed, superseded, historical and observed records included, in record "
    "time order; nothing is overwritten. Revoked records only in an audit "
    "(`include_revoked`, admin keys).",
)
def history(
    view: View, include_revoked: Revoked = False, consistency: Consistency = None
) -> list[JsonObject]:
    token = read_token(consistency)
    readable(view.who, view.subject)
    check_floors(view.memory, token, tenant=view.tenant, subject=view.subject, family=view.family)
    found = view.memory.history(
        view.subject,
        view.family,
        tenant=view.tenant,
        include_revoked=_audit(view.who, include_revoked),
    )
    return [record_to_dict(r) for r in found]


@_family_read(
    "changes",
    summary="The append-only change log of a family",
    description="Every record written, closed or revoked, and every review resolved, with "
    "the revision and generation after it (ids and actions, no values).",
    model=list[wm.HistoryEntry],
    floor=False,
)
def changes(view: View) -> list[JsonObject]:
    readable(view.who, view.subject)
    found = view.memory.changes(view.subject, view.family, tenant=view.tenant)
    return [history_entry_to_dict(c) for c in found]


@router.get(
    "/v1/memories/{memory_id}",
    response_model=wm.Record,
    summary="One memory record, whatever its status",
    description="An id of another tenant is answered exactly as a missing one "
    "(`memory_not_found`).",
    responses=problem_responses(404),
)
def get_memory(memory_id: MemoryId, svc: Svc, who: Reader) -> JsonObject:
    return record_to_dict(_visible_record(svc, who, memory_id))


def _visible_record(svc: Svc, who: Principal, memory_id: str) -> MemoryRecord:
    """A memory of the key's tenant in a namespace the key reads; a memory of another
    agent's private namespace is answered exactly as a missing one."""
    return svc.memory.get(memory_id, tenant=who.tenant, namespaces=who.namespaces)


@router.post(
    "/v1/memories/{memory_id}/revoke",
    response_model=wm.Revocation,
    summary="Revoke a memory",
    description="Every claim the memory's source event made in its family stops being "
    "used, and its words are cut from the other records of that event; the family's "
    "generation is bumped, so no late job, retry or stale index entry brings it back. "
    "Nothing is deleted (history keeps it, as revoked). A new authorised event may set a "
    "new value. Needs a write key, and acts only on what it may write: the words are not cut "
    "from a record of another agent's private namespace, and the answer does not name one. "
    "A write key revokes any memory of the shared namespace, whoever wrote it, and of its "
    "own agent's namespace; never one of another agent's (answered as a missing id where "
    "the key may not read it, else 403). The header carries the revisions it left.",
    responses={**problem_responses(404), **token_response()},
)
def revoke(
    memory_id: MemoryId, body: ReasonIn, svc: Svc, who: Writer, response: Response
) -> JsonObject:
    same_tenant(who, body.tenant)
    receipt = svc.memory.revoke_as(who, memory_id, reason=body.reason)
    write_token(response, revision_tokens(receipt))
    return revocation_to_dict(receipt)
