"""The write rules the event commit applies: authority and the order rule.

Pure functions over domain records. The commit (``memledger.write.commit``)
calls them inside its transaction; they never read the clock or the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from memledger.domain.decide import Similarity, Thresholds
from memledger.domain.records import Channel, ExclusionReason, Kind, SourceEvent
from memledger.domain.similarity import similarity

DEFAULT_PRECEDENCE: Mapping[Channel, int] = MappingProxyType(
    {
        "system": 100,
        "account_service": 90,
        "chat": 50,
        "tool": 20,
        "document": 10,
        "web": 0,
    }
)
"""Source precedence where no shared sequence orders two events: higher wins."""

SETTING_CHANNELS: frozenset[Channel] = frozenset({"system", "account_service"})
"""Channels whose authorised claims are confirmed operational settings. A chat
statement, even an authorised one, is a preference, not a business setting."""

UNTRUSTED_CHANNELS: frozenset[Channel] = frozenset({"tool", "document", "web"})
"""Channels whose text is data, never instructions: nothing from them becomes a
``procedure`` without an explicit, authorised promotion."""

DEFAULT_TRUST: Mapping[Channel, float] = MappingProxyType(
    {
        "system": 1.0,
        "account_service": 1.0,
        "chat": 0.5,
        "tool": 0.0,
        "document": 0.0,
        "web": 0.0,
    }
)
"""Trust of an authenticated source by channel; an unauthenticated one gets 0."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WritePolicy:
    """Settings of the event commit."""

    precedence: Mapping[Channel, int] = field(default_factory=lambda: DEFAULT_PRECEDENCE)
    setting_channels: frozenset[Channel] = SETTING_CHANNELS
    trusted: Mapping[Channel, float] = field(default_factory=lambda: DEFAULT_TRUST)
    thresholds: Thresholds = field(default_factory=Thresholds)
    similarity: Similarity = field(default=similarity)
    """How alike two statements are, for the decision (trigram cosine by default)."""

    def rank(self, channel: Channel) -> int:
        return self.precedence.get(channel, 0)

    def trust(self, event: SourceEvent) -> float:
        """How far claims from ``event`` are trusted, in ``[0, 1]``."""
        if not event.actor.authenticated:
            return 0.0
        return self.trusted.get(event.channel, 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Position:
    """Where a family's latest accepted event stands on the business timeline."""

    event_id: str
    stream: str
    sequence: int | None
    channel: Channel
    occurred_at: datetime

    @classmethod
    def of(cls, event: SourceEvent) -> Position:
        return cls(
            event_id=event.event_id,
            stream=event.stream_key,
            sequence=event.sequence,
            channel=event.channel,
            occurred_at=event.occurred_at,
        )


OrderDecision = Literal["apply", "historical", "review"]


@dataclass(frozen=True, slots=True)
class Ordering:
    decision: OrderDecision
    reason: ExclusionReason | None
    explanation: str


def order(incoming: Position, latest: Position | None, policy: WritePolicy) -> Ordering:
    """Decide whether an event may change a family's current view.

    1. Same stream and both sequenced: the later sequence applies, an earlier one
       is historical, an equal one from another event goes to review.
    2. Otherwise source precedence: a higher-ranked channel applies, a lower one
       is historical.
    3. Equal precedence: different sequenced streams cannot be ordered (review);
       else ``occurred_at`` orders them, and a tie goes to review.
    """
    if latest is None:
        return Ordering("apply", None, "first accepted event of the family")
    if incoming.stream == latest.stream and None not in (incoming.sequence, latest.sequence):
        assert incoming.sequence is not None and latest.sequence is not None
        if incoming.sequence > latest.sequence:
            return Ordering("apply", None, "later sequence in the same stream")
        if incoming.sequence < latest.sequence:
            return Ordering(
                "historical",
                "older_sequence",
                f"sequence {incoming.sequence} is older than accepted {latest.sequence} "
                f"in stream {incoming.stream!r}",
            )
        return Ordering(
            "review",
            None,
            f"events {incoming.event_id!r} and {latest.event_id!r} share sequence "
            f"{incoming.sequence} in stream {incoming.stream!r}",
        )
    mine, theirs = policy.rank(incoming.channel), policy.rank(latest.channel)
    if mine > theirs:
        return Ordering("apply", None, f"{incoming.channel} outranks {latest.channel}")
    if mine < theirs:
        return Ordering(
            "historical",
            "lower_precedence",
            f"{incoming.channel} is outranked by {latest.channel}",
        )
    if incoming.sequence is not None and latest.sequence is not None:
        return Ordering(
            "review",
            None,
            f"streams {incoming.stream!r} and {latest.stream!r} share no sequence "
            "and have equal precedence",
        )
    if incoming.occurred_at > latest.occurred_at:
        return Ordering("apply", None, "later occurred_at at equal precedence")
    if incoming.occurred_at < latest.occurred_at:
        return Ordering(
            "historical", "older_sequence", "earlier occurred_at than the accepted event"
        )
    return Ordering(
        "review",
        None,
        f"events {incoming.event_id!r} and {latest.event_id!r} occurred at the same instant "
        "with equal precedence",
    )


@dataclass(frozen=True, slots=True)
class Authority:
    authorised: bool
    reason: ExclusionReason | None


def authority(
    event: SourceEvent,
    *,
    subject: str,
    family: str,
    scope: str,
    kind: Kind = "fact",
    own_say: bool = False,
) -> Authority:
    """Whether ``event``'s actor may set ``family`` in ``scope`` for ``subject``.

    Only the subject's own events can set its families; an unauthenticated actor
    or one without the grant yields an observation at most. Text from tool
    results, documents and web pages never becomes a ``procedure``. An
    ``episode`` only records that the subject's own event happened: it needs no grant.
    What the assistant said (``role="assistant"``) is never an authority. A family
    that is the subject's ``own_say`` (:class:`~memledger.domain.families.Family`)
    needs no grant when the subject's user says it (``role="user"``).
    """
    if subject != event.subject:
        return Authority(False, "foreign_subject")
    if kind == "procedure" and event.channel in UNTRUSTED_CHANNELS:
        return Authority(False, "untrusted_source")
    if kind == "episode":
        return Authority(True, None)
    if event.role == "assistant":
        return Authority(False, "agent_words")
    if not event.actor.authenticated:
        return Authority(False, "unauthenticated")
    if own_say and event.role == "user":
        return Authority(True, None)
    if not event.actor.may_set(family, scope):
        return Authority(False, "no_grant")
    return Authority(True, None)
