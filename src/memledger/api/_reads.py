"""Reads: recall, context packets, a subject's families and records, one memory; and
revoking a memory. Every read takes the key's tenant and honours a consistency token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from pydantic import AwareDatetime

from memledger import wire_models as wm
from memledger.api._auth import Reader, Writer, readable, same_tenant
from memledger.api._bodies import ID_PATTERN, ContextIn, ReasonIn, RecallIn
from memledger.api._consistency import (
    Consistency,
    check_floors,
    read_token,
    token_response,
    write_token,
)
from memledger.api._events import revision_tokens
from memledger.api._problems import problem_responses
from memledger.api._services import Services, Svc
from memledger.domain.budget import Budget
from memledger.domain.keys import Principal
from memledger.domain.records import MemoryRecord
from memledger.errors import PermissionDeniedError
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

Subject = Annotated[str, Path(pattern=ID_PATTERN, max_length=255, description="Whose.")]
FamilyName = Annotated[str, Path(pattern=ID_PATTERN, max_length=255, description="The family.")]
MemoryId = Annotated[str, Path(pattern=ID_PATTERN, max_length=255, description="The memory.")]
ValidAt = Annotated[
    AwareDatetime | None,
    Query(description="Valid time: what was meant to be true then (default now)."),
]
AsOf = Annotated[
    AwareDatetime | None, Query(description="Record time: what memledger held then (default now).")
]
Scope = Annotated[
    str | None, Query(pattern=ID_PATTERN, max_length=255, description="Only this scope.")
]
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
    svc: Services,
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
    return check_floors(svc.memory, token, tenant=who.tenant, subject=subject, family=family)


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
def recall(body: RecallIn, svc: Svc, who: Reader, consistency: Consistency = None) -> JsonObject:
    token = _request_token(who, body, consistency=consistency)
    floor = check_floors(svc.memory, token, tenant=who.tenant, subject=body.subject)
    result = svc.memory.recall(
        body.query,
        tenant=who.tenant,
        subject=body.subject,
        k=body.k,
        valid_at=body.valid_at,
        min_revision=floor,
        visible=who.may_read,
    )
    return recall_to_dict(result)


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
def context(body: ContextIn, svc: Svc, who: Reader, consistency: Consistency = None) -> JsonObject:
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
    return packet.to_dict()


@router.get(
    "/v1/subjects/{subject:path}/families",
    response_model=list[wm.FamilySlot],
    summary="The families of a subject, with revision and generation",
    description="Every family the subject has had a write in. `[]` for a subject with "
    "nothing, the same for another tenant's subject.",
    responses=problem_responses(404),
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


@router.get(
    "/v1/subjects/{subject:path}/possible-updates",
    response_model=list[wm.PossibleUpdate],
    summary="Updates extraction may have missed",
    description="Later turns of the subject that may change one of its current values where "
    "no claim did (`possible update not understood`), each beside the value it may change, "
    "for an operator to review. Read-only; `[]` when there are none.",
    responses=problem_responses(404),
)
def possible_updates(subject: Subject, svc: Svc, who: Reader) -> list[JsonObject]:
    readable(who, subject)
    found = svc.memory.possible_updates(subject, tenant=who.tenant)
    return [possible_update_to_dict(i) for i in found]


@router.get(
    "/v1/subjects/{subject:path}/records",
    response_model=list[wm.Record],
    summary="The current records of a subject, every family",
    description="The authorised values of each of the subject's families at `valid_at`, "
    f"one per scope.{_FLOOR}",
    responses=problem_responses(404, 409),
)
def records(
    subject: Subject,
    svc: Svc,
    who: Reader,
    valid_at: ValidAt = None,
    consistency: Consistency = None,
) -> list[JsonObject]:
    _view_floor(svc, who, consistency=consistency, subject=subject)
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


@router.get(
    "/v1/subjects/{subject:path}/families/{family}/current",
    response_model=list[wm.Record],
    summary="The current values of a family",
    description="The authorised values of the family, one per scope, meant to be true at "
    "`valid_at` as memledger held them at `as_of`. Observations and historical claims are "
    f"never values.{_VIEW}{_FLOOR}",
    responses=problem_responses(404, 409),
)
def current(
    subject: Subject,
    family: FamilyName,
    svc: Svc,
    who: Reader,
    valid_at: ValidAt = None,
    as_of: AsOf = None,
    scope: Scope = None,
    include_revoked: Revoked = False,
    consistency: Consistency = None,
) -> list[JsonObject]:
    floor = _view_floor(svc, who, consistency=consistency, subject=subject, family=family)
    found = svc.memory.current(
        subject,
        family,
        tenant=who.tenant,
        scope=scope,
        valid_at=valid_at,
        as_of=as_of,
        min_revision=floor,
        include_revoked=_audit(who, include_revoked),
    )
    return [record_to_dict(r) for r in found]


@router.get(
    "/v1/subjects/{subject:path}/families/{family}/timeline",
    response_model=list[wm.Record],
    summary="The valid-time windows of a family",
    description="Every authorised window of the family held at record time `as_of`, in "
    f"valid-time order.{_VIEW}{_FLOOR}",
    responses=problem_responses(404, 409),
)
def timeline(
    subject: Subject,
    family: FamilyName,
    svc: Svc,
    who: Reader,
    as_of: AsOf = None,
    scope: Scope = None,
    consistency: Consistency = None,
) -> list[JsonObject]:
    floor = _view_floor(svc, who, consistency=consistency, subject=subject, family=family)
    found = svc.memory.timeline(
        subject, family, tenant=who.tenant, scope=scope, as_of=as_of, min_revision=floor
    )
    return [record_to_dict(r) for r in found]


@router.get(
    "/v1/subjects/{subject:path}/families/{family}/history",
    response_model=list[wm.Record],
    summary="Every record a family held",
    description="Closed, superseded, historical and observed records included, in record "
    "time order; nothing is overwritten. Revoked records only in an audit "
    f"(`include_revoked`, admin keys).{_VIEW}{_FLOOR}",
    responses=problem_responses(404, 409),
)
def history(
    subject: Subject,
    family: FamilyName,
    svc: Svc,
    who: Reader,
    include_revoked: Revoked = False,
    consistency: Consistency = None,
) -> list[JsonObject]:
    token = read_token(consistency)
    readable(who, subject)
    check_floors(svc.memory, token, tenant=who.tenant, subject=subject, family=family)
    found = svc.memory.history(
        subject, family, tenant=who.tenant, include_revoked=_audit(who, include_revoked)
    )
    return [record_to_dict(r) for r in found]


@router.get(
    "/v1/subjects/{subject:path}/families/{family}/changes",
    response_model=list[wm.HistoryEntry],
    summary="The append-only change log of a family",
    description="Every record written, closed or revoked, and every review resolved, with "
    f"the revision and generation after it (ids and actions, no values).{_VIEW}",
    responses=problem_responses(404),
)
def changes(subject: Subject, family: FamilyName, svc: Svc, who: Reader) -> list[JsonObject]:
    readable(who, subject)
    found = svc.memory.changes(subject, family, tenant=who.tenant)
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
    record = _visible_record(svc, who, memory_id)
    who.require_write_to(record.subject)
    receipt = svc.memory.revoke(
        memory_id, tenant=who.tenant, reason=body.reason, may_change=who.may_write_to
    )
    write_token(response, revision_tokens(receipt))
    return revocation_to_dict(receipt)
