"""One event's candidate batch: its identity, validation and self-consistency. Pure."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from memledger.domain.families import Schema
from memledger.domain.intervals import Interval, first_overlap
from memledger.domain.records import (
    CALLER,
    Claim,
    ExtractorInfo,
    SourceEvent,
    canonical_json,
    format_time,
)
from memledger.errors import InvalidClaimError, InvalidIntervalError


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id: the same inputs give the same id in every process and retry."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:20]
    return f"{prefix}-{digest}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """One event's candidate claims, as an extractor or a caller proposes them."""

    event: SourceEvent
    claims: tuple[Claim, ...]
    complete: bool = True
    extractor: ExtractorInfo = CALLER
    generations: Mapping[str, int] | None = None
    """The family generations the work started under; ``None`` means "now"."""
    revocation_mark: int | None = None
    """The tenant's revocation count when the work started (a job's); ``None``: "now"."""
    job_id: str | None = None
    note: str | None = None
    """Why the batch is what it is (``"prefilter:role_play"``); kept on the receipt."""
    from_ledger: bool = False
    """The event was read from this store's ledger (a job): no need to append or compare."""
    derivation: str | None = None
    """Another derivation of an event already decided (an extractor's rollback re-deriving
    it): the new records' ids include it, so they never collide with the first ones."""


def _claim_key(claim: Claim) -> str:
    return canonical_json(
        [
            claim.subject,
            claim.family,
            claim.scope,
            claim.kind,
            claim.statement,
            claim.value,
            None if claim.valid_from is None else format_time(claim.valid_from),
            None if claim.valid_until is None else format_time(claim.valid_until),
            claim.grounding,
            claim.confidence,
            claim.polarity,
        ]
    )


def distinct_claims(claims: tuple[Claim, ...]) -> tuple[Claim, ...]:
    """``claims`` without exact repeats, first occurrence kept: a repeated candidate
    is one claim, not two overlapping windows."""
    seen: dict[str, Claim] = {}
    for claim in claims:
        seen.setdefault(_claim_key(claim), claim)
    return tuple(seen.values())


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def interval_of(event: SourceEvent, claim: Claim) -> Interval:
    """The claim's valid interval; ``valid_from`` defaults to the event's ``occurred_at``."""
    start = claim.valid_from or event.occurred_at
    if claim.valid_until is not None and claim.valid_until <= start:
        raise InvalidIntervalError(
            f"claim {claim.family!r} ends at {claim.valid_until.isoformat()!r}, not after its "
            f"start {start.isoformat()!r} (valid_from defaults to the event's occurred_at)"
        )
    return Interval(start, claim.valid_until)


def validate(batch: Batch, schema: Schema) -> None:
    """Reject malformed input before any write: unknown families and kinds, inverted
    intervals, grounding quotes that are not in the event's text."""
    text = _normal(batch.event.text)
    for claim in batch.claims:
        if not isinstance(claim, Claim):
            raise InvalidClaimError(f"expected a Claim, got {type(claim).__name__}")
        schema.check(claim.family, claim.kind)
        interval_of(batch.event, claim)
        if claim.expires_at is not None and claim.expires_at <= batch.event.occurred_at:
            raise InvalidClaimError(
                f"claim {claim.family!r} expires at {claim.expires_at.isoformat()!r}, not after"
                f" its event ({batch.event.occurred_at.isoformat()!r})"
            )
        if claim.grounding is not None and _normal(claim.grounding) not in text:
            raise InvalidClaimError(
                f"grounding {claim.grounding!r} of claim {claim.family!r} is not in the text "
                f"of event {batch.event.event_id!r}"
            )


def contradiction(batch: Batch) -> str | None:
    """Why the batch cannot be committed as it stands, or ``None``."""
    if not batch.complete:
        return "the extractor marked the candidate batch incomplete"
    groups: dict[tuple[str, str, str], list[Claim]] = defaultdict(list)
    for claim in batch.claims:
        groups[(claim.subject or batch.event.subject, claim.family, claim.scope)].append(claim)
    for (subject, family, scope), claims in sorted(groups.items()):
        clash = first_overlap([interval_of(batch.event, c) for c in claims])
        if clash is not None:
            return (
                f"candidates for {family!r} of {subject!r} in scope {scope!r} overlap in valid "
                f"time ({format_time(clash[1].start)}): the batch contradicts itself"
            )
    return None
