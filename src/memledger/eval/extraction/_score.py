"""Score an extractor on labelled turns: precision (no wrong value, no invented claim)
and recall (the share of labelled claims found).

Each turn becomes an authenticated :class:`SourceEvent` of its role; every claim the
extractor proposes is read as ``(about, attribute, value, polarity)`` (:func:`read`).
A claim of the vocabulary is *right* when it matches a labelled claim of the turn,
*excused* when it matches an optional one, *wrong* otherwise (a wrong value, an
invented fact, a retraction never said, another person's attribute given to the
speaker). A labelled claim is *found* when a right claim matches it. A labelled
retraction of a single-valued attribute is also found when the turn asserts another
value of it: the commit closes the old window then. A claim of a family outside
the vocabulary (a tool, a standing instruction) is counted apart, never as right.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memledger.domain.records import Actor, Claim, SourceEvent
from memledger.eval.extraction._labels import (
    FREE_TEXT,
    VOCABULARY,
    Label,
    LabelledTurn,
    same_value,
)
from memledger.ports import Extractor

__all__ = ["Read", "Scored", "Summary", "read", "score", "summarise"]

OCCURRED_AT = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
"""When every labelled turn is said (time phrases resolve against it)."""

_KIN = frozenset(
    """sister brother mother father son daughter wife husband cousin aunt uncle grandmother
    grandfather niece nephew twin""".split()
)
_ADDITIVE = frozenset(
    "pet allergy health_condition speaks hobby sport instrument likes dislikes goal plan "
    "habit event family_member".split()
)


@dataclass(frozen=True, slots=True)
class Read:
    """One proposed claim as the labels speak of it; ``attribute`` ``None`` when its
    family is outside the vocabulary."""

    about: str
    attribute: str | None
    value: str | None
    polarity: str
    statement: str
    timed: bool


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read(claim: Claim) -> Read:
    """``claim`` in the labels' terms."""
    about, value = "self", _text(claim.value)
    attribute: str | None = claim.family
    polarity = claim.polarity
    if claim.family == "attribute":
        scope = claim.scope
        if scope.startswith("person:") and "/" in scope:
            person, scope = scope.split("/", 1)
            about = person.removeprefix("person:").replace("-", " ")
        attribute = scope.split(":", 1)[0]
    elif claim.family == "likes" and isinstance(claim.value, dict):
        attribute = "likes" if claim.value.get("sentiment") == "like" else "dislikes"
        value = _text(claim.value.get("item"))
    elif claim.family == "plan" and isinstance(claim.value, dict):
        value = _text(claim.value.get("plan"))
        if claim.value.get("status") == "off":
            polarity = "retract"
    elif claim.family == "relationship" and isinstance(claim.value, dict):
        relation = _text(claim.value.get("relation")) or ""
        attribute, value = ("family_member", relation) if relation in _KIN else (None, relation)
    timed = claim.valid_from is not None or claim.valid_until is not None
    return Read(
        about=about,
        attribute=attribute if attribute in VOCABULARY else None,
        value=value,
        polarity=polarity,
        statement=claim.statement,
        timed=timed,
    )


_SAME_PERSON = {
    "neighbour": "neighbor",
    "mum": "mother",
    "mom": "mother",
    "mam": "mother",
    "dad": "father",
    "sis": "sister",
    "bro": "brother",
    "bf": "boyfriend",
    "gf": "girlfriend",
    "coworker": "colleague",
    "co-worker": "colleague",
    "flatmate": "roommate",
    "housemate": "roommate",
    "grandma": "grandmother",
    "grandpa": "grandfather",
    "hubby": "husband",
    "kid": "child",
    "fiancée": "fiance",
    "fiancee": "fiance",
    "fiancé": "fiance",
}


def _person(about: str) -> str:
    key = about.replace("-", " ").strip()
    return _SAME_PERSON.get(key, _SAME_PERSON.get(about, key))


def _matches(found: Read, label: Label) -> bool:
    if _person(found.about) != _person(label.about) or found.attribute != label.attribute:
        return False
    if found.polarity != label.polarity:
        return False
    if found.value is None or not label.values:
        return found.polarity == "retract"
    free = label.attribute in FREE_TEXT
    return any(same_value(found.value, v, free_text=free) for v in label.values)


def _closes(found: Read, label: Label) -> bool:
    """An asserted new value of a single-valued attribute closes a labelled retraction."""
    return (
        label.polarity == "retract"
        and label.attribute not in _ADDITIVE
        and found.polarity == "assert"
        and (_person(found.about), found.attribute) == (_person(label.about), label.attribute)
        and not any(
            found.value and same_value(found.value, v, free_text=False) for v in label.values
        )
    )


@dataclass(frozen=True, slots=True)
class Scored:
    """One turn: what was proposed and how it compares."""

    turn: LabelledTurn
    right: tuple[Read, ...]
    excused: tuple[Read, ...]
    wrong: tuple[Read, ...]
    outside: tuple[Read, ...]
    found: tuple[Label, ...]
    missed: tuple[Label, ...]
    timed: int
    """Labelled claims with a time phrase whose matching claim has a valid time."""


def _event(turn: LabelledTurn) -> SourceEvent:
    return SourceEvent(
        tenant="bench",
        event_id=f"label-{turn.id}",
        subject="speaker",
        actor=Actor(id="speaker", authenticated=True),
        channel="chat",
        occurred_at=OCCURRED_AT,
        text=turn.text,
        role="assistant" if turn.role == "assistant" else "user",
    )


def score(extractor: Extractor, turns: Iterable[LabelledTurn]) -> list[Scored]:
    """Every turn of ``turns`` scored."""
    out: list[Scored] = []
    for turn in turns:
        reads = [read(c) for c in extractor.extract(_event(turn)).claims]
        right, excused, wrong, outside = [], [], [], []
        found: list[Label] = []
        timed = 0
        for r in reads:
            if r.attribute is None:
                outside.append(r)
                continue
            hits = [label for label in turn.claims if _matches(r, label)]
            if hits:
                right.append(r)
                for label in hits:
                    if label not in found:
                        found.append(label)
                        timed += label.time is not None and r.timed
            elif any(_matches(r, label) for label in turn.optional):
                excused.append(r)
            elif any(_closes(r, label) for label in turn.claims):
                excused.append(r)  # asserted the new value; credited below
            else:
                wrong.append(r)
        for label in turn.claims:
            if label not in found and any(_closes(r, label) for r in right + excused):
                found.append(label)
        missed = [label for label in turn.claims if label not in found]
        out.append(
            Scored(
                turn=turn,
                right=tuple(right),
                excused=tuple(excused),
                wrong=tuple(wrong),
                outside=tuple(outside),
                found=tuple(found),
                missed=tuple(missed),
                timed=timed,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Summary:
    """Totals over a set of scored turns."""

    turns: int
    labelled: int
    found: int
    right: int
    wrong: int
    outside: int
    timed_labels: int
    timed: int
    by_attribute: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """attribute -> (labelled, found, wrong)."""
    by_voice: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return self.right / (self.right + self.wrong) if self.right + self.wrong else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.labelled if self.labelled else 1.0

    @property
    def time_recall(self) -> float:
        return self.timed / self.timed_labels if self.timed_labels else 1.0


def summarise(scored: Sequence[Scored]) -> Summary:
    """The totals of ``scored``, per attribute and per voice too."""
    attr: Counter[tuple[str, str]] = Counter()
    voice: Counter[tuple[str, str]] = Counter()
    for s in scored:
        for label in s.turn.claims:
            attr[(label.attribute, "labelled")] += 1
            voice[(s.turn.voice, "labelled")] += 1
        for label in s.found:
            attr[(label.attribute, "found")] += 1
            voice[(s.turn.voice, "found")] += 1
        for r in s.wrong:
            attr[(r.attribute or "", "wrong")] += 1
            voice[(s.turn.voice, "wrong")] += 1

    def table(counts: Counter[tuple[str, str]]) -> dict[str, tuple[int, int, int]]:
        keys = sorted({k for k, _ in counts})
        return {
            k: (counts[(k, "labelled")], counts[(k, "found")], counts[(k, "wrong")]) for k in keys
        }

    return Summary(
        turns=len(scored),
        labelled=sum(len(s.turn.claims) for s in scored),
        found=sum(len(s.found) for s in scored),
        right=sum(len(s.right) for s in scored),
        wrong=sum(len(s.wrong) for s in scored),
        outside=sum(len(s.outside) for s in scored),
        timed_labels=sum(1 for s in scored for label in s.turn.claims if label.time),
        timed=sum(s.timed for s in scored),
        by_attribute=table(attr),
        by_voice=table(voice),
    )
