"""Token packing and placement of a context packet. Pure.

A packet is made of sections, placed in :data:`SECTIONS` order against
lost-in-the-middle: the caller's hard constraints and live state at the top,
long material the user supplied next, then retrieved documents and memories
(within each, the least relevant first and the most relevant last, nearest the
request), the session's recent turns (its summary, then the turns in order),
the request last.

:func:`pack` chooses what fits: *required* pieces (the request, constraints,
live state) must all fit or the budget is refused (:class:`BudgetError`), since
leaving out a hard constraint would change the answer silently; the other pieces
are taken most relevant first while their section's cap and the total allow,
counting a section's header once it holds a piece. Each piece's ``tokens`` is
the size of its own rendered block, so the packet's size is their sum plus the
headers; :func:`memledger.read.context.build` checks the rendered whole and
drops the least relevant optional piece if a tokenizer is not additive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal, get_args

from memledger.errors import BudgetError

Section = Literal[
    "constraints", "live_state", "long_material", "documents", "memories", "session", "request"
]
SECTIONS: tuple[Section, ...] = get_args(Section)
"""Placement order, top to bottom."""
REQUIRED: frozenset[Section] = frozenset({"constraints", "live_state", "request"})
"""Sections whose pieces are all kept or the budget refused."""
BY_RELEVANCE: frozenset[Section] = frozenset({"documents", "memories"})
"""Sections placed by relevance (most relevant last); the others keep their order."""

MAX_TOKENS = 10_000_000


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TOKENS:
        raise BudgetError(f"{name} must be a whole number of tokens from 1 to {MAX_TOKENS:,}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """A packet's token budget: a total and, optionally, a cap per section."""

    total: int
    sections: Mapping[Section, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _count(self.total, "total")
        if not isinstance(self.sections, Mapping):
            raise BudgetError("sections must map section names to token counts")
        for name, cap in self.sections.items():
            if name not in SECTIONS:
                raise BudgetError(f"unknown section {name!r}; sections are {list(SECTIONS)}")
            _count(cap, f"sections[{name!r}]")
        object.__setattr__(self, "sections", MappingProxyType(dict(self.sections)))

    def cap(self, section: Section) -> int:
        return self.sections.get(section, self.total)

    def to_dict(self) -> dict[str, object]:
        return {"total": self.total, "sections": dict(self.sections)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Piece:
    """One block of a packet: where it goes, what it is, its size and relevance."""

    section: Section
    key: str
    tokens: int
    relevance: float = 0.0
    order: int = 0
    """Position among its section's pieces when the section keeps its order."""

    @property
    def required(self) -> bool:
        return self.section in REQUIRED


@dataclass(frozen=True, slots=True, kw_only=True)
class Packing:
    included: tuple[Piece, ...]
    """In placement order."""
    excluded: tuple[tuple[Piece, str], ...]
    """Pieces left out, with why: ``section_budget`` or ``total_budget``."""
    tokens: int
    """Tokens of the included pieces and the headers of the sections that hold them."""


def place(pieces: Sequence[Piece]) -> tuple[Piece, ...]:
    """``pieces`` in packet order: by section, then least relevant first in a section
    placed by relevance (the most relevant nearest the request), else in order."""
    rank = {s: n for n, s in enumerate(SECTIONS)}

    def key(p: Piece) -> tuple[int, float, int, str]:
        if p.section in BY_RELEVANCE:
            return (rank[p.section], p.relevance, p.order, p.key)
        return (rank[p.section], 0.0, p.order, p.key)

    return tuple(sorted(pieces, key=key))


def pack(
    pieces: Sequence[Piece],
    budget: Budget,
    *,
    headers: Mapping[Section, int],
    exact: Callable[[Piece], int] | None = None,
) -> Packing:
    """What of ``pieces`` fits ``budget`` (see the module docstring); ``headers`` is
    the size of each section's header, counted once the section holds a piece.

    With ``exact``, an optional piece's ``tokens`` is a floor of its size and
    ``exact(piece)`` the size itself, asked only of a piece the floor does not
    already rule out: long material costs what can be placed, not its length. The
    packing is the one the exact sizes give (an excluded piece keeps its floor)."""
    used: dict[Section, int] = {}
    total = 0
    for piece in pieces:
        if not piece.required:
            continue
        extra = piece.tokens + (0 if piece.section in used else headers.get(piece.section, 0))
        used[piece.section] = used.get(piece.section, 0) + extra
        total += extra
    if total > budget.total:
        raise BudgetError(
            f"the request, constraints and live state need {total} tokens; "
            f"the total budget is {budget.total}"
        )
    for section, size in used.items():
        if section in budget.sections and size > budget.cap(section):
            raise BudgetError(
                f"the {section} section needs {size} tokens; its budget is {budget.cap(section)}"
            )
    included = [p for p in pieces if p.required]
    excluded: list[tuple[Piece, str]] = []
    optional = sorted(
        (p for p in pieces if not p.required),
        key=lambda p: (-p.relevance if math.isfinite(p.relevance) else 0.0, p.order, p.key),
    )
    for piece in optional:
        extra = piece.tokens + (0 if piece.section in used else headers.get(piece.section, 0))
        capped = piece.section in budget.sections
        if exact is not None:
            over_cap = capped and used.get(piece.section, 0) + extra > budget.cap(piece.section)
            if not over_cap and (capped or total + extra <= budget.total):
                sized = exact(piece)
                extra += sized - piece.tokens
                piece = replace(piece, tokens=sized)
        if capped and used.get(piece.section, 0) + extra > budget.cap(piece.section):
            excluded.append((piece, "section_budget"))
        elif total + extra > budget.total:
            excluded.append((piece, "total_budget"))
        else:
            used[piece.section] = used.get(piece.section, 0) + extra
            total += extra
            included.append(piece)
    return Packing(included=place(included), excluded=tuple(excluded), tokens=total)
