"""Standing instructions and stated preferences in a user's turn. Pure.

"Always format code with syntax highlighting when I ask about implementation",
"Never use semicolons", "From now on answer in French", "I prefer metric units":
what the user asks of every later answer, whether or not a later request shares
a word with it. :func:`standing` finds the first such sentence of a turn and
splits it into what is asked (``rule``) and when it applies (``when``: the part
after "when I ask about", "for", "whenever"; empty when it always applies).

Only the user's words count: a question ("Should I always ...?", "Do I prefer
...?"; but "I prefer X, can you ...?" states a preference), a sentence
about someone else ("My boss always ...") or a report of a habit ("I always
walk to work") is no instruction to the assistant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memledger.domain.text import sentences

StandingKind = Literal["instruction", "preference"]

_INSTRUCTION = re.compile(
    r"""^(?:(?:please|and|also|so|ok(?:ay)?|going\ forward|from\ now\ on)[\s,]+)*
    (?:always|never|do\ not|don['’]t|make\ sure\ (?:to|you)|be\ sure\ to
      |(?:i\ (?:want|need|would\ like|['’]d\ like)\ you\ to)
      |(?:can|could|would)\ you\ (?:always|never)
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_FROM_NOW_ON = re.compile(r"^(?:from now on|going forward|in future|in the future)\b", re.I)
_PREFERENCE = re.compile(
    r"\bI(?:\s+(?:really|generally|usually|strongly|also|still|much))?\s+"
    r"(?:prefer|would prefer|['’]d prefer|['’]d rather|would rather)\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(?:when(?:ever)?\s+(?:I|we)\s+(?:ask|am asking|talk|inquire|request)\s+(?:about|for)"
    r"|when(?:ever)?\s+(?:it\s+comes\s+to|discussing|explaining|answering)"
    r"|in\s+(?:any|all)\s+(?:answers?|responses?)\s+(?:about|on)"
    r"|for\s+(?:any|all)\s+(?:questions?|answers?|requests?)\s+(?:about|on))\s+",
    re.IGNORECASE,
)
_I_HABIT = re.compile(r"^I\s+(?:always|never)\b", re.IGNORECASE)
_ASKING = re.compile(
    r"^(?:do|does|did|should|would|could|can|is|are|am|was|were|will|shall|may|might|must"
    r"|what|which|how|why|when|where|who|whom|whose)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """One standing instruction or preference: what it asks, when it applies, and where
    it is in the turn (offsets of its sentence)."""

    kind: StandingKind
    rule: str
    when: str
    start: int
    end: int


_CLAUSE_BREAK = re.compile(r",\s+|;\s+|\s+(?:but|so|because|since|and then|which)\s+", re.I)


def _clause(said: str) -> str:
    """The clause of ``said`` that states the preference ("I'm setting up X, and I prefer
    Bootstrap over Foundation, can you help" -> "I prefer Bootstrap over Foundation"):
    cut at commas, semicolons and "but / so / because" around the first "I prefer"."""
    found = _PREFERENCE.search(said)
    if found is None:
        return said
    start, end = 0, len(said)
    for cut in _CLAUSE_BREAK.finditer(said):
        if cut.end() <= found.start():
            start = cut.end()
        elif cut.start() >= found.end():
            end = cut.start()
            break
    clause = re.sub(r"^(?:and|but|so|also)\s+", "", said[start:end].strip(" ,;"), flags=re.I)
    return clause or said


def standing(text: str) -> Standing | None:
    """The first standing instruction or stated preference in ``text``, or ``None``."""
    for sentence in sentences(text):
        said = sentence.text.strip()
        asks_you = said.lower().startswith(("can you", "could you", "would you"))
        kind: StandingKind | None = None
        if _I_HABIT.match(said):
            continue  # "I always walk to work": a habit, not a request
        if (not sentence.question or asks_you) and (
            _INSTRUCTION.match(said) or _FROM_NOW_ON.match(said)
        ):
            kind = "instruction"
        elif _PREFERENCE.search(said) and not (sentence.question and _ASKING.match(said)):
            # "I prefer X, can you ...?" states a preference; "Do I prefer X?" does not
            kind = "preference"
        if kind is None:
            continue
        split = _WHEN.search(said)
        rule = said[: split.start()].strip(" ,") if split else said
        if kind == "preference":
            rule = _clause(rule)
        when = said[split.end() :].strip(" .!") if split else ""
        return Standing(kind=kind, rule=rule, when=when, start=sentence.start, end=sentence.end)
    return None
