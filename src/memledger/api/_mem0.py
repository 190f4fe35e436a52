"""A mem0-compatible subset of the HTTP API: the routes mem0's Python ``MemoryClient``
(``mem0ai`` 2.x) calls, over the short path (:mod:`memledger.api._memories`), so that
an application written for mem0's hosted Platform can point its client at
``memledger serve`` (``docs/mem0.md``).

The key is memledger's own, sent as mem0's clients send theirs
(``Authorization: Token mlk_...``): it decides the tenant and who may read and write
what, exactly as on the native routes. ``user_id`` names the user's memory,
``agent_id`` alone the agent's private namespace, ``run_id`` the session. Memories are
shown in mem0's shape; what makes them memledger's holds underneath: an update is a
correction (the old memory revoked, the new text said again as the user's turn), a
delete is a revocation, and a memory's history is memledger's, told in mem0's
``ADD``/``UPDATE``/``DELETE`` entries.

The routes of mem0's API this server does not offer answer 501 ``not_supported``,
naming what is not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Final

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from memledger.api._auth import Reader, Writer
from memledger.api._consistency import token_response, write_token
from memledger.api._events import revision_tokens
from memledger.api._mem0_shapes import (
    MAX_PAGE_SIZE,
    UPDATED,
    Mem0Added,
    Mem0AddIn,
    Mem0Change,
    Mem0Deleted,
    Mem0ListIn,
    Mem0Memory,
    Mem0Page,
    Mem0Ping,
    Mem0Search,
    Mem0SearchIn,
    Mem0Updated,
    Mem0UpdateIn,
    Step,
    history_steps,
    scope_of,
)
from memledger.api._memories import whose
from memledger.api._problems import REQUEST_PROBLEMS, problem_response, problem_responses
from memledger.api._reads import MemoryId
from memledger.api._services import Services, Svc
from memledger.domain.items import MemoryItem, item_of
from memledger.domain.keys import Principal
from memledger.domain.messages import ids_of, normalise
from memledger.domain.records import JsonValue, MemoryRecord, RevocationReceipt, SourceEvent
from memledger.errors import ConflictError, InvalidQueryError, MemoryNotFoundError, NotFoundError
from memledger.read.recall import MAX_K
from memledger.wire import JsonObject, isoformat
from memledger.write.messages import Added

__all__ = ["router"]

router = APIRouter(tags=["mem0"])

LISTED: Final = 1000
"""The newest memories of a scope that a list pages through."""

_EVENTS: Final = {"add": "ADD", "update": "UPDATE", "delete": "DELETE"}
"""A claim's decision as mem0's event; a repetition (``noop``) changed nothing."""


@router.get(
    "/v1/ping/",
    response_model=Mem0Ping,
    summary="mem0: check an API key",
    description="What mem0's client asks when it starts: whether the key is good, and "
    "the organisation and project it acts in. memledger has one isolation boundary, the "
    "key's tenant: it is named as both (mem0's project and organisation routes answer "
    "501). Keys name an actor, not an email: `user_email` is `null`.",
    responses=problem_responses(),
)
def ping(who: Reader) -> JsonObject:
    return {
        "status": "ok",
        "org_id": who.tenant,
        "project_id": who.tenant,
        "user_email": None,
        "tenant": who.tenant,
        "actor": who.actor.id,
    }


@router.post(
    "/v3/memories/add/",
    response_model=Mem0Added,
    summary="mem0: add messages",
    description="`POST /v1/memories` with mem0's names: `user_id`, `agent_id` and "
    "`run_id` (the session) at the top level or in `filters`, `timestamp` in Unix seconds. "
    "Synchronous: `results` lists what the turns changed (`ADD`, `UPDATE`, `DELETE`), "
    "`status` is `SUCCEEDED` unless a worker still has turns to extract (`PENDING`). The "
    "same messages sent again are a duplicate, with no results.",
    responses={**problem_responses(), **token_response()},
)
def add(body: Mem0AddIn, svc: Svc, who: Writer, response: Response) -> JsonObject:
    scope = scope_of(body.filters, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id)
    added = svc.memory.add_as(
        who,
        body.messages,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        session=scope.run_id,
        at=_moment(body.timestamp),
        metadata=body.metadata,
        extractor=svc.extractor,
        most_jobs=svc.max_process,
    )
    write_token(response, [t for r in added.receipts for t in r.revisions])
    return {
        "status": "PENDING" if added.pending else "SUCCEEDED",
        "message": "Memories added." if not added.duplicate else "Added before: nothing new.",
        "event_id": added.event_ids[-1],
        "event_ids": list(added.event_ids),
        "results": _changes(svc, who, added),
    }


@router.post(
    "/v3/memories/search/",
    response_model=Mem0Search,
    summary="mem0: search a memory",
    description="`POST /v1/memories/search` with mem0's `filters` and `top_k`: the "
    "memories nearest to `query`, best first, never a revoked, corrected-away or expired "
    "one. By default only those memledger's recall would hand out (`threshold: 0`: the "
    "nearest whatever their relevance).",
    responses=problem_responses(),
)
def search(body: Mem0SearchIn, svc: Svc, who: Reader) -> JsonObject:
    if body.threshold not in (None, 0):
        raise InvalidQueryError(
            "threshold must be left out (only relevant memories) or 0 (the nearest, "
            "whatever their relevance): memledger's scores are not on a 0-1 scale"
        )
    scope = scope_of(body.filters)
    user, agent = whose(who, scope.user_id, scope.agent_id)
    found = svc.memory.search(
        body.query,
        user_id=user,
        agent_id=agent,
        k=body.top_k if scope.run_id is None else MAX_K,
        tenant=who.tenant,
    )
    turns = _Turns(svc, who)
    kept = [
        item
        for item in found
        if (item.relevant or body.threshold == 0)
        and (scope.run_id is None or turns.session(item.record) == scope.run_id)
    ]
    return {
        "results": [
            {**turns.memory(i), "score": i.score, "relevant": bool(i.relevant)}
            for i in kept[: body.top_k]
        ]
    }


@router.post(
    "/v3/memories/",
    response_model=Mem0Page,
    summary="mem0: list a memory",
    description="`GET /v1/memories` with mem0's `filters`, a page at a time: what the "
    f"memory holds and is true now, newest first, among its newest {LISTED}. `page` and "
    "`page_size` come in the query (or the body); `next` and `previous` are the other "
    "pages' addresses.",
    responses=problem_responses(),
)
def list_memories(
    body: Mem0ListIn,
    svc: Svc,
    who: Reader,
    request: Request,
    page: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    page_size: Annotated[int | None, Query(ge=1, le=MAX_PAGE_SIZE)] = None,
) -> JsonObject:
    scope = scope_of(body.filters)
    user, agent = whose(who, scope.user_id, scope.agent_id)
    now = svc.memory.clock.now()
    turns = _Turns(svc, who)
    held = [
        item
        for item in svc.memory.get_all(
            user_id=user, agent_id=agent, tenant=who.tenant, limit=LISTED
        )
        if _true_now(item.record, now)
        and (scope.run_id is None or turns.session(item.record) == scope.run_id)
    ]
    number = page or body.page or 1
    size = page_size or body.page_size or 100
    start = (number - 1) * size

    def at(n: int) -> str:
        return str(request.url.include_query_params(page=n, page_size=size))

    return {
        "count": len(held),
        "next": at(number + 1) if start + size < len(held) else None,
        "previous": at(number - 1) if number > 1 else None,
        "results": [turns.memory(i) for i in held[start : start + size]],
    }


@router.get(
    "/v1/memories/{memory_id}/",
    response_model=Mem0Memory,
    summary="mem0: one memory",
    description="A memory that is current: a revoked (deleted or updated), corrected-away "
    "or expired one answers 404 here (its record and history stay readable on the native "
    "routes).",
    responses=problem_responses(404),
)
def get(memory_id: MemoryId, svc: Svc, who: Reader) -> JsonObject:
    return _Turns(svc, who).memory(item_of(_current(svc, who, memory_id)))


@router.put(
    "/v1/memories/{memory_id}/",
    response_model=Mem0Updated,
    summary="mem0: update a memory",
    description="A correction: the memory is revoked (reason `updated`) and `text` is "
    "said again as a turn of the same user, in the same session, with the old turn's "
    "metadata unless `metadata` is given; what it says is extracted as any turn is. The "
    "answer is the memory that takes the old one's place (a new id; `replaces` names the "
    "old one): the new value of its family, else the new turn's words. Nothing is "
    "overwritten: both stay in the history. If the new text cannot be written (a quota, "
    "a limit, an extraction that did not run), the update is taken back (the old value "
    "is restored, as a new record) and the error answered.",
    responses={**problem_responses(404, 409), **token_response()},
)
def update(
    memory_id: MemoryId, body: Mem0UpdateIn, svc: Svc, who: Writer, response: Response
) -> JsonObject:
    record = _current(svc, who, memory_id)
    who.require_write_to(record.subject)
    normalise(body.text)  # refused before anything changes
    turns = _Turns(svc, who)
    user, agent = ids_of(record.subject)
    session, metadata = turns.session(record), turns.metadata(record)
    revoked = svc.memory.revoke(
        memory_id, tenant=who.tenant, reason=UPDATED, may_change=who.may_write_to
    )
    added: Added | None = None
    try:
        added = svc.memory.add_as(
            who,
            [{"role": "user", "content": body.text}],
            user_id=user,
            agent_id=agent,
            session=session,
            at=_moment(body.timestamp) or svc.memory.clock.now(),
            metadata=metadata if body.metadata is None else body.metadata,
            extractor=svc.extractor,
            most_jobs=svc.max_process,
        )
        said = _successor(added, record.family)
    except Exception:
        _take_back(svc, who, revoked, added)
        raise
    write_token(
        response, [*revision_tokens(revoked), *(t for r in added.receipts for t in r.revisions)]
    )
    return {**turns.memory(said), "replaces": memory_id}


@router.delete(
    "/v1/memories/{memory_id}/",
    response_model=Mem0Deleted,
    summary="mem0: delete a memory",
    description="`DELETE /v1/memories/{memory_id}`: a revocation (reason `deleted`); "
    "nothing brings it back and its history keeps it. A memory that is not current "
    "answers 404. `delete_linked=true` is refused: the values a memory replaced are "
    "closed already.",
    responses={**problem_responses(404), **token_response()},
)
def delete(
    memory_id: MemoryId,
    svc: Svc,
    who: Writer,
    response: Response,
    delete_linked: Annotated[bool, Query(description="`true` is refused.")] = False,
) -> JsonObject:
    if delete_linked:
        raise InvalidQueryError(
            "delete_linked=true is not supported: the values a memory replaced are closed "
            "already, and revoking it cuts its words from the turn they came from"
        )
    _current(svc, who, memory_id)  # only a memory true now is one mem0 can delete
    receipt = svc.memory.revoke_as(who, memory_id, reason="deleted")
    write_token(response, revision_tokens(receipt))
    return {"message": "Memory deleted successfully!"}


@router.get(
    "/v1/memories/{memory_id}/history/",
    response_model=list[Mem0Change],
    summary="mem0: a memory's history",
    description="`GET /v1/memories/{memory_id}/history` in mem0's entries, oldest first: "
    "`ADD` (a value written), `UPDATE` (a value replaced by a correction or an update: "
    "`old_memory`, `new_memory`), `DELETE` (retracted, revoked or erased); `input` is the "
    "turn that made the step. A deleted memory's history stays readable.",
    responses=problem_responses(404),
)
def history(memory_id: MemoryId, svc: Svc, who: Reader) -> list[JsonObject]:
    asked = svc.memory.get(memory_id, tenant=who.tenant, namespaces=who.namespaces)
    turns = _Turns(svc, who)
    return [
        _entry(step, turns.record(step.change.memory_id) or asked, turns)
        for step in history_steps(svc.memory.history(memory_id, tenant=who.tenant))
    ]


# -- what the answers are made of ---------------------------------------------------------------


class _Turns:
    """The records and source events one answer shows, each looked up once: the
    session and metadata a memory carries are those of the turn it came from."""

    def __init__(self, svc: Services, who: Principal) -> None:
        self._svc = svc
        self._who = who
        self._events: dict[str, SourceEvent | None] = {}
        self._records: dict[str, MemoryRecord | None] = {}

    def record(self, memory_id: str) -> MemoryRecord | None:
        if memory_id not in self._records:
            try:
                self._records[memory_id] = self._svc.memory.get(
                    memory_id, tenant=self._who.tenant, namespaces=self._who.namespaces
                )
            except NotFoundError:
                self._records[memory_id] = None
        return self._records[memory_id]

    def event(self, record: MemoryRecord) -> SourceEvent | None:
        found = record.source_event_id
        if found not in self._events:
            try:
                self._events[found] = self._svc.memory.event(
                    found, tenant=self._who.tenant, namespaces=self._who.namespaces
                )
            except NotFoundError:  # forgotten or erased: its words are gone
                self._events[found] = None
        return self._events[found]

    def session(self, record: MemoryRecord) -> str | None:
        event = self.event(record)
        given = None if event is None else event.metadata.get("session")
        return given if isinstance(given, str) else record.session

    def metadata(self, record: MemoryRecord) -> dict[str, JsonValue] | None:
        event = self.event(record)
        if event is None:
            return None
        return {name: value for name, value in event.metadata.items() if name != "session"}

    def memory(self, item: MemoryItem) -> JsonObject:
        """``item`` in mem0's shape."""
        record = item.record
        session = self.session(record)
        expires = record.expires_at
        return {
            "id": item.id,
            "memory": item.memory,
            "user_id": item.user_id,
            "agent_id": item.agent_id,
            "app_id": None,
            "run_id": session,
            "session_id": session,
            "metadata": self.metadata(record),
            "categories": [item.family],
            "created_at": isoformat(item.created_at),
            "updated_at": isoformat(item.created_at),
            "expiration_date": None if expires is None else expires.date().isoformat(),
        }


def _entry(step: Step, record: MemoryRecord, turns: _Turns) -> JsonObject:
    change = step.change
    event = turns.event(record)
    item = item_of(record)
    at = isoformat(change.at)
    mark = f"{change.memory_id}|{change.action}|{at}|{change.cause}"
    return {
        "id": "hst-" + hashlib.sha256(mark.encode()).hexdigest()[:24],
        "memory_id": change.memory_id,
        "input": [] if event is None else [{"role": event.role or "user", "content": event.text}],
        "old_memory": step.old,
        "new_memory": step.new,
        "event": step.event,
        "user_id": item.user_id,
        "agent_id": item.agent_id,
        "app_id": None,
        "session_id": turns.session(record),
        "categories": [record.family],
        "metadata": turns.metadata(record),
        "created_at": at,
        "updated_at": at,
    }


def _changes(svc: Services, who: Principal, added: Added) -> list[JsonValue]:
    """What the turns of ``added`` changed, as mem0's add results (none on a retry)."""
    shown = {m.id: m.memory for m in added.memories}
    results: list[JsonValue] = []
    for receipt in added.receipts:
        if receipt.duplicate:
            continue
        for claim in receipt.results:
            event = _EVENTS.get(claim.decision or "add")
            if event is None or claim.memory_id is None:
                continue
            if claim.disposition not in ("current", "observation"):
                continue
            text = shown.get(claim.memory_id)
            if text is None:
                text = svc.memory.get(
                    claim.memory_id, tenant=who.tenant, namespaces=who.namespaces
                ).claim
            results.append(
                {"id": claim.memory_id, "event": event, "memory": text, "data": {"memory": text}}
            )
    return results


def _take_back(
    svc: Services, who: Principal, revoked: RevocationReceipt, added: Added | None
) -> None:
    """Undo an update that could not be written whole: the new turn is forgotten (so
    that no worker extracts it later) and the old value restored (as a new record)."""
    fresh = [] if added is None else [r.event_id for r in added.receipts if not r.duplicate]
    for event_id in fresh:
        svc.memory.forget(event_id, tenant=who.tenant, reason="update failed")
    if revoked.change_id is not None:
        svc.memory.undo(revoked.change_id, tenant=who.tenant, reason="update failed")


def _successor(added: Added, family: str) -> MemoryItem:
    """The memory an update's turn left in place of one of ``family``: the new value of
    that family, else the turn's own words, else what else was read from them."""
    mine = [m for m in added.memories if m.source_event_id == added.event_ids[-1]]
    for item in sorted(mine, key=lambda m: (m.family != family, m.kind != "episode")):
        return item
    raise ConflictError(
        "the update's text left no memory (its extraction did not run: a quota, the "
        "extractor failing, a full queue; or the same words were added for this user at "
        "this instant): the update is taken back and the old value is current again"
    )


def _current(svc: Services, who: Principal, memory_id: str) -> MemoryRecord:
    """A memory of the key's tenant, in a namespace it reads, that is current now;
    any other is answered as a missing one."""
    record = svc.memory.get(memory_id, tenant=who.tenant, namespaces=who.namespaces)
    if not _true_now(record, svc.memory.clock.now()):
        raise MemoryNotFoundError(f"no current memory {memory_id!r} for tenant {who.tenant!r}")
    return record


def _true_now(record: MemoryRecord, now: datetime) -> bool:
    """Held now and true now: not revoked, corrected away, expired or past its window."""
    return (
        record.status == "active"
        and record.open_at(now)
        and (record.valid_until is None or now < record.valid_until)
    )


def _moment(seconds: int | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


# -- the rest of mem0's API ---------------------------------------------------------------------

_EVERY: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")
_NOT_OFFERED: Final[tuple[tuple[str, tuple[str, ...], str], ...]] = (
    ("/v1/memories/", ("DELETE",), "deleting every memory of a scope (delete_all)"),
    ("/v1/batch/", ("PUT", "DELETE"), "batch update and batch delete"),
    ("/v1/entities/", ("GET",), "listing users, agents and runs (users)"),
    ("/v2/entities/{entity_type}/{entity_id}/", ("GET", "DELETE"), "entities (delete_users)"),
    ("/v2/entities/{entity_type}/{entity_id}/profile/", ("GET",), "memory profiles"),
    ("/v2/profiles/{rest:path}", _EVERY, "memory profiles"),
    ("/v1/exports/", ("POST",), "memory exports"),
    ("/v1/exports/get/", ("POST",), "memory exports"),
    ("/v1/summary/", ("POST",), "summaries"),
    ("/v1/feedback/", ("POST",), "feedback on memories"),
    ("/v1/event/{event_id}/", ("GET",), "add events (adds are synchronous here)"),
    ("/api/v1/orgs/{rest:path}", _EVERY, "organisations and projects"),
    ("/api/v1/webhooks/{rest:path}", _EVERY, "webhooks"),
)
"""Routes of mem0's API that mem0's clients call and this server does not offer."""


def _refusal(what: str) -> Callable[[Request], JSONResponse]:
    detail = (
        f"mem0's {what} is not supported by memledger's mem0-compatible API; "
        "docs/mem0.md lists what is."
    )

    def refuse(request: Request) -> JSONResponse:
        return problem_response(REQUEST_PROBLEMS["not_supported"], detail, request=request)

    return refuse


for _path, _methods, _what in _NOT_OFFERED:
    router.add_api_route(_path, _refusal(_what), methods=list(_methods), include_in_schema=False)
