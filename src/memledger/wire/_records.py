"""What is held, as JSON: records (:func:`record_to_dict`), a family's change log
(:func:`history_entry_to_dict`) and a family at a revision (:func:`revision_to_dict`, for
anything :class:`AtRevision`); source events, their receipts and claims
(:func:`event_to_dict`, :func:`receipt_to_dict`, :func:`claim_to_dict`); the review
queue (:func:`review_to_dict`, :func:`review_resolution_to_dict`,
:func:`possible_update_to_dict`); jobs and worker runs (:func:`job_to_dict`,
:func:`work_report_to_dict`); keys and families (:func:`key_to_dict`,
:func:`family_to_dict`); and a recall (:func:`recall_to_dict`).

Each type's object is declared once, as :class:`~memledger.wire._json.Fields` beside
its function: its keys in order, and how the keys that are not a plain attribute are
made."""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

from memledger.domain.families import Family
from memledger.domain.keys import ApiKey
from memledger.domain.passages import Passage
from memledger.domain.records import (
    Actor,
    Claim,
    ClaimResult,
    ExtractorInfo,
    FamilyRevision,
    HistoryEntry,
    Job,
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
from memledger.read.results import Excluded, Recalled
from memledger.read.understand import Shape, Understood
from memledger.read.when import TimeFocus
from memledger.wire._json import Fields, JsonObject, grant_strings
from memledger.write.worker import JobOutcome, WorkReport

__all__ = [
    "REVISION_KEYS",
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

AtRevision: TypeAlias = FamilyRevision | RevocationReceipt | HistoryEntry | FamilySlot
"""What names a family at a revision and generation: a revision token, a revocation
receipt, an entry of a family's change log, a subject's family slot."""

REVISION_KEYS = "subject family revision generation"
"""The keys of a revision token, which stand in this order wherever a family's revision
is shown (a change-log entry, a revocation receipt)."""

_REVISION: Fields[AtRevision] = Fields(REVISION_KEYS)


def revision_to_dict(token: AtRevision) -> JsonObject:
    """A revision token: a family's revision and generation after a write (and the
    same four keys wherever a family's revision is shown)."""
    return _REVISION(token)


_EXTRACTOR: Fields[ExtractorInfo] = Fields("kind name version model prompt_version")
_RECORD: Fields[MemoryRecord] = Fields(
    "tenant memory_id subject family kind proposed_kind claim value scope status authorised",
    "source_event_id source_actor_id source_channel source_identity_authenticated",
    "scope_authorized claim_faithful_to_source operational_setting_confirmed",
    "recorded_at superseded_at closed_by valid_from valid_until revision generation",
    "confidence mentions grounding extractor supersedes exclusion expires_at",
    extractor=lambda r: _EXTRACTOR(r.extractor),
)


def record_to_dict(record: MemoryRecord) -> JsonObject:
    """Every field of a memory record, plus ``authorised``."""
    return _RECORD(record)


_HISTORY_ENTRY: Fields[HistoryEntry] = Fields(
    "seq tenant", REVISION_KEYS, "action memory_id status at cause note"
)


def history_entry_to_dict(entry: HistoryEntry) -> JsonObject:
    return _HISTORY_ENTRY(entry)


_CLAIM_RESULT: Fields[ClaimResult] = Fields("family scope disposition memory_id reason")
_RECEIPT: Fields[Receipt] = Fields(
    "tenant event_id outcome duplicate revisions results review_id job_id reason",
    revisions=lambda r: _REVISION.each(r.revisions),
    results=lambda r: _CLAIM_RESULT.each(r.results),
)


def receipt_to_dict(receipt: Receipt) -> JsonObject:
    """An event's receipt: outcome, revision tokens and what became of each claim."""
    return _RECEIPT(receipt)


_ACTOR: Fields[Actor] = Fields("id authenticated grants", grants=lambda a: grant_strings(a.grants))
_EVENT: Fields[SourceEvent] = Fields(
    "tenant event_id subject actor channel occurred_at text sequence stream metadata role",
    actor=lambda e: _ACTOR(e.actor),
)


def event_to_dict(event: SourceEvent) -> JsonObject:
    """A source event in the input shape, with its tenant."""
    return _EVENT(event)


_CLAIM: Fields[Claim] = Fields(
    "family kind statement value scope subject valid_from valid_until grounding confidence",
    "polarity expires_at",
)


def claim_to_dict(claim: Claim) -> JsonObject:
    """A claim in the input shape, so it can be sent back as it is."""
    return _CLAIM(claim)


_REVIEW: Fields[ReviewItem] = Fields(
    "tenant review_id event_id subject reason claims created_at resolved_at resolution",
    "resolved_by resolution_reason",
    claims=lambda i: _CLAIM.each(i.claims),
)


def review_to_dict(item: ReviewItem) -> JsonObject:
    return _REVIEW(item)


_POSSIBLE_UPDATE: Fields[PossibleUpdate] = Fields(
    "reason current turn",
    current=lambda p: _RECORD(p.current),
    turn=lambda p: _RECORD(p.turn),
)


def possible_update_to_dict(item: PossibleUpdate) -> JsonObject:
    """A current value, the later turn that may change it, and why it is listed."""
    return _POSSIBLE_UPDATE(item)


_REVIEW_RESOLUTION: Fields[ReviewResolution] = Fields(
    "review receipt duplicate",
    review=lambda d: _REVIEW(d.item),
    receipt=lambda d: _RECEIPT.maybe(d.receipt),
)


def review_resolution_to_dict(done: ReviewResolution) -> JsonObject:
    return _REVIEW_RESOLUTION(done)


_JOB: Fields[Job] = Fields(
    "tenant job_id event_id status generations created_at attempts last_error",
    "next_attempt_at lease_until",
)


def job_to_dict(job: Job) -> JsonObject:
    return _JOB(job)


_WORK_REPORT: Fields[WorkReport] = Fields(
    "jobs outcomes errors expired indexed",
    outcomes=lambda r: {o: r.outcomes.get(o, 0) for o in get_args(JobOutcome)},
)


def work_report_to_dict(report: WorkReport, *, mode: str, stopped_by: str | None) -> JsonObject:
    """A worker run: jobs by outcome (every outcome named, zeros included) and errors."""
    return {"mode": mode, "stopped_by": stopped_by, **_WORK_REPORT(report)}


_KEY: Fields[ApiKey] = Fields(
    "key_id tenant actor principal role grants label created_at revoked_at last_used_at reads",
    actor=lambda k: k.actor_id,
    grants=lambda k: grant_strings(k.grants),
    reads=lambda k: list(sorted(k.reads)),
)


def key_to_dict(key: ApiKey) -> JsonObject:
    """An API key without its token (which is never stored)."""
    return _KEY(key)


_FAMILY: Fields[Family] = Fields(
    "name kinds description own_say", kinds=lambda f: [str(k) for k in sorted(f.kinds)]
)


def family_to_dict(family: Family, *, source: Literal["code", "registered"]) -> JsonObject:
    """A claim family; ``source`` says whether the code's schema or the tenant's
    registration defines it."""
    return {**_FAMILY(family), "source": source}


_TIME: Fields[TimeFocus] = Fields("start end phrase")
_SHAPE: Fields[Shape] = Fields("across_sessions ordered to_agent gathers dates")
_UNDERSTOOD: Fields[Understood] = Fields(
    "queries people time notes shape unnamed",
    time=lambda u: _TIME.maybe(u.time),
    shape=lambda u: _SHAPE(u.shape),
)
_PASSAGE: Fields[Passage] = Fields("text start end whole")
_RECALLED: Fields[Recalled] = Fields(
    "memory_id revision source_event_id score relevance time_weight confidence sources",
    "context outdated_by possibly_outdated_by passage record",
    memory_id=lambda i: i.record.memory_id,
    revision=lambda i: i.record.revision,
    source_event_id=lambda i: i.record.source_event_id,
    passage=lambda i: _PASSAGE.maybe(i.passage),
    record=lambda i: _RECORD(i.record),
)
_EXCLUDED: Fields[Excluded] = Fields("memory_id reason")
_RECALL: Fields[RecallResult] = Fields(
    "query abstained mode degraded index_lag order understood items excluded",
    understood=lambda r: _UNDERSTOOD(r.understood),
    items=lambda r: _RECALLED.each(r.items),
    excluded=lambda r: _EXCLUDED.each(r.excluded),
)


def recall_to_dict(result: RecallResult) -> JsonObject:
    """A recall: every item with its canonical record (best first; ``order: "time"``
    when the question asked for an order, to be shown by valid time), the exclusions
    and their reasons, and what the query was read as."""
    return _RECALL(result)
