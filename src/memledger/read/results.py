"""What a recall hands back: :class:`RecallResult`, its :class:`Recalled` items and the
:class:`Excluded` candidates with the typed reason each was left out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memledger.domain.passages import Passage
from memledger.domain.records import MemoryRecord
from memledger.read.understand import Understood

__all__ = ["Excluded", "RecallExclusion", "RecallResult", "Recalled", "Source"]

RecallExclusion = Literal[
    "not_found",
    "stale_index",
    "superseded",
    "retracted",
    "revoked",
    "revoked_source",
    "not_authorised",
    "expired",
    "not_yet_valid",
    "past_expiry",
    "faded",
]

Source = Literal["lexical", "vector", "slot", "context", "standing"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Recalled:
    record: MemoryRecord
    score: float
    relevance: float
    time_weight: float
    sources: tuple[Source, ...]
    context: tuple[str, ...] = ()
    """Memory ids of the turns just before and after this one in its thread."""
    confidence: float | None = None
    """The confidence it ranked with: the record's, decayed for a volatile kind
    (:attr:`RecallSettings.half_lives`) by the time since it was last touched."""
    outdated_by: str | None = None
    """For a turn whose statement has been replaced since, the memory id of the record
    that replaced it (:mod:`memledger.read.outdated`)."""
    possibly_outdated_by: str | None = None
    """For a memory a later turn of the same speaker seems to change (another value of
    the same thing, with no claim that says so), that turn's memory id
    (:mod:`memledger.read.changes`): it ranks above this one."""
    passage: Passage | None = None
    """For a turn, what to show of it: the whole turn when short, else its passage that
    best covers the query, with offsets into the turn's text
    (:func:`memledger.domain.passages.best_passage`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Excluded:
    memory_id: str
    reason: RecallExclusion


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallResult:
    query: str
    items: tuple[Recalled, ...]
    excluded: tuple[Excluded, ...]
    abstained: bool
    index_lag: int
    mode: Literal["hybrid", "lexical"]
    degraded: str | None = None
    """Why vectors were not used (no embedder, or its error), or ``None``."""
    understood: Understood = field(
        default_factory=lambda: Understood(queries=(), people=(), time=None)
    )
    order: Literal["relevance", "time"] = "relevance"
    """``"time"`` when the question asks for an order ("in what order did I ..."): the
    items are still ranked by relevance, so a caller's top-k cut keeps the best, and
    :meth:`chronological` gives them in the order they happened."""

    def chronological(self) -> tuple[Recalled, ...]:
        """The items in the order they happened (valid time, then record time)."""
        return tuple(
            sorted(
                self.items,
                key=lambda r: (r.record.valid_from, r.record.recorded_at, r.record.memory_id),
            )
        )
