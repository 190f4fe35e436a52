"""Which recalled memories a later turn changes, when no claim says so.

"I've spent $575 on sneakers and I'm close to my $600 annual budget." (January),
then "I'm looking at new sneakers with my increased budget of $650." (April):
asked for the budget, both turns share the question's words, and relevance alone
often ranks the older one first. When extraction understood the later turn, its
claim closed the old window and :mod:`memledger.read.outdated` knows. When it did
not, this module reads the turns themselves. A later turn of the same subject and
speaker (never the assistant's) *changes* an earlier memory (a turn, or a claim
whose slot extraction has not updated) when it states another value of the same
kind (a time, a date, an amount of money, a percentage, a number) than the earlier
one stated, and either

* the two values are of the same thing the query asks about: for numbers, a word
  just after each ("45 *sources*" and "52 *sources*") is one of the query's content
  words; for the other kinds, one of the query's words is among the few around each
  ("*accuracy* rated 87%", "the tool's 90% *accuracy*"); or
* a word of change leads the new value ("*increased* budget of $650",
  "*rescheduled* to 4:30 PM"; :data:`CUES`), in a sentence that shares at least
  :data:`SHARED_WORDS` of the query's content words with the earlier value's.

Recall then ranks the later turn just above the earlier memory and marks the
earlier one *possibly* outdated by it: a judgement from the words, not a closed
window. Only memories among the first :data:`DEPTH` are compared, so what a read
returns is the same set, in a better order. Pure: records in, pairs out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from memledger.domain.gates import content_words, word_set
from memledger.domain.records import MemoryRecord
from memledger.domain.text import sentences

__all__ = ["CUES", "DEPTH", "READ_CHARS", "SHARED_WORDS", "Change", "Said", "changes", "reorder"]

DEPTH = 10
"""How many of a read's best memories are compared with each other."""
SHARED_WORDS = 2
"""Query words the sentences of an old and a new value share, at least, when a word
of change leads the new one."""

CUES = re.compile(
    r"\b(?:now|instead|actually|"
    r"chang(?:e|ed|es|ing)|switch(?:ed|ing)?|mov(?:e|ed|ing)|"
    r"updat(?:e|ed|es|ing)|revis(?:e|ed|ing)|adjust(?:ed|ing)?|amend(?:ed)?|"
    r"increas(?:e|ed|ing)|decreas(?:e|ed|ing)|rais(?:e|ed|ing)|lower(?:ed|ing)?|"
    r"reduc(?:e|ed|ing)|extend(?:ed|ing)?|shorten(?:ed|ing)?|expand(?:ed|ing)?|"
    r"cut|upped|bump(?:ed)?|doubl(?:e|ed)|halv(?:e|ed)|"
    r"reschedul(?:e|ed|ing)|postpon(?:e|ed|ing)|pushed|brought|delay(?:ed)?|"
    r"replac(?:e|ed|ing)|grew|grown|reached|dropped|fell|rose|improved|new)\b",
    re.IGNORECASE,
)
"""Words that say a value changed, in the three words before the new value. Not
tuned to one corpus: the ways English says an amount, a date or a time is another."""

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_VALUES = re.compile(
    r"(?P<time>\b\d{1,2}(?::\d{2})?\s?(?:a\.?m\.?|p\.?m\.?)(?!\w)|\b\d{1,2}:\d{2}\b)"
    rf"|(?P<date>\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b)"
    r"|(?P<money>[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?[km]\b)?"
    r"|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|euros|pounds|usd|eur|gbp)\b)"
    r"|(?P<percent>\b\d+(?:\.\d+)?\s?(?:%|percent\b))"
    r"|(?P<number>\b\d[\d,]*(?:\.\d+)?\b)",
    re.IGNORECASE,
)
"""A value a sentence states, by its kind."""
_UNIT = 3
"""Words after a value that say what it is the value of ("8 *conditional probability
problems*"), up to the next comma."""


@dataclass(frozen=True, slots=True)
class Change:
    """``newer`` (a turn, said at ``at``) changes ``older`` (a turn or a claim)."""

    older: str
    newer: str
    at: datetime


@dataclass(frozen=True, slots=True)
class _Value:
    kind: str
    value: str
    unit: frozenset[str]
    """The content words just after it."""
    sentence: frozenset[str]
    """The content words of its sentence."""
    led: bool
    """Whether a word of change comes just before it."""
    frame: frozenset[str]
    """The content words around it: a few on each side, in its sentence."""


READ_CHARS = 20_000
"""Characters of a turn read for the values it states: a pasted document past them is
material, not the speaker's update (and a read stays bounded however long the turn)."""


def _text(record: MemoryRecord) -> str:
    value = record.value
    if record.kind == "episode" and isinstance(value, dict):
        text = value.get("text")
        return text[:READ_CHARS] if isinstance(text, str) else ""
    return record.claim


def _role(record: MemoryRecord) -> str | None:
    value = record.value
    role = value.get("role") if record.kind == "episode" and isinstance(value, dict) else None
    return role if isinstance(role, str) else None


@lru_cache(maxsize=4096)
def _values(text: str) -> tuple[_Value, ...]:
    out: list[_Value] = []
    for sentence in (s.text for s in sentences(text)):
        words = frozenset(content_words(sentence))
        for found in _VALUES.finditer(sentence):
            before = sentence[: found.start()].split()[-_UNIT:]
            after = re.split(r"[,;:()]", sentence[found.end() :], maxsplit=1)[0].split()[:_UNIT]
            out.append(
                _Value(
                    kind=found.lastgroup or "number",
                    value=re.sub(r"[\s,.$€£¥]", "", found.group()).casefold(),
                    unit=frozenset(content_words(" ".join(after))),
                    sentence=words,
                    led=CUES.search(" ".join(before)) is not None,
                    frame=frozenset(content_words(" ".join(before + after))),
                )
            )
    return tuple(out)


def changes(records: Sequence[MemoryRecord], query_words: frozenset[str]) -> list[Change]:
    """Every pair of ``records`` where a later turn changes an earlier memory (see the
    module docstring), the latest turn first for each earlier memory."""
    said = Said.of(records)
    found: list[Change] = []
    for older, old_values in said.read:
        found.extend(said._changing(older, old_values, query_words))
    return found


@dataclass(frozen=True, slots=True)
class Said:
    """Records with the values their words state, read once to compare many memories
    with them."""

    read: tuple[tuple[MemoryRecord, tuple[_Value, ...]], ...]

    @classmethod
    def of(cls, records: Sequence[MemoryRecord]) -> Said:
        """``records`` read, the assistant's turns left out (rarely evidence)."""
        return cls(tuple((r, _values(_text(r))) for r in records if _role(r) != "assistant"))

    def changing(self, older: MemoryRecord, query_words: frozenset[str]) -> list[Change]:
        """The turns read here that change ``older``, the latest first."""
        return self._changing(older, _values(_text(older)), query_words)

    def _changing(
        self, older: MemoryRecord, old_values: Sequence[_Value], query_words: frozenset[str]
    ) -> list[Change]:
        asked = query_words & word_set(_text(older))
        if not old_values or not asked:
            return []
        newer = [
            record
            for record, values in self.read
            if record.kind == "episode"
            and record.memory_id != older.memory_id
            and record.subject == older.subject
            and record.source_actor_id == older.source_actor_id
            and record.source_event_id != older.source_event_id
            and record.valid_from > older.valid_from
            and _changes(old_values, values, asked)
        ]
        newer.sort(key=lambda r: (r.valid_from, r.memory_id), reverse=True)
        return [Change(older=older.memory_id, newer=r.memory_id, at=r.valid_from) for r in newer]


def _changes(older: Sequence[_Value], newer: Sequence[_Value], asked: frozenset[str]) -> bool:
    stated = {(v.kind, v.value) for v in older}
    for new in newer:
        if (new.kind, new.value) in stated or not new.sentence & asked:
            continue
        for old in older:
            if old.kind != new.kind or old.value == new.value:
                continue
            if new.kind == "number":  # a count or a size: of the same unit
                if old.unit & new.unit & asked:
                    return True
            elif old.frame & new.frame & asked:  # an amount, a rate, a time, a date
                return True
            if new.led and len(old.sentence & new.sentence & asked) >= SHARED_WORDS:
                return True
    return False


def reorder(
    ranked: Sequence[tuple[float, str, float]], found: Sequence[Change]
) -> tuple[list[tuple[float, str, float]], dict[str, str]]:
    """``ranked`` (score, memory id, weight; best first) with each changing turn moved
    just above every memory it changes that ranked above it (earlier changes first, so
    a chain of changes ends newest first), and, for each memory changed, the latest turn
    that changes it."""
    by_older: dict[str, str] = {}
    for change in found:
        by_older.setdefault(change.older, change.newer)
    entry = {item[1]: item for item in ranked}
    order = [m for _, m, _ in ranked]
    pairs = [c for c in found if c.older in entry and c.newer in entry]
    for change in sorted(pairs, key=lambda c: (c.at, c.newer)):
        at_old, at_new = order.index(change.older), order.index(change.newer)
        if at_new > at_old:
            order.insert(at_old, order.pop(at_new))
    out: list[tuple[float, str, float]] = []
    for memory_id in order:
        score, _, weight = entry[memory_id]
        if out and score > out[-1][0]:
            score = out[-1][0]  # scores stay in rank order, as the list reads
        out.append((score, memory_id, weight))
    return out, by_older
