"""The JSON wire format as pydantic models: what the HTTP API answers and a client reads.

The dict helpers of :mod:`memledger.wire` build the JSON; the models here describe
exactly those shapes (``extra="forbid"``: a field added to a helper and not here
fails the tests that validate one against the other, and the API's own response
validation). They import no web framework, so :mod:`memledger.client` can share
them with :mod:`memledger.api`. Datetimes are ISO 8601 in UTC with a ``Z``.

Two more things are part of the wire format and live here for the same reason:

* :class:`ConsistencyToken`, the ``Memledger-Consistency`` header: revision floors
  per (subject, family), ``user-42/delivery_preference@3,user-42/home_city@1``;
* :data:`PROBLEMS`, which error class is which problem (RFC 9457) status and code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, unquote

from pydantic import AwareDatetime, BaseModel, ConfigDict
from pydantic import JsonValue as Json

from memledger import errors as e
from memledger.corpus import DocumentKind, HitSource, SkipReason
from memledger.domain.budget import Section
from memledger.domain.changes import ChangeKind, NotRestoredWhy
from memledger.domain.keys import KeyRole, PrincipalKind
from memledger.domain.records import (
    Channel,
    Disposition,
    EventOutcome,
    ExclusionReason,
    ExtractorKind,
    FamilyRevision,
    HistoryAction,
    Kind,
    RecordStatus,
    Role,
    require_id,
)
from memledger.read.recall import RecallExclusion, Source
from memledger.write.worker import JobOutcome

__all__ = [
    "CONSISTENCY_HEADER",
    "PROBLEMS",
    "PROBLEM_TYPE_BASE",
    "Actor",
    "ClaimOut",
    "ClaimResult",
    "ConsistencyToken",
    "Document",
    "DocumentAdded",
    "Event",
    "EventStatus",
    "Extractor",
    "Family",
    "FamilySlot",
    "Forget",
    "HistoryEntry",
    "Job",
    "Key",
    "KeyCreated",
    "Packet",
    "Problem",
    "ProblemError",
    "ProblemKind",
    "Recall",
    "Receipt",
    "Record",
    "Replay",
    "Review",
    "ReviewResolution",
    "RevisionToken",
    "Revocation",
    "SearchResult",
    "StoredTrace",
    "SubjectPage",
    "SubjectSummary",
    "TraceSummary",
    "WhoAmI",
    "WireModel",
    "WorkReport",
    "error_class",
    "problem_kind",
]


class WireModel(BaseModel):
    """Every wire model: exact (unknown fields refused) and immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# -- receipts ---------------------------------------------------------------------------


class RevisionToken(WireModel):
    subject: str
    family: str
    revision: int
    generation: int


class ClaimResult(WireModel):
    family: str
    scope: str
    disposition: Disposition
    memory_id: str | None
    reason: ExclusionReason | None


class Receipt(WireModel):
    """:func:`memledger.wire.receipt_to_dict`."""

    tenant: str
    event_id: str
    outcome: EventOutcome
    duplicate: bool
    revisions: list[RevisionToken]
    results: list[ClaimResult]
    review_id: str | None
    job_id: str | None
    reason: str | None


class Revocation(WireModel):
    """:func:`memledger.wire.revocation_to_dict`."""

    tenant: str
    subject: str
    family: str
    revision: int
    generation: int
    revoked: list[str]
    acknowledged_at: AwareDatetime
    reason: str
    also: list[Revocation]
    redacted: list[str]
    change_id: str | None


class Forget(WireModel):
    """:func:`memledger.wire.forget_to_dict`."""

    tenant: str
    event_id: str
    revocations: list[Revocation]
    acknowledged_at: AwareDatetime
    reason: str
    change_id: str | None


class NotRestoredOut(WireModel):
    memory_id: str
    why: NotRestoredWhy


class Undo(WireModel):
    """:func:`memledger.wire.undo_to_dict`."""

    tenant: str
    change_id: str
    undid: str
    kind: ChangeKind
    restored: list[str]
    closed: list[str]
    not_restored: list[NotRestoredOut]
    revisions: list[RevisionToken]
    acknowledged_at: AwareDatetime
    reason: str
    duplicate: bool
    unforgotten: list[str]


class Rollback(WireModel):
    """:func:`memledger.wire.rollback_to_dict`."""

    tenant: str
    change_id: str | None
    extractor: str
    since: AwareDatetime | None
    events: list[str]
    closed: list[str]
    restored: list[str]
    not_restored: list[NotRestoredOut]
    rederived: list[str]
    held: list[str]
    acknowledged_at: AwareDatetime
    reason: str


class MergeOut(WireModel):
    subject: str
    family: str
    survivor: str
    duplicates: list[str]
    into: str | None
    similarity: float


class Consolidation(WireModel):
    """:func:`memledger.wire.consolidation_to_dict`."""

    tenant: str
    change_id: str | None
    merges: list[MergeOut]
    families: int
    threshold: float
    dry_run: bool
    at: AwareDatetime


class CompactedOut(WireModel):
    subject: str
    session: str
    summary: str | None
    covers: list[str]
    start: AwareDatetime
    end: AwareDatetime


class Compaction(WireModel):
    """:func:`memledger.wire.compaction_to_dict`."""

    tenant: str
    change_id: str | None
    sessions: list[CompactedOut]
    before: AwareDatetime
    dry_run: bool
    at: AwareDatetime


class ChangePartOut(WireModel):
    subject: str
    family: str
    closed: list[str]
    opened: list[str]
    generation: int | None


class ChangeOut(WireModel):
    """:func:`memledger.wire.change_to_dict`: a recorded change (``GET /v1/changes``)."""

    tenant: str
    change_id: str
    kind: ChangeKind
    at: AwareDatetime
    reason: str
    parts: list[ChangePartOut]
    forgotten: list[str]
    undoes: str | None
    undone_by: str | None


class QuotasOut(WireModel):
    """A tenant's quotas (:class:`memledger.domain.quotas.Quotas`); null: no limit."""

    max_records: int | None
    jobs_per_minute: int | None
    recalls_per_second: float | None
    packet_tokens: int | None


class StoreErasure(WireModel):
    store: str
    status: Literal["erased", "nothing_held", "failed", "not_configured"]
    at: AwareDatetime
    detail: str


class Erasure(WireModel):
    """:meth:`memledger.write.erase.ErasureReceipt.to_dict`: what an erasure covered, by
    id only, and each store's status."""

    erasure_id: str
    tenant: str
    scope: Literal["event", "memory", "subject"]
    target: str
    reason: str
    requested_at: AwareDatetime
    events: list[str]
    memory_ids: list[str]
    subjects: list[str]
    complete: bool
    stores: list[StoreErasure]


# -- records and their history ------------------------------------------------------------


class Extractor(WireModel):
    kind: ExtractorKind
    name: str
    version: str
    model: str | None
    prompt_version: str | None


class Record(WireModel):
    """:func:`memledger.wire.record_to_dict`."""

    tenant: str
    memory_id: str
    subject: str
    family: str
    kind: Kind
    proposed_kind: Kind
    claim: str
    value: Json
    scope: str
    status: RecordStatus
    authorised: bool
    source_event_id: str
    source_actor_id: str
    source_channel: Channel
    source_identity_authenticated: bool
    scope_authorized: bool
    claim_faithful_to_source: bool
    operational_setting_confirmed: bool
    recorded_at: AwareDatetime
    superseded_at: AwareDatetime | None
    closed_by: str | None
    valid_from: AwareDatetime
    valid_until: AwareDatetime | None
    revision: int
    generation: int
    confidence: float
    mentions: int
    """Independent statements of this claim (its own and repeats, merged ones included)."""
    grounding: str | None
    extractor: Extractor
    supersedes: str | None
    exclusion: ExclusionReason | None
    expires_at: AwareDatetime | None


class HistoryEntry(WireModel):
    """:func:`memledger.wire.history_entry_to_dict`."""

    seq: int
    tenant: str
    subject: str
    family: str
    revision: int
    generation: int
    action: HistoryAction
    memory_id: str
    status: RecordStatus
    at: AwareDatetime
    cause: str
    note: str | None


class FamilySlot(WireModel):
    """A family of a subject: its revision (every accepted change) and generation
    (every revocation)."""

    subject: str
    family: str
    revision: int
    generation: int
    updated_at: AwareDatetime | None


class SubjectSummary(WireModel):
    """A subject of the key's tenant: how many families and events it has, and when it
    last moved (its last ingested event or family change)."""

    subject: str
    families: int
    events: int
    last_at: AwareDatetime | None


class SubjectPage(WireModel):
    """One page of subjects, in order; ``next``: pass it as ``after`` for the next page
    (``null``: this is the last page)."""

    subjects: list[SubjectSummary]
    next: str | None


# -- events, jobs, reviews ------------------------------------------------------------------


class Actor(WireModel):
    id: str
    authenticated: bool
    grants: list[str]


class Event(WireModel):
    """A source event as the ledger holds it (the input shape, with its tenant)."""

    tenant: str
    event_id: str
    subject: str
    actor: Actor
    channel: Channel
    occurred_at: AwareDatetime
    text: str
    sequence: int | None
    stream: str | None
    metadata: dict[str, Json]
    role: Role | None


class Job(WireModel):
    """:func:`memledger.wire.job_to_dict`."""

    tenant: str
    job_id: str
    event_id: str
    status: Literal["queued", "done", "failed"]
    generations: dict[str, int]
    created_at: AwareDatetime
    attempts: int
    last_error: str | None
    next_attempt_at: AwareDatetime | None
    lease_until: AwareDatetime | None


class EventStatus(WireModel):
    """An event, its stored receipt (``None``: not processed yet) and its extraction job."""

    event: Event
    receipt: Receipt | None
    job: Job | None


class WorkReport(WireModel):
    """:func:`memledger.wire.work_report_to_dict`."""

    mode: str
    stopped_by: str | None
    jobs: int
    outcomes: dict[JobOutcome, int]
    errors: list[str]
    expired: int
    indexed: int
    """Outbox rows the worker applied to the derived index."""


class ClaimOut(WireModel):
    """:func:`memledger.wire.claim_to_dict`: a claim in the input shape."""

    family: str
    kind: Kind
    statement: str
    value: Json
    scope: str
    subject: str | None
    valid_from: AwareDatetime | None
    valid_until: AwareDatetime | None
    grounding: str | None
    confidence: float
    polarity: Literal["assert", "retract"]
    expires_at: AwareDatetime | None


class Review(WireModel):
    """:func:`memledger.wire.review_to_dict`."""

    tenant: str
    review_id: str
    event_id: str
    subject: str
    reason: str
    claims: list[ClaimOut]
    created_at: AwareDatetime
    resolved_at: AwareDatetime | None
    resolution: str | None
    resolved_by: str | None
    resolution_reason: str | None


class PossibleUpdate(WireModel):
    """:func:`memledger.wire.possible_update_to_dict`."""

    reason: str
    current: Record
    turn: Record


class ReviewResolution(WireModel):
    """:func:`memledger.wire.review_resolution_to_dict`."""

    review: Review
    receipt: Receipt | None
    duplicate: bool


# -- keys and families ---------------------------------------------------------------------


class Key(WireModel):
    """:func:`memledger.wire.key_to_dict`: never the token."""

    key_id: str
    tenant: str
    actor: str
    principal: PrincipalKind
    role: KeyRole
    grants: list[str]
    label: str
    created_at: AwareDatetime
    revoked_at: AwareDatetime | None
    last_used_at: AwareDatetime | None
    reads: list[str]
    """Other agents' private namespaces (``agent:<id>``) the key may read."""


class KeyCreated(WireModel):
    """A new key and its token, shown this once (only its hash is stored)."""

    key: Key
    token: str
    shown_once: Literal[True]


class Family(WireModel):
    """:func:`memledger.wire.family_to_dict`."""

    name: str
    kinds: list[Kind]
    description: str
    own_say: bool
    source: Literal["code", "registered"]


class WhoAmI(WireModel):
    """Who an API key acts as: every field comes from the key."""

    key_id: str
    tenant: str
    actor: str
    principal: PrincipalKind
    role: KeyRole
    grants: list[str]
    namespace: str | None
    """The key's own private namespace (``agent:<id>``, agents' keys), else ``null``."""
    reads: list[str]
    """Other agents' namespaces the key may read (admin keys read every namespace)."""


# -- recall ----------------------------------------------------------------------------------


class _Span(WireModel):
    start: AwareDatetime
    end: AwareDatetime
    phrase: str


class _Shape(WireModel):
    across_sessions: bool
    ordered: bool
    to_agent: bool
    gathers: bool
    dates: bool


class _Understood(WireModel):
    queries: list[str]
    people: list[str]
    time: _Span | None
    notes: list[str]
    shape: _Shape
    unnamed: str | None
    """The query with the people it names replaced by "they" (what was embedded)."""


class _Passage(WireModel):
    text: str
    start: int
    end: int
    whole: bool


class _Recalled(WireModel):
    memory_id: str
    revision: int
    source_event_id: str
    score: float
    relevance: float
    time_weight: float
    confidence: float | None
    """The confidence it ranked with (decayed for a volatile kind)."""
    sources: list[Source]
    context: list[str]
    outdated_by: str | None
    possibly_outdated_by: str | None = None
    """A later turn of the same speaker that seems to change it (no claim says so)."""
    passage: _Passage | None
    record: Record


class _Excluded(WireModel):
    memory_id: str
    reason: RecallExclusion


class Recall(WireModel):
    """:func:`memledger.wire.recall_to_dict`."""

    query: str
    abstained: bool
    mode: Literal["hybrid", "lexical"]
    degraded: str | None
    index_lag: int
    order: Literal["relevance", "time"]
    understood: _Understood
    items: list[_Recalled]
    excluded: list[_Excluded]


# -- context packets and traces --------------------------------------------------------------


class _Budget(WireModel):
    total: int
    sections: dict[Section, int]


class _Routing(WireModel):
    memory: bool
    corpus: bool
    long_context: bool
    specificity: float
    reasons: list[str]
    entities: list[str]


class _PacketItem(WireModel):
    section: Section
    key: str
    memory_id: str | None
    revision: int | None
    relevance: float
    tokens: int
    fields: dict[str, Json]


class _Left(WireModel):
    section: Section
    key: str
    reason: str


class Packet(WireModel):
    """:meth:`memledger.read.context.Packet.to_dict`: the packet as data, its rendered
    ``text`` (what the model is given) and the ``trace_id`` it is stored under."""

    trace_id: str
    tenant: str
    subject: str | None
    request: str
    created_at: AwareDatetime
    valid_at: AwareDatetime
    tokens: int
    tokenizer: str
    budget: _Budget
    routing: _Routing
    items: list[_PacketItem]
    excluded: list[_Left]
    notes: list[str]
    index_lag: int | None
    """Outbox rows of the tenant the index had not applied when the packet's recall read
    it (``null``: no recall read the index)."""
    sha256: str
    text: str


class Replay(Packet):
    """A stored packet rebuilt from the store, as ``memledger trace show --json`` prints it."""

    matches: bool
    revoked_since: list[str]
    missing: list[str]
    gate_decisions: list[dict[str, Json]]


class _TraceMemory(WireModel):
    memory_id: str
    revision: int


class TraceSummary(WireModel):
    """:func:`memledger.read.trace.recent`: one recent trace."""

    trace_id: str
    subject: str | None
    created_at: AwareDatetime
    request: str
    memories: list[_TraceMemory]
    excluded: int
    tokens: int


class StoredTrace(WireModel):
    """A trace as stored: its JSON body (see :mod:`memledger.read.trace`) and the sha256
    of the text the model was given."""

    trace_id: str
    subject: str | None
    created_at: AwareDatetime
    rendered_sha256: str
    body: dict[str, Json]


# -- the shared corpus ------------------------------------------------------------------------


class Document(WireModel):
    """A document of the tenant's shared corpus (``name``: as it was added)."""

    name: str
    title: str
    kind: DocumentKind
    chunks: int
    sha256: str
    last_modified: AwareDatetime
    indexed_at: AwareDatetime


class DocumentAdded(WireModel):
    name: str
    outcome: Literal["added", "replaced", "unchanged", "skipped"]
    chunks: int
    skipped: SkipReason | None
    detail: str | None


class _Chunk(WireModel):
    chunk_id: str
    document: str
    title: str
    section: str
    text: str
    tokens: int
    start: int
    end: int
    is_table: bool
    is_code: bool
    indexed_at: AwareDatetime
    last_modified: AwareDatetime


class _Hit(WireModel):
    score: float
    confidence: float
    sources: list[HitSource]
    stale: str | None
    chunk: _Chunk


class SearchResult(WireModel):
    query: str
    floor: float
    found: int
    message: str | None
    hits: list[_Hit]


# -- problems (RFC 9457) ------------------------------------------------------------------------


class ProblemError(WireModel):
    """One fault of a request that does not match its schema."""

    loc: list[str | int]
    msg: str


class Problem(WireModel):
    """An error, as ``application/problem+json``. ``type`` is
    ``https://memledger.dev/problems/<code>``; ``code`` is stable per error class
    (:data:`PROBLEMS`); ``errors`` lists the faults of a request that does not match
    its schema (status 422)."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    errors: list[ProblemError] | None = None


PROBLEM_TYPE_BASE = "https://memledger.dev/problems/"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProblemKind:
    """How an error class is told over HTTP. ``detail`` set: that fixed text is shown
    instead of the error's message (which may name what the caller must not learn, or
    the server's internals)."""

    status: int
    code: str
    title: str
    detail: str | None = None
    retry_after: int | None = None

    @property
    def type(self) -> str:
        return PROBLEM_TYPE_BASE + self.code


def _gone(what: str) -> str:
    return f"No {what} with this id exists for this API key's tenant."


_SERVER = "The server failed to answer; nothing was written. It has been logged."

_BEHIND = "This server has not reached the revisions the consistency token asks for."
_BUSY = "The store was busy; nothing was written. Retrying is safe."
_SPENT = (
    "The request did not finish within this server's work budget per request and stopped; "
    "nothing was written. Send less (shorter material, a smaller document)."
)
# fmt: off
_TABLE: tuple[tuple[type[e.MemledgerError], int, str, str, str | None], ...] = (
    (e.MemledgerError, 500, "internal", "Internal error", _SERVER),
    (e.InvalidInputError, 400, "invalid_input", "Invalid input", None),
    (e.InvalidEventError, 400, "invalid_event", "Invalid event", None),
    (e.InvalidClaimError, 400, "invalid_claim", "Invalid claim", None),
    (e.UnknownFamilyError, 400, "unknown_family", "Unknown family", None),
    (e.UnknownKindError, 400, "unknown_kind", "Unknown kind", None),
    (e.InvalidIntervalError, 400, "invalid_interval", "Invalid interval", None),
    (e.InvalidQueryError, 400, "invalid_query", "Invalid query", None),
    (e.LimitExceededError, 413, "limit_exceeded", "Limit exceeded", None),
    (e.BudgetError, 400, "invalid_budget", "Invalid budget", None),
    (e.ConflictError, 409, "conflict", "Conflict", None),
    (e.EventConflictError, 409, "event_conflict", "Event id reused with other content", None),
    (e.EventErasedError, 409, "event_erased", "The event was erased", None),
    (e.LastAdminKeyError, 409, "last_admin_key", "The tenant's last admin key", None),
    (e.QuotaExceededError, 429, "quota_exceeded", "Quota exceeded", None),
    (e.WorkBudgetExceededError, 503, "budget_exceeded", "Work budget exceeded", _SPENT),
    (e.AuthenticationError, 401, "unauthenticated", "Not authenticated", None),
    (e.PermissionDeniedError, 403, "permission_denied", "Permission denied", None),
    (e.NotFoundError, 404, "not_found", "Not found", _gone("such thing")),
    (e.MemoryNotFoundError, 404, "memory_not_found", "Memory not found", _gone("memory")),
    (e.EventNotFoundError, 404, "event_not_found", "Event not found", _gone("event")),
    (e.ReviewNotFoundError, 404, "review_not_found", "Review not found", _gone("review item")),
    (e.KeyNotFoundError, 404, "key_not_found", "API key not found", _gone("API key")),
    (e.TraceNotFoundError, 404, "trace_not_found", "Trace not found", _gone("trace")),
    (e.StoreNotFoundError, 503, "store_not_found", "Store unavailable", _SERVER),
    (e.RevisionNotMetError, 409, "revision_not_met", "Revision not met", _BEHIND),
    (e.ExtractionError, 502, "extraction_failed", "Extractor failed", _SERVER),
    (e.EmbedderError, 502, "embedder_failed", "Embedder failed", _SERVER),
    (e.RewriterError, 502, "rewriter_failed", "Query rewriter failed", _SERVER),
    (e.StoreError, 500, "store_error", "Store failed", _SERVER),
    (e.StoreLockedError, 503, "store_locked", "Store busy", _BUSY),
    (e.MigrationError, 500, "migration_error", "Store schema mismatch", _SERVER),
)
# fmt: on
_RETRY_AFTER = {e.RevisionNotMetError: 1, e.StoreLockedError: 1}
"""Seconds a client should wait before trying again, where trying again can succeed."""

PROBLEMS: Mapping[type[e.MemledgerError], ProblemKind] = {
    cls: ProblemKind(
        status=status, code=code, title=title, detail=detail, retry_after=_RETRY_AFTER.get(cls)
    )
    for cls, status, code, title, detail in _TABLE
}
"""Every error class of :mod:`memledger.errors`, and how the HTTP API tells it. A 4xx
shows the error's own message as ``detail`` unless a fixed one is set (not-found
errors: the same text whether the id is missing or another tenant's)."""


def problem_kind(error: BaseException) -> ProblemKind | None:
    """The problem of the nearest class of ``error`` in :data:`PROBLEMS`, or ``None``
    for an exception that is not a :class:`~memledger.errors.MemledgerError`."""
    for cls in type(error).__mro__:
        if issubclass(cls, e.MemledgerError) and cls in PROBLEMS:
            return PROBLEMS[cls]
    return None


def error_class(code: str) -> type[e.MemledgerError]:
    """The error class a problem ``code`` stands for (a client raises it again);
    :class:`~memledger.errors.MemledgerError` for a code of no class."""
    for cls, kind in PROBLEMS.items():
        if kind.code == code:
            return cls
    return e.MemledgerError


# -- consistency tokens -----------------------------------------------------------------------

CONSISTENCY_HEADER = "Memledger-Consistency"
_SAFE = "._:+-"
"""Characters of an identifier kept as they are in a token; ``/`` and ``@`` (allowed in
identifiers) are percent-escaped, so that they separate the parts unambiguously."""
MAX_FLOORS = 256
MAX_REVISION = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ConsistencyToken:
    """Revision floors per (subject, family): a read given the token must not answer
    below any of them that concern it.

    As text (the ``Memledger-Consistency`` header): comma-separated
    ``<subject>/<family>@<revision>``, the identifiers percent-escaped where they
    hold ``/``, ``@``, ``,`` or ``%``, sorted:
    ``user-42/delivery_preference@3,user-42/home_city@1``.
    """

    floors: Mapping[tuple[str, str], int]

    @classmethod
    def of(cls, revisions: Iterable[FamilyRevision | RevisionToken]) -> ConsistencyToken:
        """The token of a receipt's revisions (the highest per family)."""
        floors: dict[tuple[str, str], int] = {}
        for r in revisions:
            key = (r.subject, r.family)
            floors[key] = max(floors.get(key, 0), r.revision)
        return cls(floors)

    @classmethod
    def parse(cls, text: str) -> ConsistencyToken:
        """The token written as ``text``; :class:`~memledger.errors.InvalidQueryError`
        saying what is wrong when it is malformed."""
        floors: dict[tuple[str, str], int] = {}
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or len(parts) > MAX_FLOORS:
            raise e.InvalidQueryError(
                f"malformed consistency token: expected 1 to {MAX_FLOORS} comma-separated "
                "'<subject>/<family>@<revision>' parts"
            )
        for n, part in enumerate(parts, 1):
            slot, at, revision = part.rpartition("@")
            names = slot.split("/")
            if not at or len(names) != 2 or not revision.isascii() or not revision.isdigit():
                raise e.InvalidQueryError(
                    f"malformed consistency token: part {n} is not "
                    "'<subject>/<family>@<revision>' (a receipt's token, as the "
                    f"{CONSISTENCY_HEADER} header of a write returned it)"
                )
            what = f"malformed consistency token: part {n}:"
            try:
                subject, family = (unquote(name, errors="strict") for name in names)
            except UnicodeDecodeError:
                raise e.InvalidQueryError(f"{what} a percent-escape is not UTF-8") from None
            require_id(subject, f"{what} subject", e.InvalidQueryError)
            require_id(family, f"{what} family", e.InvalidQueryError)
            if len(revision) > 19 or int(revision) > MAX_REVISION:
                raise e.InvalidQueryError(f"{what} revision {revision} is too large")
            key = (subject, family)
            floors[key] = max(floors.get(key, 0), int(revision))
        return cls(floors)

    def __str__(self) -> str:
        return ",".join(
            f"{quote(s, safe=_SAFE)}/{quote(f, safe=_SAFE)}@{r}"
            for (s, f), r in sorted(self.floors.items())
        )

    def __bool__(self) -> bool:
        return bool(self.floors)

    def merge(self, other: ConsistencyToken) -> ConsistencyToken:
        """Both tokens' floors, the higher where they name the same family."""
        floors = dict(self.floors)
        for key, revision in other.floors.items():
            floors[key] = max(floors.get(key, 0), revision)
        return ConsistencyToken(floors)

    def floor(self, subject: str, family: str) -> int | None:
        return self.floors.get((subject, family))

    def of_subject(self, subject: str) -> dict[str, int]:
        """The floors of ``subject``'s families, by family."""
        return {f: r for (s, f), r in self.floors.items() if s == subject}
