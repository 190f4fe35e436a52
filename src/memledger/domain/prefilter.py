"""The prefilter: cheap checks before any extractor runs.

A turn that fails is kept in the ledger (it happened) but yields no claims and
no episode. Each rejection has a reason, counted by the worker.

* ``too_short``: fewer than ``min_words`` words with a letter in them;
* ``filler``: only acknowledgements and noise ("ok", "lol", "thanks!");
* ``role_play``: the user sets up a game or a persona ("let's pretend you're a
  pirate"): what follows is fiction, not memory;
* ``test_chatter``: "test", "testing 1 2 3", "asdf";
* ``rate_limited``: more than ``max_turns_per_minute`` turns of one subject in
  the minute up to this one (a loop or a flood, not a conversation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memledger.errors import InvalidInputError

PrefilterReason = Literal["too_short", "filler", "role_play", "test_chatter", "rate_limited"]

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_FILLER = frozenset(
    """ok okay k kk yes yeah yep yup no nope nah sure cool nice great thanks thank you thx ty
    lol lmao rofl haha hahaha hehe hmm hm mhm uh um oh ah wow yay alright right fine good
    bye hi hello hey sounds got it np welcome please plz""".split()
)
_ROLE_PLAY = re.compile(
    r"\b(let'?s|let us)\s+(pretend|play|imagine|role[- ]?play)\b"
    r"|\bpretend\s+(that\s+)?(you|you're|you are|i'm|i am|we're|we are)\b"
    r"|\brole[- ]?play(ing)?\b"
    r"|\b(imagine|suppose)\s+(that\s+)?(you|you're|you are)\s+(a|an|the)\b"
    r"|\b(act|speak|talk)\s+(as|like)\s+(a|an)\s+\w+"
    r"|\bin character\b",
    re.IGNORECASE,
)
_TEST = re.compile(
    r"^\s*(test(ing)?([\s,.!]*(test(ing)?|\d+))*|asdf\w*|qwerty\w*|lorem ipsum.*|foo( bar)?)"
    r"[\s.!?]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefilterSettings:
    min_words: int = 2
    max_turns_per_minute: int = 30

    def __post_init__(self) -> None:
        if self.min_words < 0 or self.max_turns_per_minute < 1:
            raise InvalidInputError(
                f"prefilter needs min_words >= 0 and max_turns_per_minute >= 1, got "
                f"{self.min_words} and {self.max_turns_per_minute}"
            )


def prefilter(
    text: str, *, turns_last_minute: int, settings: PrefilterSettings = PrefilterSettings()
) -> PrefilterReason | None:
    """Why the turn should not be extracted, or ``None`` if it may be.

    ``turns_last_minute`` counts the subject's turns in the minute up to and
    including this one.
    """
    if turns_last_minute > settings.max_turns_per_minute:
        return "rate_limited"
    if _TEST.match(text):
        return "test_chatter"
    if _ROLE_PLAY.search(text):
        return "role_play"
    words = [w.casefold().strip("'’-") for w in _WORD.findall(text)]
    if words and all(w in _FILLER for w in words):
        return "filler"
    if len(words) < settings.min_words:
        return "too_short"
    return None
