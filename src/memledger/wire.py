"""The JSON wire format of the edges: source events in, records and receipts out.

Input is parsed by strict pydantic models (unknown fields, naive datetimes and
type coercions such as ``"1"`` for a number are rejected) and converted to the
domain dataclasses, whose own validation then runs as well. Whatever is wrong,
the caller gets one :class:`~memledger.errors.InvalidInputError` whose message
is a single line naming the fields at fault. An event looks like::

    {"tenant": "acme", "event_id": "evt-1", "subject": "user-42",
     "actor": {"id": "user-42", "authenticated": true, "grants": ["delivery_preference"]},
     "channel": "chat", "sequence": 1, "occurred_at": "2026-10-02T09:00:00Z",
     "text": "Please deliver on Fridays.",
     "claims": [{"family": "delivery_preference", "kind": "preference",
                 "statement": "Wants deliveries on Fridays", "value": "friday",
                 "grounding": "deliver on Fridays"}]}

``"claims"`` absent or ``null`` means "store the event and queue extraction".
Output helpers turn domain values into JSON objects (datetimes as ISO 8601
strings in UTC, ``Z``-suffixed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeAlias, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError
from pydantic import JsonValue as WireValue
from pydantic_core import ErrorDetails

from memledger.domain.changes import Change, NotRestored, RollbackReceipt, UndoReceipt
from memledger.domain.families import Family
from memledger.domain.keys import ApiKey
from memledger.domain.records import (
    CHANNELS,
    KINDS,
    MAX_DEPTH,
    Actor,
    Channel,
    Claim,
    FamilyRevision,
    ForgetReceipt,
    Grant,
    HistoryEntry,
    Job,
    JsonValue,
    Kind,
    MemoryRecord,
    Receipt,
    ReviewItem,
    ReviewResolution,
    RevocationReceipt,
    Role,
    SourceEvent,
    require_text,
)
from memledger.errors import (
    InvalidClaimError,
    InvalidEventError,
    InvalidInputError,
    InvalidIntervalError,
    UnknownKindError,
)
from memledger.read.missed import PossibleUpdate
from memledger.read.recall import RecallResult
from memledger.write.compact import CompactionReceipt
from memledger.write.consolidate import ConsolidationReceipt
from memledger.write.rederive import Rederivation
from memledger.write.worker import JobOutcome, WorkReport

__all__ = [
    "ActorIn",
    "ClaimIn",
    "EventIn",
    "JsonObject",
    "ParsedEvent",
    "claim_to_dict",
    "event_to_dict",
    "family_to_dict",
    "history_entry_to_dict",
    "isoformat",
    "job_to_dict",
    "key_to_dict",
    "parse_event_json",
    "parse_events_json",
    "receipt_to_dict",
    "record_to_dict",
    "rederivation_to_dict",
    "review_resolution_to_dict",
    "review_to_dict",
    "revocation_to_dict",
    "work_report_to_dict",
]

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object as the output helpers build it."""

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)
_MAX_PROBLEMS = 5


# -- input ------------------------------------------------------------------------------


class ActorIn(BaseModel):
    """Who produced the event. ``grants`` are ``"family"`` or ``"family:scope"``."""

    model_config = _STRICT

    id: str
    authenticated: bool = False
    grants: tuple[str, ...] = ()


class ClaimIn(BaseModel):
    """A candidate claim the caller proposes for the event."""

    model_config = _STRICT

    family: str
    kind: Kind
    statement: str
    value: WireValue
    scope: str = "global"
    subject: str | None = None
    valid_from: AwareDatetime | None = None
    valid_until: AwareDatetime | None = None
    grounding: str | None = None
    confidence: float = 0.65
    polarity: Literal["assert", "retract"] = "assert"
    """``"retract"``: the claim says its value stopped being true."""
    expires_at: AwareDatetime | None = None
    """When memledger stops holding the record (a TTL; after the event's time)."""

    def to_claim(self) -> Claim:
        return Claim(
            family=self.family,
            kind=self.kind,
            statement=self.statement,
            value=self.value,
            scope=self.scope,
            subject=self.subject,
            valid_from=self.valid_from,
            valid_until=self.valid_until,
            grounding=self.grounding,
            confidence=self.confidence,
            polarity=self.polarity,
            expires_at=self.expires_at,
        )


class EventIn(BaseModel):
    """One source event, optionally with its complete candidate batch."""

    model_config = _STRICT

    tenant: str | None = None
    event_id: str
    subject: str
    actor: ActorIn
    channel: Channel
    occurred_at: AwareDatetime
    text: str
    sequence: int | None = None
    stream: str | None = None
    metadata: dict[str, WireValue] = Field(default_factory=dict)
    role: Role | None = None
    claims: tuple[ClaimIn, ...] | None = None
    complete: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedEvent:
    """What ``Memory.ingest`` needs: the event, its claims (``None``: queue extraction)
    and whether the batch is complete."""

    event: SourceEvent
    claims: tuple[Claim, ...] | None
    complete: bool = True


def parse_event_json(text: str, *, tenant: str | None = None) -> ParsedEvent:
    """Parse one JSON event object.

    ``tenant`` is the caller's tenant: it fills an event without ``"tenant"``,
    and an event naming another tenant is rejected.
    """
    data = _load(text)
    if isinstance(data, list):
        raise InvalidEventError("expected one JSON event object, got a list")
    return _parse_one(data, tenant=tenant, label=None)


def parse_events_json(text: str, *, tenant: str | None = None) -> tuple[ParsedEvent, ...]:
    """Parse a JSON event object or a non-empty list of them, all before any is used.

    Errors in a list name the event by position (``event #2``, counting from 1).
    """
    data = _load(text)
    if not isinstance(data, list):
        return (_parse_one(data, tenant=tenant, label=None),)
    if not data:
        raise InvalidEventError("the JSON list holds no events")
    return tuple(
        _parse_one(item, tenant=tenant, label=f"event #{n}") for n, item in enumerate(data, 1)
    )


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _load(text: str) -> object:
    if not text.strip():
        raise InvalidEventError("no input: expected a JSON event object or a list of them")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidEventError(
            f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise InvalidEventError(
            f"malformed JSON: nested too deeply (an event nests at most {MAX_DEPTH} levels)"
        ) from None
    except ValueError as exc:
        raise InvalidEventError(f"malformed JSON: {exc}") from None


_ENVELOPE = 3
"""Levels above a claim's value: the event object, its claims list, the claim."""


def _check_shape(data: dict[str, object], name: str) -> None:
    """Refuse what the strict models would misreport: a string holding a lone
    surrogate (a ``"\\ud800"`` escape without its pair) and nesting deeper than
    :data:`MAX_DEPTH` (the models stop at their own recursion limit). Iterative."""
    stack: list[tuple[object, int, tuple[str | int, ...]]] = [(data, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        claim = bool(path) and path[0] == "claims"
        error = InvalidClaimError if claim else InvalidEventError
        field = _where(path[:3] if claim else path[:1])
        if depth > MAX_DEPTH + _ENVELOPE:
            raise error(f"{name}: {field} nests more than {MAX_DEPTH} levels deep")
        if isinstance(item, str):
            require_text(item, f"{name}: {_where(path)}", error)
        elif isinstance(item, dict):
            for key, inner in item.items():
                require_text(key, f"{name}: a key of {_where(path)}", error)
                stack.append((inner, depth + 1, (*path, key)))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1, (*path, n)) for n, inner in enumerate(item))


def _parse_one(data: object, *, tenant: str | None, label: str | None) -> ParsedEvent:
    name = label or "event"
    if isinstance(data, dict) and isinstance(data.get("event_id"), str):
        name = f"{name} {data['event_id']!r}"
    if not isinstance(data, dict):
        raise InvalidEventError(f"{name}: expected a JSON object, got {_json_type(data)}")
    if name == "event":
        name = "invalid event"
    _check_shape(data, name)
    try:
        model = EventIn.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        raise _translate(exc, name) from None
    try:
        return _convert(model, tenant)
    except InvalidInputError as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _convert(model: EventIn, tenant: str | None) -> ParsedEvent:
    event = SourceEvent(
        tenant=_resolve_tenant(model.tenant, tenant, model.event_id),
        event_id=model.event_id,
        subject=model.subject,
        actor=Actor(
            id=model.actor.id,
            authenticated=model.actor.authenticated,
            grants=frozenset(Grant.parse(g) for g in model.actor.grants),
        ),
        channel=model.channel,
        occurred_at=model.occurred_at,
        text=model.text,
        sequence=model.sequence,
        stream=model.stream,
        metadata=model.metadata,
        role=model.role,
    )
    if model.claims is None:
        return ParsedEvent(event=event, claims=None, complete=model.complete)
    claims: list[Claim] = []
    for index, claim in enumerate(model.claims):
        try:
            claims.append(claim.to_claim())
        except InvalidInputError as exc:
            raise type(exc)(f"claims[{index}]: {exc}") from None
    return ParsedEvent(event=event, claims=tuple(claims), complete=model.complete)


def _resolve_tenant(given: str | None, caller: str | None, event_id: str) -> str:
    if given is None:
        if caller is None:
            raise InvalidEventError(
                'names no "tenant"; add it to the event or give a default tenant '
                "(CLI: --tenant or MEMLEDGER_TENANT)"
            )
        return caller
    if caller is not None and given != caller:
        raise InvalidEventError(f"names tenant {given!r} but the caller acts for tenant {caller!r}")
    return given


# -- translating pydantic errors --------------------------------------------------------


def _translate(exc: ValidationError, name: str) -> InvalidInputError:
    errors = exc.errors(include_url=False)
    problems = [_problem(e) for e in errors[:_MAX_PROBLEMS]]
    if len(errors) > _MAX_PROBLEMS:
        problems.append(f"and {len(errors) - _MAX_PROBLEMS} more")
    return _error_class(errors)(f"{name}: {'; '.join(problems)}")


def _error_class(errors: Sequence[ErrorDetails]) -> type[InvalidInputError]:
    if not all(len(e["loc"]) >= 2 and e["loc"][0] == "claims" for e in errors):
        return InvalidEventError
    if all(e["type"] == "literal_error" and e["loc"][-1] == "kind" for e in errors):
        return UnknownKindError
    if all(e["type"] == "timezone_aware" for e in errors):
        return InvalidIntervalError
    return InvalidClaimError


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "the event"


def _problem(error: ErrorDetails) -> str:
    where, kind, value = _where(error["loc"]), error["type"], error.get("input")
    if kind == "missing":
        return f"{where} is required"
    if kind == "extra_forbidden":
        return f"{where} is not a known field"
    if kind == "timezone_aware":
        return f"{where} {value!r} has no time zone; add 'Z' or an offset such as '+02:00'"
    if kind == "literal_error" and error["loc"][-1] == "kind":
        return f"{where}: unknown kind {value!r}; expected one of {sorted(KINDS)}"
    if kind == "literal_error" and error["loc"][-1] == "channel":
        return f"{where}: unknown channel {value!r}; expected one of {sorted(CHANNELS)}"
    message = error["msg"][:1].lower() + error["msg"][1:]
    if isinstance(value, dict | list):
        return f"{where}: {message}, got a JSON {_json_type(value)}"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{where}: {message}, got {shown}"


def _json_type(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


# -- output -----------------------------------------------------------------------------


def isoformat(value: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``: ``2026-10-02T09:00:00Z``."""
    return value.astimezone(UTC).isoformat().removesuffix("+00:00") + "Z"


def _iso(value: datetime | None) -> str | None:
    return None if value is None else isoformat(value)


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
        "superseded_at": _iso(record.superseded_at),
        "closed_by": record.closed_by,
        "valid_from": isoformat(record.valid_from),
        "valid_until": _iso(record.valid_until),
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
        "expires_at": _iso(record.expires_at),
    }


def receipt_to_dict(receipt: Receipt) -> JsonObject:
    """An event's receipt: outcome, revision tokens and what became of each claim."""
    return {
        "tenant": receipt.tenant,
        "event_id": receipt.event_id,
        "outcome": receipt.outcome,
        "duplicate": receipt.duplicate,
        "revisions": [_token(token) for token in receipt.revisions],
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


def revocation_to_dict(receipt: RevocationReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "subject": receipt.subject,
        "family": receipt.family,
        "revision": receipt.revision,
        "generation": receipt.generation,
        "revoked": list(receipt.revoked),
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
        "also": [revocation_to_dict(r) for r in receipt.also],
        "redacted": list(receipt.redacted),
        "change_id": receipt.change_id,
    }


def _token(token: FamilyRevision) -> JsonObject:
    return {
        "subject": token.subject,
        "family": token.family,
        "revision": token.revision,
        "generation": token.generation,
    }


def _not_restored(missing: Sequence[NotRestored]) -> list[JsonValue]:
    return [{"memory_id": n.memory_id, "why": n.why} for n in missing]


def undo_to_dict(receipt: UndoReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "undid": receipt.undid,
        "kind": receipt.kind,
        "restored": list(receipt.restored),
        "closed": list(receipt.closed),
        "not_restored": _not_restored(receipt.not_restored),
        "revisions": [_token(t) for t in receipt.revisions],
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
        "duplicate": receipt.duplicate,
        "unforgotten": list(receipt.unforgotten),
    }


def rollback_to_dict(receipt: RollbackReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "extractor": receipt.extractor,
        "since": _iso(receipt.since),
        "events": list(receipt.events),
        "closed": list(receipt.closed),
        "restored": list(receipt.restored),
        "not_restored": _not_restored(receipt.not_restored),
        "rederived": list(receipt.rederived),
        "held": list(receipt.held),
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
    }


def compaction_to_dict(receipt: CompactionReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "sessions": [
            {
                "subject": c.subject,
                "session": c.session,
                "summary": c.summary,
                "covers": list(c.covers),
                "start": isoformat(c.start),
                "end": isoformat(c.end),
            }
            for c in receipt.sessions
        ],
        "before": isoformat(receipt.before),
        "dry_run": receipt.dry_run,
        "at": isoformat(receipt.at),
    }


def consolidation_to_dict(receipt: ConsolidationReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "change_id": receipt.change_id,
        "merges": [
            {
                "subject": m.subject,
                "family": m.family,
                "survivor": m.survivor,
                "duplicates": list(m.duplicates),
                "into": m.into,
                "similarity": m.similarity,
            }
            for m in receipt.merges
        ],
        "families": receipt.families,
        "threshold": receipt.threshold,
        "dry_run": receipt.dry_run,
        "at": isoformat(receipt.at),
    }


def change_to_dict(change: Change) -> JsonObject:
    return {
        "tenant": change.tenant,
        "change_id": change.change_id,
        "kind": change.kind,
        "at": isoformat(change.at),
        "reason": change.reason,
        **change.body(),
        "undone_by": change.undone_by,
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
            "grants": [str(g) for g in sorted(event.actor.grants, key=str)],
        },
        "channel": event.channel,
        "occurred_at": isoformat(event.occurred_at),
        "text": event.text,
        "sequence": event.sequence,
        "stream": event.stream,
        "metadata": dict(event.metadata),
        "role": event.role,
    }


def forget_to_dict(receipt: ForgetReceipt) -> JsonObject:
    return {
        "tenant": receipt.tenant,
        "event_id": receipt.event_id,
        "revocations": [revocation_to_dict(r) for r in receipt.revocations],
        "acknowledged_at": isoformat(receipt.acknowledged_at),
        "reason": receipt.reason,
        "change_id": receipt.change_id,
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
        "valid_from": _iso(claim.valid_from),
        "valid_until": _iso(claim.valid_until),
        "grounding": claim.grounding,
        "confidence": claim.confidence,
        "polarity": claim.polarity,
        "expires_at": _iso(claim.expires_at),
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
        "resolved_at": _iso(item.resolved_at),
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


def key_to_dict(key: ApiKey) -> JsonObject:
    """An API key without its token (which is never stored)."""
    grants: list[JsonValue] = [str(g) for g in sorted(key.grants, key=str)]
    return {
        "key_id": key.key_id,
        "tenant": key.tenant,
        "actor": key.actor_id,
        "principal": key.principal,
        "role": key.role,
        "grants": grants,
        "label": key.label,
        "created_at": isoformat(key.created_at),
        "revoked_at": _iso(key.revoked_at),
        "last_used_at": _iso(key.last_used_at),
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


def history_entry_to_dict(entry: HistoryEntry) -> JsonObject:
    return {
        "seq": entry.seq,
        "tenant": entry.tenant,
        "subject": entry.subject,
        "family": entry.family,
        "revision": entry.revision,
        "generation": entry.generation,
        "action": entry.action,
        "memory_id": entry.memory_id,
        "status": entry.status,
        "at": isoformat(entry.at),
        "cause": entry.cause,
        "note": entry.note,
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
        "next_attempt_at": None if job.next_attempt_at is None else isoformat(job.next_attempt_at),
        "lease_until": None if job.lease_until is None else isoformat(job.lease_until),
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


def rederivation_to_dict(diff: Rederivation, *, tenant: str) -> JsonObject:
    """A re-derivation's dry-run diff."""
    return {
        "tenant": tenant,
        "subject": diff.subject,
        "extractor": diff.extractor,
        "events": diff.events,
        "dry_run": True,
        "added": [record_to_dict(r) for r in diff.added],
        "closed": [record_to_dict(r) for r in diff.closed],
        "changed": [
            {"before": record_to_dict(c.before), "after": record_to_dict(c.after)}
            for c in diff.changed
        ],
        "unchanged": diff.unchanged,
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
