"""Liveness, readiness and who a key is."""

from __future__ import annotations

import logging
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from memledger import wire_models as wm
from memledger.api._auth import Reader
from memledger.api._problems import REQUEST_PROBLEMS, problem_response, problem_responses
from memledger.api._services import Svc
from memledger.domain.records import JsonValue
from memledger.errors import MemledgerError
from memledger.wire import JsonObject

__all__ = ["Health", "router"]

router = APIRouter()

_PROBE = "readyz"
log = logging.getLogger("memledger.api")


class Health(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    status: Literal["ok"]


@router.get(
    "/healthz",
    response_model=Health,
    tags=["health"],
    summary="Liveness",
    description="The process answers. No key needed; reads nothing.",
    responses=problem_responses(auth=False),
)
def healthz() -> JsonObject:
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=Health,
    tags=["health"],
    summary="Readiness",
    description="The store answers a read (else a 503 problem). No key needed; no data of "
    "any tenant is read or shown.",
    responses=problem_responses(auth=False),
)
def readyz(svc: Svc) -> JsonObject | JSONResponse:
    try:
        svc.memory.families(_PROBE, tenant=_PROBE)
    except MemledgerError as exc:
        log.warning("not ready: %s: %s", type(exc).__name__, exc)
        return problem_response(REQUEST_PROBLEMS["not_ready"])
    return {"status": "ok"}


@router.get(
    "/v1/me",
    response_model=wm.WhoAmI,
    tags=["admin"],
    summary="Who this API key acts as",
    description="The key's tenant, actor, role and grants: every request made with it acts "
    "so, whatever its body says.",
    responses=problem_responses(),
)
def me(who: Reader) -> JsonObject:
    return {
        "key_id": who.key_id,
        "tenant": who.tenant,
        "actor": who.actor.id,
        "principal": who.kind,
        "role": who.role,
        "grants": [str(g) for g in sorted(who.actor.grants, key=str)],
        "namespace": who.own_namespace,
        "reads": list[JsonValue](sorted(who.reads)),
    }
