"""Sizing of packet candidates for :func:`memledger.read.context.assemble`: exact
counts where packing needs them, cheap floors where it does not.

Long material can hold thousands of paragraphs of which only a budget's worth can
be placed. A paragraph's rendered block is counted only when its floor (a number
of tokens it cannot be below) does not already rule it out (the ``exact`` hook of
:func:`memledger.domain.budget.pack`), so the packing, the text and its sha256
are the ones counting every block gives, at the cost of what can be placed.

Floors exist for :class:`~memledger.tokens.ApproxBpeTokenizer` only: every other
tokenizer gets every block counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from memledger.domain.budget import Piece, Section
from memledger.domain.records import JsonValue
from memledger.tokens import ApproxBpeTokenizer

if TYPE_CHECKING:
    from memledger.ports import Tokenizer
    from memledger.read.context import Candidate

_ESCAPED_SPACE = re.compile(r"[\t\x0b\x0c\r\x1c-\x1f]")
"""Whitespace a JSON string escapes into marks: words around it may join."""
_MATERIAL_FIELDS = ("name", "part", "text")
_FRAME = 9
"""Tokens of a material block besides its text: ``-``, ``name``, ``:``, the name,
``part``, ``:``, the part number, ``text``, ``:``."""


def material_floor(text: str) -> int:
    """Fewest :class:`ApproxBpeTokenizer` tokens ``text`` can take in a material
    block. Every non-space character is in a counted piece, and a piece spans at
    most 9 characters per token; a piece never spans whitespace, so each word is at
    least one token, unless a JSON escape joins words."""
    if _ESCAPED_SPACE.search(text) is None:
        return _FRAME + len(text.split())
    return _FRAME + -(-len("".join(text.split())) // 9)


def _floor(candidate: Candidate) -> int | None:
    fields = candidate.fields
    if candidate.section != "long_material" or tuple(fields) != _MATERIAL_FIELDS:
        return None
    text, name = fields["text"], fields["name"]
    if not isinstance(text, str) or not isinstance(name, str) or not name.strip():
        return None
    if isinstance(fields["part"], bool) or not isinstance(fields["part"], int):
        return None
    return material_floor(text)


def sizes(
    candidates: Sequence[Candidate],
    *,
    tokenizer: Tokenizer,
    render: Callable[[Mapping[str, JsonValue], Section, str], str],
) -> tuple[list[Piece], Callable[[Piece], int]]:
    """The pieces of ``candidates`` (a long material block with its floor as
    ``tokens``, any other block counted) and the exact size of any of them, each
    block rendered and counted at most once."""
    by_key = {(c.section, c.key): c for c in candidates}
    known: dict[tuple[Section, str], int] = {}

    def exact(piece: Piece) -> int:
        at = (piece.section, piece.key)
        if at not in known:
            c = by_key[at]
            known[at] = tokenizer.count(render(c.fields, c.section, c.key))
        return known[at]

    lazy = type(tokenizer) is ApproxBpeTokenizer
    pieces: list[Piece] = []
    for c in candidates:
        floor = _floor(c) if lazy else None
        if floor is None:
            known[(c.section, c.key)] = floor = tokenizer.count(render(c.fields, c.section, c.key))
        pieces.append(
            Piece(section=c.section, key=c.key, tokens=floor, relevance=c.relevance, order=c.order)
        )
    return pieces, exact
