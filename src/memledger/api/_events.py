"""Source events in, their status out; the extraction queue; forgetting an event."""

from __future__ import annotations

import copy
import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError

from memledger import wire_models as wm
from memledger.api import _extra
from memledger.api._auth import Reader, Writer, same_tenant
from memledger.api._bodies import ProcessIn, ReasonIn, id_path
from memledger.api._consistency import token_response, write_token
from memledger.api._problems import body_faults, problem_responses
from memledger.api._services import Svc
from memledger.api._visibility import visible_jobs
from memledger.domain.faults import names, with_faults
from memledger.domain.keys import Principal
from memledger.domain.records import FamilyRevision, RevocationReceipt
from memledger.errors import (
    InvalidEventError,
    LimitExceededError,
    MemledgerError,
)
from memledger.wire import (
    EventIn,
    JsonObject,
    ParsedEvent,
    event_to_dict,
    forget_to_dict,
    job_to_dict,
    parse_event_json,
    parse_events_json,
    receipt_to_dict,
    required_fields,
    work_report_to_dict,
)

__all__ = ["revision_tokens", "router"]

router = APIRouter(tags=["events"])

EventId = Annotated[str, id_path("The event's id.")]
_DEFAULTS = ProcessIn()
"""``POST /v1/process`` without a body: run at most the default number of jobs."""

_ACTOR_NOTE = (
    "The event's tenant and actor come from the API key: `tenant` may be left out (another "
    "tenant than the key's is refused, 403), and `actor` is replaced by the key's actor, "
    "authenticated, with the key's grants, whatever the body says (it may be left out). "
    "A claim its actor has no grant for is kept as an `observation`, never as a setting."
)


async def raw_body(request: Request) -> bytes:
    """The request body as sent (the size limit is the app's middleware's)."""
    return await request.body()


RawBody = Annotated[bytes, Depends(raw_body)]


def _decode(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        message = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": message, "input": None}]
        ) from None


def _prepare(item: object, who: Principal) -> None:
    if not isinstance(item, dict):
        return  # the wire parser says what is wrong with it
    named = item.get("tenant")
    if isinstance(named, str):
        same_tenant(who, named)
    item.setdefault("actor", {"id": who.actor.id, "authenticated": True})


def parse_events(body: bytes, who: Principal, *, many: bool, most: int) -> list[ParsedEvent]:
    """The events of a body, each checked for its tenant before the wire parser runs;
    what is wrong with them placed in the body (the problem's ``errors``)."""
    with body_faults():
        return _parse_events(body, who, many=many, most=most)


def _missing(*, many: bool) -> InvalidEventError:
    """The error of an empty body: what it needs (``actor`` is the key's)."""
    needed = names([name for name in required_fields(EventIn) if name != "actor"])
    what = "a JSON list of event objects, each" if many else "one JSON event object"
    told = f"the body is missing; it needs {what} with {needed}"
    return with_faults(InvalidEventError(told), [((), told)])


def _parse_events(body: bytes, who: Principal, *, many: bool, most: int) -> list[ParsedEvent]:
    if not body.strip():
        raise _missing(many=many)
    data = _decode(body)
    if many:
        if not isinstance(data, list):
            raise InvalidEventError("expected a JSON list of events")
        if len(data) > most:
            raise LimitExceededError(f"a batch holds {len(data)} events; the limit is {most}")
    elif not isinstance(data, dict):
        raise InvalidEventError("expected one JSON event object")
    for item in data if isinstance(data, list) else [data]:
        _prepare(item, who)
    text = json.dumps(data)
    if many:
        return list(parse_events_json(text, tenant=who.tenant))
    return [parse_event_json(text, tenant=who.tenant)]


def _event_body(*, many: bool) -> dict[str, Any]:
    one = {"$ref": "#/components/schemas/EventIn"}
    schema = {"type": "array", "items": one, "minItems": 1} if many else one
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


@router.post(
    "/v1/events",
    response_model=wm.Receipt,
    summary="Ingest one source event",
    description="Append an event to the ledger and commit the claims it carries atomically "
    "(all or none), or, without `claims`, queue it for extraction (`outcome: queued`; run "
    "`POST /v1/process`). The same event again returns its stored receipt "
    "(`duplicate: true`); the same id with other content is `event_conflict` (409). The "
    "receipt's revision tokens are also in the `Memledger-Consistency` header: pass it to "
    f"a read to see this write. {_ACTOR_NOTE} It does not change business settings: only a "
    "`service` key may send `account_service` or `system` events.",
    responses={**problem_responses(409), **token_response()},
    openapi_extra=_event_body(many=False),
)
def ingest(svc: Svc, who: Writer, body: RawBody, response: Response) -> JsonObject:
    (parsed,) = parse_events(body, who, many=False, most=1)
    receipt = svc.memory.ingest_as(who, parsed.event, parsed.claims, complete=parsed.complete)
    write_token(response, receipt.revisions)
    return receipt_to_dict(receipt)


@router.post(
    "/v1/events/batch",
    response_model=list[wm.Receipt],
    summary="Ingest a list of source events",
    description="Every event is parsed and checked before any is written; then each is "
    "ingested as by `POST /v1/events`, in order, in a transaction of its own. The batch is "
    "not atomic across events: if one fails, those before it stay written and the problem "
    "names the failing event by position. Ingesting is idempotent, so sending the whole "
    "batch again is safe (the written ones come back as duplicates). The header carries the "
    f"merged token of all receipts. {_ACTOR_NOTE}",
    responses={**problem_responses(409), **token_response()},
    openapi_extra=_event_body(many=True),
)
def ingest_batch(svc: Svc, who: Writer, body: RawBody, response: Response) -> list[JsonObject]:
    parsed = parse_events(body, who, many=True, most=svc.max_batch)
    receipts = []
    for n, item in enumerate(parsed, 1):
        try:
            receipt = svc.memory.ingest_as(who, item.event, item.claims, complete=item.complete)
        except MemledgerError as exc:
            written = f"; the {n - 1} event(s) before it were written" if n > 1 else ""
            raise _renamed(exc, f"event #{n}: {exc}{written}") from exc
        receipts.append(receipt)
    write_token(response, [t for r in receipts for t in r.revisions])
    return [receipt_to_dict(r) for r in receipts]


def _renamed(exc: MemledgerError, message: str) -> MemledgerError:
    """``exc`` with another message and every attribute it had (a quota's
    ``retry_after``, an extractor failure's ``reason``)."""
    renamed = copy.copy(exc)
    renamed.args = (message,)
    return renamed


@router.get(
    "/v1/events/{event_id:path}",
    response_model=wm.EventStatus,
    summary="An event, its receipt and its extraction job",
    description="The event as the ledger holds it, its stored receipt (`null` until it is "
    "processed) and its extraction job, if it was queued. An id of another tenant is "
    "answered exactly as a missing one (`event_not_found`).",
    responses={**problem_responses(404), **token_response()},
)
def get_event(event_id: EventId, svc: Svc, who: Reader, response: Response) -> JsonObject:
    # another agent's private namespace is no row: answered exactly as a missing id
    event = svc.memory.event(event_id, tenant=who.tenant, namespaces=who.namespaces)
    receipt = _extra.outcome(svc.memory, event_id, tenant=who.tenant)
    job = None
    if receipt is not None and receipt.job_id is not None:
        job = _extra.job(svc.memory, receipt.job_id, tenant=who.tenant)
    if receipt is not None:
        write_token(response, receipt.revisions)
    return {
        "event": event_to_dict(event),
        "receipt": None if receipt is None else receipt_to_dict(receipt),
        "job": None if job is None else job_to_dict(job),
    }


def revision_tokens(receipt: RevocationReceipt) -> list[FamilyRevision]:
    """The revisions a revocation left its families at (its own and ``also``)."""
    found = [
        FamilyRevision(
            subject=receipt.subject,
            family=receipt.family,
            revision=receipt.revision,
            generation=receipt.generation,
        )
    ]
    for other in receipt.also:
        found.extend(revision_tokens(other))
    return found


@router.post(
    "/v1/events/{event_id:path}/forget",
    response_model=wm.Forget,
    summary="Forget a source event",
    description="Stop using everything the event gave: every record derived from it is "
    "revoked, in every subject and family, and no job, replay or re-extraction writes from "
    "it again. The event stays in the ledger (this is not erasure). Needs a write key, and "
    "acts only on what it may write: a record the event gave another agent's private "
    "namespace is left as it is and not named in the answer. The header carries the "
    "revisions the revocations left.",
    responses={**problem_responses(404), **token_response()},
)
def forget(
    event_id: EventId, body: ReasonIn, svc: Svc, who: Writer, response: Response
) -> JsonObject:
    same_tenant(who, body.tenant)
    event = svc.memory.event(event_id, tenant=who.tenant, namespaces=who.namespaces)
    who.require_write_to(event.subject)
    receipt = svc.memory.forget(
        event_id, tenant=who.tenant, reason=body.reason, may_change=who.may_write_to
    )
    write_token(response, [t for r in receipt.revocations for t in revision_tokens(r)])
    return forget_to_dict(receipt)


@router.post(
    "/v1/process",
    response_model=wm.WorkReport,
    summary="Run queued extraction jobs of the key's tenant",
    description="Runs at most `max_jobs` due jobs of the key's tenant, in this request, with "
    "the server's extractor (the offline rule-based one unless configured), and reports them "
    "by outcome. A failing extractor leaves its job queued for a retry (reported in "
    "`errors`); it never writes part of an event. Other tenants' jobs are never run. Needs a "
    "write key. The body may be left out: every field has its default.",
    responses=problem_responses(),
)
def process(svc: Svc, who: Writer, body: ProcessIn = _DEFAULTS) -> JsonObject:
    same_tenant(who, body.tenant)
    most = min(body.max_jobs, svc.max_process)
    report = svc.memory.process(extractor=svc.extractor, tenant=who.tenant, limit=most)
    stopped = "max_jobs" if report.jobs >= most else None
    return work_report_to_dict(report, mode="once", stopped_by=stopped)


@router.get(
    "/v1/jobs",
    response_model=list[wm.Job],
    summary="Extraction jobs of the key's tenant",
    description="Jobs not done yet (queued or failed), oldest first; `all=true` adds the "
    "done ones. Only jobs whose event the key may read are listed.",
    responses=problem_responses(),
)
def jobs(
    svc: Svc,
    who: Reader,
    include_done: Annotated[bool, Query(alias="all", description="Include done jobs.")] = False,
) -> list[JsonObject]:
    found = svc.memory.jobs(tenant=who.tenant, open_only=not include_done)
    return [job_to_dict(j) for j in visible_jobs(svc.memory.store, who, found)]
