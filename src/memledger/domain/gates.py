"""Gates an extracted candidate must pass before the commit sees it. Pure.

* **grounding**: the quote must be in the source text, and the claim must be
  supported by it: enough of the content words (lightly stemmed) of its
  statement, or of its value, occur in the text. A templated statement
  ("Primary framework: JAX") passes on its value; a value the text never
  mentions ("Works at Infosys" from a message about Bangalore) does not.
  Inferred claims do not enter.
* **importance**: a candidate below the minimum confidence is not worth a memory.

Candidates callers pass directly skip these gates (the caller vouches for
them); authority, the order rule and trust apply to every candidate at commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from memledger.domain.records import Claim
from memledger.domain.similarity import normalise
from memledger.domain.text import value_text

GateReason = Literal["ungrounded", "unsupported", "unimportant"]

_STOP = frozenset(
    """a an the and or but of to in on at for with from by as is are was were be been being it
    its this that these those i me my mine we our us you your he she they them their his her
    do does did have has had will would can could should may might must not no so very just
    now then than also really wants want user subject prefers likes""".split()
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GateSettings:
    min_support: float = 0.5
    """Fraction of a statement's content words that must occur in the source text."""
    min_confidence: float = 0.3


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A light, consistent stem: love, loves, loved and loving all become ``lov``."""
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        word = word[:-2]
    else:
        for suffix in ("ing", "ed", "s"):
            if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in normalise(text).split() if w not in _STOP and len(w) > 1}


@lru_cache(maxsize=4096)
def word_set(text: str) -> frozenset[str]:
    """:func:`content_words` of ``text`` as a frozen set, kept for the texts read again
    and again (the memories recall weighs for question after question)."""
    return frozenset(content_words(text))


def content_word(word: str) -> str | None:
    """The content word a normalised ``word`` counts as; ``None`` for a stop word or
    a single character."""
    return None if word in _STOP or len(word) <= 1 else _stem(word)


def support(statement: str, text: str) -> float:
    """Fraction of ``statement``'s content words found in ``text`` (1.0 if it has none)."""
    wanted = content_words(statement)
    if not wanted:
        return 1.0
    return len(wanted & content_words(text)) / len(wanted)


def gate(claim: Claim, text: str, *, settings: GateSettings = GateSettings()) -> GateReason | None:
    """Why an extracted candidate is dropped, or ``None`` if it passes."""
    if claim.kind == "episode":
        return None
    if claim.grounding is None or normalise(claim.grounding) not in normalise(text):
        return "ungrounded"
    value = value_text(claim.value)
    by_value = support(value, text) if content_words(value) else 0.0
    best = max(support(claim.statement, text), by_value)
    if best < settings.min_support:
        return "unsupported"
    if claim.confidence < settings.min_confidence:
        return "unimportant"
    return None
