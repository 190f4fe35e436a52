"""Context traces: what a model call was given, listed, shown and replayed."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from memledger import wire_models as wm
from memledger.api._auth import Reader, readable
from memledger.api._bodies import ID_PATTERN
from memledger.api._problems import problem_responses
from memledger.api._services import Svc
from memledger.domain.keys import Principal
from memledger.errors import TraceNotFoundError
from memledger.gate import decisions
from memledger.ports import StoredTrace
from memledger.read import trace
from memledger.wire import JsonObject

__all__ = ["router"]

router = APIRouter(tags=["traces"])

MAX_SCAN = 10_000
"""The most traces one listing reads to fill its page with traces the key may see."""

TraceId = Annotated[
    str, Path(pattern=ID_PATTERN, max_length=255, description="The packet's trace id, ctx-...")
]


@router.get(
    "/v1/traces",
    response_model=list[wm.TraceSummary],
    summary="The most recent context traces",
    description="Newest first: each packet's request, the memories (id and revision) it "
    "held, how many candidates it left out, and its size. A trace of another agent's "
    "private namespace, or one holding a memory of it, is not listed, and the page is "
    "filled with the next ones the key may see.",
    responses=problem_responses(),
)
def recent(
    svc: Svc,
    who: Reader,
    subject: Annotated[
        str | None, Query(pattern=ID_PATTERN, max_length=255, description="Only this subject's.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="How many, newest first.")] = 20,
) -> list[JsonObject]:
    readable(who, subject)
    asked = limit
    while True:  # a packet across the tenant may hold what the key may not see: ask more
        found = trace.recent(
            svc.memory, tenant=who.tenant, subject=subject, limit=asked, namespaces=who.namespaces
        )
        subjects = _subjects_of(svc, who, [m for t in found for m in _held(t)])  # one read
        shown = [
            t
            for t in found
            if _may_see(who, t.get("subject"), [subjects.get(str(m)) for m in _held(t)])
        ]
        if len(shown) >= limit or len(found) < asked or asked >= MAX_SCAN:
            return shown[:limit]
        asked = min(asked * 4, MAX_SCAN)


def _held(summary: JsonObject) -> list[Any]:
    memories = summary.get("memories")
    return (
        [m["memory_id"] for m in memories if isinstance(m, dict)]
        if isinstance(memories, list)
        else []
    )


def _subjects_of(svc: Svc, who: Principal, memory_ids: list[Any]) -> dict[str, str]:
    """The subject of each memory still in the store, read at once."""
    with svc.memory.store.read() as unit:
        records = unit.get_records(who.tenant, sorted({str(m) for m in memory_ids}))
    return {memory_id: r.subject for memory_id, r in records.items()}


def _may_see(who: Principal, subject: object, held: list[str | None]) -> bool:
    """Whether a trace shows nothing of a namespace the key may not read: its subject
    and the subject of every memory it held (a packet across the tenant holds the
    namespaces its caller could read; ``None``: a memory no longer in the store)."""
    if isinstance(subject, str) and not who.may_read(subject):
        return False
    return all(s is None or who.may_read(s) for s in held)


def _trace_for(svc: Svc, who: Principal, trace_id: str) -> StoredTrace:
    stored = trace.get(svc.memory, trace_id, tenant=who.tenant, namespaces=who.namespaces)
    body = json.loads(stored.body)
    ids = [i["memory_id"] for i in body.get("items", ()) if "memory_id" in i]
    subjects = _subjects_of(svc, who, ids)
    if not _may_see(who, stored.subject, [subjects.get(str(m)) for m in ids]):
        raise TraceNotFoundError(f"no trace {trace_id!r}")  # answered as a missing one
    return stored


@router.get(
    "/v1/traces/{trace_id}",
    response_model=wm.StoredTrace,
    summary="A context trace as stored",
    description="Its JSON body (request, budget, routing, every item with memory id and "
    "revision, every candidate left out with its reason) and the sha256 of the text the "
    "model was given. A trace of another tenant is answered exactly as a missing one.",
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
    gated = decisions(svc.memory, tenant=who.tenant, trace_id=trace_id)
    return {
        **replayed.packet.to_dict(),
        "matches": replayed.matches,
        "revoked_since": list(replayed.revoked),
        "missing": list(replayed.missing),
        "gate_decisions": gated,  # type: ignore[dict-item]
    }
