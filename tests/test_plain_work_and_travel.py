"""Work, home and the way to work as people plainly say them, read by the default rule
extractor: a job taken, a role "as" or "like" something, a note of a job, a job left, a
home counted in years or rented, how one gets to work; and what looks like them but is
not (a trip, a duration, a sentence that happens to end in "my favourite")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memledger.write.extract.rules import propose

AT = datetime(2026, 6, 15, 12, tzinfo=UTC)


def _said(text: str) -> set[tuple[str, str, str, str]]:
    """(family, scope, value, polarity) of what ``text`` gives (values as text)."""
    return {
        (c.family, c.scope, c.value if isinstance(c.value, str) else "", c.polarity)
        for c in propose(text, AT).claims
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I got a job at Spotify.", {("employer", "global", "Spotify", "assert")}),
        (
            "I have taken up a position as a senior analyst at Deloitte.",
            {
                ("employer", "global", "Deloitte", "assert"),
                ("role", "global", "senior analyst", "assert"),
            },
        ),
        ("Starting at Google next week!", {("employer", "global", "Google", "assert")}),
        (
            "Engineer at Airbus.",
            {("employer", "global", "Airbus", "assert"), ("role", "global", "Engineer", "assert")},
        ),
        ("I work like a taxi driver in Athens.", {("role", "global", "taxi driver", "assert")}),
        (
            "I serve as head of procurement at Maersk.",
            {
                ("employer", "global", "Maersk", "assert"),
                ("role", "global", "head of procurement", "assert"),
            },
        ),
        ("I'm no longer at the Guardian.", {("employer", "global", "the Guardian", "retract")}),
        (
            "My sister just got a job at Spotify.",
            {("attribute", "person:sister/employer", "spotify", "assert")},
        ),
        ("I've been in Milan for twelve years.", {("home_city", "global", "Milan", "assert")}),
        ("We're renting in Bath for now.", {("home_city", "global", "Bath", "assert")}),
        ("Now I have my own flat in Gdańsk.", {("home_city", "global", "Gdańsk", "assert")}),
        ("But now I live in Kraków.", {("home_city", "global", "Kraków", "assert")}),
        ("Nurse. Night shifts, mostly.", {("role", "global", "Nurse", "assert")}),
        (
            "My uncle is farmer in Normandy.",
            {("attribute", "person:uncle/role", "farmer", "assert")},
        ),
        (
            "Catching up with my roommate Priya was lovely. She's moved to Vancouver.",
            {
                ("relationship", "person:priya", "", "assert"),
                ("attribute", "person:roommate/home_city", "vancouver", "assert"),
            },
        ),
        ("I commute by train.", {("attribute", "commute", "train", "assert")}),
        ("Taking the bus to work now.", {("attribute", "commute", "bus", "assert")}),
        ("I ride a vespa to work every day.", {("attribute", "commute", "scooter", "assert")}),
        ("I take the ferry every weekday morning.", {("attribute", "commute", "ferry", "assert")}),
        ("I go every day with my bicycle.", {("attribute", "commute", "bike", "assert")}),
        ("Subway to work. Forty minutes.", {("attribute", "commute", "subway", "assert")}),
        ("I walk to school.", {("attribute", "commute", "walking", "assert")}),
        (
            "I switched from driving to cycling to work.",
            {("attribute", "commute", "bike", "assert")},
        ),
    ],
)
def test_what_is_said_plainly_is_read(text: str, expected: set[tuple[str, str, str, str]]) -> None:
    assert _said(text) == expected


@pytest.mark.parametrize(
    ("text", "not_this"),
    [
        ("I took the bus to Porto.", "commute"),  # a trip
        ("I went with my car to the beach.", "commute"),
        ("I run every day.", "commute"),  # exercise
        ("I've been in meetings for hours.", "home_city"),
        ("I've been in London for a conference.", "home_city"),
        ("I'm no longer at home.", "employer"),
        ("I start at 9am.", "employer"),
        ("Dinner at Nando's.", "employer"),
        ("Firefighter. Twelve years.", "attribute"),  # how long, not how old
        ("Great engineer.", "role"),  # praise, not a job
        ("My boss is a nightmare.", "attribute"),
        ("Now I prefer more the classic music.", "likes"),
        (
            "For me nothing is better than the pierogi of my grandmother, is my favourite food.",
            "likes",
        ),
        ("Every morning I drink mate like in Argentina, it is my favourite drink.", "likes"),
        ("We had a quiet dinner at the Thai place, which is my favourite.", "likes"),
    ],
)
def test_what_only_looks_like_it_gives_nothing_of_it(text: str, not_this: str) -> None:
    found = _said(text)
    assert not [f for f in found if not_this in (f[0], f[1])], found


def test_a_commute_is_not_also_a_habit() -> None:
    assert {f[0] for f in _said("I commute by train from Haarlem to Amsterdam each day.")} == {
        "attribute"
    }


@pytest.mark.parametrize(
    ("text", "languages"),
    [
        ("I speak Spanish, English and little bit Catalan.", {"spanish", "english", "catalan"}),
        ("German native, Dutch fluent, French rusty.", {"german", "dutch", "french"}),
        ("I speak Arabic since I was born.", {"arabic"}),
        ("I speak English with my French colleagues.", {"english"}),  # French: of colleagues
    ],
)
def test_languages_said_in_lists_and_notes(text: str, languages: set[str]) -> None:
    found = {f[2] for f in _said(text) if f[1].startswith("speaks:") or f[1] == "native_language"}
    assert found == languages


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Stamp collecting is my chief pastime.", ("hobby:stamp-collecting", "assert")),
        ("Basketball's my thing.", ("sport:basketball", "assert")),
        ("The only sport I actually play is badminton.", ("sport:badminton", "assert")),
        ("Switched from hockey to ringette this yr.", ("sport:ringette", "assert")),
        ("Switched from hockey to ringette this yr.", ("sport:hockey", "retract")),
    ],
)
def test_pastimes_said_the_other_way_round(text: str, expected: tuple[str, str]) -> None:
    assert expected in {(f[1], f[3]) for f in _said(text) if f[0] == "attribute"}


def test_a_thing_that_is_no_activity_is_a_liking_and_no_pastime_is_named_by_a_pronoun() -> None:
    assert {(f[0], f[1]) for f in _said("Coffee is my thing.")} == {("likes", "item:coffee")}
    assert _said("This is my thing.") == set()
    assert _said("Work is my passion.") == set()
    # a favourite sport is the favourite, read elsewhere
    assert ("attribute", "sport:baseball", "baseball", "assert") not in _said(
        "Baseball is my favourite sport."
    )


def test_yr_is_a_year_unless_it_follows_a_number() -> None:
    assert ("attribute", "age", "34", "assert") in _said("im 34yo")
    assert not [f for f in _said("switched from hockey to ringette this yr") if f[1] == "age"]


def test_a_state_that_has_held_until_now_is_current_but_an_activity_is_no_state() -> None:
    assert ("attribute", "diet", "vegetarian", "assert") in _said(
        "I've been vegetarian for about six years now."
    )
    assert not [f for f in _said("I've been trying to read more this year.") if "goal" in f[1]]


@pytest.mark.parametrize(
    ("text", "condition"),
    [
        ("ugh my asthma is acting up today", "health_condition:asthma"),
        ("I am a lifelong asthmatic.", "health_condition:asthma"),
        ("I have suffered from chronic back pain since 2016.", "health_condition:back-pain"),
    ],
)
def test_conditions_said_in_passing(text: str, condition: str) -> None:
    assert condition in {f[1] for f in _said(text)}


def test_a_pain_of_a_boss_is_no_condition_and_a_flare_today_does_not_date_it() -> None:
    assert not [f for f in _said("I have a pain in the neck of a boss.") if "health" in f[1]]
    (asthma,) = [c for c in propose("ugh my asthma is acting up today", AT).claims]
    assert asthma.valid_from is None


def test_a_relation_named_without_my_is_still_someone_else() -> None:
    assert _said("Boss is vegan. Lunch meetings are fun.") == {
        ("attribute", "person:boss/diet", "vegan", "assert")
    }
    assert ("attribute", "person:partner/employer", "google", "assert") in _said(
        "Partner works at Google."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "not a vegetarian anymore fyi, doc said my iron was way too low",
            {("attribute", "diet", "vegetarian", "retract")},
        ),
        ("I follow a strictly gluten-free diet.", {("attribute", "diet", "gluten-free", "assert")}),
        ("im vegan lol", {("attribute", "diet", "vegan", "assert")}),
        ("Not a fan anymore.", set()),  # a fan of nothing named
    ],
)
def test_diets_said_tersely(text: str, expected: set[tuple[str, str, str, str]]) -> None:
    assert _said(text) == expected
