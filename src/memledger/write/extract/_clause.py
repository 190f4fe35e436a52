"""One clause as the rule extractor's patterns see it, and what a pattern proposes.

:func:`prepare` turns a :class:`~memledger.domain.text.Segment` of an event's
text into a :class:`Clause`: discourse markers ("Actually,", "Correction:",
"please", "can you", a "now" before "I") are stepped over, a leading time phrase ("From November
1, ...") is stepped over, and reported speech is cut off at its verb ("my
friend said ..."). Offsets stay those of the event text, so every value can
be cut back to an exact quote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from memledger.domain.records import JsonValue, Kind
from memledger.domain.text import Segment
from memledger.domain.timephrases import TimePhrase, find_all
from memledger.write.extract._lexicon import strip_fillers

Timing = Literal["clause", "change", "past", "none", "own"]
"""How a proposal takes valid time: from the clause's phrases; from them, but a
window ("next month") only starts it (a coming move or switch lasts); the same
for a change told in the past tense, whose phrases may not start after the
event ("I joined X in March" said in October is not next March); not at all (a
plan's dates belong to the plan, a relationship has none); or from its own
``times`` (a delivery preference masks its cadence first)."""

_MARKERS = re.compile(
    r"""(?:(?:actually|correction|update|edit|oh|ok|okay|well|so|also|and|but|then|btw
    |by\s+the\s+way|fyi|just\s+so\s+you\s+know|note|ps|p\.s\.|quick\s+update|heads\s+up
    |sorry|anyway|hey|hi|hello|yeah|yes|no(?=\s*,)|plus|now(?=\s*,)|in\s+fact
    |(?:now|these\s+days|nowadays|currently|lately|finally)(?=\s+(?:I|we)\b)
    |honestly|frankly|seriously|basically|personally
    |to\s+be\s+clear|for\s+the\s+record|just\s+fyi|guess\s+what|oops|wait|hmm)
    (?![\w'’])[\s,:;.!-]*)+""",
    re.IGNORECASE | re.VERBOSE,
)
_REQUEST = re.compile(
    r"(?:(?:please|pls|plz|kindly)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?)+",
    re.IGNORECASE,
)
_REPORTING = re.compile(
    r"\b(?:said|says|say|told|tells|tell|thinks|think|thought|believes|believe|claims"
    r"|claimed|claim|asked|asks|wrote|writes|mentioned|mentions|heard|reckons|insists"
    r"|insisted|according\s+to)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"^\W*(?:if|unless|suppose|supposing|imagine|maybe|perhaps|hypothetically|what\s+if"
    r"|in\s+case|assuming|pretend|let['’]s\s+say|would|should|could)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Clause:
    """A clause of ``text``: patterns match ``text[start:end]`` (the body)."""

    text: str
    segment: Segment
    start: int
    end: int
    times: tuple[TimePhrase, ...]
    reference: datetime
    request: bool = False
    """The clause was phrased as a request ("please ...", "can you ...")."""

    @property
    def body(self) -> str:
        return self.text[self.start : self.end]

    def match(self, pattern: re.Pattern[str], start: int | None = None) -> re.Match[str] | None:
        """``pattern`` matched at the start of the body (or at ``start``), never past its
        end. Match offsets are offsets into ``text``."""
        return pattern.match(self.text, self.start if start is None else start, self.end)

    @property
    def lowercase(self) -> bool:
        """Whether the writer does not capitalise at all, not even "I" ("i live in delhi")."""
        return not any(c.isupper() for c in self.segment.text)

    def cut(
        self,
        match: re.Match[str],
        group: str,
        stops: re.Pattern[str] | None = None,
        *,
        keep_times: bool = False,
    ) -> tuple[int, int] | None:
        """The span (in ``text``) of a matched value, ended before a time phrase
        (unless ``keep_times``),
        before the first of ``stops`` after its first character, and without
        trailing fillers ("now", "please", punctuation). ``None`` if nothing is left.
        ``match`` must come from :meth:`match` (offsets into ``text``)."""
        if match.start(group) < 0:
            return None
        start, end = match.span(group)
        for phrase in () if keep_times else self.times:
            if phrase.span[0] <= start < phrase.span[1]:
                start = phrase.span[1]
            elif start < phrase.span[0] < end:
                end = phrase.span[0]
        while start < end and self.text[start] in " \t,\"“‘'«":
            start += 1
        if stops is not None:
            stop = stops.search(self.text, start + 1, end) if end > start + 1 else None
            if stop is not None:
                end = stop.start()
        end = start + len(strip_fillers(self.text[start:end]))
        return (start, end) if end > start else None

    def value(
        self,
        match: re.Match[str],
        group: str,
        stops: re.Pattern[str] | None = None,
        *,
        keep_times: bool = False,
    ) -> str | None:
        """The text of :meth:`cut`."""
        span = self.cut(match, group, stops, keep_times=keep_times)
        return None if span is None else self.text[span[0] : span[1]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """What one pattern proposes; the extractor turns it into a :class:`Claim`."""

    family: str
    kind: Kind
    statement: str
    value: JsonValue
    scope: str = "global"
    timing: Timing = "clause"
    times: tuple[TimePhrase, ...] = ()
    retraction: bool = False
    """The statement carries an invalidation cue on purpose ("no longer", "off")."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """A proposal a matcher recognised but could not make (why, for ``Extraction.dropped``)."""

    reason: str


def hedged(sentence: Segment) -> bool:
    """Whether a sentence is a condition or a hypothetical ("If I moved to Paris ...")."""
    return _HEDGE.match(sentence.text) is not None


def prepare(segment: Segment, text: str, reference: datetime) -> Clause:
    """The :class:`Clause` of ``segment`` (see the module docstring)."""
    start, end = segment.start, segment.end
    request = False
    while True:
        marker = _MARKERS.match(text, start, end)
        if marker is not None and marker.end() > start:
            start = marker.end()
            continue
        asked = _REQUEST.match(text, start, end)
        if asked is not None and asked.end() > start:
            start, request = asked.end(), True
            continue
        break
    times = tuple(
        replace(p, span=(p.span[0] + segment.start, p.span[1] + segment.start))
        for p in find_all(segment.text, reference, past=True)
    )
    for phrase in times:
        if phrase.span[0] == start:
            start = phrase.span[1]
            while start < end and text[start] in " \t,":
                start += 1
    reported = _REPORTING.search(text, start, end)
    if reported is not None:
        end = reported.start()
    return Clause(
        text=text,
        segment=segment,
        start=start,
        end=max(start, end),
        times=times,
        reference=reference,
        request=request,
    )
