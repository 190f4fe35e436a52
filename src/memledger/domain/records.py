"""Domain records: frozen dataclasses with validation, no I/O.

Every datetime is timezone-aware and normalised to UTC on construction; a naive
datetime is a caller mistake, never guessed at.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, TypeAlias, get_args

from memledger.errors import (
    InvalidClaimError,
    InvalidEventError,
    InvalidIntervalError,
    UnknownKindError,
)

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None

Kind = Literal["preference", "fact", "episode", "procedure", "observation", "working"]
"""What a memory is. ``observation`` is retained but not authorised."""

RecordStatus = Literal["active", "superseded", "retracted", "revoked", "historical"]
"""``active``: open in record time. ``superseded``/``retracted``/``revoked``: closed in
record time, and why. ``historical``: kept for the record, never part of the current view."""

Channel = Literal["chat", "account_service", "system", "tool", "document", "web"]
"""Where a source event came from. Decides trust and source precedence."""

EventOutcome = Literal["committed", "review", "queued"]
"""What happened to a source event: its batch committed, it waits for review, or an
extraction job was queued for it."""

Disposition = Literal["current", "observation", "historical", "rejected"]
"""What became of one candidate claim of a committed event."""

ExclusionReason = Literal[
    "unauthenticated",
    "no_grant",
    "foreign_subject",
    "older_sequence",
    "lower_precedence",
    "stale_generation",
    "revoked_source",
    "untrusted_source",
]
"""Why a candidate did not become an authorised current claim."""

ExtractorKind = Literal["caller", "rules", "llm"]

DecisionKind = Literal["add", "update", "delete", "noop"]
"""What a current claim did to its family: see ``memledger.domain.decide``."""

KINDS: frozenset[str] = frozenset(get_args(Kind))
CHANNELS: frozenset[str] = frozenset(get_args(Channel))

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+\-]{0,254}$")
"""Identifiers: tenants, subjects, event ids, actor ids, families, scopes."""


def require_aware(value: object, what: str, error: type[Exception]) -> datetime:
    """Return ``value`` in UTC, or raise ``error`` if it is not an aware datetime."""
    if not isinstance(value, datetime):
        raise error(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise error(f"{what} must be timezone-aware, got naive {value.isoformat()!r}")
    return value.astimezone(UTC)


def require_id(value: object, what: str, error: type[Exception]) -> str:
    """Return ``value`` if it is a usable identifier, else raise ``error``."""
    if not isinstance(value, str) or not value:
        raise error(f"{what} is required and must be a non-empty string, got {value!r}")
    if not _ID_PATTERN.match(value):
        raise error(
            f"{what} {value!r} is not a valid identifier "
            "(letters, digits and . _ : @ / + -, at most 255 characters)"
        )
    return value


def canonical_json(value: object) -> str:
    """Compact, key-sorted JSON: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check_json(value: object, what: str, error: type[Exception]) -> None:
    try:
        json.dumps(value, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise error(f"{what} must be JSON-serialisable: {exc}") from None


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """Permission to set a claim family in a scope. ``"*"`` matches any."""

    family: str
    scope: str = "*"

    def covers(self, family: str, scope: str) -> bool:
        return self.family in ("*", family) and self.scope in ("*", scope)

    @classmethod
    def parse(cls, text: str) -> Grant:
        """``"family"`` or ``"family:scope"`` (the scope may itself contain colons)."""
        family, _, scope = text.partition(":")
        if not family:
            raise InvalidEventError(f"grant {text!r} has no family")
        return cls(family=family, scope=scope or "*")

    def __str__(self) -> str:
        return f"{self.family}:{self.scope}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    """Who produced an event, as the trusted caller says. Never taken from model output."""

    id: str
    authenticated: bool = False
    grants: frozenset[Grant] = frozenset()

    def __post_init__(self) -> None:
        require_id(self.id, "actor id", InvalidEventError)
        grants = frozenset(Grant.parse(g) if isinstance(g, str) else g for g in self.grants)
        _set(self, "grants", grants)

    def may_set(self, family: str, scope: str) -> bool:
        """Whether this actor is authenticated and holds a grant for ``family`` in ``scope``."""
        return self.authenticated and any(g.covers(family, scope) for g in self.grants)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceEvent:
    """One immutable input. The ledger is append-only and keyed by (tenant, event_id)."""

    tenant: str
    event_id: str
    subject: str
    actor: Actor
    channel: Channel
    occurred_at: datetime
    text: str
    sequence: int | None = None
    stream: str | None = None
    metadata: Mapping[str, JsonValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_id(self.tenant, "tenant", InvalidEventError)
        require_id(self.event_id, "event_id", InvalidEventError)
        require_id(self.subject, "subject", InvalidEventError)
        if not isinstance(self.actor, Actor):
            raise InvalidEventError(f"actor must be an Actor, got {type(self.actor).__name__}")
        if self.channel not in CHANNELS:
            raise InvalidEventError(
                f"unknown channel {self.channel!r}; expected one of {sorted(CHANNELS)}"
            )
        _set(self, "occurred_at", require_aware(self.occurred_at, "occurred_at", InvalidEventError))
        if not isinstance(self.text, str):
            raise InvalidEventError(f"text must be a string, got {type(self.text).__name__}")
        if self.sequence is not None and (
            isinstance(self.sequence, bool)
            or not isinstance(self.sequence, int)
            or self.sequence < 0
        ):
            raise InvalidEventError(
                f"sequence must be a non-negative integer, got {self.sequence!r}"
            )
        if self.stream is not None:
            require_id(self.stream, "stream", InvalidEventError)
        if not isinstance(self.metadata, Mapping):
            raise InvalidEventError("metadata must be a mapping")
        _check_json(dict(self.metadata), "metadata", InvalidEventError)
        _set(self, "metadata", dict(self.metadata))

    @property
    def stream_key(self) -> str:
        """The stream a ``sequence`` counts in: the explicit stream, else the channel."""
        return self.stream or self.channel

    def content_hash(self) -> str:
        """A stable hash of everything the event says; equal ids must have equal hashes."""
        body: dict[str, object] = {
            "tenant": self.tenant,
            "event_id": self.event_id,
            "subject": self.subject,
            "actor": {
                "id": self.actor.id,
                "authenticated": self.actor.authenticated,
                "grants": sorted(str(g) for g in self.actor.grants),
            },
            "channel": self.channel,
            "occurred_at": format_time(self.occurred_at),
            "text": self.text,
            "sequence": self.sequence,
            "stream": self.stream,
            "metadata": self.metadata,
        }
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractorInfo:
    """Lineage: what produced a claim."""

    kind: ExtractorKind = "caller"
    name: str = "caller"
    version: str = "1"
    model: str | None = None
    prompt_version: str | None = None


CALLER = ExtractorInfo()


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A candidate claim proposed from one event. Proposals only: the commit decides.

    ``subject`` defaults to the event's subject and ``valid_from`` to its
    ``occurred_at`` when the claim is committed; ``valid_until=None`` is open-ended.
    """

    family: str
    kind: Kind
    statement: str
    value: JsonValue
    scope: str = "global"
    subject: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    grounding: str | None = None
    confidence: float = 0.65

    def __post_init__(self) -> None:
        require_id(self.family, "family", InvalidClaimError)
        if self.kind not in KINDS:
            raise UnknownKindError(f"unknown kind {self.kind!r}; expected one of {sorted(KINDS)}")
        require_id(self.scope, "scope", InvalidClaimError)
        if self.subject is not None:
            require_id(self.subject, "subject", InvalidClaimError)
        if not isinstance(self.statement, str) or not self.statement.strip():
            raise InvalidClaimError("statement must be a non-empty string")
        _check_json(self.value, "value", InvalidClaimError)
        if self.valid_from is not None:
            _set(
                self,
                "valid_from",
                require_aware(self.valid_from, "valid_from", InvalidIntervalError),
            )
        if self.valid_until is not None:
            _set(
                self,
                "valid_until",
                require_aware(self.valid_until, "valid_until", InvalidIntervalError),
            )
        if (
            self.valid_from is not None
            and self.valid_until is not None
            and self.valid_until <= self.valid_from
        ):
            raise InvalidIntervalError(
                f"claim {self.family!r} has valid_until {self.valid_until.isoformat()!r} "
                f"not after valid_from {self.valid_from.isoformat()!r}"
            )
        if self.grounding is not None and not self.grounding.strip():
            raise InvalidClaimError("grounding, when given, must be a non-empty quote")
        if (
            isinstance(self.confidence, bool)
            or not isinstance(self.confidence, int | float)
            or math.isnan(self.confidence)
            or not 0.0 <= self.confidence <= 1.0
        ):
            raise InvalidClaimError(f"confidence must be within [0, 1], got {self.confidence!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """A committed claim: canonical, versioned, with provenance and two time axes.

    Valid time ``[valid_from, valid_until)`` says when the claim is meant to be
    true; record time ``[recorded_at, superseded_at)`` says when memledger held
    it. Records are never edited: a correction closes ``superseded_at`` and writes
    new records (``supersedes`` names the one a remnant was cut from).
    """

    tenant: str
    memory_id: str
    subject: str
    family: str
    kind: Kind
    proposed_kind: Kind
    claim: str
    value: JsonValue
    scope: str
    status: RecordStatus
    source_event_id: str
    source_actor_id: str
    source_channel: Channel
    source_identity_authenticated: bool
    scope_authorized: bool
    claim_faithful_to_source: bool
    operational_setting_confirmed: bool
    recorded_at: datetime
    superseded_at: datetime | None
    closed_by: str | None
    valid_from: datetime
    valid_until: datetime | None
    revision: int
    generation: int
    confidence: float
    grounding: str | None
    extractor: ExtractorInfo
    supersedes: str | None
    exclusion: ExclusionReason | None
    mentions: int = 1
    """Independent source events that stated this claim (NOOPs raise it)."""
    trust: float = 0.5
    """How far the source channel is trusted (see ``WritePolicy.trust``)."""

    @property
    def authorised(self) -> bool:
        """A record that may be part of the current view (not an observation, not historical)."""
        return self.kind != "observation" and self.status != "historical"

    def open_at(self, as_of: datetime) -> bool:
        """Whether memledger held this record at record time ``as_of``."""
        return self.recorded_at <= as_of and (
            self.superseded_at is None or as_of < self.superseded_at
        )

    def valid(self, at: datetime) -> bool:
        """Whether the claim is meant to be true at valid time ``at``."""
        return self.valid_from <= at and (self.valid_until is None or at < self.valid_until)


@dataclass(frozen=True, slots=True, kw_only=True)
class FamilyRevision:
    """A consistency token: pass ``revision`` as ``min_revision`` to read your writes."""

    subject: str
    family: str
    revision: int
    generation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimResult:
    """What became of one candidate claim."""

    family: str
    scope: str
    disposition: Disposition
    memory_id: str | None
    reason: ExclusionReason | None = None
    decision: DecisionKind | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipt:
    """The acknowledgement of one event. Replays return the stored receipt, ``duplicate=True``."""

    tenant: str
    event_id: str
    outcome: EventOutcome
    revisions: tuple[FamilyRevision, ...] = ()
    results: tuple[ClaimResult, ...] = ()
    review_id: str | None = None
    job_id: str | None = None
    reason: str | None = None
    duplicate: bool = False

    def revision(self, family: str) -> int:
        """The revision token for ``family``; ``KeyError`` if this event did not touch it."""
        for token in self.revisions:
            if token.family == family:
                return token.revision
        raise KeyError(family)


@dataclass(frozen=True, slots=True, kw_only=True)
class RevocationReceipt:
    """The acknowledgement of a revocation: once returned, nothing brings the claims back."""

    tenant: str
    subject: str
    family: str
    revision: int
    generation: int
    revoked: tuple[str, ...]
    acknowledged_at: datetime
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewItem:
    """An event whose batch could not be committed as it stood. It changed nothing."""

    tenant: str
    review_id: str
    event_id: str
    subject: str
    reason: str
    claims: tuple[Claim, ...]
    created_at: datetime
    resolved_at: datetime | None = None
    resolution: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """An extraction job: the event it is for and the family generations it started under."""

    tenant: str
    job_id: str
    event_id: str
    generations: Mapping[str, int]
    created_at: datetime
    status: Literal["queued", "done", "failed"] = "queued"
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEntry:
    """One change in a family's append-only history."""

    seq: int
    tenant: str
    subject: str
    family: str
    revision: int
    generation: int
    action: Literal["recorded", "closed", "revoked", "mentioned"]
    memory_id: str
    status: RecordStatus
    at: datetime
    cause: str


def format_time(value: datetime) -> str:
    """Fixed-width UTC text that sorts like the instants it names."""
    naive = value.astimezone(UTC).replace(tzinfo=None)
    return naive.isoformat(timespec="microseconds") + "Z"


def parse_time(text: str) -> datetime:
    """The inverse of :func:`format_time`."""
    return datetime.fromisoformat(text.removesuffix("Z")).replace(tzinfo=UTC)
