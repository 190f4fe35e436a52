"""The tenant's shared document corpus (RAG): list, add, remove, search.

Documents are given as text (name, content, media type); they are shared by every
subject of the tenant and never become memories. Adding and removing change what
every agent of the tenant is shown, so they need an admin key; any key may list and
search.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path

from memledger import wire_models as wm
from memledger.api._auth import Admin, Reader, same_tenant
from memledger.api._bodies import DocumentIn, SearchIn
from memledger.api._extra import document_name
from memledger.api._problems import problem_responses
from memledger.api._services import Svc
from memledger.corpus import AddReport, CorpusHit, check_search
from memledger.errors import NotFoundError
from memledger.wire import JsonObject, document_to_dict, hit_to_dict

__all__ = ["router"]

router = APIRouter(tags=["corpus"])

DocumentName = Annotated[str, Path(max_length=4096, description="The document's name.")]


@router.get(
    "/v1/corpus/documents",
    response_model=list[wm.Document],
    summary="The tenant's shared documents",
    description="By name. An empty list when the tenant (or the server) has no corpus.",
    responses=problem_responses(),
)
def documents(svc: Svc, who: Reader) -> list[JsonObject]:
    corpus = svc.shelf.open(create=False)
    found = [] if corpus is None else corpus.documents(who.tenant)
    return [
        document_to_dict(d, named=("name", svc.shelf.name_of(who.tenant, d.path))) for d in found
    ]


def _outcome(report: AddReport) -> Literal["added", "replaced", "unchanged", "skipped"]:
    if report.added:
        return "added"
    if report.replaced:
        return "replaced"
    if report.unchanged:
        return "unchanged"
    return "skipped"


@router.post(
    "/v1/corpus/documents",
    response_model=wm.DocumentAdded,
    summary="Add or replace a shared document",
    description="Text, Markdown or HTML, given as `content`: parsed, chunked (tables and "
    "code blocks kept whole) and indexed; the same content again is left as it is, other "
    "content under the same name replaces it. A document that cannot be used is reported "
    "as `skipped` with the reason, and nothing of it is kept. It never becomes a memory or "
    "an instruction. A document over the server's size limit is refused (`limit_exceeded`, "
    "413) and nothing of it is kept. Admin keys only.",
    responses=problem_responses(),
)
def add_document(body: DocumentIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    svc.limits.check_document(len(body.content))
    name = document_name(body.name, body.media_type)
    report = svc.shelf.add(who.tenant, name, body.content)
    skipped = report.skipped[0] if report.skipped else None
    return {
        "name": name,
        "outcome": _outcome(report),
        "chunks": report.chunks,
        "skipped": None if skipped is None else skipped.reason,
        "detail": None if skipped is None else skipped.detail,
    }


@router.delete(
    "/v1/corpus/documents/{name:path}",
    status_code=204,
    summary="Remove a shared document",
    description="A document of another tenant is answered exactly as a missing one "
    "(`not_found`). Admin keys only.",
    responses=problem_responses(404),
)
def remove_document(name: DocumentName, svc: Svc, who: Admin) -> None:
    if not svc.shelf.remove(who.tenant, name):
        raise NotFoundError("no such document")


@router.post(
    "/v1/corpus/search",
    response_model=wm.SearchResult,
    summary="Search the tenant's shared documents",
    description="The chunks most relevant to `query` whose confidence reaches `floor`, best "
    "first, with a staleness marker when old; none (`message` says so) rather than the "
    "nearest chunk when nothing is relevant.",
    responses=problem_responses(),
)
def search(body: SearchIn, svc: Svc, who: Reader) -> JsonObject:
    same_tenant(who, body.tenant)
    check_search(body.query, tenant=who.tenant, k=body.k, floor=body.floor)
    corpus = svc.shelf.open(create=False)
    hits: list[CorpusHit] = []
    if corpus is not None:
        hits = corpus.search(body.query, tenant=who.tenant, k=body.k, floor=body.floor)
    now = svc.memory.clock.now()
    return {
        "query": body.query,
        "floor": body.floor,
        "found": len(hits),
        "message": None if hits else "no relevant document found",
        "hits": [
            hit_to_dict(h, now=now, named=("document", svc.shelf.name_of(who.tenant, h.chunk.path)))
            for h in hits
        ],
    }
