"""Builders shared by the input tests: a valid event and claim, changed field by field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memledger import Actor, Claim, Grant, SourceEvent

NOW = datetime(2026, 10, 2, 12, tzinfo=UTC)


def event(event_id: str = "evt-1", **fields: Any) -> SourceEvent:
    body: dict[str, Any] = {
        "tenant": "acme",
        "event_id": event_id,
        "subject": "user-42",
        "actor": Actor(
            id="user-42", authenticated=True, grants=frozenset({Grant(family="home_city")})
        ),
        "channel": "chat",
        "occurred_at": NOW,
        "text": "I live in Lyon.",
    }
    body.update(fields)
    return SourceEvent(**body)


def claim(**fields: Any) -> Claim:
    body: dict[str, Any] = {
        "family": "home_city",
        "kind": "fact",
        "statement": "Lives in Lyon",
        "value": "Lyon",
        "grounding": "I live in Lyon",
    }
    body.update(fields)
    return Claim(**body)
