"""What the administration commands print (:mod:`memledger.cli.admin`): API keys,
claim families, the review queue and possible updates."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from memledger.cli.render._base import new_table
from memledger.domain.families import Family
from memledger.domain.keys import ApiKey
from memledger.domain.records import ReviewItem
from memledger.read.missed import PossibleUpdate
from memledger.wire import isoformat


def keys(console: Console, found: Sequence[ApiKey]) -> None:
    """API keys, revoked ones included (a token is never shown here)."""
    table = new_table("key id", "actor", "principal", "role", "grants", "created", "state", "label")
    for key in found:
        state = "active" if key.revoked_at is None else f"revoked {isoformat(key.revoked_at)}"
        table.add_row(
            Text(key.key_id),
            Text(key.actor_id),
            Text(key.principal),
            Text(key.role),
            Text(", ".join(sorted(str(g) for g in key.grants)) or "-"),
            Text(isoformat(key.created_at)),
            Text(state),
            Text(key.label or "-"),
        )
    console.print(table)


def families(console: Console, rows: Sequence[tuple[Family, str]]) -> None:
    """Claim families, each with where it comes from (``code`` or ``registered``)."""
    table = new_table("family", "kinds", "own say", "source", "description")
    for family, source in rows:
        table.add_row(
            Text(family.name),
            Text(", ".join(sorted(family.kinds))),
            Text("yes" if family.own_say else "no"),
            Text(source),
            Text(family.description or "-"),
        )
    console.print(table)


def review_queue(console: Console, items: Sequence[ReviewItem]) -> None:
    """Review items with who resolved them and why (``reviews list``)."""
    table = new_table("review id", "event id", "subject", "claims", "state", "reason")
    for item in items:
        state = (
            "open"
            if item.resolution is None
            else f"{item.resolution} by {item.resolved_by}: {item.resolution_reason}"
        )
        table.add_row(
            Text(item.review_id),
            Text(item.event_id),
            Text(item.subject),
            Text(str(len(item.claims))),
            Text(state),
            Text(item.reason),
        )
    console.print(table)


def possible_updates(console: Console, items: Sequence[PossibleUpdate]) -> None:
    """Later turns that may change a current value no claim changed."""
    table = new_table("family", "current value", "since", "later turn", "said", "reason")
    for item in items:
        text = item.turn.value.get("text") if isinstance(item.turn.value, dict) else None
        table.add_row(
            Text(item.current.family),
            Text(item.current.claim),
            Text(isoformat(item.current.valid_from)),
            Text(text if isinstance(text, str) else item.turn.claim),
            Text(isoformat(item.turn.valid_from)),
            Text(item.reason),
        )
    console.print(table)
