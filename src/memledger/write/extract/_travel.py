"""Predicates for how someone gets to work or school: the ``commute`` attribute.

"I take the bus to work", "I cycle to the office", "I commute by train", "Subway to
work.", "I go with my bicycle every day", "switched from driving to cycling to work".
They are tried before every other predicate (riding a Vespa to work is a commute
before it is a vehicle). The value is the means, normalised (``bike`` for a bicycle,
cycling or biking; ``car`` for driving); one means excludes another, so a new one
closes the old window. A means said without a destination (work, the office, school,
campus, class) or a daily round is no commute: "I took the bus to Porto" is a trip.
"""

from __future__ import annotations

import re

from memledger.write.extract._attributes import Found, Subject
from memledger.write.extract._reading import _B, ADV, _alt, _predicate

MEANS = {
    "bus": "bus",
    "coach": "bus",
    "train": "train",
    "tube": "tube",
    "metro": "metro",
    "subway": "subway",
    "underground": "underground",
    "tram": "tram",
    "streetcar": "tram",
    "ferry": "ferry",
    "boat": "ferry",
    "bike": "bike",
    "bicycle": "bike",
    "cycle": "bike",
    "e-bike": "e-bike",
    "ebike": "e-bike",
    "car": "car",
    "scooter": "scooter",
    "vespa": "scooter",
    "moped": "scooter",
    "motorbike": "motorcycle",
    "motorcycle": "motorcycle",
    "taxi": "taxi",
    "uber": "taxi",
    "carpool": "carpool",
}
"""A means of transport -> the commute it makes."""
MOVING = {
    "cycle": "bike",
    "cycles": "bike",
    "cycling": "bike",
    "bike": "bike",
    "bikes": "bike",
    "biking": "bike",
    "drive": "car",
    "drives": "car",
    "driving": "car",
    "walk": "walking",
    "walks": "walking",
    "walking": "walking",
    "run": "running",
    "runs": "running",
    "running": "running",
    "skate": "skateboard",
    "skating": "skateboard",
    "carpool": "carpool",
    "carpooling": "carpool",
}
"""A way of moving oneself -> the commute it makes."""

_MEANS = _alt(set(MEANS))
_MOVING = _alt(set(MOVING))
_THE = r"(?:(?:the|a|an|my|our|his|her|their)\s+(?:[\w-]+\s+){0,3}?)?"
_DESTINATION = (
    r"(?:to|into|in to)\s+(?:the\s+)?(?:work|the office|office|my office|my job|school|campus"
    r"|uni|university|college|class|classes|the lab|my workplace|the hospital|the studio)"
)
_TAKE = (
    r"(?:take|takes|taking|took|catch|catches|catching|ride|rides|riding|use|uses|using|get|gets)"
)
_GO = (
    r"(?:go|goes|going|get|gets|getting|travel|travels|travelling|traveling|commute|commutes"
    r"|commuting)"
)


def _means(word: str) -> str:
    return MEANS.get(word) or MOVING[word]


@_predicate(
    rf"{ADV}(?:have\s+|has\s+)?(?:switched|went|gone|changed|moved)\s+from\s+(?P<a>{_MOVING}|{_MEANS})"
    rf"\s+to\s+(?P<b>{_MOVING}|{_MEANS})\s+{_DESTINATION}{_B}",
    rank=0,
)
def _switched(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return [
        Found("commute", _means(m.group("b")), timing="past"),
        Found("commute", _means(m.group("a")), retract=True, timing="past"),
    ]


@_predicate(
    rf"{ADV}(?:commute|commutes|commuting|commuted)\s+(?:by|on|via|with)\s+{_THE}(?P<m>{_MEANS}){_B}",
    rank=0,
)
def _commute_by(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return [Found("commute", _means(m.group("m")))]


_DAILY = r"(?:every|each)\s+(?:work\s*)?(?:day|weekday|morning|workday)|daily|on weekdays"


@_predicate(
    rf"{ADV}(?:{_TAKE}\s+{_THE}(?P<m>{_MEANS})(?=.*\b(?:{_DAILY})\b)(?:\s+[\w-]+)*?\s+(?:{_DAILY})"
    rf"|(?:{_TAKE}\s+{_THE}(?P<n>{_MEANS})|(?P<v>{_MOVING}))(?:\s+[\w-]+){{0,3}}?"
    rf"\s+{_DESTINATION}){_B}",
    rank=0,
)
def _to_work(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    return [Found("commute", _means(m.group("m") or m.group("n") or m.group("v")))]


@_predicate(
    rf"{ADV}{_GO}\s+(?:{_DESTINATION}\s+)?(?:(?:every|each)\s+day\s+|daily\s+)?(?:by|with|on)\s+"
    rf"{_THE}(?P<m>{_MEANS}){_B}",
    rank=0,
)
def _go_by(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    if not re.search(_DESTINATION, m.group(0)) and not re.search(
        r"\b(?:every|each)\s+(?:day|morning|weekday)|\bdaily\b", rest
    ):
        return None  # "I went with my car" is a trip, not a commute
    return [Found("commute", _means(m.group("m")))]


@_predicate(rf"(?:am\s+)?(?:a\s+)?(?P<m>{_MEANS}|{_MOVING})\s+{_DESTINATION}{_B}", rank=0)
def _fragment(m: re.Match[str], rest: str, who: Subject) -> list[Found] | None:
    """ "Subway to work." """
    return [Found("commute", _means(m.group("m")))] if who.implied else None
