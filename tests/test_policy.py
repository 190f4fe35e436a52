"""The order rule (DESIGN invariant 3) and authority (invariant 9) of the event commit."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.domain.policy import (
    DEFAULT_PRECEDENCE,
    Authority,
    Ordering,
    Position,
    WritePolicy,
    authority,
    order,
)
from memledger.domain.records import Actor, Channel, Grant, SourceEvent
from memledger.errors import InvalidEventError

FAST = settings(max_examples=200, deadline=None)
POLICY = WritePolicy()
T0 = datetime(2025, 10, 2, 9, tzinfo=UTC)
CHANNELS: tuple[Channel, ...] = get_args(Channel)


def pos(
    event_id: str,
    *,
    channel: Channel = "chat",
    stream: str | None = None,
    sequence: int | None = None,
    at: datetime = T0,
) -> Position:
    return Position(
        event_id=event_id,
        stream=stream or channel,
        sequence=sequence,
        channel=channel,
        occurred_at=at,
    )


def decided(ordering: Ordering) -> tuple[str, str | None]:
    return ordering.decision, ordering.reason


# -- order: examples ---------------------------------------------------------


def test_first_event_of_a_family_applies() -> None:
    assert decided(order(pos("e1", channel="web"), None, POLICY)) == ("apply", None)


def test_same_stream_later_sequence_applies_earlier_is_historical() -> None:
    five = pos("e5", stream="crm", sequence=5)
    four = pos("e4", stream="crm", sequence=4, at=T0 + timedelta(days=1))
    # the sequence is the business timeline; occurred_at does not matter
    assert decided(order(five, four, POLICY)) == ("apply", None)
    late = order(four, five, POLICY)
    assert decided(late) == ("historical", "older_sequence")
    assert "crm" in late.explanation


def test_same_stream_sequence_outranks_channel_precedence() -> None:
    chat = pos("e2", channel="chat", stream="crm", sequence=2)
    account = pos("e1", channel="account_service", stream="crm", sequence=1)
    assert decided(order(chat, account, POLICY)) == ("apply", None)
    assert decided(order(account, chat, POLICY)) == ("historical", "older_sequence")


def test_same_stream_equal_sequence_goes_to_review() -> None:
    a = pos("a", stream="crm", sequence=7)
    b = pos("b", stream="crm", sequence=7, at=T0 + timedelta(hours=1))
    ordering = order(b, a, POLICY)
    assert decided(ordering) == ("review", None)
    assert "'a'" in ordering.explanation and "'b'" in ordering.explanation


def test_account_service_outranks_chat_without_shared_sequence() -> None:
    account = pos("acct", channel="account_service", sequence=3, at=T0)
    chat = pos("chat", channel="chat", sequence=900, at=T0 + timedelta(days=3))
    assert decided(order(account, chat, POLICY)) == ("apply", None)
    assert decided(order(chat, account, POLICY)) == ("historical", "lower_precedence")


def test_equal_precedence_on_different_sequenced_streams_goes_to_review() -> None:
    a = pos("a", stream="phone", sequence=1, at=T0)
    b = pos("b", stream="web-chat", sequence=9, at=T0 + timedelta(days=1))
    assert decided(order(a, b, POLICY)) == ("review", None)
    assert decided(order(b, a, POLICY)) == ("review", None)


@pytest.mark.parametrize(("seq_a", "seq_b"), [(None, None), (4, None), (None, 4)])
def test_equal_precedence_without_shared_sequence_orders_by_occurred_at(
    seq_a: int | None, seq_b: int | None
) -> None:
    early = pos("early", stream="phone", sequence=seq_a, at=T0)
    late = pos("late", stream="web-chat", sequence=seq_b, at=T0 + timedelta(seconds=1))
    assert decided(order(late, early, POLICY)) == ("apply", None)
    assert decided(order(early, late, POLICY)) == ("historical", "older_sequence")
    tie = pos("tie", stream="web-chat", sequence=seq_b, at=T0)
    assert decided(order(tie, early, POLICY)) == ("review", None)


def test_unsequenced_events_of_one_channel_order_by_occurred_at() -> None:
    first = pos("first", at=T0)
    second = pos("second", at=T0 + timedelta(minutes=5))
    assert decided(order(second, first, POLICY)) == ("apply", None)
    assert decided(order(first, second, POLICY)) == ("historical", "older_sequence")


def test_policy_precedence_is_configurable() -> None:
    flipped = WritePolicy(precedence={"chat": 100, "account_service": 1})
    chat = pos("chat", channel="chat")
    account = pos("acct", channel="account_service")
    assert decided(order(chat, account, flipped)) == ("apply", None)
    assert decided(order(account, chat, flipped)) == ("historical", "lower_precedence")
    # channels the mapping does not name rank 0, so they tie and occurred_at decides
    later_web = pos("web", channel="web", at=T0 + timedelta(hours=1))
    assert flipped.rank("web") == flipped.rank("document") == 0
    assert decided(order(later_web, pos("doc", channel="document"), flipped)) == ("apply", None)


def test_default_precedence_ranks_trusted_sources_higher() -> None:
    ranked = sorted(CHANNELS, key=POLICY.rank, reverse=True)
    assert ranked == ["system", "account_service", "chat", "tool", "document", "web"]
    assert set(DEFAULT_PRECEDENCE) == set(CHANNELS)


def test_position_of_event_uses_the_stream_key() -> None:
    actor = Actor(id="u1", authenticated=True)
    plain = SourceEvent(
        tenant="t", event_id="e1", subject="s", actor=actor, channel="chat", occurred_at=T0, text=""
    )
    streamed = replace(plain, event_id="e2", channel="account_service", sequence=3, stream="crm")
    assert Position.of(plain) == pos("e1", channel="chat", stream="chat", at=T0)
    assert Position.of(streamed) == pos(
        "e2", channel="account_service", stream="crm", sequence=3, at=T0
    )


# -- order: properties -------------------------------------------------------

channels = st.sampled_from(CHANNELS)
moments = st.sampled_from([T0 + timedelta(minutes=m) for m in range(4)])
sequences = st.none() | st.integers(min_value=0, max_value=5)
positions = st.builds(
    Position,
    event_id=st.sampled_from(["a", "b", "c"]),
    stream=st.sampled_from(["chat", "crm", "phone"]),
    sequence=sequences,
    channel=channels,
    occurred_at=moments,
)
MIRROR = {"apply": "historical", "historical": "apply", "review": "review"}


@FAST
@given(positions)
def test_without_latest_everything_applies(incoming: Position) -> None:
    assert decided(order(incoming, None, POLICY)) == ("apply", None)


@FAST
@given(positions, positions)
def test_order_is_antisymmetric(a: Position, b: Position) -> None:
    forward, backward = order(a, b, POLICY), order(b, a, POLICY)
    assert backward.decision == MIRROR[forward.decision]
    assert (forward.reason is None) == (forward.decision != "historical")
    if forward.decision == "historical":
        assert forward.reason in ("older_sequence", "lower_precedence")


@FAST
@given(
    st.sampled_from(["chat", "crm"]),
    st.tuples(sequences, channels, moments, st.sampled_from(["a", "b"])),
    st.tuples(sequences, channels, moments, st.sampled_from(["a", "b"])),
)
def test_same_stream_never_applies_both_ways(
    stream: str,
    first: tuple[int | None, Channel, datetime, str],
    second: tuple[int | None, Channel, datetime, str],
) -> None:
    seq_a, channel_a, at_a, id_a = first
    seq_b, channel_b, at_b, id_b = second
    a = Position(event_id=id_a, stream=stream, sequence=seq_a, channel=channel_a, occurred_at=at_a)
    b = Position(event_id=id_b, stream=stream, sequence=seq_b, channel=channel_b, occurred_at=at_b)
    forward, backward = order(a, b, POLICY), order(b, a, POLICY)
    assert not (forward.decision == "apply" and backward.decision == "apply")
    if seq_a is not None and seq_b is not None:
        # both sequenced on one stream: the sequence alone decides
        expected = "apply" if seq_a > seq_b else "historical" if seq_a < seq_b else "review"
        assert forward.decision == expected


@FAST
@given(positions, positions)
def test_higher_precedence_decides_across_streams(a: Position, b: Position) -> None:
    if a.stream == b.stream and a.sequence is not None and b.sequence is not None:
        return  # the sequence rule, covered above
    mine, theirs = POLICY.rank(a.channel), POLICY.rank(b.channel)
    ordering = order(a, b, POLICY)
    if mine > theirs:
        assert decided(ordering) == ("apply", None)
    elif mine < theirs:
        assert decided(ordering) == ("historical", "lower_precedence")
    else:
        assert ordering.reason != "lower_precedence"


# -- authority ---------------------------------------------------------------


def event(
    *, subject: str = "user-42", authenticated: bool = True, grants: tuple[Grant, ...] = ()
) -> SourceEvent:
    return SourceEvent(
        tenant="acme",
        event_id="e1",
        subject=subject,
        actor=Actor(id="agent", authenticated=authenticated, grants=frozenset(grants)),
        channel="chat",
        occurred_at=T0,
        text="deliver on Fridays",
    )


def verdict(ev: SourceEvent, family: str = "delivery", scope: str = "global") -> Authority:
    return authority(ev, subject="user-42", family=family, scope=scope)


ALL = Grant(family="*")


def test_granted_actor_is_authorised() -> None:
    assert verdict(event(grants=(Grant(family="delivery"),))) == Authority(True, None)


def test_foreign_subject_wins_over_other_reasons() -> None:
    assert verdict(event(subject="user-7", grants=(ALL,))) == Authority(False, "foreign_subject")
    assert verdict(event(subject="user-7", authenticated=False)).reason == "foreign_subject"


def test_unauthenticated_actor_is_not_authorised_even_with_grants() -> None:
    assert verdict(event(authenticated=False, grants=(ALL,))) == Authority(False, "unauthenticated")


def test_missing_grant_is_no_grant() -> None:
    assert verdict(event()) == Authority(False, "no_grant")
    assert verdict(event(grants=(Grant(family="home_city"),))) == Authority(False, "no_grant")


def test_wildcard_family_grant_covers_every_family_and_scope() -> None:
    granted = event(grants=(ALL,))
    assert verdict(granted, "delivery", "global").authorised
    assert verdict(granted, "home_city", "eu").authorised


def test_scope_specific_grants() -> None:
    eu_delivery = event(grants=(Grant(family="delivery", scope="eu"),))
    assert verdict(eu_delivery, "delivery", "eu") == Authority(True, None)
    assert verdict(eu_delivery, "delivery", "us") == Authority(False, "no_grant")
    assert verdict(eu_delivery, "delivery", "global") == Authority(False, "no_grant")
    assert verdict(eu_delivery, "home_city", "eu") == Authority(False, "no_grant")
    eu_anything = event(grants=(Grant(family="*", scope="eu"),))
    assert verdict(eu_anything, "home_city", "eu").authorised
    assert verdict(eu_anything, "home_city", "us") == Authority(False, "no_grant")


def test_grant_parse() -> None:
    assert Grant.parse("delivery:eu") == Grant(family="delivery", scope="eu")
    assert Grant.parse("delivery") == Grant(family="delivery", scope="*")
    assert Grant.parse("*") == ALL
    assert Grant.parse("delivery:repo:acme/api") == Grant(family="delivery", scope="repo:acme/api")
    assert str(Grant(family="delivery", scope="eu")) == "delivery:eu"
    with pytest.raises(InvalidEventError):
        Grant.parse(":eu")
    with pytest.raises(InvalidEventError):
        Grant.parse("")


names = st.sampled_from(["delivery", "home_city"])
scopes = st.sampled_from(["global", "eu"])
grants = st.builds(
    Grant,
    family=st.sampled_from(["*", "delivery", "home_city"]),
    scope=st.sampled_from(["*", "eu"]),
)


@FAST
@given(
    st.sampled_from(["user-42", "user-7"]),
    st.booleans(),
    st.lists(grants, max_size=3),
    names,
    scopes,
)
def test_authority_model(
    subject: str, authenticated: bool, held: list[Grant], family: str, scope: str
) -> None:
    result = authority(
        event(subject=subject, authenticated=authenticated, grants=tuple(held)),
        subject="user-42",
        family=family,
        scope=scope,
    )
    covered = any(g.family in ("*", family) and g.scope in ("*", scope) for g in held)
    if subject != "user-42":
        assert result == Authority(False, "foreign_subject")
    elif not authenticated:
        assert result == Authority(False, "unauthenticated")
    elif not covered:
        assert result == Authority(False, "no_grant")
    else:
        assert result == Authority(True, None)


@FAST
@given(names, st.one_of(st.just("*"), st.from_regex(r"[a-z0-9][a-z0-9:/-]{0,8}", fullmatch=True)))
def test_grant_text_round_trips(family: str, scope: str) -> None:
    grant = Grant.parse(f"{family}:{scope}")
    assert (grant.family, grant.scope) == (family, scope)
    assert Grant.parse(str(grant)) == grant
    assert Grant.parse(family) == Grant(family=family)  # no scope: any scope
    with pytest.raises(InvalidEventError, match="empty scope"):
        Grant.parse(f"{family}:")  # never read back wider than it was written
