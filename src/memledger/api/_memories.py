"""The short path over HTTP: add chat messages, search them with scores, list a
user's memories, delete one, read one's history (:mod:`memledger.write.messages`,
:mod:`memledger.read.memories`).

Whose memory a call names: ``user_id``, else ``agent_id`` (the agent's private
namespace); left out, a search reads the whole tenant (the namespaces the key may
read) and a list the key's own actor's memory (a ``user``'s or an ``agent``'s key).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import Field, StringConstraints
from pydantic import JsonValue as Json

from memledger import wire_models as wm
from memledger.api._auth import Reader, Writer, readable, same_tenant
from memledger.api._bodies import Id
from memledger.api._consistency import token_response, write_token
from memledger.api._events import revision_tokens
from memledger.api._problems import body_faults, problem_responses
from memledger.api._reads import MemoryId
from memledger.api._services import Svc
from memledger.api._strict import Moment, StrictBody
from memledger.domain.keys import Principal
from memledger.domain.messages import ids_of, subject_of
from memledger.read.recall import MAX_K, MAX_QUERY
from memledger.wire import (
    JsonObject,
    added_to_dict,
    item_to_dict,
    memory_change_to_dict,
    revocation_to_dict,
)
from memledger.write.messages import Added

__all__ = ["AddIn", "MemorySearchIn", "router", "whose"]

router = APIRouter(tags=["memories"])

UserId = Annotated[Id | None, Field(description="Whose memory: a user's id.")]
AgentId = Annotated[
    Id | None,
    Field(description="An agent's id: with no user, the agent's private namespace."),
]


class AddIn(StrictBody):
    messages: Json = Field(
        description='A string, an OpenAI-style message `{"role", "content"}` (role '
        "`user`, `assistant` or `tool`; `system` and `developer` messages are left out) "
        "or a list of either."
    )
    user_id: UserId = None
    agent_id: AgentId = None
    session: Id | None = Field(default=None, description="The conversation the turns belong to.")
    at: Moment | None = Field(default=None, description="When they were said (default: now).")
    metadata: dict[str, Json] | None = None
    wait: bool = Field(
        default=True,
        description="Run the tenant's queued extraction now, so the answer holds the memories "
        "(false: a worker does it later; `pending` names the turns still waiting).",
    )
    tenant: Id | None = None


class MemorySearchIn(StrictBody):
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY)]
    user_id: UserId = None
    agent_id: AgentId = None
    k: Annotated[int, Field(ge=1, le=MAX_K)] = 10
    tenant: Id | None = None


def whose(
    who: Principal, user_id: str | None, agent_id: str | None, *, tenant_wide: bool = False
) -> tuple[str | None, str | None]:
    """The ``(user_id, agent_id)`` a read names once the key may read their subject.
    Naming neither: ``(None, None)``, a read across the tenant, where ``tenant_wide``
    allows one (the namespaces the key may not read are left out record by record);
    else the key's own actor for a user's or an agent's key."""
    if user_id is None and agent_id is None:
        if tenant_wide:
            return None, None
        if who.kind == "user":
            user_id = who.actor.id
        elif who.kind == "agent":
            agent_id = who.actor.id
    subject = subject_of(user_id, agent_id)
    readable(who, subject)
    return ids_of(subject)


@router.post(
    "/v1/memories",
    response_model=wm.Added,
    summary="Add chat messages",
    description="Remembers the messages as source events (ids derived from what is sent: "
    "sending the same messages again is a duplicate, not a second memory) and, unless "
    "`wait` is false, runs the tenant's queued extraction with the server's extractor. A "
    "service's or an admin key vouches for its users: each user's turns are theirs, "
    "authenticated. A user's key adds its own turns only; an agent's key speaks as itself. "
    "The header carries the revisions the turns left.",
    responses={**problem_responses(403), **token_response()},
)
def add(body: AddIn, svc: Svc, who: Writer, response: Response) -> JsonObject:
    same_tenant(who, body.tenant)
    with body_faults():  # what is wrong with the messages, placed in the body
        added = _add(body, svc, who)
    write_token(response, [t for r in added.receipts for t in r.revisions])
    return added_to_dict(added)


def _add(body: AddIn, svc: Svc, who: Principal) -> Added:
    return svc.memory.add_as(
        who,
        body.messages,
        user_id=body.user_id,
        agent_id=body.agent_id,
        session=body.session,
        at=body.at,
        metadata=body.metadata,
        wait=body.wait,
        extractor=svc.extractor,
        most_jobs=svc.max_process,
    )


@router.post(
    "/v1/memories/search",
    response_model=wm.MemorySearch,
    summary="The memories nearest to a query, with scores",
    description="The `k` nearest memories of one user (or agent; naming neither: of the whole "
    "tenant, in the namespaces the key may read) that pass the canonical "
    "recheck (never a revoked, corrected-away or expired one), best first, each with its "
    "`score` and `relevant`: whether recall would hand it out. Unlike `POST /v1/recall`, it "
    "does not abstain: the nearest are returned even when none is relevant.",
    responses=problem_responses(403),
)
def search(body: MemorySearchIn, svc: Svc, who: Reader) -> JsonObject:
    same_tenant(who, body.tenant)
    user, agent = whose(who, body.user_id, body.agent_id, tenant_wide=True)
    found = svc.memory.search(
        body.query,
        user_id=user,
        agent_id=agent,
        k=body.k,
        tenant=who.tenant,
        visible=who.may_read,
    )
    return {"results": [item_to_dict(i) for i in found]}


@router.get(
    "/v1/memories",
    response_model=list[wm.MemoryItem],
    summary="A user's memories",
    description="What the memory of one user (or agent) holds now, newest first: every open "
    "record of every family, the turns' words included; nothing revoked, corrected away or "
    "expired.",
    responses=problem_responses(403),
)
def get_all(
    svc: Svc,
    who: Reader,
    user_id: Annotated[Id | None, Query(description="Whose memory: a user's id.")] = None,
    agent_id: Annotated[Id | None, Query(description="An agent's id.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[JsonObject]:
    user, agent = whose(who, user_id, agent_id)
    found = svc.memory.get_all(user_id=user, agent_id=agent, tenant=who.tenant, limit=limit)
    return [item_to_dict(i) for i in found]


@router.delete(
    "/v1/memories/{memory_id}",
    response_model=wm.Revocation,
    summary="Delete a memory",
    description="A revocation (as `POST /v1/memories/{memory_id}/revoke` with reason "
    "`deleted`): nothing brings the memory back, history keeps it as revoked, and an admin "
    "can undo it. Needs a write key that may change the memory.",
    responses={**problem_responses(404), **token_response()},
)
def delete(memory_id: MemoryId, svc: Svc, who: Writer, response: Response) -> JsonObject:
    receipt = svc.memory.revoke_as(who, memory_id, reason="deleted")
    write_token(response, revision_tokens(receipt))
    return revocation_to_dict(receipt)


@router.get(
    "/v1/memories/{memory_id}/history",
    response_model=list[wm.MemoryChange],
    summary="How a memory came to be",
    description="Every change to the records of the memory's slot (the values before it, "
    "the one that replaced it), oldest first. An id the key may not read is answered "
    "exactly as a missing one.",
    responses=problem_responses(404),
)
def history(memory_id: MemoryId, svc: Svc, who: Reader) -> list[JsonObject]:
    svc.memory.get(memory_id, tenant=who.tenant, namespaces=who.namespaces)
    return [memory_change_to_dict(c) for c in svc.memory.history(memory_id, tenant=who.tenant)]
