"""The rule extractor over a paraphrase set: precision and recall.

The set (``paraphrases.py``) says what each sentence must give. A stored claim
whose family, value or polarity is not one the sentence expects is wrong: it
counts against precision, which must stay at or above :data:`MIN_PRECISION`
(when unsure, the extractor stores the episode and no claim). Recall is
reported, and held above what the extractor reaches minus a small margin so a
regression fails. Run with ``pytest -s`` to see both and the misses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memledger.domain.records import Claim
from memledger.write.extract.rules import propose
from paraphrases import HELD_OUT, PARAPHRASES, TUNED, UNSURE, Expected

REFERENCE = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)
"""A Wednesday: every sentence is said at this instant."""

MIN_PRECISION = 0.98
MIN_RECALL = 0.96
"""What the extractor reaches on the whole set (0.979: the misses are the sentences
of ``UNSURE``), minus a margin."""

_DETERMINER = re.compile(r"^(?:a|an|the|my|our)\s+", re.IGNORECASE)


def normal(value: str) -> str:
    """A value as compared: case and spacing folded, a leading determiner left out."""
    return _DETERMINER.sub("", re.sub(r"\s+", " ", value).strip()).casefold()


def key(claim: Claim) -> tuple[str, str, str]:
    """``(family, value, polarity)`` of a claim, its value flattened as in the set."""
    value = claim.value
    if isinstance(value, dict):
        if claim.family == "likes":
            value = f"{value.get('item')}|{value.get('sentiment')}"
        elif claim.family == "relationship":
            value = f"{value.get('name')}|{value.get('relation')}"
        elif claim.family == "plan":
            value = str(value.get("plan"))
    return claim.family, normal(str(value)), getattr(claim, "polarity", "assert")


@dataclass
class Score:
    stored: int = 0
    wrong: list[tuple[str, tuple[str, str, str]]] = field(default_factory=list)
    expected: int = 0
    missed: list[tuple[str, tuple[str, str, str]]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return 1.0 if not self.stored else (self.stored - len(self.wrong)) / self.stored

    @property
    def recall(self) -> float:
        return 1.0 if not self.expected else (self.expected - len(self.missed)) / self.expected

    def report(self) -> str:
        lines = [
            f"paraphrases: {len(PARAPHRASES)} sentences, {self.expected} expected claims, "
            f"{self.stored} stored",
            f"precision {self.precision:.3f} ({len(self.wrong)} wrong), "
            f"recall {self.recall:.3f} ({len(self.missed)} missed)",
        ]
        lines += [f"  wrong  {k} <- {text!r}" for text, k in self.wrong]
        lines += [f"  missed {k} <- {text!r}" for text, k in self.missed]
        return "\n".join(lines)


def score(
    found: Iterable[tuple[str, Iterable[tuple[str, str, str]]]],
    paraphrases: tuple[tuple[str, Expected], ...] = PARAPHRASES,
) -> Score:
    """Score what an extractor gave for each sentence of ``paraphrases``, in order."""
    result = Score()
    for (text, expected), (said, got) in zip(paraphrases, found, strict=True):
        assert said == text
        want = {(f, normal(v), p) for f, v, p in expected}
        result.expected += len(want)
        got = set(got)
        result.stored += len(got)
        result.wrong += [(text, k) for k in sorted(got - want)]
        result.missed += [(text, k) for k in sorted(want - got)]
    return result


def run_rules(paraphrases: tuple[tuple[str, Expected], ...] = PARAPHRASES) -> Score:
    return score(
        ((text, [key(c) for c in propose(text, REFERENCE).claims]) for text, _ in paraphrases),
        paraphrases,
    )


def test_the_set_is_large_and_covers_every_family() -> None:
    assert len(PARAPHRASES) >= 150
    assert len({text.casefold() for text, _ in PARAPHRASES}) == len(PARAPHRASES)
    families = {family for _, expected in PARAPHRASES for family, _, _ in expected}
    assert families == {
        "home_city",
        "primary_framework",
        "tool",
        "employer",
        "role",
        "likes",
        "activity",
        "habit",
        "plan",
        "delivery_preference",
        "relationship",
        "attribute",
    }
    assert {p for _, expected in PARAPHRASES for _, _, p in expected} == {"assert", "retract"}
    assert sum(1 for _, expected in PARAPHRASES if not expected) >= 40


def test_precision_and_recall() -> None:
    for name, group in (("tuned", TUNED), ("held out", HELD_OUT), ("unsure", UNSURE)):
        part = run_rules(group)
        print(f"\n{name}: precision {part.precision:.3f}, recall {part.recall:.3f}", end="")
    result = run_rules()
    print("\n" + result.report())
    assert result.precision >= MIN_PRECISION, result.report()
    assert result.recall >= MIN_RECALL, result.report()


def test_when_unsure_no_claim_rather_than_a_wrong_value() -> None:
    result = run_rules(UNSURE)
    assert result.wrong == [], result.report()


def test_a_wrong_value_counts_against_precision() -> None:
    """The scorer itself: a value with a time phrase left in it is wrong, and missed."""
    text, expected = PARAPHRASES[0]
    (family, value, polarity) = expected[0]
    wrong = score(
        (t, [(family, normal(f"{value} two weeks"), polarity)] if t == text else [])
        for t, _ in PARAPHRASES
    )
    assert len(wrong.wrong) == 1 and wrong.precision == 0.0
    assert (text, (family, normal(value), polarity)) in wrong.missed
