"""recall(query): candidates from the derived index, rechecked against the canonical store.

1. **Understand the query** (:mod:`memledger.read.understand`, no LLM
   needed): the people it names (matched
   against the speakers and subjects the index knows, so "Mel" finds
   Melanie), the time it asks about ("in July 2023", "last May", "two weeks
   ago": :mod:`memledger.read.when`), its shape
   (:class:`~memledger.read.understand.Shape`), and, with a rewriter
   (:mod:`memledger.read.rewrite`), alternative phrasings. A failing rewriter
   is noted and the original query used. The vectors see the query with the
   people it names replaced by "they", and BM25 does too when it names one
   person (``keep_names``): the person boost (6) stands for the name.
2. **Candidates**, filtered by tenant (and subject) inside every source: BM25
   from the tenant's own FTS5 tables (entries and windows), nearest vectors
   from the tenant's own rows (only those nearer than the median entry),
   and the current values of the families the query names for the subject
   (exact slot lookups). Lexical and vector scores are fused
   linearly, each relative to its best hit (measured on LoCoMo: reciprocal
   rank fusion over the same lists scored 0.59 against 0.67 for the linear
   blend). Without a working embedder recall runs lexical only and says so
   (``mode="lexical"``, ``degraded`` gives the reason).
3. **Context**: conversation turns are read with their neighbours. BM25 also
   runs over each turn's window (the turn with the turns around it), and a
   turn near strongly matching turns of the same thread gains a share of their
   score (weights by distance, ``context_after`` and ``context_before``), the
   neighbours joining as candidates: an answer often sits one or two turns
   after the words of the question. Only candidates that pass the recheck (4)
   lend their score. A question whose evidence is the turn that states each
   thing (one that gathers several of a kind, or asks when something
   happened) lends only ``stated_context_weight`` (0) of it.
4. **Canonical recheck**: every candidate is read back from the store in one
   query; a record that is gone, closed (superseded, retracted), revoked, from
   a revoked source, unauthorised, expired or not yet valid at ``valid_at``, or
   found through an index entry older than the record with other words, is
   excluded with a typed reason. What is returned is always the canonical
   record, never the index's copy, so a lagging index cannot hand back a
   stale value.
5. **Overlay**: the current slot values of the families the query names are
   added even when the index has not caught up with them (read your
   corrections); with ``min_revision`` (which needs ``subject``: a token
   belongs to a subject's family) a store below the floor for a family the
   query names refuses.
6. **Rank**: fused relevance (of a turn that ends by asking a question, only
   ``asking_weight`` of what it owes to windows, vectors and neighbours: its
   answer comes after it) x person and time boosts x time weight
   ``0.3 + 0.7 * exp(-age / tau)`` (old memories are down-weighted, never
   dropped; ``age`` is the time since the memory was last touched: stated,
   stated again or handed out by a read, :mod:`memledger.read.access`; ``tau``
   is 180 days or 10 times the span of the history the candidates come from,
   whichever is longer: old is relative to how far back the tenant's memory
   goes) x confidence (for a volatile kind, ``half_lives``, halving with each
   half-life since the last touch; below ``min_confidence`` the memory is left
   out as ``faded``) x trust (floored at 0.05: untrusted sources rank last
   rather than vanish). A question across sessions then
   spreads its top k over the sessions that match (``session_spread``); a
   question about what the assistant said keeps the assistant's turns whole.
7. **Abstain**: a memory counts as relevant when it covers at least ``floor``
   of the query's content words (names aside; a neighbour's words count
   half), matches with a semantic embedder, or is a slot the query names.
   With nothing relevant the answer is "no relevant memory", not the nearest
   thing.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from memledger.deadline import check as check_budget
from memledger.domain.gates import content_words
from memledger.domain.passages import Passage, best_passage
from memledger.domain.records import MemoryRecord, require_aware, require_id, require_text
from memledger.domain.scoring import decayed_confidence, down_weight
from memledger.domain.text import ends_asking
from memledger.errors import EmbedderError, InvalidQueryError
from memledger.index.backends import Index
from memledger.index.derived import Hit
from memledger.index.lexical import entry_text, query_terms
from memledger.index.passages import documents
from memledger.read.access import flush_quietly
from memledger.read.changes import DEPTH, changes, reorder
from memledger.read.outdated import replaced
from memledger.read.ports import read_ports
from memledger.read.understand import Understood, families_named, name_words, understand
from memledger.read.views import check_floor, check_min_revision
from memledger.read.when import time_boost
from memledger.store import floors

if TYPE_CHECKING:
    from memledger.ports import UnitOfWork
    from memledger.read.ports import HasReading, ReadPorts
    from memledger.read.rewrite import QueryRewriter

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

MAX_QUERY = 4000
MAX_K = 100
_MAX_SETTING = 100_000
"""The most ``candidates`` or ``context_anchors`` a recall may ask for."""
_MAX_WINDOW = 100
"""The most neighbours on each side ``context_after`` or ``context_before`` may weigh."""
_SEMANTIC_FLOOR = 0.5
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
    """How far in scope an instruction must be (see ``_standing_in_scope``)."""
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


time_weight = down_weight
"""``0.3 + 0.7 * exp(-age / tau)`` (:func:`memledger.domain.scoring.down_weight`)."""


def _stale(hit: Hit, record: MemoryRecord) -> bool:
    """The index found this record by words it no longer has: its entry is older than the
    record and its text differs. (A record's words never change under its memory id here,
    corrections write new records; an older entry otherwise only means a lower mention
    count, and recall returns the canonical record anyway.)"""
    if hit.revision >= record.revision:
        return False
    if hit.span is None:
        return hit.text != entry_text(record)
    return not any(d.text == hit.text for d in documents(record) if d.span == hit.span)


def _why_not(
    record: MemoryRecord | None, *, at: datetime, now: datetime, revoked: bool
) -> RecallExclusion | None:
    """Why ``record`` may not be recalled at valid time ``at`` and record time ``now``."""
    if record is None:
        return "not_found"
    if record.expired(now):
        return "past_expiry"
    if record.status == "revoked":
        return "revoked"
    if revoked:
        return "revoked_source"
    if record.status in ("superseded", "retracted"):
        return "superseded" if record.status == "superseded" else "retracted"
    if not record.authorised:
        return "not_authorised"
    if record.valid_until is not None and record.valid_until <= at:
        return "expired"
    if record.valid_from > at:
        return "not_yet_valid"
    return None


def check_query(
    query: object,
    tenant: object,
    subject: object,
    k: object,
    *,
    min_revision: object = None,
    settings: object = None,
) -> str:
    """``query`` if a recall with these arguments is possible, else InvalidQueryError."""
    require_id(tenant, "tenant", InvalidQueryError)
    if subject is not None:
        require_id(subject, "subject", InvalidQueryError)
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query must be a non-empty string")
    require_text(query, "query", InvalidQueryError)
    check_min_revision(min_revision)
    if settings is not None and not isinstance(settings, RecallSettings):
        raise InvalidQueryError(f"settings must be a RecallSettings, got {type(settings).__name__}")
    if len(query) > MAX_QUERY:
        raise InvalidQueryError(f"query has {len(query)} characters; at most {MAX_QUERY}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidQueryError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    return query


class _Checker:
    """Reads candidates back from the store and sorts them into kept and excluded."""

    def __init__(
        self,
        unit: UnitOfWork,
        *,
        tenant: str,
        at: datetime,
        now: datetime,
        indexed: Mapping[str, Hit],
        subject: str | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> None:
        self.unit = unit
        self.tenant = tenant
        self.subject = subject
        self.visible = visible
        self.at, self.now = at, now
        self.indexed = indexed
        self.seen: set[str] = set()
        self._revoked: dict[tuple[str, str], frozenset[str]] = {}

    def admit(
        self, memory_ids: Sequence[str], kept: dict[str, MemoryRecord], excluded: list[Excluded]
    ) -> None:
        records = self.unit.get_records(self.tenant, memory_ids)
        unread = {
            (r.subject, r.family)
            for r in records.values()
            if self.subject in (None, r.subject) and (r.subject, r.family) not in self._revoked
        }
        if unread:  # one read for every family not seen yet
            self._revoked.update(self.unit.revoked_sources_of(self.tenant, sorted(unread)))
        for memory_id in sorted(memory_ids):
            self.seen.add(memory_id)
            record = records.get(memory_id)
            if record is not None and self.subject not in (None, record.subject):
                continue  # another subject's: not even named among the exclusions
            if record is not None and self.visible is not None and not self.visible(record.subject):
                continue  # a namespace the caller may not read: not named either
            gone = False
            if record is not None:
                gone = record.source_event_id in self._revoked[(record.subject, record.family)]
            why = _why_not(record, at=self.at, now=self.now, revoked=gone)
            hit = self.indexed.get(memory_id)
            if why is None and record is not None and hit is not None and _stale(hit, record):
                why = "stale_index"
            if why is not None or record is None:
                excluded.append(Excluded(memory_id=memory_id, reason=why or "not_found"))
            else:
                kept[memory_id] = record


def _current_first(
    ranked: list[tuple[float, str, float]],
    sources: Mapping[str, set[Source]],
    overtaken: Mapping[str, str],
    *,
    tuning: RecallSettings,
) -> list[tuple[float, str, float]]:
    """What is true now before what was: the current values of the families the query
    names rank first, and a turn whose statement was ``overtaken``
    (:mod:`memledger.read.outdated`) keeps ``outdated_weight`` of its score and ranks
    below the record that replaced it."""
    if not ranked:
        return ranked
    top = ranked[0][0]
    score_of = {m: s for s, m, _ in ranked}
    adjusted: list[tuple[float, str, float]] = []
    for score, memory_id, weight in ranked:
        if "slot" in sources[memory_id]:
            score = top + score  # a value the query names, as it stands now: first
        elif memory_id in overtaken:
            score *= tuning.outdated_weight
            instead = score_of.get(overtaken[memory_id])
            if instead is not None:
                score = min(
                    score,
                    0.99 * (top + instead if "slot" in sources[overtaken[memory_id]] else instead),
                )
        adjusted.append((score, memory_id, weight))
    adjusted.sort(key=lambda item: (-item[0], item[1]))
    return adjusted


def _standing_in_scope(
    index: Index,
    query: str,
    *,
    tenant: str,
    subjects: Sequence[str] | None,
    tuning: RecallSettings,
) -> dict[str, float]:
    """The ``standing_k`` standing instructions or preferences most in scope for
    ``query``, with how much: the largest of the share of the query's content words
    the instruction holds, the share of its scope ("when I ask about ...") the
    query holds, and, with a semantic embedder, ``standing_cosine`` credit for the
    one whose scope is nearest the query in meaning ("When is my meeting?" is
    about "scheduling details" without a shared word) when its cosine reaches
    ``standing_min_cosine``. Below ``standing_floor`` an instruction is not in
    scope."""
    if not tuning.standing_k:
        return {}
    asked = content_words(query)
    if not asked:
        return {}
    rules = index.standing(tenant, subjects=subjects)
    found: dict[str, float] = {}
    for memory_id, text, when in rules:
        held = len(asked & content_words(text)) / len(asked)
        scope = content_words(when)
        applies = len(scope & asked) / len(scope) if scope else 0.0
        found[memory_id] = max(held, applies)
    if rules and tuning.standing_cosine and _semantic(index):
        assert index.embedder is not None
        try:
            vectors = index.embedder.embed([query, *(when or text for _, text, when in rules)])
        except EmbedderError:
            vectors = None  # words alone then, as without an embedder
        if vectors is not None:
            cosines = [float(v @ vectors[0]) for v in vectors[1:]]
            nearest = max(range(len(rules)), key=lambda i: (cosines[i], rules[i][0]))
            if cosines[nearest] >= tuning.standing_min_cosine:
                memory_id = rules[nearest][0]
                found[memory_id] = max(found[memory_id], tuning.standing_cosine)
    best = sorted(
        ((r, m) for m, r in found.items() if r >= tuning.standing_floor),
        key=lambda x: (-x[0], x[1]),
    )
    return {m: r for r, m in best[: tuning.standing_k]}


def _with_standing(
    chosen: list[Recalled],
    ranked: Sequence[tuple[float, str, float]],
    standing: Mapping[str, float],
    *,
    kept: Mapping[str, MemoryRecord],
    sources: Mapping[str, set[Source]],
    k: int,
    rank: int,
) -> list[Recalled]:
    """``chosen`` with the standing instructions in scope that passed the recheck that
    ranking put below ``rank`` (or left out) moved up to ``rank``, within the top ``k``."""
    high = {r.record.memory_id for r in chosen[: rank - 1]}
    missing = [m for m in standing if m in kept and m not in high]
    chosen = [r for r in chosen if r.record.memory_id not in missing]
    if not missing:
        return chosen
    scores = {m: (score, weight) for score, m, weight in ranked}
    extra = [
        Recalled(
            record=kept[m],
            score=scores[m][0],
            relevance=standing[m],
            time_weight=scores[m][1],
            sources=tuple(sorted(sources[m])),
        )
        for m in missing
    ]
    at = max(0, min(k - len(extra), rank - 1))
    return [*chosen[:at], *extra, *chosen[at:]][:k]


def session_of(record: MemoryRecord) -> str | None:
    """The session (within its subject) a turn was said in; ``None`` for other records
    (the index's thread of a turn)."""
    session = record.session
    return None if session is None else f"{record.subject}\x1f{session}"


def _spread(
    ranked: Sequence[tuple[float, str, float]],
    kept: Mapping[str, MemoryRecord],
    *,
    k: int,
    spread: float,
    relevant: Callable[[str], float],
    floor: float,
) -> list[tuple[float, str, float]]:
    """``ranked`` re-ordered for a question across sessions: greedily, the memory whose
    score times ``spread`` to the power of the turns already taken from its session
    is highest comes next (a memory outside any session takes no penalty). Only the
    memories that pass the relevance ``floor`` are taken, the first ``5 * k`` of them;
    the rest follow in their order. Scores are left as they were."""
    pool: list[tuple[float, str, float]] = []
    rest: list[tuple[float, str, float]] = []
    for item in ranked:
        if len(pool) < 5 * k and relevant(item[1]) >= floor:
            pool.append(item)
        else:
            rest.append(item)
    taken: dict[str, int] = {}
    heap = [(-score, n, 0) for n, (score, _, _) in enumerate(pool)]
    heapq.heapify(heap)
    out: list[tuple[float, str, float]] = []
    while heap:
        _, n, seen = heapq.heappop(heap)
        session = session_of(kept[pool[n][1]])
        now = taken.get(session, 0) if session is not None else 0
        if now != seen:  # its session gained turns since: re-weigh it
            heapq.heappush(heap, (-pool[n][0] * spread**now, n, now))
            continue
        out.append(pool[n])
        if session is not None:
            taken[session] = now + 1
    return out + rest


def _passage(
    record: MemoryRecord, query: str, *, words: int, span: tuple[int, int] | None = None
) -> Passage | None:
    """What to show of a turn; for a long one, the best of the passage that matched
    (``span``, :attr:`~memledger.index._base.Hit.span`), offsets into the whole text."""
    text = record.value.get("text") if isinstance(record.value, dict) else None
    if record.kind != "episode" or not isinstance(text, str):
        return None
    if span is None or span == (0, len(text)):
        return best_passage(text, query, words=words)
    start, end = span
    shown = best_passage(text[start:end], query, words=words)
    return Passage(start=start + shown.start, end=start + shown.end, text=shown.text, whole=False)


def role_of(record: MemoryRecord) -> str | None:
    """Who spoke a turn (``user``, ``assistant``, ``tool``), from its episode; ``None``
    for other records and for turns between peers."""
    role = record.value.get("role") if isinstance(record.value, dict) else None
    return role if isinstance(role, str) else None


def _asks(record: MemoryRecord) -> bool:
    text = record.value.get("text") if isinstance(record.value, dict) else None
    return isinstance(text, str) and ends_asking(text)


def _semantic(index: Index) -> bool:
    """Whether the index's cosines mean something (not the spelling-only hashing embedder)."""
    return index.embedder is not None and not index.embedder.name.startswith("hashing:")


class _Relevance:
    """How relevant a kept memory is, on an absolute scale (for abstention), computed
    only for the memories that reach the top: its own share of the content words
    of the query (or of the rewriter's phrasing it covers best), half of a
    neighbouring turn's share, 0.5 for a slot the query names, 1.0
    for a semantic vector match."""

    def __init__(
        self,
        queries: Sequence[str],
        *,
        ignore: frozenset[str],
        kept: Mapping[str, MemoryRecord],
        adjacent: Mapping[str, set[str]],
        sources: Mapping[str, set[Source]],
        cosines: Mapping[str, float],
    ) -> None:
        self._wanted = []
        for query in queries:
            wanted = content_words(" ".join(query_terms(query)))
            if wanted:
                self._wanted.append((wanted - ignore) or wanted)
        self._kept = kept
        self._adjacent = adjacent
        self._sources = sources
        self._cosines = cosines
        self._own: dict[str, float] = {}

    def own(self, memory_id: str) -> float:
        if memory_id not in self._own:
            words = content_words(entry_text(self._kept[memory_id]))
            shares = (len(wanted & words) / len(wanted) for wanted in self._wanted)
            self._own[memory_id] = max(shares, default=0.0)
        return self._own[memory_id]

    def __call__(self, memory_id: str) -> float:
        if "slot" in self._sources[memory_id]:
            return max(0.5, self.own(memory_id))
        if self._cosines.get(memory_id, 0.0) >= _SEMANTIC_FLOOR:
            return 1.0
        own = self.own(memory_id)
        if own >= 0.5:  # a neighbour's words count half: they cannot do better
            return own
        beside = (self.own(n) for n in self._adjacent.get(memory_id, ()) if n in self._kept)
        return max(own, 0.5 * max(beside, default=0.0))


def _relative(hits: Sequence[Hit]) -> dict[str, float]:
    best = max((h.score for h in hits), default=0.0)
    return {h.memory_id: max(0.0, h.score) / best for h in hits} if best > 0 else {}


def _lag(
    unit: UnitOfWork, tenant: str, *, after: int, visible: Callable[[str], bool] | None
) -> int:
    """The outbox rows past the index's cursor as the read began (at most what it missed),
    of the subjects ``visible`` passes only: another agent's private writes are not
    counted for a key that may not read them."""
    if visible is None:
        return unit.outbox_pending(tenant, after=after)
    pending = unit.outbox_pending_subjects(tenant, after=after)
    return sum(n for subject, n in pending.items() if visible(subject))


def recall(
    ports: ReadPorts | HasReading,
    index: Index,
    query: str,
    *,
    tenant: str,
    subject: str | None = None,
    k: int = 10,
    valid_at: datetime | None = None,
    min_revision: int | None = None,
    settings: RecallSettings | None = None,
    rewriter: QueryRewriter | None = None,
    visible: Callable[[str], bool] | None = None,
    touch: bool = True,
) -> RecallResult:
    """The ``k`` most useful memories for ``query``; see the module docstring.
    ``visible`` (a subject -> bool test, e.g. :meth:`Principal.may_read`) keeps out, at
    the canonical recheck, every record of a subject the caller may not read.
    ``touch=False`` does not count the result as read (:mod:`memledger.read.access`):
    for a look ahead, or a packet that notes only what it places. ``ports`` is the
    facade's :attr:`~memledger.Memory.reading`."""
    ports = read_ports(ports)
    check_query(query, tenant, subject, k)
    if min_revision is not None and subject is None:
        raise InvalidQueryError(
            "min_revision needs a subject: revision tokens belong to a subject's family"
        )
    if valid_at is not None:
        require_aware(valid_at, "valid_at", InvalidQueryError)
    tuning = settings or RecallSettings()
    now = ports.clock.now()  # record time
    at = valid_at or now  # valid time
    subjects = None if subject is None else [subject]
    # who a query can name (a subject's read: its own people), how far the feed has come
    glance = index.glance(tenant, subject=subject)
    names = glance.known.visible_to(visible)  # a private namespace's names: its readers
    understood = understand(query, names=names, at=at, rewriter=rewriter)

    # 2. candidates from each source, fused
    sources: dict[str, set[Source]] = {}
    indexed: dict[str, Hit] = {}  # what the index held for each hit, to check it is current
    spans: dict[str, tuple[int, int] | None] = {}  # the passage of a long turn that matched
    lexical: dict[str, float] = {}
    windowed: dict[str, float] = {}
    unnamed = None if tuning.keep_names else understood.unnamed
    for phrasing in understood.queries:
        if phrasing == query and unnamed is not None and len(understood.people) == 1:
            phrasing = unnamed  # the person boost stands for the name
        for found, windows in ((lexical, False), (windowed, True)):
            if windows and not tuning.window_weight:
                continue
            hits = index.search(
                phrasing, tenant=tenant, k=tuning.candidates, subjects=subjects, windows=windows
            )
            relative = _relative(hits)
            for hit in hits:
                score = relative.get(hit.memory_id, 0.0)
                found[hit.memory_id] = max(score, found.get(hit.memory_id, 0.0))
                sources.setdefault(hit.memory_id, set()).add("lexical")
                if not windows:
                    indexed[hit.memory_id] = hit
                    spans.setdefault(hit.memory_id, hit.span)
                    if hit.kind != "episode":  # a memory outside any thread is its own window
                        windowed[hit.memory_id] = max(score, windowed.get(hit.memory_id, 0.0))
    vectors: dict[str, float] = {}
    cosines: dict[str, float] = {}
    degraded: str | None = None
    used_vectors = False
    if index.embedder is None:
        degraded = "no embedder: lexical only"
    else:
        try:
            asked = unnamed or query
            hits = index.search_vectors(
                asked, tenant=tenant, k=tuning.candidates, subjects=subjects
            )
        except EmbedderError as exc:
            degraded = f"embedder failed ({exc.reason}): lexical only"
        else:
            gap = glance.degraded
            used_vectors = gap is None or bool(hits)
            if gap is not None:
                degraded = f"some entries have no vector yet ({gap})"
                degraded += "" if hits else ": lexical only"
            hits = [h for h in hits if h.score > 0]  # no nearer than a typical entry
            vectors = _relative(hits)
            indexed.update((h.memory_id, h) for h in hits)
            for h in hits:
                spans.setdefault(h.memory_id, h.span)
            cosines = {h.memory_id: h.cosine or 0.0 for h in hits}
            for hit in hits:
                sources.setdefault(hit.memory_id, set()).add("vector")
    # standing instructions and preferences apply whether or not they share the words
    in_scope = _standing_in_scope(index, query, tenant=tenant, subjects=subjects, tuning=tuning)
    for memory_id in in_scope:
        sources.setdefault(memory_id, set()).add("standing")
    base = {
        m: lexical.get(m, 0.0)
        + tuning.window_weight * windowed.get(m, 0.0)
        + tuning.vector_weight * vectors.get(m, 0.0)
        for m in sources
    }

    excluded: list[Excluded] = []
    kept: dict[str, MemoryRecord] = {}
    check_budget("recall")
    fused = dict(base)
    floor = check_min_revision(min_revision)
    wanted = (
        {}
        if floor is None or subject is None
        else {(tenant, subject, f): floor for f in families_named(query)}
    )
    with floors.at_least(wanted), ports.store.read() as unit:
        # 4. canonical recheck: only what passes it can lend its score to a neighbour
        checker = _Checker(
            unit, tenant=tenant, subject=subject, at=at, now=now, indexed=indexed, visible=visible
        )
        checker.admit(list(sources), kept, excluded)
        # 3. context: neighbouring turns share their anchors' scores
        # (only turns sit in a thread: a claim anchored here would only take a turn's place)
        anchors = sorted(
            (m for m, r in kept.items() if r.kind == "episode"), key=lambda m: (-base[m], m)
        )
        window = max(len(tuning.context_after), len(tuning.context_before))
        stated = understood.shape.gathers or understood.shape.dates
        lends = tuning.stated_context_weight if stated else 1.0
        near = index.neighbours(tenant, anchors[: tuning.context_anchors], window=window)
        for anchor, neighbours in near.items():
            for neighbour, offset in neighbours:
                weights = tuning.context_after if offset > 0 else tuning.context_before
                if abs(offset) > len(weights):
                    continue
                share = lends * weights[abs(offset) - 1] * base[anchor]
                if role_of(kept[anchor]) is not None:  # a conversation with an assistant
                    share *= tuning.agent_context_weight
                fused[neighbour] = fused.get(neighbour, 0.0) + share
                sources.setdefault(neighbour, set()).add("context")
        checker.admit(
            [m for m in sources if m not in kept and m not in checker.seen], kept, excluded
        )
        # 5. overlay the current values of the families the query names
        if subject is not None:
            for family in families_named(query):
                slot = unit.get_family(tenant, subject, family)
                check_floor(slot, min_revision, source=ports.store.url)
                gone_sources = unit.revoked_sources(tenant, subject, family)
                for record in unit.family_records(tenant, subject, family, open_only=True):
                    gone = record.source_event_id in gone_sources
                    if _why_not(record, at=at, now=now, revoked=gone):
                        continue
                    kept.setdefault(record.memory_id, record)
                    sources.setdefault(record.memory_id, set()).add("slot")
        # turns whose statements were overtaken since, read in the same snapshot: the
        # turns most likely to reach the top (by fused score), not every candidate
        turns = sorted(
            (r for r in kept.values() if r.kind == "episode"),
            key=lambda r: (-fused.get(r.memory_id, 0.0), r.memory_id),
        )[: 3 * k]
        overtaken = replaced(unit, tenant, turns, at=at, now=now)
        # when each was last stated again or read (as of ``at``): the clock of decay
        touched = dict(unit.last_touched(tenant, list(kept), before=at))
        index_lag = _lag(unit, tenant, after=glance.cursor, visible=visible)

    for memory_id, last in ports.accesses.pending(tenant, kept, before=at).items():
        touched[memory_id] = max(last, touched.get(memory_id, last))
    ages: dict[str, float] = {}
    confidences: dict[str, float] = {}
    for memory_id, record in list(kept.items()):
        last = max(record.valid_from, touched.get(memory_id, record.valid_from))
        ages[memory_id] = (at - last).total_seconds() / 86400
        half_life = tuning.half_life(record)
        confidences[memory_id] = (
            record.confidence
            if half_life is None
            else decayed_confidence(record.confidence, ages[memory_id], half_life_days=half_life)
        )
        if confidences[memory_id] < tuning.min_confidence:  # faded: out of recall, still held
            del kept[memory_id]
            excluded.append(Excluded(memory_id=memory_id, reason="faded"))

    # 6. rank, 7. abstain
    people = frozenset(understood.people)
    speakers = index.speakers(tenant, kept) if len(people) == 1 else {}
    ranked: list[tuple[float, str, float]] = []
    oldest = min((r.valid_from for r in kept.values()), default=at)
    span_days = max(0.0, (at - oldest).total_seconds() / 86400)
    tau = max(tuning.tau_days, tuning.tau_span * span_days)
    for memory_id, record in kept.items():
        score = fused.get(memory_id, 0.0)
        if record.kind == "episode" and _asks(record):  # its own words keep their weight
            own = lexical.get(memory_id, 0.0)
            score = own + tuning.asking_weight * (score - own)
        if role_of(record) == "assistant" and not understood.shape.to_agent:
            score *= tuning.assistant_weight  # the agent's own words: rarely evidence
        score = max(score, 0.5 if "slot" in sources[memory_id] else 0.0)
        if people and (speakers.get(memory_id) in people or record.subject in people):
            score *= 1.0 + tuning.person_boost
        if understood.time is not None:
            score *= 1.0 + tuning.time_boost * time_boost(record.valid_from, understood.time)
        weight = down_weight(ages[memory_id], tau_days=tau)
        score *= weight * confidences[memory_id] * max(record.trust, 0.05)
        ranked.append((score, memory_id, weight))
    ranked.sort(key=lambda item: (-item[0], item[1]))
    ranked = _current_first(ranked, sources, overtaken, tuning=tuning)
    # a later turn that changes a value: above what it changes, even with no claim
    about = frozenset(content_words(query)) - name_words(understood.people) - understood.shape.words
    best = [m for _, m, _ in ranked[:DEPTH]]
    ranked, possibly = reorder(ranked, changes([kept[m] for m in best], about))
    adjacent: dict[str, set[str]] = {}
    for anchor, neighbours in near.items():
        for neighbour, _ in neighbours:
            adjacent.setdefault(anchor, set()).add(neighbour)
            adjacent.setdefault(neighbour, set()).add(anchor)
    judge = _Relevance(
        understood.queries,
        ignore=name_words(understood.people) | understood.shape.words,
        kept=kept,
        adjacent=adjacent,
        sources=sources,
        cosines=cosines if _semantic(index) else {},
    )
    shape = understood.shape
    if shape.across_sessions and tuning.session_spread < 1.0:
        ranked = _spread(
            ranked, kept, k=k, spread=tuning.session_spread, relevant=judge, floor=tuning.floor
        )
    chosen: list[Recalled] = []
    for score, memory_id, weight in ranked:
        relevance = judge(memory_id)
        if relevance < tuning.floor:
            continue
        chosen.append(
            Recalled(
                record=kept[memory_id],
                score=score,
                relevance=relevance,
                time_weight=weight,
                sources=tuple(sorted(sources[memory_id])),
            )
        )
        if len(chosen) == k:
            break
    chosen = _with_standing(
        chosen, ranked, in_scope, kept=kept, sources=sources, k=k, rank=tuning.standing_rank
    )
    unread = [r.record.memory_id for r in chosen if r.record.memory_id not in near]
    beside_chosen = {**near, **index.neighbours(tenant, unread, window=1)}
    items = tuple(
        Recalled(
            record=r.record,
            score=r.score,
            relevance=r.relevance,
            time_weight=r.time_weight,
            sources=r.sources,
            context=tuple(
                m for m, offset in beside_chosen.get(r.record.memory_id, ()) if abs(offset) == 1
            ),
            passage=_passage(
                r.record, query, words=tuning.passage_words, span=spans.get(r.record.memory_id)
            ),
            outdated_by=overtaken.get(r.record.memory_id),
            possibly_outdated_by=possibly.get(r.record.memory_id),
            confidence=confidences[r.record.memory_id],
        )
        for r in chosen
    )
    result = RecallResult(
        query=query,
        items=items,
        excluded=tuple(excluded),
        abstained=not items,
        index_lag=index_lag,
        mode="hybrid" if used_vectors else "lexical",
        degraded=degraded,
        understood=understood,
        order="time" if shape.ordered else "relevance",
    )
    ports.stats.count(result)
    if touch:  # what a read hands out is touched: it keeps its weight (decay's clock)
        ports.accesses.note(tenant, (r.record.memory_id for r in items), at=now)
        flush_quietly(ports.accesses, ports.store, due_only=True)
    return result
