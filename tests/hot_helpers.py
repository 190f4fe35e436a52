"""Builders shared by the hot-tier tests (in process and in Redis): ``NOW``, a subject's
turn ``event`` and the ``digest`` preference it states."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memledger import Claim, SourceEvent
from memledger.testing import scenarios

NOW = datetime(2026, 10, 28, 9, tzinfo=UTC)
FAMILY = "delivery_preference"


def event(n: int, text: str, *, tenant: str = "acme", subject: str = "u1") -> SourceEvent:
    """Event ``e<n>`` of ``subject``, said by the subject (granted the digest's family)
    ``10 - n`` days before ``NOW``."""
    return scenarios.event(
        f"e{n}",
        text,
        occurred_at=NOW - timedelta(days=10 - n),
        who=scenarios.actor(FAMILY, actor_id=subject),
        subject=subject,
        tenant=tenant,
    )


def digest(value: str) -> list[Claim]:
    """The claim that the digest is delivered ``value``."""
    said = f"Digest delivered {value}"
    return [scenarios.pref(value, family=FAMILY, statement=said, grounding=f"digest {value}")]
