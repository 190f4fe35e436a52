"""Predicates for pastimes said the other way round: the pastime first, then what it is
to the speaker.

"Stamp collecting is my chief pastime", "Basketball's my thing" ("Coffee is my thing"
is a liking), "The only sport I
actually play is badminton", "The sport I love the most is volleyball", "switched
from hockey to ringette". A sport or a practice becomes ``sport``, an instrument
``instrument``, anything else ``hobby`` (:func:`~memledger.write.extract._life._hobby_items`);
a switch between two sports closes the old one.
"""

from __future__ import annotations

import re

from memledger.write.extract._attributes import Found, Subject
from memledger.write.extract._life import _PRACTICE, _SPORT, _hobby_items
from memledger.write.extract._reading import _B, _END, ADV, _predicate
from memledger.write.extract._vocab import PRACTICES


@_predicate(
    r"(?P<x>[a-z][\w' -]{1,40}?)(?:'s|\s+(?:is|are|has become|have become|became))\s+(?:really\s+"
    r"|definitely\s+|basically\s+|kind of\s+|sort of\s+)?my\s+(?:main\s+|chief\s+|biggest\s+"
    r"|big\s+|real\s+|true\s+|one\s+|whole\s+)?(?P<what>(?:thing|pastime|hobby|passion"
    rf"|obsession|jam)){_END}"
)
def _pastime_is_mine(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    what = re.sub(r"^(?:the|a|an)\s+", "", m.group("x").strip())
    if len(what.split()) > 3 or re.search(
        r"\b(?:i|we|it|this|that|you|he|she|they|my|work|job|family|kids)\b", what
    ):
        return None  # "this is my thing": no pastime named; "work is my passion": no hobby
    found = _hobby_items(what)
    if m.group("what") in ("thing", "jam", "obsession"):  # "Coffee is my thing": a liking
        found = [
            f if f.attribute != "hobby" or f.value.endswith("ing") else Found("likes", f.value)
            for f in found
        ]
    return found or None


@_predicate(
    r"(?:the\s+)?(?:only\s+|one\s+|main\s+)?(?:sport|game)\s+(?:that\s+)?i\s+(?:actually\s+|really\s+"
    r"|still\s+|ever\s+)?(?:play|do|love|like|care about|follow)(?:\s+(?:the\s+)?most)?\s+"
    rf"(?:is|are|'s)\s+(?P<s>{_SPORT}|{_PRACTICE}){_B}"
)
def _the_sport_i_play(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    sport = m.group("s")
    return [Found("sport", PRACTICES.get(sport, sport))]


@_predicate(
    rf"{ADV}(?:have\s+|has\s+)?(?:switched|went|gone|changed|moved)\s+from\s+"
    rf"(?P<a>{_SPORT}|{_PRACTICE})\s+to\s+(?P<b>{_SPORT}|{_PRACTICE}){_B}"
)
def _sport_switch(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    new, old = (PRACTICES.get(s, s) for s in (m.group("b"), m.group("a")))
    return [Found("sport", new, timing="past"), Found("sport", old, retract=True, timing="past")]
