"""Open attributes: what a person plainly says about themself, or about someone they
name, becomes typed claims of family ``attribute`` (single-valued ones replace each
other, additive ones keep every value), read by the default rule extractor; what is
asked, wished, imagined or quoted gives nothing; a change closes the old window at the
time the turn gives. Real SQLite for the commit-level stories."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memledger import Memory, SourceEvent
from memledger.domain.records import Claim
from memledger.testing.scenarios import actor, event
from memledger.write.extract.rules import propose

AT = datetime(2026, 6, 15, 12, tzinfo=UTC)


def _open(text: str) -> set[tuple[str, str, str | None, str]]:
    """(family, scope, value, polarity) of what ``text`` gives."""
    return {
        (c.family, c.scope, c.value if isinstance(c.value, str) else None, c.polarity)
        for c in propose(text, AT).claims
    }


def _attributes(text: str) -> list[Claim]:
    return [c for c in propose(text, AT).claims if c.family == "attribute"]


@pytest.mark.parametrize(
    ("text", "scope", "value"),
    [
        ("I'm vegetarian", "diet", "vegetarian"),
        ("I went vegan last year", "diet", "vegan"),
        ("I'm allergic to peanuts", "allergy:peanuts", "peanuts"),
        ("I was diagnosed with asthma as a kid", "health_condition:asthma", "asthma"),
        ("I'm diabetic", "health_condition:diabetes", "diabetes"),
        ("I have a dog named Rex", "pet:dog-named-rex", "dog named rex"),
        ("I grew up in Porto", "hometown", "porto"),
        ("I'm Portuguese", "nationality", "portuguese"),
        ("I'm 34", "age", "34"),
        ("My birthday is March 3rd", "birthday", "march 3"),
        ("I'm studying computer science", "studies", "computer science"),
        ("I go to Purdue", "school", "purdue"),
        ("My first language is Portuguese", "native_language", "portuguese"),
        ("I speak French", "speaks:french", "french"),
        ("I drive a Subaru Outback", "vehicle", "subaru outback"),
        ("I bike to work", "commute", "bike"),
        ("I'm married", "relationship_status", "married"),
        ("I have three kids", "children", "3"),
        ("Dune is my favourite book", "favourite_book", "dune"),
        ("My favourite colour is green", "favourite_color", "green"),
        ("I play tennis", "sport:tennis", "tennis"),
        ("I play the cello", "instrument:cello", "cello"),
        ("I'm really into photography", "hobby:photography", "photography"),
        ("My goal is to run a marathon", "goal:run-marathon", "run a marathon"),
        ("I ran a half marathon last weekend", "event:ran-half-marathon", "ran half marathon"),
        ("I have a younger sister", "family_member:sister", "sister"),
    ],
)
def test_what_a_person_says_of_themself_is_an_attribute(text: str, scope: str, value: str) -> None:
    found = _attributes(text)
    assert [(c.scope, c.value, c.polarity) for c in found] == [(scope, value, "assert")]
    assert found[0].grounding and found[0].statement[0].isupper()


def test_a_terse_turn_is_the_speakers() -> None:
    assert {(c.scope, c.value) for c in _attributes("vegan btw, allergic to sesame, kiwi")} == {
        ("diet", "vegan"),
        ("allergy:sesame", "sesame"),
        ("allergy:kiwi", "kiwi"),
    }
    assert {(c.scope, c.value) for c in _attributes("Married, two kids.")} == {
        ("relationship_status", "married"),
        ("children", "2"),
    }


@pytest.mark.parametrize(
    ("text", "scope", "value"),
    [
        ("My sister is a nurse", "person:sister/role", "nurse"),
        ("My boss just moved to Denver", "person:boss/home_city", "denver"),
        ("my bf's allergic to cats", "person:boyfriend/allergy:cats", "cats"),
        ("My mother, who is originally from Lagos, retired", "person:mother/hometown", "lagos"),
        (
            "My dad retired and now he's taken up woodworking",
            "person:father/hobby:woodworking",
            "woodworking",
        ),
    ],
)
def test_another_persons_attribute_is_theirs_never_the_speakers(
    text: str, scope: str, value: str | None
) -> None:
    found = _attributes(text)
    assert [c.scope for c in found] == [scope]
    if value is not None:
        assert found[0].value == value
    assert not any(c.scope in ("role", "home_city", "hometown") for c in found)
    assert not any(c.family in ("role", "home_city") for c in propose(text, AT).claims)


@pytest.mark.parametrize(
    "text",
    [
        "Am I allergic to shellfish?",
        "Should I go vegan?",
        "If I were vegan I'd miss cheese.",
        "I wish I had a dog.",
        "I might get a cat next year.",
        "Maybe I'll learn the piano.",
        'She said "I am vegan".',
        "Studies show that vegetarians live longer.",
        "My favourite?",
    ],
)
def test_questions_wishes_hypotheticals_and_quotes_give_nothing(text: str) -> None:
    assert _attributes(text) == []


@pytest.mark.parametrize(
    ("text", "scope", "value"),
    [
        ("I'm not vegan any more", "diet", "vegan"),
        ("I used to be vegetarian", "diet", "vegetarian"),
        ("update: no longer vegan, bacon won", "diet", "vegan"),
        ("My dog passed away last week", "pet:dog", "dog"),
        ("I no longer suffer from migraines", "health_condition:migraines", "migraines"),
        ("I sold my car", "vehicle", "car"),
    ],
)
def test_a_retraction_by_paraphrase(text: str, scope: str, value: str) -> None:
    assert [(c.scope, c.value, c.polarity) for c in _attributes(text)] == [
        (scope, value, "retract")
    ]


def test_a_lapse_retracts_the_diet_without_naming_it() -> None:
    (claim,) = _attributes("Actually I eat fish now")
    assert (claim.scope, claim.value, claim.polarity) == ("diet", None, "retract")


def test_a_move_names_the_new_city_with_its_time() -> None:
    claims = propose("I moved from Berlin to Lisbon last month", AT).claims
    (home,) = [c for c in claims if c.family == "home_city"]
    assert (home.value, home.polarity) == ("Lisbon", "assert")
    assert home.valid_from is not None and home.valid_from.month == 5


def test_a_move_between_frameworks_is_no_move() -> None:
    assert not any(
        c.family == "home_city" for c in propose("I moved from TensorFlow to PyTorch", AT).claims
    )


# -- through the commit ---------------------------------------------------------------------


def said(n: int, text: str, *, days: int | None = None) -> SourceEvent:
    """Ana's own turn ``e<n>``, said ``n`` days (or ``days``) after ``AT``."""
    return event(
        f"e{n}",
        text,
        occurred_at=AT + timedelta(days=n if days is None else days),
        subject="ana",
        who=actor(actor_id="ana"),  # no grant: the subject's own say
        role="user",
    )


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    opened = Memory.open(f"sqlite:///{tmp_path / 'm.db'}")
    yield opened
    opened.close()


def _current(memory: Memory) -> set[tuple[str, object]]:
    return {(r.scope, r.value) for r in memory.current("ana", "attribute", tenant="acme")}


def test_a_correction_by_paraphrase_closes_the_diet_and_keeps_it_in_history(
    memory: Memory,
) -> None:
    for n, text in enumerate(["I'm vegetarian.", "Actually I eat fish now."], 1):
        memory.ingest(said(n, text))
    memory.process()
    assert ("diet", "vegetarian") not in _current(memory)
    closed = [r for r in memory.history("ana", "attribute", tenant="acme") if r.scope == "diet"]
    assert {r.value for r in closed} == {"vegetarian"}
    assert any(r.valid_until == AT + timedelta(days=2) for r in closed)


def test_a_new_diet_replaces_the_old_one(memory: Memory) -> None:
    for n, text in enumerate(["I'm vegetarian.", "I went vegan last week."], 1):
        memory.ingest(said(n, text))
    memory.process()
    assert ("diet", "vegan") in _current(memory)
    assert ("diet", "vegetarian") not in _current(memory)


def test_an_additive_attribute_keeps_every_value(memory: Memory) -> None:
    for n, text in enumerate(["I'm allergic to peanuts.", "I'm also allergic to shellfish."], 1):
        memory.ingest(said(n, text))
    memory.process()
    assert {("allergy:peanuts", "peanuts"), ("allergy:shellfish", "shellfish")} <= _current(memory)


def test_a_move_closes_the_old_city_at_the_time_the_turn_gives(memory: Memory) -> None:
    memory.ingest(said(1, "I live in Berlin."))
    memory.ingest(said(40, "I moved to Lisbon two weeks ago."))
    memory.process()
    (now,) = memory.current("ana", "home_city", tenant="acme")
    assert now.value == "Lisbon"
    assert now.valid_from is not None
    assert now.valid_from.date() == (AT + timedelta(days=40) - timedelta(weeks=2)).date()
    berlin = [r for r in memory.history("ana", "home_city", tenant="acme") if r.value == "Berlin"]
    assert any(r.valid_until == now.valid_from for r in berlin)


def test_a_value_said_in_other_words_still_passes_the_grounding_gate(memory: Memory) -> None:
    memory.ingest(said(1, "Three kids, all under ten."))
    memory.ingest(said(2, "Violinist, grade 8."))
    memory.process()
    assert {("children", "3"), ("instrument:violin", "violin")} <= _current(memory)
