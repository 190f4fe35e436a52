"""Context traces: what a model call was given, listed, shown and replayed."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query

from memledger import wire_models as wm
from memledger.api._auth import Reader, readable
from memledger.api._bodies import id_path, id_query
from memledger.api._problems import problem_responses
from memledger.api._services import Svc
from memledger.domain.keys import Principal
from memledger.gate import decisions
from memledger.ports import StoredTrace
from memledger.read import trace
from memledger.wire import JsonObject

__all__ = ["router"]

router = APIRouter(tags=["traces"])

TraceId = Annotated[str, id_path("The packet's trace id, ctx-...")]


@router.get(
    "/v1/traces",
    response_model=list[wm.TraceSummary],
    summary="The most recent context traces",
    description="Newest first: each packet's request, the memories (id and revision) it "
    "held, how many candidates it left out, and its size. A trace of another agent's "
    "private namespace, or one holding a memory of it, is not listed.",
    responses=problem_responses(),
)
def recent(
    svc: Svc,
    who: Reader,
    subject: Annotated[str | None, id_query("Only this subject's.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="How many, newest first.")] = 20,
) -> list[JsonObject]:
    readable(who, subject)
    return trace.recent(
        svc.memory.store, tenant=who.tenant, subject=subject, limit=limit, namespaces=who.namespaces
    )


def _trace_for(svc: Svc, who: Principal, trace_id: str) -> StoredTrace:
    """The trace, answered as a missing one when it is another tenant's or shows anything
    of a namespace the key may not read (its subject, or a memory its packet held): the
    store query leaves it out, so it is no row at all."""
    return trace.get(svc.memory.store, trace_id, tenant=who.tenant, namespaces=who.namespaces)


@router.get(
    "/v1/traces/{trace_id}",
    response_model=wm.StoredTrace,
    summary="A context trace as stored",
    description="Its JSON body (request, budget, routing, every item with memory id and "
    "revision, every candidate left out with its reason) and the sha256 of the text the "
    "model was given. A trace of another tenant, of another agent's private namespace, "
    "or holding a memory of it, is answered exactly as a missing one.",
    responses=problem_responses(404),
)
def get_trace(trace_id: TraceId, svc: Svc, who: Reader) -> JsonObject:
    stored = _trace_for(svc, who, trace_id)
    return {
        "trace_id": stored.trace_id,
        "subject": stored.subject,
        "created_at": stored.created_at.isoformat(),
        "rendered_sha256": stored.rendered_sha256,
        "body": json.loads(stored.body),
    }


@router.post(
    "/v1/traces/{trace_id}/replay",
    response_model=wm.Replay,
    summary="Rebuild a stored packet from the store",
    description="The packet as the model saw it, rebuilt from the records it named, and "
    "whether its sha256 matches (`matches`); memories revoked since are shown again (an "
    "audit, not a new packet) and listed in `revoked_since`; erased ones in `missing`. "
    "Also the action-gate decisions recorded against it. It writes nothing.",
    responses=problem_responses(404),
)
def replay(trace_id: TraceId, svc: Svc, who: Reader) -> JsonObject:
    _trace_for(svc, who, trace_id)
    replayed = svc.memory.replay(trace_id, tenant=who.tenant)
    gated = decisions(svc.memory.store, tenant=who.tenant, trace_id=trace_id)
    return {
        **replayed.packet.to_dict(),
        "matches": replayed.matches,
        "revoked_since": list(replayed.revoked),
        "missing": list(replayed.missing),
        "gate_decisions": gated,  # type: ignore[dict-item]
    }
