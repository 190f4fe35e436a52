"""The subjects of a tenant, listed in order and paged: what the web page picks from."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from memledger.api._auth import Reader
from memledger.api._bodies import id_query
from memledger.api._problems import problem_responses
from memledger.api._services import Svc
from memledger.wire import JsonObject, isoformat
from memledger.wire_models import SubjectPage, SubjectSummary

__all__ = ["SubjectPage", "SubjectSummary", "router"]

router = APIRouter(tags=["reads"])

MAX_LIMIT = 1000
"""The most subjects one page holds (``Memory.subjects``' own bound)."""


@router.get(
    "/v1/subjects",
    response_model=SubjectPage,
    summary="The subjects of the key's tenant",
    description="Every subject with events or family slots, in order, each with its family "
    "and event counts and when it last moved. `prefix` narrows the list; `after` (the "
    "`next` of the previous page) pages it. Only the key's tenant is listed: another "
    "tenant's subjects, and subjects of another agent's private namespace the key may not "
    "read, are never named, counted or handed as a cursor.",
    responses=problem_responses(),
)
def subjects(
    svc: Svc,
    who: Reader,
    prefix: Annotated[str | None, id_query("Only subjects whose name starts with this.")] = None,
    after: Annotated[
        str | None, id_query("Subjects after this one (the previous page's `next`).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Subjects per page.")] = 50,
) -> JsonObject:
    # one more than asked says whether another page follows (within the store's bound)
    found = svc.memory.subjects(
        tenant=who.tenant,
        prefix=prefix or "",
        after=after,
        limit=min(limit + 1, MAX_LIMIT),
        namespaces=who.namespaces,  # filtered before paging: `next` names a visible one
    )
    page = found[:limit]
    more = len(found) > limit or len(found) == MAX_LIMIT
    return {
        "subjects": [
            {
                "subject": s.subject,
                "families": s.families,
                "events": s.events,
                "last_at": None if s.last_at is None else isoformat(s.last_at),
            }
            for s in page
        ],
        "next": page[-1].subject if more and page else None,
    }
