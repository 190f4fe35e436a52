"""The value types of session memory: items, views, compression records, the policy,
and the :class:`Summarizer` port. Pure: no storage, no clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Literal, Protocol, get_args

from memledger.errors import InvalidInputError

Role = Literal["user", "assistant", "tool"]
"""Who a turn comes from; ``"tool"`` is a tool result."""

ItemRole = Literal["user", "assistant", "tool", "summary"]
"""A turn's role, or ``"summary"`` for the item that replaced the oldest turns."""

TURN_ROLES: frozenset[str] = frozenset(get_args(Role))


@dataclass(frozen=True, slots=True, kw_only=True)
class Compression:
    """What compression on arrival did to an oversized tool result.

    The original text is not kept anywhere: only its size (``kept_tokens +
    dropped_tokens`` approximately) and its SHA-256, so a caller holding the
    original can prove which one it was.
    """

    kept_tokens: int
    """Tokens of the text kept (the item's ``text``, gap markers included)."""
    dropped_tokens: int
    """The original's tokens minus ``kept_tokens`` (never below 0)."""
    dropped: str
    """A short description of what went, e.g. ``"lines 40-310 of 400 (no match for
    'invoice total')"``."""
    original_sha256: str
    """Hex SHA-256 of the original text, UTF-8 encoded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionItem:
    """One item of a session's working memory: a turn, or the session's summary."""

    tenant: str
    session: str
    seq: int
    """Position in the session. Turns are numbered 1, 2, 3, ... in the order added; the
    summary takes the ``seq`` of the last turn it replaced, so a view is ordered by ``seq``."""
    role: ItemRole
    text: str
    tokens: int
    """``text``'s tokens, counted by the writing :class:`SessionMemory`'s tokenizer."""
    at: datetime
    """When the turn happened (aware, UTC); for a summary, when it was made."""
    name: str | None = None
    """The tool's name, for a tool result that gave one."""
    compression: Compression | None = None
    """Set when a tool result was compressed on arrival."""
    covers: tuple[int, int] | None = None
    """For a summary: the first and last ``seq`` of the turns it replaced (inclusive)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionView:
    """What a session holds now: the summary (if any) then the recent turns, oldest first."""

    items: tuple[SessionItem, ...]
    """Everything in the view, ordered by ``seq``: the summary first when present."""
    summary: SessionItem | None
    """The summary item (also ``items[0]``), or ``None`` when there is none or it did
    not fit the budget."""
    tokens: int
    """The sum of the items' ``tokens``."""
    dropped_for_budget: int = 0
    """How many items (summary included) the budget left out."""

    @property
    def turns(self) -> tuple[SessionItem, ...]:
        """The verbatim turns, without the summary."""
        return tuple(item for item in self.items if item.role != "summary")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPolicy:
    """When a session compacts and how large things may be. All numbers positive.

    Compaction runs on a schedule, never because a token limit overflowed: when a
    turn is added and the turns not yet summarized number ``window_turns +
    every_turns``, the oldest ``every_turns`` of them are folded into the summary,
    so the newest ``window_turns`` always stay verbatim.
    """

    window_turns: int = 12
    """The rolling window: the newest turns kept verbatim through a compaction."""
    every_turns: int = 8
    """Compact after every this many new turns beyond the window."""
    tool_tokens: int = 800
    """A tool result over this many tokens is compressed on arrival to at most this."""
    summary_tokens: int = 300
    """The summary is at most this many tokens."""

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidInputError(
                    f"CompactionPolicy.{field.name} must be a positive integer, got {value!r}"
                )


class Summarizer(Protocol):
    """Folds turns into a session's running summary.

    ``previous`` is the summary so far (``None`` at the first compaction), ``turns``
    the turns being folded in, oldest first. The answer should be at most
    ``max_tokens`` long; :class:`SessionMemory` cuts a longer one to fit. It runs
    inside the transaction of the add that triggered it: if it raises, the add is
    rolled back.
    """

    def summarize(
        self, previous: str | None, turns: Sequence[SessionItem], *, max_tokens: int
    ) -> str: ...
