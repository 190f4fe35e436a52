"""How recall weighs what it finds: :class:`RecallSettings`, with the defaults measured
on LoCoMo, checked whole when made (a bad setting is an
:class:`~memledger.errors.InvalidQueryError`, never a recall that half runs)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from memledger.domain.records import MemoryRecord
from memledger.errors import InvalidQueryError

__all__ = ["DEFAULT_HALF_LIVES", "DEFAULT_SETTINGS", "RecallSettings"]

_MAX_SETTING = 100_000
"""The most ``candidates`` or ``context_anchors`` a recall may ask for."""
_MAX_WINDOW = 100
"""The most neighbours on each side ``context_after`` or ``context_before`` may weigh."""
DEFAULT_HALF_LIVES: Mapping[str, float] = MappingProxyType({"working": 1.0})
"""Working memory loses half its confidence a day after it was last touched."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallSettings:
    """How recall weighs what it finds; the defaults are the ones measured on LoCoMo."""

    tau_days: float = 180.0
    """The least half-life-like constant of the time weight, in days (see
    ``tau_span``)."""
    tau_span: float = 10.0
    """The time weight's constant is at least this many times the span of the history
    the query's candidates come from (from the oldest to ``valid_at``): "old" is
    relative to how far back this tenant's memory goes, so months-old turns of a
    year of history are not treated as stale (the oldest keeps 0.93 of its score).
    0 keeps ``tau_days`` alone. Measured on both dev corpora: 3 / 5 / 10 / 20 gave
    locomo-dev 0.820 / 0.821 / 0.825 / 0.825 and beam-dev 0.702 / 0.711 / 0.714 /
    0.714."""
    floor: float = 0.25
    candidates: int = 50
    """How many hits each source (BM25, BM25 over windows, vectors) contributes."""
    vector_weight: float = 1.0
    """Weight of the vector score (cosine above the typical entry's, relative to the
    best hit) beside BM25's (relative to its best)."""
    nearest: bool = False
    """Rank every vector hit by its cosine, not only those nearer than a typical entry:
    what a search that does not abstain asks for (:func:`memledger.read.memories.search`)."""
    keep_names: bool = False
    """Search with the query as asked. By default the people it names are replaced by
    "they" (:attr:`~memledger.read.understand.Understood.unnamed`) in what is
    embedded, and, when it names one person, in what BM25 matches too: a name pulls
    every turn near it, the other speaker's "Thanks, Melanie!" among them, while
    the person boost already prefers the person's own turns."""
    window_weight: float = 1.0
    """Weight of BM25 over a turn together with the turns around it."""
    context_after: tuple[float, ...] = (0.6, 0.4, 0.2, 0.1)
    """Share of a turn's score given to the turns 1, 2, ... places after it (the answer to
    a question follows it)."""
    context_before: tuple[float, ...] = (0.5, 0.3, 0.1)
    """Share of a turn's score given to the turns 1, 2, ... places before it."""
    context_anchors: int = 30
    person_boost: float = 1.0
    """Memories said by (or about) the one person a query names score ``1 + boost`` times."""
    time_boost: float = 1.0
    """Memories from the time a query names score up to ``1 + boost`` times."""
    assistant_weight: float = 0.3
    """A turn the assistant spoke (``role="assistant"``) keeps this much of its score:
    in an agent's conversation the evidence about the user is nearly always in the
    user's turns (93% on BEAM), while the assistant's long answers share their words."""
    outdated_weight: float = 0.5
    """A turn whose statement has been replaced since keeps this much of its score (and
    ranks below the record that replaced it)."""
    standing_k: int = 2
    """At most this many standing instructions or preferences in scope for a query
    ("Always ... when I ask about ...", "I prefer ...") join its results, whether or
    not they rank there by its words."""
    standing_rank: int = 9
    """Standing instructions in scope rank no lower than this (1 is the top)."""
    standing_floor: float = 0.5
    """How far in scope an instruction must be
    (:func:`memledger.read.candidates.standing_in_scope`)."""
    standing_cosine: float = 0.5
    """How far in scope, by meaning, the standing instruction whose scope is nearest the
    query counts (0 turns meaning off: words only)."""
    standing_min_cosine: float = 0.4
    """The least cosine (with a semantic embedder) of that nearest scope."""
    passage_words: int = 60
    """A recalled turn longer than this many words is shown as its best passage of at
    most this many (``Recalled.passage``)."""
    agent_context_weight: float = 0.5
    """In a conversation with an assistant (turns with a role), a turn lends its
    neighbours this much of the context share above: the turn after the user's is
    the assistant's answer, not a peer's reply that holds the evidence."""
    stated_context_weight: float = 0.0
    """For a question whose evidence is the turn that states each thing it asks about,
    a matching turn lends its neighbours this much of the context share: a question
    that gathers several things of one kind
    (:attr:`~memledger.read.understand.Shape.gathers`: "What activities does she
    do?"), where the replies around the best matches would crowd out the turns that
    state the others, and a question that asks when something happened
    (:attr:`~memledger.read.understand.Shape.dates`: "When did she ...?"), which the
    stating turn's own time answers."""
    session_spread: float = 0.5
    """For a question that spans sessions (:class:`~memledger.read.understand.Shape`),
    each further turn taken from a session already in the results counts this much
    of its score per turn before it: the top k spreads over the sessions that match
    instead of filling with one session's neighbours. 1.0 turns the spread off."""
    asking_weight: float = 0.6
    """A turn that ends by asking a question keeps this much of what it gains from
    windows, vectors and its neighbours (its own BM25 match counts in full): what
    it asks about is answered, and stated, in the turns after it, which its
    context share reaches."""
    half_lives: Mapping[str, float] = field(default_factory=lambda: DEFAULT_HALF_LIVES)
    """Volatile memories, by kind or family name (a family's entry wins): the days in
    which their confidence halves without a touch
    (:func:`~memledger.domain.scoring.decayed_confidence`). Working memory by default."""
    min_confidence: float = 0.05
    """A volatile memory whose decayed confidence is below this is left out of recall
    (``faded``); it stays in the store and its views."""

    def __post_init__(self) -> None:
        for name in ("nearest", "keep_names"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidQueryError(
                    f"{name} must be True or False, got {getattr(self, name)!r}"
                )
        counts = {
            "candidates": (self.candidates, 1),
            "context_anchors": (self.context_anchors, 0),
            "passage_words": (self.passage_words, 1),
            "standing_k": (self.standing_k, 0),
            "standing_rank": (self.standing_rank, 1),
        }
        for name, (count, least) in counts.items():
            if (
                isinstance(count, bool)
                or not isinstance(count, int)
                or not least <= count <= _MAX_SETTING
            ):
                raise InvalidQueryError(
                    f"{name} must be a whole number from {least} to {_MAX_SETTING:,}, got {count!r}"
                )
        for name, shares in (
            ("context_after", self.context_after),
            ("context_before", self.context_before),
        ):
            if not isinstance(shares, tuple | list) or len(shares) > _MAX_WINDOW:
                raise InvalidQueryError(
                    f"{name} must be a tuple of at most {_MAX_WINDOW} weights, got {shares!r}"
                )
        if not (
            isinstance(self.tau_days, int | float)
            and not isinstance(self.tau_days, bool)
            and math.isfinite(self.tau_days)
            and self.tau_days > 0
        ):
            raise InvalidQueryError(f"tau_days must be a finite number > 0, got {self.tau_days!r}")
        weights = {
            "floor": self.floor,
            "vector_weight": self.vector_weight,
            "window_weight": self.window_weight,
            "person_boost": self.person_boost,
            "time_boost": self.time_boost,
            "asking_weight": self.asking_weight,
            "assistant_weight": self.assistant_weight,
            "agent_context_weight": self.agent_context_weight,
            "standing_floor": self.standing_floor,
            "standing_cosine": self.standing_cosine,
            "standing_min_cosine": self.standing_min_cosine,
            "outdated_weight": self.outdated_weight,
            "tau_span": self.tau_span,
            "session_spread": self.session_spread,
            "stated_context_weight": self.stated_context_weight,
            **{f"context_after[{i}]": w for i, w in enumerate(self.context_after)},
            **{f"context_before[{i}]": w for i, w in enumerate(self.context_before)},
        }
        for name, value in weights.items():
            if not (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value >= 0
            ):
                raise InvalidQueryError(f"{name} must be a finite number >= 0, got {value!r}")
        if not isinstance(self.half_lives, Mapping):
            raise InvalidQueryError(
                f"half_lives must map kinds or families to days, got {self.half_lives!r}"
            )
        for name, days in self.half_lives.items():
            if not (isinstance(name, str) and name) or not (
                isinstance(days, int | float)
                and not isinstance(days, bool)
                and math.isfinite(days)
                and days > 0
            ):
                raise InvalidQueryError(
                    f"half_lives[{name!r}] must be a finite number of days > 0, got {days!r}"
                )
        if not (
            isinstance(self.min_confidence, int | float)
            and not isinstance(self.min_confidence, bool)
            and 0 <= self.min_confidence <= 1
        ):
            raise InvalidQueryError(
                f"min_confidence must be a number from 0 to 1, got {self.min_confidence!r}"
            )

    def half_life(self, record: MemoryRecord) -> float | None:
        """The days in which ``record``'s confidence halves, ``None`` if it does not decay."""
        return self.half_lives.get(record.family, self.half_lives.get(record.kind))


DEFAULT_SETTINGS = RecallSettings()
"""The settings of a recall that names none (made and checked once: they are frozen)."""
