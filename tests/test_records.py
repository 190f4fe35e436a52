"""Domain records: validation, identity of events, and exact round trips through the codec."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memledger import Actor, Claim, Grant, InvalidEventError, Receipt, SourceEvent
from memledger.domain.records import (
    ClaimResult,
    FamilyRevision,
    format_time,
    parse_time,
    require_id,
)
from memledger.errors import InvalidInputError
from memledger.store import codec

aware = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
TEXT = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
"""Characters text may hold: all but NUL and lone surrogates (refused: see require_text)."""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(TEXT, max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(TEXT, max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


HI: dict[str, Any] = {
    "tenant": "t",
    "event_id": "e",
    "subject": "s",
    "actor": Actor(id="a"),
    "channel": "chat",
    "occurred_at": datetime(2026, 10, 2, tzinfo=UTC),
    "text": "hi",
}
"""The fields of a plain event, as the tests of ``SourceEvent`` itself build it."""


@given(aware, aware)
def test_time_text_sorts_like_time_and_round_trips(a: datetime, b: datetime) -> None:
    assert parse_time(format_time(a)) == a
    assert parse_time(format_time(a)).tzinfo is UTC
    assert (format_time(a) < format_time(b)) == (a < b)


def test_time_text_without_a_zone_is_read_as_utc() -> None:
    expected = datetime(2026, 10, 2, 9, 30, tzinfo=UTC)
    for text in ("2026-10-02T09:30:00.000000Z", "2026-10-02T09:30:00.000000", "2026-10-02T09:30"):
        parsed = parse_time(text)
        assert parsed == expected
        assert parsed.tzinfo is UTC


def test_times_are_normalised_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    source = SourceEvent(**{**HI, "occurred_at": datetime(2026, 10, 2, 11, tzinfo=plus_two)})
    assert source.occurred_at == datetime(2026, 10, 2, 9, tzinfo=UTC)
    assert source.occurred_at.tzinfo is UTC


def test_content_hash_names_every_field() -> None:
    base = SourceEvent(**HI)
    same = SourceEvent(
        **{**HI, "occurred_at": datetime(2026, 10, 2, 2, tzinfo=timezone(timedelta(hours=2)))}
    )
    assert base.content_hash() == same.content_hash()
    variants = {
        "text": {"text": "ho"},
        "subject": {"subject": "s2"},
        "channel": {"channel": "tool"},
        "sequence": {"sequence": 1},
        "stream": {"stream": "x"},
        "metadata": {"metadata": {"k": 1}},
        "actor": {"actor": Actor(id="a", authenticated=True)},
        "grants": {"actor": Actor(id="a", grants=frozenset({Grant(family="f")}))},
        "time": {"occurred_at": datetime(2026, 10, 3, tzinfo=UTC)},
    }
    for name, change in variants.items():
        other = SourceEvent(**{**HI, **change})
        assert other.content_hash() != base.content_hash(), name


def test_grants() -> None:
    assert Grant.parse("home_city") == Grant(family="home_city", scope="*")
    assert Grant.parse("plan:team:berlin") == Grant(family="plan", scope="team:berlin")
    actor = Actor(id="a", authenticated=True, grants=frozenset({Grant.parse("plan:team")}))
    assert actor.may_set("plan", "team") and not actor.may_set("plan", "global")
    assert not Actor(id="a", grants=frozenset({Grant(family="*")})).may_set("plan", "team")
    with pytest.raises(InvalidEventError):
        Grant.parse(":scope")


@given(
    value=json_values,
    start=st.one_of(st.none(), aware),
    confidence=st.floats(0, 1),
    grounding=st.one_of(st.none(), st.text(TEXT, min_size=1).filter(str.strip)),
)
def test_claims_round_trip_exactly(
    value: object, start: datetime | None, confidence: float, grounding: str | None
) -> None:
    claim = Claim(
        family="plan",
        kind="fact",
        statement="s",
        value=value,
        valid_from=start,  # type: ignore[arg-type]
        confidence=confidence,
        grounding=grounding,
    )
    assert codec.claims_from_json(codec.claims_to_json((claim, claim))) == (claim, claim)


def test_receipts_round_trip_exactly() -> None:
    receipt = Receipt(
        tenant="t",
        event_id="e",
        outcome="committed",
        revisions=(FamilyRevision(subject="s", family="plan", revision=3, generation=1),),
        results=(
            ClaimResult(family="plan", scope="global", disposition="current", memory_id="m"),
            ClaimResult(
                family="plan",
                scope="global",
                disposition="rejected",
                memory_id=None,
                reason="stale_generation",
            ),
        ),
        job_id="job-1",
    )
    assert codec.receipt_from_json(codec.receipt_to_json(receipt)) == receipt
    assert receipt.revision("plan") == 3
    with pytest.raises(KeyError):
        receipt.revision("home_city")


# -- grants: validated at construction, text round trip (issue 9, item 4) -------------

scope_ids = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:@/+\-]{0,30}\Z")
family_ids = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._@/+\-]{0,30}\Z")
grants = st.builds(Grant, family=st.just("*") | family_ids, scope=st.just("*") | scope_ids)


@pytest.mark.parametrize(
    ("family", "scope", "fragment"),
    [
        ("home_city", "", "scope"),  # matched nothing directly, read back as "*"
        ("*", "", "scope"),  # read back as ("*", "*")
        ("plan:x", "*", "no ':'"),  # read back as ("plan", "x:*")
        ("", "*", "family"),
        ("home city", "*", "family 'home city'"),
        ("home_city", "a*", "scope"),
        ("home_city", "**", "scope"),
        ("*x", "*", "family"),
        ("home_city", " global", "scope"),
        ("x" * 256, "*", "family"),
        (None, "*", "family"),
        ("home_city", 3, "scope"),
    ],
)
def test_a_bad_grant_is_refused_at_construction(
    family: object, scope: object, fragment: str
) -> None:
    with pytest.raises(InvalidEventError) as caught:
        Grant(family=family, scope=scope)  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith(f"grant (family={family!r}, scope={scope!r})"), message
    assert fragment in message


@given(grants)
def test_grant_text_names_exactly_one_grant(grant: Grant) -> None:
    assert Grant.parse(str(grant)) == grant


@given(grants, grants)
def test_grant_text_is_injective(a: Grant, b: Grant) -> None:
    assert (str(a) == str(b)) == (a == b)


@pytest.mark.parametrize(
    "text", ["home_city:", "*:", ":scope", "", "plan:x:*", "plan:*x", "home city", "a:b c"]
)
def test_parse_refuses_what_no_grant_prints(text: str) -> None:
    with pytest.raises(InvalidEventError, match="grant"):
        Grant.parse(text)


def test_parse_names_an_empty_scope() -> None:
    with pytest.raises(InvalidEventError, match="grant 'home_city:' has an empty scope"):
        Grant.parse("home_city:")


def test_parse_reads_a_bare_family_as_any_scope() -> None:
    assert Grant.parse("home_city") == Grant(family="home_city", scope="*")
    assert Grant.parse("*") == Grant(family="*", scope="*")
    assert Grant.parse("*:global") == Grant(family="*", scope="global")


def test_actor_grants_are_checked() -> None:
    assert Actor(id="a", grants=["plan:team", Grant(family="home_city")]).grants == frozenset(  # type: ignore[arg-type]
        {Grant(family="plan", scope="team"), Grant(family="home_city")}
    )
    for bad in ("plan", 5, [5], [("plan", "x")], ["home_city:"]):
        with pytest.raises(InvalidEventError, match="grant"):
            Actor(id="a", grants=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidEventError, match="authenticated"):
        Actor(id="a", authenticated="no")  # type: ignore[arg-type]


def test_the_content_hash_keeps_its_grant_text() -> None:
    """Stored ledgers hash grants as sorted ``str(grant)``: that text must not change."""
    event = SourceEvent(
        **{
            **HI,
            "actor": Actor(id="a", grants=frozenset({Grant(family="plan", scope="team:berlin")})),
            "metadata": {"k": [1, {"b": "é"}]},
        }
    )
    assert event.content_hash() == (  # as computed before grants were validated
        "3b3f5036e2becb09a663ddb9f61a11282f7c5151588a97a4039cdfe69051e323"
    )


@pytest.mark.parametrize("bad", ["acme\n", "acme\r\n", "\nacme", "ac me", "acme\t"])
def test_an_identifier_has_no_whitespace_at_either_end(bad: str) -> None:
    with pytest.raises(InvalidInputError, match="not a valid identifier"):
        require_id(bad, "tenant", InvalidInputError)
