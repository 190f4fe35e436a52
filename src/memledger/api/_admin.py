"""Administration of a tenant: API keys, claim families, the review queue."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from memledger import wire_models as wm
from memledger.api._auth import Admin, Reader, same_tenant
from memledger.api._bodies import (
    ID_PATTERN,
    CompactIn,
    ConsolidateIn,
    EraseIn,
    FamilyIn,
    KeyIn,
    QuotasIn,
    ReasonIn,
    RetentionIn,
    RollbackIn,
    UndoIn,
    id_path,
)
from memledger.api._consistency import token_response, write_token
from memledger.api._problems import problem_responses
from memledger.api._services import Services, Svc
from memledger.domain.families import Family
from memledger.domain.keys import Principal
from memledger.domain.quotas import Quotas
from memledger.domain.records import ReviewDecision
from memledger.wire import (
    JsonObject,
    change_to_dict,
    compaction_to_dict,
    consolidation_to_dict,
    family_to_dict,
    key_to_dict,
    review_resolution_to_dict,
    review_to_dict,
    rollback_to_dict,
    undo_to_dict,
)

__all__ = ["router"]

router = APIRouter(tags=["admin"])

KeyId = Annotated[
    str, Path(pattern=r"^mlk_[0-9a-f]{12}$", description="The key's id, mlk_<12 hex>.")
]
ReviewId = Annotated[str, id_path("The item's id, rev-...")]


@router.post(
    "/v1/erasures",
    response_model=wm.Erasure,
    summary="Erase an event, a memory or a subject",
    description="Deletes what memory holds of exactly one of `event`, `memory_id` (and the "
    "event its words came from) or `subject` (its events, and the events that wrote about "
    "it), in every store: the ledger, the subject's traces, the index and the hot cache. Use "
    "stops first, as with forget; a replay of an erased event is refused (409). The receipt "
    "lists each store's status and time, ids only; a store that failed is marked `failed` "
    "and erasing the same target again finishes it. Admin keys only.",
    responses=problem_responses(404),
)
def erase(body: EraseIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    receipt = svc.memory.erase(
        tenant=who.tenant,
        event=body.event,
        memory_id=body.memory_id,
        subject=body.subject,
        reason=body.reason,
    )
    return receipt.to_dict()


@router.get(
    "/v1/erasures",
    response_model=list[wm.Erasure],
    summary="The tenant's erasure receipts",
    description="Oldest first. Admin keys only.",
    responses=problem_responses(),
)
def list_erasures(svc: Svc, who: Admin) -> list[JsonObject]:
    return [r.to_dict() for r in svc.memory.erasures(tenant=who.tenant)]


@router.post(
    "/v1/undo",
    response_model=wm.Undo,
    summary="Undo a revocation, a forgotten event, a correction or a rollback",
    description="What the change closed comes back as new records at the family's next "
    "revision, over the valid time no open record holds (records written since stay); what "
    "it wrote is closed; a revocation's sources are usable again. History keeps both. A "
    "revocation is not undone while a later revocation of the same family stands (409). "
    "Undoing the same change again returns the first undo (`duplicate`). Admin keys only; "
    "the header carries the revisions it left.",
    responses={**problem_responses(404, 409), **token_response()},
)
def undo(body: UndoIn, svc: Svc, who: Admin, response: Response) -> JsonObject:
    same_tenant(who, body.tenant)
    receipt = svc.memory.undo(body.change_id, tenant=who.tenant, reason=body.reason)
    write_token(response, list(receipt.revisions))
    return undo_to_dict(receipt)


@router.post(
    "/v1/memories/{memory_id}/restore",
    response_model=wm.Undo,
    summary="Undo the change that closed a memory",
    description="As `POST /v1/undo` of the revocation, forget, correction or rollback that "
    "closed it. Admin keys only.",
    responses={**problem_responses(404, 409), **token_response()},
)
def restore(
    memory_id: Annotated[str, id_path()],
    body: ReasonIn,
    svc: Svc,
    who: Admin,
    response: Response,
) -> JsonObject:
    same_tenant(who, body.tenant)
    receipt = svc.memory.restore(memory_id, tenant=who.tenant, reason=body.reason)
    write_token(response, list(receipt.revisions))
    return undo_to_dict(receipt)


@router.get(
    "/v1/change-log",
    response_model=list[wm.ChangeOut],
    summary="The tenant's recorded changes",
    description="Revocations, forgotten events, undone corrections, rollbacks and undos, "
    "newest first, each with the records it closed and opened per family (ids only). Admin "
    "keys only.",
    responses=problem_responses(),
)
def change_log(
    svc: Svc, who: Admin, limit: Annotated[int, Query(ge=1, le=10_000)] = 100
) -> list[JsonObject]:
    return [change_to_dict(c) for c in svc.memory.change_log(tenant=who.tenant, limit=limit)]


@router.post(
    "/v1/rollbacks",
    response_model=wm.Rollback,
    summary="Roll back an extractor version",
    description="Closes what extractor NAME@VERSION wrote (at or after `since`) as one "
    "recorded change, and restores what its records had closed; turns and what callers "
    "stated stay. `POST /v1/undo` with its `change_id` takes it back. With `rederive` the same "
    "events are extracted again, in the same change, by the service's extractor (the one "
    "`POST /v1/process` uses). Admin keys only.",
    responses={**problem_responses(), **token_response()},
)
def rollback(body: RollbackIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    again = None
    if body.rederive:
        from memledger.write.extract.rules import RuleExtractor

        again = svc.extractor if svc.extractor is not None else RuleExtractor()
    receipt = svc.memory.rollback(
        body.extractor,
        tenant=who.tenant,
        since=body.since,
        reason=body.reason,
        rederive_with=again,
    )
    return rollback_to_dict(receipt)


@router.post(
    "/v1/compactions",
    response_model=wm.Compaction,
    summary="Compact old sessions into summaries",
    description="Each session whose every turn is older than `older_than_days` (default 30) "
    "or `before`, with at least `min_turns` turns not yet covered, becomes one session summary "
    "record (at most `max_tokens`) that names the episodes it covers; they leave the index and "
    "stay in the store. Closing or erasing a covered turn dissolves or erases its summary. One "
    "recorded change that `POST /v1/undo` reverses; `dry_run` lists the sessions and writes "
    "nothing. Admin keys only.",
    responses={**problem_responses(), **token_response()},
)
def compact(body: CompactIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    receipt = svc.memory.compact(
        tenant=who.tenant,
        subject=body.subject,
        older_than=None if body.older_than_days is None else timedelta(days=body.older_than_days),
        before=body.before,
        min_turns=body.min_turns,
        max_tokens=body.max_tokens,
        dry_run=body.dry_run,
        reason=body.reason,
    )
    return compaction_to_dict(receipt)


@router.post(
    "/v1/consolidations",
    response_model=wm.Consolidation,
    summary="Merge near-duplicate records",
    description="Open records of one family and subject whose texts are at least `threshold` "
    "similar (same negation words, overlapping times) are merged into one, with the mentions "
    "summed and every source kept; one recorded change that `POST /v1/undo` reverses. "
    "`dry_run` lists the groups and writes nothing. Admin keys only.",
    responses={**problem_responses(), **token_response()},
)
def consolidate(body: ConsolidateIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    receipt = svc.memory.consolidate(
        tenant=who.tenant,
        subject=body.subject,
        family=body.family,
        threshold=body.threshold,
        dry_run=body.dry_run,
        reason=body.reason,
    )
    return consolidation_to_dict(receipt)


@router.get(
    "/v1/quotas",
    response_model=wm.QuotasOut,
    summary="The tenant's quotas",
    description="Open records, jobs queued per minute, recalls per second, tokens per "
    "packet; null: no limit. Admin keys only.",
    responses=problem_responses(),
)
def get_quotas(svc: Svc, who: Admin) -> JsonObject:
    return dict(svc.memory.quotas(tenant=who.tenant).to_dict())


@router.put(
    "/v1/quotas",
    response_model=wm.QuotasOut,
    summary="Set the tenant's quotas",
    description="Replaces them all (a field left out: no limit). Past a quota a request "
    "gets 429 `quota_exceeded` naming it and changes nothing; other service processes apply "
    "new quotas within 5 seconds. Admin keys only.",
    responses=problem_responses(),
)
def put_quotas(body: QuotasIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    chosen = Quotas(
        max_records=body.max_records,
        jobs_per_minute=body.jobs_per_minute,
        recalls_per_second=body.recalls_per_second,
        packet_tokens=body.packet_tokens,
    )
    return dict(svc.memory.set_quotas(chosen, tenant=who.tenant).to_dict())


@router.get(
    "/v1/retention",
    response_model=dict[str, int],
    summary="The tenant's retention per kind",
    description="Days the tenant keeps records of each kind that has a retention. Admin keys only.",
    responses=problem_responses(),
)
def get_retention(svc: Svc, who: Admin) -> dict[str, int]:
    return svc.memory.retention(tenant=who.tenant)


@router.put(
    "/v1/retention/{kind}",
    response_model=dict[str, int],
    summary="Set the retention of a kind",
    description="Keep the tenant's records of `kind` (episode, fact, preference, ...) `days` "
    "days from when each was written (null: no retention). Records already held get the "
    "earlier of their own expiry and that day at once, and leave every read when it comes; "
    "the worker erases them. A longer retention does not extend expiries already set. "
    "Answers the tenant's retention per kind. Admin keys only.",
    responses=problem_responses(),
)
def put_retention(
    kind: Annotated[str, Path(pattern=ID_PATTERN, max_length=64)],
    body: RetentionIn,
    svc: Svc,
    who: Admin,
) -> dict[str, int]:
    same_tenant(who, body.tenant)
    svc.memory.set_retention(kind, body.days, tenant=who.tenant)
    return svc.memory.retention(tenant=who.tenant)


@router.get(
    "/v1/keys",
    response_model=list[wm.Key],
    summary="The tenant's API keys",
    description="Revoked ones included, oldest first; never a token (only hashes are "
    "stored). Admin keys only.",
    responses=problem_responses(),
)
def list_keys(svc: Svc, who: Admin) -> list[JsonObject]:
    return [key_to_dict(k) for k in svc.memory.keys(who.tenant)]


@router.post(
    "/v1/keys",
    response_model=wm.KeyCreated,
    status_code=201,
    summary="Create an API key",
    description="A key of the admin key's tenant for `actor`, with `role` (read, write, "
    "admin), `principal` (user, agent, service: only a service's key may send setting "
    "channels) and `grants` (families of the tenant's schema, or '*'). The token is in this "
    "answer once and cannot be retrieved later. Admin keys only.",
    responses=problem_responses(),
)
def create_key(body: KeyIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    key, token = svc.memory.create_key(
        who.tenant,
        body.actor,
        principal=body.principal,
        role=body.role,
        grants=body.grants,
        label=body.label,
        reads=body.reads,
    )
    return {"key": key_to_dict(key), "token": token, "shown_once": True}


@router.post(
    "/v1/keys/{key_id}/revoke",
    response_model=wm.Key,
    summary="Revoke an API key",
    description="From now on it authenticates nothing; revoking it again is a no-op. A key "
    "of another tenant is answered exactly as a missing one. The tenant's last live admin "
    "key is not revoked (409 `last_admin_key`): create another first. Admin keys only.",
    responses=problem_responses(404, 409),
)
def revoke_key(key_id: KeyId, svc: Svc, who: Admin) -> JsonObject:
    return key_to_dict(svc.memory.revoke_key(who.tenant, key_id))


@router.get(
    "/v1/families",
    response_model=list[wm.Family],
    summary="The claim families of the tenant",
    description="The built-in ones (`source: code`) and those registered for the tenant "
    "(`source: registered`). Any key may read them: they are what claims may name.",
    responses=problem_responses(),
)
def list_families(svc: Svc, who: Reader) -> list[JsonObject]:
    schema = svc.memory.families_of(who.tenant)
    return [_family(svc, f) for f in sorted(schema.families.values(), key=lambda f: f.name)]


def _family(svc: Services, family: Family) -> JsonObject:
    """A family as JSON, ``source: code`` where the service's own schema defines it."""
    builtin = family.name in svc.memory.schema.families
    return family_to_dict(family, source="code" if builtin else "registered")


@router.post(
    "/v1/families",
    response_model=wm.Family,
    summary="Register a claim family for the tenant",
    description="Stored, so every process sees it; the same definition again is a no-op, "
    "another definition of an existing name is `conflict` (409). Other tenants never see "
    "it. Admin keys only.",
    responses=problem_responses(409),
)
def register_family(body: FamilyIn, svc: Svc, who: Admin) -> JsonObject:
    same_tenant(who, body.tenant)
    family = Family(
        name=body.name,
        kinds=frozenset(body.kinds),
        description=body.description,
        own_say=body.own_say,
    )
    return _family(svc, svc.memory.register_family(who.tenant, family))


@router.get(
    "/v1/reviews",
    response_model=list[wm.Review],
    summary="The review queue",
    description="Events whose batch waits for review: they changed nothing yet. `all=true` "
    "adds the resolved ones, with who decided and why.",
    responses=problem_responses(),
)
def list_reviews(
    svc: Svc,
    who: Reader,
    include_resolved: Annotated[
        bool, Query(alias="all", description="Include resolved items.")
    ] = False,
) -> list[JsonObject]:
    items = [
        i
        for i in svc.memory.reviews(tenant=who.tenant, open_only=not include_resolved)
        if who.may_read(i.subject)
    ]
    return [review_to_dict(i) for i in items]


def _resolve(
    svc: Services,
    who: Principal,
    review_id: str,
    decision: ReviewDecision,
    body: ReasonIn,
    out: Response,
) -> JsonObject:
    same_tenant(who, body.tenant)
    done = svc.memory.resolve_review(
        who.tenant, review_id, decision=decision, by=who.actor.id, reason=body.reason
    )
    if done.receipt is not None:
        write_token(out, done.receipt.revisions)
    return review_resolution_to_dict(done)


@router.post(
    "/v1/reviews/{review_id}/accept",
    response_model=wm.ReviewResolution,
    summary="Accept a held batch",
    description="Commits the batch as if the order rule had applied it (authority, "
    "revocations and limits are checked as usual), recording the key's actor as who "
    "decided and `reason` as why. A self-contradictory batch cannot be accepted, and "
    "rejecting an accepted item is `conflict` (409); the same decision again is "
    "acknowledged (`duplicate`). Admin keys only.",
    responses={**problem_responses(404, 409), **token_response()},
)
def accept(
    review_id: ReviewId, body: ReasonIn, svc: Svc, who: Admin, response: Response
) -> JsonObject:
    return _resolve(svc, who, review_id, "accept", body, response)


@router.post(
    "/v1/reviews/{review_id}/reject",
    response_model=wm.ReviewResolution,
    summary="Reject a held batch",
    description="Closes the item without committing anything, recording who and why. "
    "Admin keys only.",
    responses=problem_responses(404, 409),
)
def reject(
    review_id: ReviewId, body: ReasonIn, svc: Svc, who: Admin, response: Response
) -> JsonObject:
    return _resolve(svc, who, review_id, "reject", body, response)
