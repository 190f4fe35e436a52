"""Domain records: frozen dataclasses with validation, no I/O.

Every datetime is timezone-aware and normalised to UTC on construction; a naive
datetime is a caller mistake, never guessed at.

Construction also enforces the hard structural limits, so nothing unsafe ever
reaches ``json`` or a store driver: every string is encodable as UTF-8 (no lone
surrogates) and holds no NUL character, JSON values (metadata, a claim's value) nest at most
:data:`MAX_DEPTH` levels and are checked without recursion, a ``sequence`` fits
a signed 64-bit integer, and a datetime must be representable in UTC. The
configurable size limits (text, metadata and value size, claims per event) are
applied when an event is ingested: see :mod:`memledger.domain.limits`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
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
    "agent_words",
]
"""Why a candidate did not become an authorised current claim (``agent_words``: the
assistant said it, and an agent's own words never set the user's values)."""

Role = Literal["user", "assistant", "tool"]
"""Who spoke a turn in an agent's conversation: the ``user``, the ``assistant`` (the
agent's own words: rarely evidence about the user, never an authority) or a
``tool``. ``None`` on an event: a conversation between peers, or not said."""

ExtractorKind = Literal["caller", "rules", "llm"]

DecisionKind = Literal["add", "update", "delete", "noop"]
"""What a current claim did to its family: see ``memledger.domain.decide``."""

KINDS: frozenset[str] = frozenset(get_args(Kind))
CHANNELS: frozenset[str] = frozenset(get_args(Channel))
ROLES: frozenset[str] = frozenset(get_args(Role))
EXTRACTOR_KINDS: frozenset[str] = frozenset(get_args(ExtractorKind))

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+\-]{0,254}$")
"""Identifiers: tenants, subjects, event ids, actor ids, families, scopes."""

MAX_ID_CHARS = 255
"""The longest identifier :data:`_ID_PATTERN` admits."""

MAX_DEPTH = 64
"""Hard limit on how deep a JSON value (metadata, a claim's value) may nest; a
container counts one level. Deeper input is refused at construction. The
configurable limits in :class:`memledger.domain.limits.Limits` are lower."""

MAX_SEQUENCE = 2**63 - 1
"""The largest ``sequence``: stores keep it in a signed 64-bit integer."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def require_aware(value: object, what: str, error: type[Exception]) -> datetime:
    """Return ``value`` in UTC, or raise ``error`` if it is not an aware datetime
    that UTC can represent (``0001-01-01T01:00+05:00`` is before year 1 in UTC)."""
    if not isinstance(value, datetime):
        raise error(f"{what} must be a datetime, got {type(value).__name__}")
    try:
        offset = value.utcoffset()
    except (ValueError, TypeError, OverflowError) as exc:
        raise error(f"{what} has an unusable time zone: {exc}") from None
    if value.tzinfo is None or offset is None:
        raise error(f"{what} must be timezone-aware, got naive {value.isoformat()!r}")
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise error(
            f"{what} {value.isoformat()!r} is out of range: in UTC it falls outside "
            "the years 1 to 9999"
        ) from None


def require_text(value: object, what: str, error: type[Exception]) -> str:
    """Return ``value`` if it is a string UTF-8 can encode, else raise ``error``.

    A lone surrogate (half of a UTF-16 pair, as a JSON ``"\\ud800"`` escape
    decodes to) is not text: no store can keep it. Nor is NUL (U+0000), which
    PostgreSQL's text cannot hold; SQLite could, but a store's answer must not
    depend on the backend.
    """
    if not isinstance(value, str):
        raise error(f"{what} must be a string, got {type(value).__name__}")
    bad = _SURROGATE.search(value)
    if bad is not None:
        raise error(
            f"{what} holds a lone surrogate {bad.group()!r} at index {bad.start()}, "
            "which is not text (not encodable as UTF-8)"
        )
    nul = value.find("\x00")
    if nul >= 0:
        raise error(
            f"{what} holds a NUL character (U+0000) at index {nul}, which is not text "
            "(PostgreSQL cannot keep it; every store refuses it alike)"
        )
    return value


def require_id(value: object, what: str, error: type[Exception]) -> str:
    """Return ``value`` if it is a usable identifier, else raise ``error``."""
    if not isinstance(value, str) or not value:
        raise error(f"{what} is required and must be a non-empty string, got {value!r}")
    if not _ID_PATTERN.fullmatch(value):  # "$" alone would let a trailing newline in
        raise error(
            f"{what} {value!r} is not a valid identifier "
            "(letters, digits and . _ : @ / + -, at most 255 characters)"
        )
    return value


def canonical_json(value: object) -> str:
    """Compact, key-sorted JSON: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _where(what: str, path: tuple[str | int, ...]) -> str:
    return what + "".join(f"[{part!r}]" for part in path)


def json_depth(value: object, what: str, error: type[Exception]) -> int:
    """How deep ``value`` nests (a scalar 0, ``[]`` and ``{}`` 1, ``[[1]]`` 2), after
    checking that it is a JSON value: ``None``, a bool, an int, a finite float, text
    (see :func:`require_text`), a list or tuple of JSON values, a dict with string
    keys. Raises ``error`` naming the place at fault. Iterative: a value nested
    100,000 deep is refused at :data:`MAX_DEPTH` without recursing."""
    deepest = 0
    stack: list[tuple[object, int, tuple[str | int, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        if item is None or isinstance(item, bool | int):
            continue
        if isinstance(item, str):
            require_text(item, _where(what, path), error)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise error(f"{_where(what, path)} is {item!r}; JSON has no NaN or infinity")
        elif isinstance(item, list | tuple | dict):
            depth += 1
            if depth > MAX_DEPTH:
                raise error(f"{what} nests more than {MAX_DEPTH} levels deep")
            deepest = max(deepest, depth)
            if isinstance(item, dict):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        raise error(
                            f"{_where(what, path)} has the key {key!r}; JSON keys are strings"
                        )
                    require_text(key, f"a key of {_where(what, path)}", error)
                    stack.append((inner, depth, (*path, key)))
            else:
                stack.extend((inner, depth, (*path, n)) for n, inner in enumerate(item))
        else:
            raise error(f"{_where(what, path)} is a {type(item).__name__}, not a JSON value")
    return deepest


def _check_json(value: object, what: str, error: type[Exception]) -> None:
    json_depth(value, what, error)  # first: json.dumps recurses, and trusts its input
    try:
        json.dumps(value, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:  # an int too long for its decimal text
        raise error(f"{what} must be JSON-serialisable: {exc}") from None


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """Permission to set a claim family in a scope. ``"*"`` matches any.

    ``family`` is ``"*"`` or a family identifier without ``":"``; ``scope`` is
    ``"*"`` or a scope identifier (which may contain ``":"``, never ``"*"``).
    So ``str(grant)``, ``"family:scope"``, names exactly one grant and
    :meth:`parse` reads it back.
    """

    family: str
    scope: str = "*"

    def __post_init__(self) -> None:
        name = f"grant (family={self.family!r}, scope={self.scope!r})"
        if self.family != "*":
            require_id(self.family, f"{name}: family", InvalidEventError)
            if ":" in self.family:
                raise InvalidEventError(
                    f"{name}: a family has no ':'; write the scope as Grant(family=..., scope=...)"
                )
        if self.scope != "*":
            require_id(self.scope, f"{name}: scope ('*' for any)", InvalidEventError)

    def covers(self, family: str, scope: str) -> bool:
        return self.family in ("*", family) and self.scope in ("*", scope)

    @classmethod
    def parse(cls, text: str) -> Grant:
        """``"family"`` (any scope) or ``"family:scope"`` (the scope may itself contain
        colons): the inverse of ``str``. ``"family:"``, with an empty scope, is refused."""
        require_text(text, "grant", InvalidEventError)
        family, colon, scope = text.partition(":")
        if not family:
            raise InvalidEventError(f"grant {text!r} has no family")
        if colon and not scope:
            raise InvalidEventError(
                f"grant {text!r} has an empty scope; write {family!r} or {family + ':*'!r} "
                "for any scope"
            )
        return cls(family=family, scope=scope if colon else "*")

    def __str__(self) -> str:
        return f"{self.family}:{self.scope}"


def _grants(value: object) -> frozenset[Grant]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidEventError(
            f"actor grants must be a set of Grant or 'family:scope' strings, "
            f"got {type(value).__name__}"
        )
    grants: set[Grant] = set()
    for item in value:
        if isinstance(item, str):
            grants.add(Grant.parse(item))
        elif isinstance(item, Grant):
            grants.add(item)
        else:
            raise InvalidEventError(
                f"an actor grant must be a Grant or a 'family:scope' string, "
                f"got {type(item).__name__}"
            )
    return frozenset(grants)


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    """Who produced an event, as the trusted caller says. Never taken from model output."""

    id: str
    authenticated: bool = False
    grants: frozenset[Grant] = frozenset()

    def __post_init__(self) -> None:
        require_id(self.id, "actor id", InvalidEventError)
        if not isinstance(self.authenticated, bool):
            raise InvalidEventError(
                f"actor authenticated must be True or False, got {self.authenticated!r}"
            )
        _set(self, "grants", _grants(self.grants))

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
    role: Role | None = None
    """Who spoke the turn (see :data:`Role`); ``None`` between peers or when not said."""

    def __post_init__(self) -> None:
        require_id(self.tenant, "tenant", InvalidEventError)
        if self.role is not None and (not isinstance(self.role, str) or self.role not in ROLES):
            raise InvalidEventError(
                f"unknown role {self.role!r}; expected one of {sorted(ROLES)} or None"
            )
        require_id(self.event_id, "event_id", InvalidEventError)
        require_id(self.subject, "subject", InvalidEventError)
        if not isinstance(self.actor, Actor):
            raise InvalidEventError(f"actor must be an Actor, got {type(self.actor).__name__}")
        if not isinstance(self.channel, str) or self.channel not in CHANNELS:
            raise InvalidEventError(
                f"unknown channel {self.channel!r}; expected one of {sorted(CHANNELS)}"
            )
        _set(self, "occurred_at", require_aware(self.occurred_at, "occurred_at", InvalidEventError))
        require_text(self.text, "text", InvalidEventError)
        if self.sequence is not None and (
            isinstance(self.sequence, bool)
            or not isinstance(self.sequence, int)
            or not 0 <= self.sequence <= MAX_SEQUENCE
        ):
            raise InvalidEventError(
                f"sequence must be an integer from 0 to 2**63 - 1, got {self.sequence!r}"
            )
        if self.stream is not None:
            require_id(self.stream, "stream", InvalidEventError)
        if not isinstance(self.metadata, Mapping):
            raise InvalidEventError(
                f"metadata must be a mapping, got {type(self.metadata).__name__}"
            )
        metadata = dict(self.metadata)
        _check_json(metadata, "metadata", InvalidEventError)
        _set(self, "metadata", metadata)

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
        if self.role is not None:  # only when said: events without a role hash as before
            body["role"] = self.role
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractorInfo:
    """Lineage: what produced a claim."""

    kind: ExtractorKind = "caller"
    name: str = "caller"
    version: str = "1"
    model: str | None = None
    prompt_version: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in EXTRACTOR_KINDS:
            raise InvalidClaimError(
                f"unknown extractor kind {self.kind!r}; expected one of {sorted(EXTRACTOR_KINDS)}"
            )
        for what in ("name", "version", "model", "prompt_version"):
            value = getattr(self, what)
            if value is None and what in ("model", "prompt_version"):
                continue
            if not require_text(value, f"extractor {what}", InvalidClaimError).strip():
                raise InvalidClaimError(f"extractor {what} must be a non-empty string")


CALLER = ExtractorInfo()


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A candidate claim proposed from one event. Proposals only: the commit decides.

    ``subject`` defaults to the event's subject and ``valid_from`` to its
    ``occurred_at`` when the claim is committed; ``valid_until=None`` is open-ended.
    ``polarity`` says whether the claim asserts its value or retracts it ("no longer
    uses TensorFlow": family ``tool``, value ``TensorFlow``, ``"retract"``); the
    commit closes what a retraction matches and never stores its value as current.
    ``expires_at`` (a TTL) is when memledger stops holding the record: it must come
    after the event, and the tenant's retention of the kind may set it earlier.
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
    polarity: Literal["assert", "retract"] = "assert"
    expires_at: datetime | None = None

    def __post_init__(self) -> None:
        require_id(self.family, "family", InvalidClaimError)
        if self.expires_at is not None:
            _set(
                self,
                "expires_at",
                require_aware(self.expires_at, "expires_at", InvalidClaimError),
            )
        if not isinstance(self.polarity, str) or self.polarity not in ("assert", "retract"):
            raise InvalidClaimError(
                f"polarity must be 'assert' or 'retract', got {self.polarity!r}"
            )
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise UnknownKindError(f"unknown kind {self.kind!r}; expected one of {sorted(KINDS)}")
        require_id(self.scope, "scope", InvalidClaimError)
        if self.subject is not None:
            require_id(self.subject, "subject", InvalidClaimError)
        if not isinstance(self.statement, str) or not self.statement.strip():
            raise InvalidClaimError("statement must be a non-empty string")
        require_text(self.statement, "statement", InvalidClaimError)
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
        if self.grounding is not None and not (
            require_text(self.grounding, "grounding", InvalidClaimError).strip()
        ):
            raise InvalidClaimError("grounding, when given, must be a non-empty quote")
        if (
            isinstance(self.confidence, bool)
            or not isinstance(self.confidence, int | float)
            or math.isnan(self.confidence)
            or not 0.0 <= self.confidence <= 1.0
        ):
            raise InvalidClaimError(f"confidence must be within [0, 1], got {self.confidence!r}")


def require_claims(
    claims: object, *, complete: object = True, extractor: object = CALLER
) -> tuple[Claim, ...]:
    """``claims`` as a tuple, if it is a sequence of :class:`Claim` and the batch's
    ``complete`` and ``extractor`` are usable; else :class:`InvalidClaimError`."""
    if isinstance(claims, str | bytes) or not isinstance(claims, Sequence):
        raise InvalidClaimError(
            f"claims must be a sequence of Claim (or None), got {type(claims).__name__}"
        )
    for index, claim in enumerate(claims):
        if not isinstance(claim, Claim):
            raise InvalidClaimError(f"claims[{index}] must be a Claim, got {type(claim).__name__}")
    if not isinstance(complete, bool):
        raise InvalidClaimError(f"complete must be True or False, got {complete!r}")
    if not isinstance(extractor, ExtractorInfo):
        raise InvalidClaimError(
            f"extractor must be an ExtractorInfo, got {type(extractor).__name__}"
        )
    return tuple(claims)


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
    expires_at: datetime | None = None
    """When memledger stops holding it (a TTL, or the tenant's retention of its kind):
    from then on no read returns it, and the next expiry run erases it."""

    @property
    def authorised(self) -> bool:
        """A record that may be part of the current view (not an observation, not historical)."""
        return self.kind != "observation" and self.status != "historical"

    def open_at(self, as_of: datetime) -> bool:
        """Whether memledger held this record at record time ``as_of`` (written, not yet
        superseded, not yet expired)."""
        return (
            self.recorded_at <= as_of
            and (self.superseded_at is None or as_of < self.superseded_at)
            and not self.expired(as_of)
        )

    @property
    def session(self) -> str | None:
        """For an episode, the session (``metadata["session"]`` of its event) it was said
        in; ``None`` for any other record and for a turn outside any session."""
        if self.kind == "episode" and isinstance(self.value, dict):
            session = self.value.get("session")
            return session if isinstance(session, str) else None
        return None

    @property
    def summary_of(self) -> str | None:
        """For a session summary (:mod:`memledger.write.compact`), the session whose
        episodes it covers; ``None`` for any other record."""
        if self.kind == "episode" and isinstance(self.value, dict):
            session = self.value.get("summary_of")
            return session if isinstance(session, str) else None
        return None

    def expired(self, now: datetime) -> bool:
        """Whether its expiry has come at record time ``now``."""
        return self.expires_at is not None and self.expires_at <= now

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
    also: tuple[RevocationReceipt, ...] = ()
    """Other families revoked with it: claims of the same source event that state
    the revoked words (see ``memledger.write.revoke``)."""
    redacted: tuple[str, ...] = ()
    """Records of the same source event re-issued without the revoked words (the
    turn's episode): the ids of the originals, now closed as revoked."""
    change_id: str | None = None
    """The recorded change (``Memory.undo`` takes it back); ``None`` when nothing
    changed (a repeated revocation) and on the receipts in ``also``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetReceipt:
    """The acknowledgement of forgetting a source event: every record derived from it
    is revoked, in every family and subject, and nothing derived from it is written
    again. Forgetting it again is acknowledged with no revocations."""

    tenant: str
    event_id: str
    revocations: tuple[RevocationReceipt, ...]
    acknowledged_at: datetime
    reason: str
    change_id: str | None = None
    """The recorded change (``Memory.undo`` takes it back); ``None`` when nothing
    changed (the event was forgotten before)."""


ReviewDecision = Literal["accept", "reject"]
"""What a reviewer decides about a held batch (``Memory.resolve_review``)."""

ReviewResolutionState = Literal["accepted", "rejected"]
"""A resolved review item's ``resolution``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewItem:
    """An event whose batch could not be committed as it stood. It changed nothing
    until a reviewer resolved it (``Memory.resolve_review``): ``resolution`` says how,
    ``resolved_by`` who, ``resolution_reason`` why and ``resolved_at`` when."""

    tenant: str
    review_id: str
    event_id: str
    subject: str
    reason: str
    claims: tuple[Claim, ...]
    created_at: datetime
    resolved_at: datetime | None = None
    resolution: str | None = None
    resolved_by: str | None = None
    resolution_reason: str | None = None
    extractor: ExtractorInfo = CALLER
    """What proposed the held claims (their lineage, kept if they are accepted)."""
    job_id: str | None = None
    generations: Mapping[str, int] | None = None
    """The family generations the held work started under (a job's), if any."""
    revocation_mark: int | None = None
    """The tenant's revocation count when the work started: a family revoked since
    rejects the held claims as ``stale_generation`` if they are accepted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewResolution:
    """The acknowledgement of a review decision. ``receipt`` is the event's committed
    receipt when the batch was accepted (its revisions are consistency tokens), else
    ``None``; ``duplicate`` says the item had already been resolved the same way."""

    item: ReviewItem
    receipt: Receipt | None
    duplicate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """An extraction job: the event it is for and what it started under.

    ``generations`` are the event subject's family generations when the job was
    queued; ``revocation_mark`` the number of revocations the tenant had then. A
    claim the job carries about any subject is stale if that subject's family was
    revoked after the mark (a claim about another subject included)."""

    tenant: str
    job_id: str
    event_id: str
    generations: Mapping[str, int]
    created_at: datetime
    revocation_mark: int = 0
    status: Literal["queued", "done", "failed"] = "queued"
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None


HistoryAction = Literal[
    "recorded",
    "closed",
    "revoked",
    "mentioned",
    "review_accepted",
    "review_rejected",
    "erased",
    "restored",
    "compacted",
]
"""What a history entry records (:class:`HistoryEntry`); ``compacted``: an episode left
the index for its session's summary (:mod:`memledger.write.compact`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEntry:
    """One change in a family's append-only history."""

    seq: int
    tenant: str
    subject: str
    family: str
    revision: int
    generation: int
    action: HistoryAction
    """``erased``: the record was erased (its content is gone; ``cause`` names the
    erasure). ``restored``: an undo wrote the record again (``memory_id`` is the new
    record; ``cause`` names the undo). ``review_accepted`` / ``review_rejected``: a
    reviewer resolved a held batch that named this family; ``memory_id`` is then the
    review item's id, ``status`` is ``active`` (the batch was committed) or
    ``historical`` (it was not), and ``note`` says who decided and why."""
    memory_id: str
    status: RecordStatus
    at: datetime
    cause: str
    note: str | None = None


def format_time(value: datetime) -> str:
    """Fixed-width UTC text that sorts like the instants it names."""
    naive = value.astimezone(UTC).replace(tzinfo=None)
    return naive.isoformat(timespec="microseconds") + "Z"


def parse_time(text: str) -> datetime:
    """The inverse of :func:`format_time` (text without a zone is read as UTC)."""
    if text.endswith("Z"):  # what format_time writes: parsed aware, in UTC, at once
        with suppress(ValueError):
            if (parsed := datetime.fromisoformat(text)).tzinfo is UTC:
                return parsed
    return datetime.fromisoformat(text.removesuffix("Z")).replace(tzinfo=UTC)
