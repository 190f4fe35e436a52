"""The decision for one current candidate against its family: ADD, UPDATE, DELETE or NOOP.

Computed, not scripted: from similarity, the family's slots (a (family, scope)
pair holds mutually exclusive values) and the candidate's polarity.

1. **DELETE** when the candidate retracts (``polarity="retract"``: "no longer
   uses TensorFlow", "the Japan trip is off") and matches an open record: the
   record of the same scope (in a global slot: holding the same value), else a
   record of the family holding the same value or at least ``noop`` similar (and
   with the same negation words: "never X" is not a repeat of "always X"). A
   retraction that matches nothing changes nothing
   (:class:`Unmatched`): its value is what stopped being true, never a new record.
2. **NOOP** when an open record of the same scope holds the same value, or a
   statement at least ``noop`` similar, over the candidate's whole interval;
   or when a record under another scope of the family is at least ``noop``
   similar over that interval (the same thing filed under another key). Similar
   statements are a repeat only with the same negation words and the same numbers:
   "Budget is $650" does not repeat "Budget is $600". A NOOP raises the record's
   mention count and confidence.
3. **UPDATE** when open records of the same scope overlap the candidate's
   interval with another value: their windows close, the candidate's opens.
4. **ADD** otherwise: nothing in the slot (or nothing overlapping), and nothing
   in the family at least ``noop`` similar.

The words of a statement never decide: "Plan is off" asserted is an assertion.
Extractors say what they mean with the polarity (the rule extractor from its
patterns, the LLM extractor in its answer's ``polarity`` field, callers in the
claim). :func:`has_invalidation_cue` remains for extractors that want to check
that an assertion does not read as a retraction.

Thresholds are settings (:class:`Thresholds`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from memledger.domain.intervals import Interval
from memledger.domain.records import JsonValue, canonical_json
from memledger.domain.similarity import similarity
from memledger.errors import InvalidInputError


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """Similarity thresholds of the decision."""

    add: float = 0.30
    noop: float = 0.85

    def __post_init__(self) -> None:
        if not 0.0 <= self.add <= self.noop <= 1.0:
            raise InvalidInputError(
                f"thresholds must satisfy 0 <= add <= noop <= 1, got add={self.add}, "
                f"noop={self.noop}"
            )


@dataclass(frozen=True, slots=True)
class Add:
    pass


@dataclass(frozen=True, slots=True)
class Update:
    targets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    target: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Noop:
    target: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Unmatched:
    """A retraction that matches no open record of the family: nothing changes."""


Decision = Add | Update | Delete | Noop | Unmatched

Polarity = Literal["assert", "retract"]
"""Whether a candidate asserts its value or retracts it (``Claim.polarity``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    statement: str
    value: JsonValue
    scope: str
    interval: Interval
    polarity: Polarity = "assert"


@dataclass(frozen=True, slots=True, kw_only=True)
class Existing:
    memory_id: str
    statement: str
    value: JsonValue
    scope: str
    interval: Interval


_CUES = re.compile(
    r"\b(?:(?:is|are|was|were|'s|now|been|it's) off|call(?:ed|s)? off|cancel(?:l?ed|s|ling)?"
    r"|no longer|not any ?more|anymore|stopp?(?:ed|s|ing)?|quit|ended|dropped|abandoned"
    r"|scrapped)\b",
    re.IGNORECASE,
)


def has_invalidation_cue(text: str) -> bool:
    """Whether ``text`` reads as saying something stopped being true. Not used by
    :func:`decide` (the candidate's polarity is); extractors use it to drop an
    assertion whose statement would mislead a reader ("Plan: quit my job")."""
    return _CUES.search(text) is not None


def _covers(outer: Interval, inner: Interval) -> bool:
    return outer.start <= inner.start and (
        outer.end is None or (inner.end is not None and inner.end <= outer.end)
    )


def claim_text(statement: str, value: JsonValue) -> str:
    """What similarity compares: the statement, with the value when it is a scalar."""
    return statement if isinstance(value, dict | list) else f"{statement} {value}"


def _same_value(a: JsonValue, b: JsonValue) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
    return canonical_json(a) == canonical_json(b)


Similarity = Callable[[str, str], float]
"""Text similarity in ``[0, 1]``; character trigrams by default. An embedder-backed one
(for example the max of trigram and embedding cosine) plugs in through ``WritePolicy``."""


_NEGATION = re.compile(
    r"\b(?:not|never|no|none|nor|without|don['’]?t|doesn['’]?t|didn['’]?t|isn['’]?t"
    r"|aren['’]?t|won['’]?t|can['’]?t|cannot|always)\b",
    re.IGNORECASE,
)


def negations(text: str) -> frozenset[str]:
    """The negation (and "always") words of a text: two statements that differ in them
    ("Always include version numbers" / "Never include version numbers") are not the
    same claim however similar their letters."""
    return frozenset(w.casefold().replace("’", "'") for w in _NEGATION.findall(text))


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers(text: str) -> tuple[str, ...]:
    """The numbers a text states, sorted: two statements that differ in them ("Budget is
    $600" / "Budget is $650") hold other values however similar their letters."""
    return tuple(sorted(n.replace(",", "") for n in _NUMBER.findall(text)))


def _alike(ours: str, theirs: str) -> bool:
    """Whether two similar texts could be one claim: the same negations, the same numbers."""
    return negations(ours) == negations(theirs) and numbers(ours) == numbers(theirs)


def decide(
    candidate: Candidate,
    existing: Sequence[Existing],
    thresholds: Thresholds = Thresholds(),
    *,
    similar: Similarity = similarity,
) -> Decision:
    """Decide what ``candidate`` does to a family whose open records are ``existing``."""
    same = [e for e in existing if e.scope == candidate.scope]

    def ranked() -> list[tuple[float, Existing]]:  # only when another scope matters
        return sorted(
            ((similar(candidate.statement, e.statement), e) for e in existing),
            key=lambda pair: (-pair[0], pair[1].memory_id),
        )

    if candidate.polarity == "retract":
        return _retraction(candidate, existing, same, thresholds, similar)
    value = canonical_json(candidate.value)
    for record in same:
        if not _covers(record.interval, candidate.interval):
            continue
        if canonical_json(record.value) == value:
            return Noop(record.memory_id, 1.0)
        ours, theirs = (
            claim_text(candidate.statement, candidate.value),
            claim_text(record.statement, record.value),
        )
        score = similar(ours, theirs)
        if score >= thresholds.noop and _alike(ours, theirs):
            return Noop(record.memory_id, score)
    overlapping = tuple(e.memory_id for e in same if e.interval.overlaps(candidate.interval))
    if overlapping:
        return Update(overlapping)
    for score, record in ranked():
        if score < thresholds.noop:
            break
        if (
            record.scope != candidate.scope
            and _covers(record.interval, candidate.interval)
            and _alike(candidate.statement, record.statement)
        ):
            return Noop(record.memory_id, score)
    return Add()


def _retraction(
    candidate: Candidate,
    existing: Sequence[Existing],
    same: Sequence[Existing],
    thresholds: Thresholds,
    similar: Similarity,
) -> Delete | Unmatched:
    """What a retraction closes: the record of its scope holding its value; else, in an
    item scope ("tool:tensorflow", "plan:japan"), the record of that scope (the scope
    names the item); else the record of another scope of the family holding its value
    ("tool:tf" for "tool:tensorflow"), or at least ``noop`` similar. A record holding
    another value is not what was retracted: "no longer lives in Phoenix" leaves Denver
    alone, "no longer uses Keras" leaves Vim alone."""

    def best(records: Sequence[Existing]) -> Delete:
        score, record = max(
            ((similar(candidate.statement, e.statement), e) for e in records),
            key=lambda pair: (pair[0], pair[1].memory_id),
        )
        return Delete(record.memory_id, score)

    holding = [e for e in same if _same_value(e.value, candidate.value)]
    if holding:
        return best(holding)
    if same and candidate.scope != "global":
        return best(same)
    others = sorted(
        (
            (similar(candidate.statement, e.statement), e)
            for e in existing
            if e.scope != candidate.scope
        ),
        key=lambda pair: (-pair[0], pair[1].memory_id),
    )
    for score, record in others:
        if _same_value(record.value, candidate.value) or score >= thresholds.noop:
            return Delete(record.memory_id, score)
    return Unmatched()
