"""What the index reads of a record, and of a query: entry text, query terms, stop words.

Shared by :mod:`memledger.index.derived` (what is indexed) and the read path
(what a query asks for). FTS5 has no stop-word list of its own; queries drop
these words and match any remaining term.
"""

from __future__ import annotations

import re

from memledger.domain.records import MemoryRecord
from memledger.domain.text import ENGLISH_STOP_WORDS, value_text

STOP_WORDS = ENGLISH_STOP_WORDS
"""The words a query drops (:data:`memledger.domain.text.ENGLISH_STOP_WORDS`)."""

_WORD = re.compile(r"[0-9a-z]+")


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
    return f"{record.claim} {value_text(record.value)}".strip()


def query_terms(query: str) -> list[str]:
    """The query's words without stop words, in order, each once."""
    return list(dict.fromkeys(w for w in _WORD.findall(query.casefold()) if w not in STOP_WORDS))
