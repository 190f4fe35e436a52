"""The pure write policy: decisions, confidence, prefilter, gates, trust."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger import Actor, Claim, InvalidInputError, SourceEvent
from memledger.domain.decide import (
    Add,
    Candidate,
    Delete,
    Existing,
    Noop,
    Thresholds,
    Unmatched,
    Update,
    decide,
)
from memledger.domain.gates import content_words, gate, support, word_set
from memledger.domain.intervals import Interval
from memledger.domain.policy import WritePolicy
from memledger.domain.prefilter import PrefilterSettings, prefilter
from memledger.domain.scoring import confidence
from memledger.domain.similarity import similarity

JAN, MAR, JUN = (datetime(2026, m, 1, tzinfo=UTC) for m in (1, 3, 6))
ALWAYS = Interval(JAN)
FROM_JUNE = Interval(JUN)


def existing(
    memory_id: str,
    statement: str,
    value: object,
    *,
    scope: str = "global",
    interval: Interval = ALWAYS,
) -> Existing:
    return Existing(
        memory_id=memory_id,
        statement=statement,
        value=value,
        scope=scope,  # type: ignore[arg-type]
        interval=interval,
    )


def candidate(
    statement: str,
    value: object,
    *,
    scope: str = "global",
    interval: Interval = FROM_JUNE,
    retract: bool = False,
) -> Candidate:
    return Candidate(
        statement=statement,
        value=value,  # type: ignore[arg-type]
        scope=scope,
        interval=interval,
        polarity="retract" if retract else "assert",
    )


# -- the decision -----------------------------------------------------------------------


def test_seed_003_decisions() -> None:
    delhi = existing("m-delhi", "Based in Delhi", "Delhi")
    assert decide(candidate("Based in Bangalore", "Bangalore"), [delhi]) == Update(("m-delhi",))
    flash = candidate(
        "Reviews flashcards every morning", "review flashcards", scope="habit:review-flashcards"
    )
    assert decide(flash, [delhi]) == Add()
    plan = existing(
        "m-plan",
        "Planning the NeurIPS submission",
        {"status": "on"},
        scope="plan:neurips-submission",
    )
    off = candidate(
        "The NeurIPS submission plan is off",
        {"status": "off"},
        scope="plan:neurips-submission",
        retract=True,
    )
    assert decide(off, [delhi, plan]) == Delete("m-plan", similarity(off.statement, plan.statement))
    assert decide(candidate("Based in Delhi", "Delhi"), [delhi]) == Noop("m-delhi", 1.0)


def test_moving_the_noop_threshold_turns_a_borderline_fact_into_an_add() -> None:
    builds = existing("m-builds", "Builds AI products", "AI products", scope="work:ai-products")
    borderline = candidate("Builds AI product", "AI product", scope="work:ai-product")
    score = similarity(borderline.statement, builds.statement)
    assert 0.85 <= score < 0.99
    assert decide(borderline, [builds]) == Noop("m-builds", score)
    assert decide(borderline, [builds], Thresholds(noop=0.99)) == Add()


def test_a_negation_is_no_repeat_however_similar_the_letters() -> None:
    always = existing(
        "m-rule",
        "Instruction: Always include version numbers",
        {"rule": "Always include version numbers", "when": "libraries"},
        scope="rule:include-version-number",
    )
    never = candidate(
        "Instruction: Never include version numbers",
        {"rule": "Never include version numbers", "when": "libraries"},
        scope="rule:include-version-number",
    )
    assert similarity(never.statement, always.statement) >= 0.85
    assert decide(never, [always]) == Update(("m-rule",))
    again = candidate(
        "Instruction: Always include the version numbers",
        {"rule": "Always include the version numbers", "when": "libraries"},
        scope="rule:include-version-number",
    )
    assert isinstance(decide(again, [always]), Noop)  # a paraphrase is still a repeat


def test_a_retraction_that_matches_nothing_changes_nothing_and_a_loose_match_deletes() -> None:
    tools = existing("m-tf", "Uses TensorFlow", "TensorFlow", scope="tool:tensorflow")
    meat = candidate("No longer eats meat", "meat", scope="item:meat", retract=True)
    assert decide(meat, [tools]) == Unmatched()
    stopped = candidate("Stopped using TensorFlow", "TensorFlow", scope="tool:tf", retract=True)
    decision = decide(stopped, [tools])
    assert isinstance(decision, Delete) and decision.target == "m-tf"


def test_the_polarity_decides_not_the_words_of_the_statement() -> None:
    tools = existing("m-tf", "Uses TensorFlow", "TensorFlow", scope="tool:tensorflow")
    worded = candidate("No longer uses TensorFlow", "TensorFlow", scope="tool:tensorflow")
    assert decide(worded, [tools]) == Noop("m-tf", 1.0)  # asserted: the same value again
    plain = candidate("Uses TensorFlow", "TensorFlow", scope="tool:tensorflow", retract=True)
    assert decide(plain, [tools]) == Delete("m-tf", 1.0)


def test_a_retraction_of_another_value_leaves_a_global_slot_alone() -> None:
    denver = existing("m-den", "Lives in Denver", "Denver")
    phoenix = candidate("No longer lives in Phoenix", "Phoenix", retract=True)
    assert decide(phoenix, [denver]) == Unmatched()
    left = candidate("No longer lives in denver", "denver", retract=True)
    assert decide(left, [denver]) == Delete("m-den", similarity(left.statement, denver.statement))


def test_a_value_over_a_longer_window_than_known_is_an_update_not_a_noop() -> None:
    friday = existing("m-fri", "Digest on Fridays", "friday", interval=Interval(JAN, MAR))
    assert decide(
        candidate("Digest on Fridays", "friday", interval=Interval(JAN)), [friday]
    ) == Update(("m-fri",))
    assert (
        decide(candidate("Digest on Fridays", "friday", interval=Interval(JUN)), [friday]) == Add()
    )


words = st.sampled_from(
    [
        "based",
        "in",
        "delhi",
        "plan",
        "uses",
        "jax",
        "likes",
        "tea",
        "off",
        "daily",
        "friday",
        "stopped",
        "builds",
        "ai",
    ]
)
statements = st.lists(words, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(
    statement=statements,
    others=st.lists(statements, max_size=4),
    low=st.floats(0, 1),
    high=st.floats(0, 1),
)
def test_raising_the_noop_threshold_never_creates_a_noop(
    statement: str, others: list[str], low: float, high: float
) -> None:
    low, high = sorted((low, high))
    records = [existing(f"m-{i}", s, s, scope=f"item:{i}") for i, s in enumerate(others)]
    new = candidate(statement, statement, scope="item:new")
    strict = decide(new, records, Thresholds(add=0.0, noop=high))
    loose = decide(new, records, Thresholds(add=0.0, noop=low))
    if isinstance(strict, Noop):
        assert isinstance(loose, Noop)


@settings(max_examples=200, deadline=None)
@given(statement=statements)
def test_restating_a_known_claim_is_always_a_noop(statement: str) -> None:
    known = existing("m-1", statement, statement)
    assert decide(candidate(statement, statement), [known]) == Noop("m-1", 1.0)
    retracted = decide(candidate(statement, statement, retract=True), [known])
    assert retracted == Delete("m-1", 1.0)


def test_thresholds_are_validated() -> None:
    with pytest.raises(InvalidInputError):
        Thresholds(add=0.9, noop=0.5)


@given(st.text(), st.text())
def test_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert similarity(a, b) == pytest.approx(similarity(b, a))
    assert 0.0 <= similarity(a, b) <= 1.0


# -- confidence --------------------------------------------------------------------------


def test_confidence_curve() -> None:
    assert confidence(1) == pytest.approx(0.65)
    assert confidence(5) == pytest.approx(0.82, abs=0.005)
    values = [confidence(n) for n in range(1, 60)]
    assert values == sorted(values) and values[-1] < 0.9
    assert confidence(3, first=0.95) == pytest.approx(0.95)  # never lowers
    with pytest.raises(ValueError):
        confidence(0)


# -- prefilter and gates ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("let's pretend you're a pirate", "role_play"),
        ("Pretend you are my grandmother and tell me a story", "role_play"),
        ("Let's role-play a job interview", "role_play"),
        ("lol", "filler"),
        ("ok thanks!", "filler"),
        ("test test", "test_chatter"),
        ("testing 1 2 3", "test_chatter"),
        ("x", "too_short"),
        ("Builds AI", None),
        ("Based in Delhi", None),
        ("I review flashcards every morning", None),
        ("I tested the new build on Fridays", None),
    ],
)
def test_prefilter(text: str, reason: str | None) -> None:
    assert prefilter(text, turns_last_minute=1) == reason


def test_prefilter_rate_limit() -> None:
    assert prefilter("Based in Delhi", turns_last_minute=31) == "rate_limited"
    assert (
        prefilter(
            "Based in Delhi",
            turns_last_minute=3,
            settings=PrefilterSettings(max_turns_per_minute=2),
        )
        == "rate_limited"
    )


@given(st.text(max_size=200))
def test_word_set_is_the_content_words_frozen(text: str) -> None:
    assert word_set(text) == frozenset(content_words(text))
    assert word_set(text) is word_set(text)  # read once per text


def test_gates() -> None:
    text = "Send my digest on Fridays, and I moved to Bangalore last week."
    good = Claim(
        family="home_city",
        kind="fact",
        statement="Moved to Bangalore",
        value="Bangalore",
        grounding="moved to Bangalore",
    )
    assert gate(good, text) is None
    assert (
        gate(
            Claim(
                family="home_city", kind="fact", statement="Lives in Bangalore", value="Bangalore"
            ),
            text,
        )
        == "ungrounded"
    )
    assert (
        gate(
            Claim(
                family="employer",
                kind="fact",
                statement="Works at Infosys as a manager",
                value="Infosys",
                grounding="Bangalore",
            ),
            text,
        )
        == "unsupported"
    )
    assert (
        gate(
            Claim(
                family="home_city",
                kind="fact",
                statement="Moved to Bangalore",
                value="Bangalore",
                grounding="Bangalore",
                confidence=0.1,
            ),
            text,
        )
        == "unimportant"
    )
    assert support("Wants the digest on Fridays", text) == 1.0


def test_trust_by_channel() -> None:
    policy = WritePolicy()

    def source(channel: str, authenticated: bool = True) -> SourceEvent:
        return SourceEvent(
            tenant="t",
            event_id="e",
            subject="s",
            actor=Actor(id="a", authenticated=authenticated),
            channel=channel,
            occurred_at=JAN,
            text="x",
        )  # type: ignore[arg-type]

    assert policy.trust(source("system")) == 1.0
    assert policy.trust(source("chat")) == 0.5
    assert policy.trust(source("chat", authenticated=False)) == 0.0
    assert policy.trust(source("document")) == 0.0
    configured = WritePolicy(trusted={"document": 0.7})
    assert configured.trust(source("document")) == 0.7


def test_a_templated_statement_is_supported_by_its_value_only_if_the_text_has_it() -> None:
    text = "I moved to JAX last week."
    assert (
        gate(
            Claim(
                family="primary_framework",
                kind="preference",
                statement="Primary framework: JAX",
                value="JAX",
                grounding="moved to JAX",
            ),
            text,
        )
        is None
    )
    assert (
        gate(
            Claim(
                family="primary_framework",
                kind="preference",
                statement="Primary framework: PyTorch",
                value="PyTorch",
                grounding="moved to JAX",
            ),
            text,
        )
        == "unsupported"
    )
    assert (
        gate(
            Claim(
                family="primary_framework",
                kind="preference",
                statement="Primary framework unknown",
                value=None,
                grounding="moved to JAX",
            ),
            text,
        )
        == "unsupported"
    )
