"""Input size limits: how much one event, its claims and a revocation may carry. Pure.

A :class:`Limits` is handed to :class:`memledger.Memory` (``Memory.open(...,
limits=Limits(max_text_chars=20_000))``); ``Memory.ingest`` and
``Memory.commit_job`` check against it before opening a write transaction, so
input over a limit changes nothing and raises
:class:`~memledger.errors.LimitExceededError` naming the limit::

    text has 10,485,760 characters; the limit is max_text_chars=8,388,608

These limits are about cost (storage, indexing, a context budget), and can be
raised or lowered. The structural ones that keep input safe (text encodable as
UTF-8, JSON nesting at most :data:`~memledger.domain.records.MAX_DEPTH` levels,
a ``sequence`` that fits 64 bits, identifiers of at most 255 characters) are
not configurable: records refuse such input when they are built.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from memledger.domain.records import (
    MAX_DEPTH,
    MAX_ID_CHARS,
    Claim,
    SourceEvent,
    canonical_json,
    json_depth,
    require_text,
)
from memledger.errors import InvalidInputError, LimitExceededError

__all__ = ["Limits", "check_claims", "check_event", "check_reason"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The size limits of the write path. Every field is a positive whole number."""

    max_text_chars: int = 8_388_608
    """Characters of an event's ``text``: 8 MiB of characters, room for a pasted document,
    log or source file (real conversational turns reach about 20,000; BEAM chats hold
    single turns of 350,000). A turn is stored whole; the index keeps a long one as
    passages (:mod:`memledger.index.passages`)."""
    max_metadata_bytes: int = 65_536
    """UTF-8 bytes of an event's ``metadata`` as canonical (compact, key-sorted) JSON."""
    max_metadata_depth: int = 16
    """Nesting of ``metadata``: ``{}`` is 1 level, ``{"a": [1]}`` 2 (hard limit 64)."""
    max_value_bytes: int = 65_536
    """UTF-8 bytes of a claim's ``value`` as canonical JSON."""
    max_value_depth: int = 16
    """Nesting of a claim's ``value``, counted as for metadata (hard limit 64)."""
    max_statement_chars: int = 10_000
    """Characters of a claim's ``statement`` or ``grounding``, or of a revocation's
    ``reason``. An ``episode`` (the turn itself) is bounded by ``max_text_chars``
    instead, and its value by depth only: it holds the turn's text."""
    max_claims: int = 256
    """Candidate claims of one event."""
    max_id_chars: int = MAX_ID_CHARS
    """Characters of an identifier: tenant, event id, subject, actor id, stream, and a
    claim's or grant's family and scope (hard limit 255)."""

    def __post_init__(self) -> None:
        ceilings = {
            "max_metadata_depth": MAX_DEPTH,
            "max_value_depth": MAX_DEPTH,
            "max_id_chars": MAX_ID_CHARS,
        }
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(
                    f"Limits.{item.name} must be a whole number >= 1, got {value!r}"
                )
            ceiling = ceilings.get(item.name)
            if ceiling is not None and value > ceiling:
                raise InvalidInputError(
                    f"Limits.{item.name} must be at most {ceiling}, got {value!r}"
                )


def _over(what: str, amount: int, unit: str, limits: Limits, name: str) -> None:
    limit: int = getattr(limits, name)
    if amount > limit:
        raise LimitExceededError(f"{what} has {amount:,} {unit}; the limit is {name}={limit:,}")


def _json(value: object, what: str, limits: Limits, *, size: str, depth: str) -> None:
    _over(what, len(canonical_json(value).encode()), "bytes of JSON", limits, size)
    levels = json_depth(value, what, InvalidInputError)  # valid: the record checked it
    _over(what, levels, "levels of nesting", limits, depth)


def _ids(pairs: Iterable[tuple[str, str | None]], limits: Limits) -> None:
    for what, value in pairs:
        if value is not None:
            _over(what, len(value), "characters", limits, "max_id_chars")


def check_event(event: SourceEvent, limits: Limits) -> None:
    """Raise :class:`LimitExceededError` if ``event`` is over one of ``limits``."""
    _ids(
        [
            ("tenant", event.tenant),
            ("event_id", event.event_id),
            ("subject", event.subject),
            ("actor id", event.actor.id),
            ("stream", event.stream),
        ],
        limits,
    )
    for grant in sorted(event.actor.grants, key=str):
        _ids(
            [
                (f"grant {str(grant)!r} family", grant.family),
                (f"grant {str(grant)!r} scope", grant.scope),
            ],
            limits,
        )
    _over("text", len(event.text), "characters", limits, "max_text_chars")
    _json(
        event.metadata,
        "metadata",
        limits,
        size="max_metadata_bytes",
        depth="max_metadata_depth",
    )


def check_claims(claims: Sequence[Claim], limits: Limits) -> None:
    """Raise :class:`LimitExceededError` if the batch ``claims`` is over one of ``limits``."""
    _over("the event", len(claims), "claims", limits, "max_claims")
    for index, claim in enumerate(claims):
        where = f"claims[{index}]"
        _ids(
            [
                (f"{where}.family", claim.family),
                (f"{where}.scope", claim.scope),
                (f"{where}.subject", claim.subject),
            ],
            limits,
        )
        if claim.kind == "episode":  # the turn itself: bounded as a turn's text is
            _over(
                f"{where}.statement", len(claim.statement), "characters", limits, "max_text_chars"
            )
            levels = json_depth(claim.value, f"{where}.value", InvalidInputError)
            _over(f"{where}.value", levels, "levels of nesting", limits, "max_value_depth")
            continue
        for what, text in (("statement", claim.statement), ("grounding", claim.grounding)):
            if text is not None:
                _over(f"{where}.{what}", len(text), "characters", limits, "max_statement_chars")
        _json(
            claim.value,
            f"{where}.value",
            limits,
            size="max_value_bytes",
            depth="max_value_depth",
        )


def check_reason(reason: object, limits: Limits) -> str:
    """``reason`` (of a revocation) if it is usable text within ``limits``."""
    text = require_text(reason, "reason", InvalidInputError)
    if not text.strip():
        raise InvalidInputError("reason must be a non-empty string")
    _over("reason", len(text), "characters", limits, "max_statement_chars")
    return text
