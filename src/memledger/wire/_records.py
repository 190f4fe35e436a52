"""What is held, as JSON: records (:func:`record_to_dict`), a family's change log
(:func:`history_entry_to_dict`) and a family at a revision (:func:`revision_to_dict`, for
anything :class:`AtRevision`); source events, their receipts and claims
(:func:`event_to_dict`, :func:`receipt_to_dict`, :func:`claim_to_dict`); the review
queue (:func:`review_to_dict`, :func:`review_resolution_to_dict`,
:func:`possible_update_to_dict`); jobs and worker runs (:func:`job_to_dict`,
:func:`work_report_to_dict`); keys and families (:func:`key_to_dict`,
:func:`family_to_dict`); and a recall (:func:`recall_to_dict`)."""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

from memledger.domain.families import Family
from memledger.domain.keys import ApiKey
from memledger.domain.records import (
    Claim,
    FamilyRevision,
    HistoryEntry,
    Job,
    JsonValue,
    MemoryRecord,
    Receipt,
    ReviewItem,
    ReviewResolution,
    RevocationReceipt,
    SourceEvent,
)
from memledger.ports import FamilySlot
from memledger.read.missed import PossibleUpdate
from memledger.read.recall import RecallResult
from memledger.wire._json import JsonObject, grant_strings, iso_or_none, isoformat
from memledger.write.worker import JobOutcome, WorkReport

__all__ = [
    "AtRevision",
    "claim_to_dict",
    "event_to_dict",
    "family_to_dict",
    "history_entry_to_dict",
    "job_to_dict",
    "key_to_dict",
    "possible_update_to_dict",
    "recall_to_dict",
    "receipt_to_dict",
    "record_to_dict",
    "review_resolution_to_dict",
    "review_to_dict",
    "revision_to_dict",
    "work_report_to_dict",
]


def record_to_dict(record: MemoryRecord) -> JsonObject:
    """Every field of a memory record, plus ``authorised``."""
    return {
        "tenant": record.tenant,
        "memory_id": record.memory_id,
        "subject": record.subject,
        "family": record.family,
        "kind": record.kind,
        "proposed_kind": record.proposed_kind,
        "claim": record.claim,
        "value": record.value,
        "scope": record.scope,
        "status": record.status,
        "authorised": record.authorised,
        "source_event_id": record.source_event_id,
        "source_actor_id": record.source_actor_id,
        "source_channel": record.source_channel,
        "source_identity_authenticated": record.source_identity_authenticated,
        "scope_authorized": record.scope_authorized,
        "claim_faithful_to_source": record.claim_faithful_to_source,
        "operational_setting_confirmed": record.operational_setting_confirmed,
        "recorded_at": isoformat(record.recorded_at),
        "superseded_at": iso_or_none(record.superseded_at),
        "closed_by": record.closed_by,
        "valid_from": isoformat(record.valid_from),
        "valid_until": iso_or_none(record.valid_until),
        "revision": record.revision,
        "generation": record.generation,
        "confidence": record.confidence,
        "mentions": record.mentions,
        "grounding": record.grounding,
        "extractor": {
            "kind": record.extractor.kind,
            "name": record.extractor.name,
            "version": record.extractor.version,
            "model": record.extractor.model,
            "prompt_version": record.extractor.prompt_version,
        },
        "supersedes": record.supersedes,
        "exclusion": record.exclusion,
        "expires_at": iso_or_none(record.expires_at),
    }


def history_entry_to_dict(entry: HistoryEntry) -> JsonObject:
    return {
        "seq": entry.seq,
        "tenant": entry.tenant,
        **revision_to_dict(entry),
        "action": entry.action,
        "memory_id": entry.memory_id,
        "status": entry.status,
        "at": isoformat(entry.at),
        "cause": entry.cause,
        "note": entry.note,
    }


def receipt_to_dict(receipt: Receipt) -> JsonObject:
    """An event's receipt: outcome, revision tokens and what became of each claim."""
    return {
        "tenant": receipt.tenant,
        "event_id": receipt.event_id,
        "outcome": receipt.outcome,
        "duplicate": receipt.duplicate,
        "revisions": [revision_to_dict(token) for token in receipt.revisions],
        "results": [
            {
                "family": result.family,
                "scope": result.scope,
                "disposition": result.disposition,
                "memory_id": result.memory_id,
                "reason": result.reason,
            }
            for result in receipt.results
        ],
        "review_id": receipt.review_id,
        "job_id": receipt.job_id,
        "reason": receipt.reason,
    }


AtRevision: TypeAlias = FamilyRevision | RevocationReceipt | HistoryEntry | FamilySlot
"""What names a family at a revision and generation: a revision token, a revocation
receipt, an entry of a family's change log, a subject's family slot."""


def revision_to_dict(token: AtRevision) -> JsonObject:
    """A revision token: a family's revision and generation after a write (and the
    same four keys wherever a family's revision is shown)."""
    return {
        "subject": token.subject,
        "family": token.family,
        "revision": token.revision,
        "generation": token.generation,
    }


def event_to_dict(event: SourceEvent) -> JsonObject:
    """A source event in the input shape, with its tenant."""
    return {
        "tenant": event.tenant,
        "event_id": event.event_id,
        "subject": event.subject,
        "actor": {
            "id": event.actor.id,
            "authenticated": event.actor.authenticated,
            "grants": grant_strings(event.actor.grants),
        },
        "channel": event.channel,
        "occurred_at": isoformat(event.occurred_at),
        "text": event.text,
        "sequence": event.sequence,
        "stream": event.stream,
        "metadata": dict(event.metadata),
        "role": event.role,
    }


def claim_to_dict(claim: Claim) -> JsonObject:
    """A claim in the input shape, so it can be sent back as it is."""
    return {
        "family": claim.family,
        "kind": claim.kind,
        "statement": claim.statement,
        "value": claim.value,
        "scope": claim.scope,
        "subject": claim.subject,
        "valid_from": iso_or_none(claim.valid_from),
        "valid_until": iso_or_none(claim.valid_until),
        "grounding": claim.grounding,
        "confidence": claim.confidence,
        "polarity": claim.polarity,
        "expires_at": iso_or_none(claim.expires_at),
    }


def review_to_dict(item: ReviewItem) -> JsonObject:
    return {
        "tenant": item.tenant,
        "review_id": item.review_id,
        "event_id": item.event_id,
        "subject": item.subject,
        "reason": item.reason,
        "claims": [claim_to_dict(c) for c in item.claims],
        "created_at": isoformat(item.created_at),
        "resolved_at": iso_or_none(item.resolved_at),
        "resolution": item.resolution,
        "resolved_by": item.resolved_by,
        "resolution_reason": item.resolution_reason,
    }


def possible_update_to_dict(item: PossibleUpdate) -> JsonObject:
    """A current value, the later turn that may change it, and why it is listed."""
    return {
        "reason": item.reason,
        "current": record_to_dict(item.current),
        "turn": record_to_dict(item.turn),
    }


def review_resolution_to_dict(done: ReviewResolution) -> JsonObject:
    return {
        "review": review_to_dict(done.item),
        "receipt": None if done.receipt is None else receipt_to_dict(done.receipt),
        "duplicate": done.duplicate,
    }


def job_to_dict(job: Job) -> JsonObject:
    return {
        "tenant": job.tenant,
        "job_id": job.job_id,
        "event_id": job.event_id,
        "status": job.status,
        "generations": dict(job.generations),
        "created_at": isoformat(job.created_at),
        "attempts": job.attempts,
        "last_error": job.last_error,
        "next_attempt_at": iso_or_none(job.next_attempt_at),
        "lease_until": iso_or_none(job.lease_until),
    }


def work_report_to_dict(report: WorkReport, *, mode: str, stopped_by: str | None) -> JsonObject:
    """A worker run: jobs by outcome (every outcome named, zeros included) and errors."""
    return {
        "mode": mode,
        "stopped_by": stopped_by,
        "jobs": report.jobs,
        "outcomes": {o: report.outcomes.get(o, 0) for o in get_args(JobOutcome)},
        "errors": list(report.errors),
        "expired": report.expired,
        "indexed": report.indexed,
    }


def key_to_dict(key: ApiKey) -> JsonObject:
    """An API key without its token (which is never stored)."""
    return {
        "key_id": key.key_id,
        "tenant": key.tenant,
        "actor": key.actor_id,
        "principal": key.principal,
        "role": key.role,
        "grants": grant_strings(key.grants),
        "label": key.label,
        "created_at": isoformat(key.created_at),
        "revoked_at": iso_or_none(key.revoked_at),
        "last_used_at": iso_or_none(key.last_used_at),
        "reads": list(sorted(key.reads)),
    }


def family_to_dict(family: Family, *, source: Literal["code", "registered"]) -> JsonObject:
    """A claim family; ``source`` says whether the code's schema or the tenant's
    registration defines it."""
    kinds: list[JsonValue] = [str(k) for k in sorted(family.kinds)]
    return {
        "name": family.name,
        "kinds": kinds,
        "description": family.description,
        "own_say": family.own_say,
        "source": source,
    }


def recall_to_dict(result: RecallResult) -> JsonObject:
    """A recall: every item with its canonical record (best first; ``order: "time"``
    when the question asked for an order, to be shown by valid time), the exclusions
    and their reasons, and what the query was read as."""
    time = result.understood.time
    return {
        "query": result.query,
        "abstained": result.abstained,
        "mode": result.mode,
        "degraded": result.degraded,
        "index_lag": result.index_lag,
        "order": result.order,
        "understood": {
            "queries": list(result.understood.queries),
            "people": list(result.understood.people),
            "time": None
            if time is None
            else {
                "start": isoformat(time.start),
                "end": isoformat(time.end),
                "phrase": time.phrase,
            },
            "notes": list(result.understood.notes),
            "shape": {
                "across_sessions": result.understood.shape.across_sessions,
                "ordered": result.understood.shape.ordered,
                "to_agent": result.understood.shape.to_agent,
                "gathers": result.understood.shape.gathers,
                "dates": result.understood.shape.dates,
            },
            "unnamed": result.understood.unnamed,
        },
        "items": [
            {
                "memory_id": item.record.memory_id,
                "revision": item.record.revision,
                "source_event_id": item.record.source_event_id,
                "score": item.score,
                "relevance": item.relevance,
                "time_weight": item.time_weight,
                "confidence": item.confidence,
                "sources": list(item.sources),
                "context": list(item.context),
                "outdated_by": item.outdated_by,
                "possibly_outdated_by": item.possibly_outdated_by,
                "passage": None
                if item.passage is None
                else {
                    "text": item.passage.text,
                    "start": item.passage.start,
                    "end": item.passage.end,
                    "whole": item.passage.whole,
                },
                "record": record_to_dict(item.record),
            }
            for item in result.items
        ],
        "excluded": [{"memory_id": e.memory_id, "reason": e.reason} for e in result.excluded],
    }
