"""Chunking: a document's blocks packed into chunks of at most ``chunk_tokens``. Pure.

* A chunk never crosses a heading: each section (the blocks under one heading,
  named by its heading path, ``"Expedited orders > Credit hold"``; a level-1
  heading that is the document's title is left out of the path) is chunked
  on its own.
* Paragraphs are packed whole, in order, while the chunk stays within
  ``chunk_tokens``. A paragraph over ``chunk_tokens`` is split by lines, a line
  by sentences, a sentence by words, into parts of at most
  ``chunk_tokens - overlap_tokens``; a single word longer than that is the only
  prose ever over the limit.
* A table or a code block is a chunk of its own, whole, whatever its size
  (half a table answers nothing); it neither lends nor takes overlap.
* Consecutive prose chunks of one section overlap: a chunk starts with the
  last sentences of the chunk before, up to ``overlap_tokens`` (the last
  words when the last sentence alone is longer, or when whole sentences give
  less than half of it), never all of it, and only as much as still fits.
* Every chunk is ``plain[start:end]`` of the document's plain text
  (:class:`~memledger.corpus._parse.ParsedDocument`), and they come in
  document order: starts and ends both strictly increase.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Literal

from memledger.corpus._parse import Block, DocumentKind, ParsedDocument, parse_document
from memledger.errors import InvalidInputError
from memledger.ports import Tokenizer

__all__ = [
    "MAX_CHUNK_TOKENS",
    "MIN_CHUNK_TOKENS",
    "Piece",
    "check_chunking",
    "chunk_document",
    "chunk_parsed",
]

MIN_CHUNK_TOKENS = 8
MAX_CHUNK_TOKENS = 8192

_UnitKind = Literal["prose", "table", "code"]
_WORD = re.compile(r"\S+")
_LINE = re.compile(r"[^\n]+")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)")
_BREAK = re.compile(r"(?:[.!?…][\"'”’)\]]*|\n)\s+")
"""What ends a sentence or a line, with the whitespace after it: a sentence starts
where it ends."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Piece:
    """One chunk of a document before it is stored: ``plain[start:end]``."""

    index: int
    section: str
    text: str
    tokens: int
    start: int
    end: int
    is_table: bool = False
    is_code: bool = False


def check_chunking(chunk_tokens: object, overlap_tokens: object) -> tuple[int, int]:
    """``(chunk_tokens, overlap_tokens)`` if usable, else ``InvalidInputError``."""
    if (
        isinstance(chunk_tokens, bool)
        or not isinstance(chunk_tokens, int)
        or not MIN_CHUNK_TOKENS <= chunk_tokens <= MAX_CHUNK_TOKENS
    ):
        raise InvalidInputError(
            f"chunk_tokens must be a whole number from {MIN_CHUNK_TOKENS} to "
            f"{MAX_CHUNK_TOKENS}, got {chunk_tokens!r}"
        )
    if (
        isinstance(overlap_tokens, bool)
        or not isinstance(overlap_tokens, int)
        or not 0 <= overlap_tokens <= chunk_tokens // 2
    ):
        raise InvalidInputError(
            f"overlap_tokens must be a whole number from 0 to half of chunk_tokens "
            f"({chunk_tokens // 2}), got {overlap_tokens!r}"
        )
    return chunk_tokens, overlap_tokens


def chunk_document(
    text: str,
    *,
    kind: DocumentKind,
    tokenizer: Tokenizer,
    chunk_tokens: int,
    overlap_tokens: int,
) -> list[Piece]:
    """The chunks of ``text``, a whole document of ``kind`` (see the module docstring)."""
    return chunk_parsed(
        parse_document(text, kind=kind),
        tokenizer=tokenizer,
        chunk_tokens=chunk_tokens,
        overlap_tokens=overlap_tokens,
    )


def chunk_parsed(
    document: ParsedDocument, *, tokenizer: Tokenizer, chunk_tokens: int, overlap_tokens: int
) -> list[Piece]:
    """The chunks of a parsed document, numbered from 0 in document order."""
    limit, overlap = check_chunking(chunk_tokens, overlap_tokens)
    pieces: list[Piece] = []
    for section, blocks in sections(document):
        packer = _Packer(document.plain, tokenizer=tokenizer, limit=limit, overlap=overlap)
        pieces.extend(packer.pack(section, blocks))
    return [replace(piece, index=n) for n, piece in enumerate(pieces)]


def sections(document: ParsedDocument) -> Iterator[tuple[str, list[Block]]]:
    """Each run of blocks between headings, with the path of headings above it."""
    title = (document.title or "").casefold()
    stack: list[tuple[int, str]] = []
    current: list[Block] = []

    def name() -> str:
        path = [
            text
            for n, (level, text) in enumerate(stack)
            if not (n == 0 and level == 1 and text.casefold() == title)
        ]
        return " > ".join(path)

    for block in document.blocks:
        if block.kind != "heading":
            current.append(block)
            continue
        if current:
            yield name(), current
            current = []
        while stack and stack[-1][0] >= block.level:
            stack.pop()
        stack.append((block.level, block.text))
    if current:
        yield name(), current


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    tokens: int
    kind: _UnitKind


class _Packer:
    """Packs the blocks of one section into pieces."""

    def __init__(self, plain: str, *, tokenizer: Tokenizer, limit: int, overlap: int) -> None:
        self.plain = plain
        self.tokenizer = tokenizer
        self.limit = limit
        self.overlap = overlap
        self.split_budget = max(1, limit - overlap)

    def count(self, start: int, end: int) -> int:
        return self.tokenizer.count(self.plain[start:end])

    def pack(self, section: str, blocks: Sequence[Block]) -> list[Piece]:
        pieces: list[Piece] = []

        def emit(start: int, end: int, kind: _UnitKind = "prose") -> None:
            pieces.append(
                Piece(
                    index=0,
                    section=section,
                    text=self.plain[start:end],
                    tokens=self.count(start, end),
                    start=start,
                    end=end,
                    is_table=kind == "table",
                    is_code=kind == "code",
                )
            )

        current: tuple[int, int] | None = None  # the prose chunk being filled
        previous: tuple[int, int] | None = None  # the prose chunk before it
        for unit in self._units(blocks):
            if unit.kind != "prose":
                if current is not None:
                    emit(*current)
                emit(unit.start, unit.end, unit.kind)
                current = previous = None
                continue
            if current is not None:
                if self.count(current[0], unit.end) <= self.limit:
                    current = (current[0], unit.end)
                    continue
                emit(*current)
                previous = current
            start = unit.start if previous is None else self._overlap_start(previous, unit)
            current = (start, unit.end)
        if current is not None:
            emit(*current)
        return pieces

    def _units(self, blocks: Sequence[Block]) -> Iterator[_Unit]:
        for block in blocks:
            if block.kind in ("table", "code"):
                kind: _UnitKind = "table" if block.kind == "table" else "code"
                yield _Unit(block.start, block.end, self.count(block.start, block.end), kind)
                continue
            tokens = self.count(block.start, block.end)
            if tokens <= self.limit:
                yield _Unit(block.start, block.end, tokens, "prose")
            else:
                yield from self._groups(self._atoms(block.start, block.end, level=0))

    def _atoms(self, start: int, end: int, *, level: int) -> list[_Unit]:
        """``plain[start:end]`` as spans of at most the split budget: lines, else
        sentences, else words (a word over it is kept whole)."""
        tokens = self.count(start, end)
        if tokens <= self.split_budget:
            return [_Unit(start, end, tokens, "prose")]
        for depth in range(level, 3):
            spans = _spans(self.plain, start, end, depth)
            if len(spans) > 1:
                return [a for s, e in spans for a in self._atoms(s, e, level=depth + 1)]
        return [_Unit(start, end, tokens, "prose")]

    def _groups(self, atoms: Sequence[_Unit]) -> Iterator[_Unit]:
        """Consecutive atoms joined while the sum of their counts fits the split budget
        (checked once on the joined text, for tokenizers that do not add up)."""
        first = 0
        while first < len(atoms):
            last, total = first, atoms[first].tokens
            while last + 1 < len(atoms) and total + atoms[last + 1].tokens <= self.split_budget:
                last += 1
                total += atoms[last].tokens
            while last > first and self.count(atoms[first].start, atoms[last].end) > (
                self.split_budget
            ):
                last -= 1
            start, end = atoms[first].start, atoms[last].end
            yield _Unit(start, end, self.count(start, end), "prose")
            first = last + 1

    def _overlap_start(self, previous: tuple[int, int], unit: _Unit) -> int:
        """Where a chunk that begins with ``unit`` starts: inside ``previous`` (its tail
        of whole sentences, else of words, up to the overlap), or at ``unit``."""
        if not self.overlap:
            return unit.start
        start, end = previous
        words = [m.start() for m in _WORD.finditer(self.plain, start, end)]
        tails: list[int] = []  # starts of tails within the overlap, shortest first
        total, until = 0, end
        for at in reversed(words[1:]):  # a proper tail: never the whole chunk before
            total += self.count(at, until)  # word by word; checked whole below
            until = at
            if total > self.overlap:
                break
            tails.append(at)
        while tails and self.count(tails[-1], end) > self.overlap:
            tails.pop()  # a tokenizer whose counts do not add up
        if not tails:
            return unit.start
        sentence_starts = {m.end() for m in _BREAK.finditer(self.plain, start, end)}
        by_sentence = [at for at in tails if at in sentence_starts]
        chosen = tails[-1]
        if by_sentence and 2 * self.count(by_sentence[-1], end) >= self.overlap:
            chosen = by_sentence[-1]
        for at in reversed(tails):  # the chosen tail, else the longest shorter one that fits
            if at >= chosen and self.count(at, unit.end) <= self.limit:
                return at
        return unit.start


def _spans(text: str, start: int, end: int, depth: int) -> list[tuple[int, int]]:
    """``text[start:end]`` cut into lines (depth 0), sentences (1) or words (2), each
    trimmed of whitespace; together they hold every non-space character."""
    if depth == 0:
        raw = [(m.start(), m.end()) for m in _LINE.finditer(text, start, end)]
    elif depth == 1:
        cuts = [m.end() for m in _SENTENCE_END.finditer(text, start, end)]
        bounds = [start, *cuts, end]
        raw = list(pairwise(bounds))
    else:
        raw = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
    spans: list[tuple[int, int]] = []
    for s, e in raw:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((s, e))
    return spans
