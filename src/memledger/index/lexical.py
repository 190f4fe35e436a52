"""What the index reads of a record, and of a query: entry text, query terms, stop words.

Shared by :mod:`memledger.index.derived` (what is indexed) and the read path
(what a query asks for). FTS5 has no stop-word list of its own; queries drop
these words and match any remaining term.
"""

from __future__ import annotations

import re

from memledger.domain.records import JsonValue, MemoryRecord

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)

_WORD = re.compile(r"[0-9a-z]+")


def _value_text(value: JsonValue) -> str:
    if isinstance(value, dict):
        return " ".join(_value_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_value_text(v) for v in value)
    return "" if value is None or isinstance(value, bool) else str(value)


def indexed(record: MemoryRecord) -> bool:
    """Whether ``record`` has an entry: one that recall could ever return. An observation
    or a historical record never can (its kind and status are fixed under its memory id),
    so an entry of one would only take a candidate's place from a memory that can."""
    return record.authorised


def entry_text(record: MemoryRecord) -> str:
    """What a record is found by: an episode's speaker and words, else statement and value."""
    if record.kind == "episode" and isinstance(record.value, dict):
        speaker = record.value.get("speaker")
        text = record.value.get("text")
        return f"{speaker}: {text}" if speaker else str(text)
    return f"{record.claim} {_value_text(record.value)}".strip()


def query_terms(query: str) -> list[str]:
    """The query's words without stop words, in order, each once."""
    return list(dict.fromkeys(w for w in _WORD.findall(query.casefold()) if w not in STOP_WORDS))
