"""A long turn as passages: what the index stores of an episode past :data:`LONG_TURN`.

A turn of a conversation may hold a pasted document, a log or a source file
(``Limits.max_text_chars`` allows 8 MiB of characters). Indexed whole, such a turn is
one huge document: BM25 normalises it into the noise, one vector cannot stand for
it, and a hit says nothing about where in it the match was. So an episode whose
entry text is longer than :data:`LONG_TURN` characters is indexed as passages of
about :data:`PASSAGE_WORDS` words (at most :data:`MAX_WORDS` words and
:data:`MAX_CHARS` characters), cut where a paragraph, a line or a sentence ends
when one is near, each overlapping the one before by :data:`OVERLAP_WORDS` words.
Each passage is its own index entry (its own lexical row and vector) carrying the
turn's tenant, subject, family, kind, speaker and time and the turn's memory id,
with its offsets into the turn's text (:attr:`Document.span`). The record itself,
and the event, keep the whole text.

Searches return one hit per memory id, its best passage's (:func:`best_per_memory`),
and a hit names the passage (:attr:`~memledger.index._base.Hit.span`) so recall
shows what matched. In a thread the turn is one turn: only its first passage
(part 0) holds the turn's place, so neighbours and windows count it once.

Any other entry, and an episode of at most :data:`LONG_TURN` characters, is one
document, exactly its :func:`~memledger.index.lexical.entry_text`. Cutting is
linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from memledger.domain.records import MemoryRecord
from memledger.index._base import Hit
from memledger.index.lexical import entry_text

__all__ = [
    "LONG_TURN",
    "MAX_CHARS",
    "MAX_WORDS",
    "OVERLAP_WORDS",
    "PASSAGE_WORDS",
    "Document",
    "best_per_memory",
    "cut",
    "documents",
]

LONG_TURN = 2_000
"""Characters of an episode's entry text past which it is indexed as passages."""
PASSAGE_WORDS = 160
"""The words a passage aims at; it ends at the best boundary from 3/4 of this on."""
MAX_WORDS = 200
"""The most words of one passage."""
MAX_CHARS = 2_000
"""The most characters of one passage (a run without spaces is cut at this)."""
OVERLAP_WORDS = 20
"""Words each passage repeats of the one before, so a phrase across a cut is found."""

_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?;:][\"')\]]*$")


@dataclass(frozen=True, slots=True)
class Document:
    """One index entry of a record: ``part`` 0 for the record's first (or only) one."""

    part: int
    text: str
    """What is indexed: the entry text, or for a passage the speaker and its words."""
    span: tuple[int, int] | None
    """For a passage, ``(start, end)`` offsets into the turn's text; else ``None``."""


def _words(text: str) -> Iterator[tuple[int, int]]:
    """Each word's ``(start, end)``; a word longer than :data:`MAX_CHARS` in pieces."""
    for match in _WORD.finditer(text):
        start, end = match.span()
        while end - start > MAX_CHARS:
            yield start, start + MAX_CHARS
            start += MAX_CHARS
        yield start, end


def _boundary(text: str, words: list[tuple[int, int]], at: int) -> int:
    """How well a passage may end after word ``at``: 3 a paragraph ends, 2 a line, 1 a
    sentence, 0 none."""
    end = words[at][1]
    gap = text[end : words[at + 1][0]] if at + 1 < len(words) else "\n\n"
    if "\n\n" in gap or "\n\r\n" in gap:
        return 3
    if "\n" in gap:
        return 2
    return 1 if _SENTENCE_END.search(text, max(words[at][0], end - 4), end) else 0


def cut(text: str) -> list[tuple[int, int]]:
    """``text`` as passages, each ``(start, end)`` (see the module's docstring)."""
    words = list(_words(text))
    if not words:
        return [(0, len(text))]
    spans: list[tuple[int, int]] = []
    first = 0
    shortest = PASSAGE_WORDS * 3 // 4
    while True:
        last = first  # the furthest word the passage may reach
        while (
            last + 1 < len(words)
            and last + 1 - first < MAX_WORDS
            and words[last + 1][1] - words[first][0] <= MAX_CHARS
        ):
            last += 1
        if last + 1 == len(words):
            spans.append((words[first][0], words[last][1]))
            return spans
        # the best boundary from `shortest` words on; on a tie the one nearest the aim
        best, best_key = last, (-1, 0)
        for at in range(min(first + shortest, last), last + 1):
            key = (_boundary(text, words, at), -abs(at - first + 1 - PASSAGE_WORDS))
            if key > best_key:
                best, best_key = at, key
        spans.append((words[first][0], words[best][1]))
        first = max(first + 1, best + 1 - OVERLAP_WORDS)


def documents(record: MemoryRecord) -> list[Document]:
    """What the index stores of ``record``: one document, or a long turn's passages."""
    text = entry_text(record)
    if len(text) <= LONG_TURN or record.kind != "episode" or not isinstance(record.value, dict):
        return [Document(0, text, None)]
    turn = record.value.get("text")
    if not isinstance(turn, str):
        return [Document(0, text, None)]
    speaker = record.value.get("speaker")
    lead = f"{speaker}: " if speaker else ""
    return [
        Document(part, lead + turn[start:end], (start, end))
        for part, (start, end) in enumerate(cut(turn))
    ]


def best_per_memory(hits: Iterable[Hit]) -> list[Hit]:
    """``hits`` (best first) with only the first of each memory id: its best passage's."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.memory_id not in seen:
            seen.add(hit.memory_id)
            out.append(hit)
    return out
