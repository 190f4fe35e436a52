"""Which words of a source event a revocation takes away, and taking them out of a text. Pure.

A revoked claim's words are its grounding quote and the text of its value (every
string or number in it). A sibling record of the same source event *states* them
when its statement, value or grounding contains one of them, or its grounding
lies inside one (a quote from within the revoked span). Matching ignores case
and runs of whitespace and respects word edges: "Friday" is not in "Fridays".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from memledger.domain.records import JsonValue, MemoryRecord

REDACTED = "[redacted]"
"""What replaces revoked words in a re-issued record."""


def _leaves(value: JsonValue) -> Iterable[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def _usable(word: str) -> bool:
    return any(ch.isalnum() for ch in word)


def revoked_words(record: MemoryRecord) -> frozenset[str]:
    """The words a revocation of ``record`` takes away from its source event."""
    found = set(_leaves(record.value))
    if record.grounding is not None:
        found.add(record.grounding)
    return frozenset(" ".join(w.split()) for w in found if _usable(w))


@lru_cache(maxsize=4096)
def _pattern(word: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in word.split())
    start = r"(?<!\w)" if word[:1].isalnum() or word[:1] == "_" else ""
    end = r"(?!\w)" if word[-1:].isalnum() or word[-1:] == "_" else ""
    return re.compile(start + body + end, re.IGNORECASE)


def contains(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` (case, whitespace and word edges as above)."""
    return bool(word.strip()) and _pattern(" ".join(word.split())).search(text) is not None


def _value_text(value: JsonValue) -> str:
    return " ".join(_leaves(value))


def states(record: MemoryRecord, words: Iterable[str]) -> bool:
    """Whether ``record`` states any of the revoked ``words`` (see the module docstring)."""
    text = f"{record.claim} {_value_text(record.value)} {record.grounding or ''}"
    for word in words:
        if contains(text, word):
            return True
        if record.grounding is not None and contains(word, record.grounding):
            return True
    return False


def redact(text: str, words: Iterable[str]) -> str:
    """``text`` with every occurrence of ``words`` replaced by :data:`REDACTED`,
    longest words first (a quote goes whole before the value inside it)."""
    for word in sorted({" ".join(w.split()) for w in words if _usable(w)}, key=len, reverse=True):
        text = _pattern(word).sub(REDACTED, text)
    return text
