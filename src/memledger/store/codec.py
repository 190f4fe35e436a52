"""JSON encodings of the domain values a store keeps in text columns.

Shared by every backend so that a receipt stored by one reads back the same
from any other.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, cast

from memledger.domain.policy import Position
from memledger.domain.records import (
    Claim,
    ClaimResult,
    ExtractorInfo,
    FamilyRevision,
    JsonValue,
    Receipt,
    canonical_json,
    format_time,
    parse_time,
)

dumps = canonical_json


def loads_json(text: str) -> JsonValue:
    return cast(JsonValue, json.loads(text))


def _obj(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {text[:40]!r}")
    return value


@lru_cache(maxsize=256)
def extractor_to_json(info: ExtractorInfo) -> str:
    return dumps(
        {
            "kind": info.kind,
            "name": info.name,
            "version": info.version,
            "model": info.model,
            "prompt_version": info.prompt_version,
        }
    )


@lru_cache(maxsize=256)
def extractor_from_json(text: str) -> ExtractorInfo:
    return ExtractorInfo(**_obj(text))


def position_to_json(position: Position | None) -> str | None:
    if position is None:
        return None
    return dumps(
        {
            "event_id": position.event_id,
            "stream": position.stream,
            "sequence": position.sequence,
            "channel": position.channel,
            "occurred_at": format_time(position.occurred_at),
        }
    )


def position_from_json(text: str | None) -> Position | None:
    if text is None:
        return None
    data = _obj(text)
    data["occurred_at"] = parse_time(data["occurred_at"])
    return Position(**data)


def _claim_dict(claim: Claim) -> dict[str, Any]:
    return {
        "family": claim.family,
        "kind": claim.kind,
        "statement": claim.statement,
        "value": claim.value,
        "scope": claim.scope,
        "subject": claim.subject,
        "valid_from": None if claim.valid_from is None else format_time(claim.valid_from),
        "valid_until": None if claim.valid_until is None else format_time(claim.valid_until),
        "grounding": claim.grounding,
        "confidence": claim.confidence,
        "polarity": claim.polarity,
        "expires_at": None if claim.expires_at is None else format_time(claim.expires_at),
    }


def claims_to_json(claims: tuple[Claim, ...]) -> str:
    return dumps([_claim_dict(c) for c in claims])


def claims_from_json(text: str) -> tuple[Claim, ...]:
    """Claims written by :func:`claims_to_json`; those written before claims had a
    polarity (no ``"polarity"`` key) read as assertions, before they had an expiry as
    claims that do not expire."""
    out: list[Claim] = []
    for data in json.loads(text):
        for key in ("valid_from", "valid_until", "expires_at"):
            if data.get(key) is not None:
                data[key] = parse_time(data[key])
        out.append(Claim(**data))
    return tuple(out)


def receipt_to_json(receipt: Receipt) -> str:
    return dumps(
        {
            "tenant": receipt.tenant,
            "event_id": receipt.event_id,
            "outcome": receipt.outcome,
            "revisions": [
                {
                    "subject": r.subject,
                    "family": r.family,
                    "revision": r.revision,
                    "generation": r.generation,
                }
                for r in receipt.revisions
            ],
            "results": [
                {
                    "family": r.family,
                    "scope": r.scope,
                    "disposition": r.disposition,
                    "memory_id": r.memory_id,
                    "reason": r.reason,
                    "decision": r.decision,
                }
                for r in receipt.results
            ],
            "review_id": receipt.review_id,
            "job_id": receipt.job_id,
            "reason": receipt.reason,
        }
    )


def receipt_from_json(text: str) -> Receipt:
    data = _obj(text)
    return Receipt(
        tenant=data["tenant"],
        event_id=data["event_id"],
        outcome=data["outcome"],
        revisions=tuple(FamilyRevision(**r) for r in data["revisions"]),
        results=tuple(ClaimResult(**r) for r in data["results"]),
        review_id=data["review_id"],
        job_id=data["job_id"],
        reason=data["reason"],
    )
