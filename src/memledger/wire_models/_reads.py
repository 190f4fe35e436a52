"""What a read answers on the wire: a :class:`Recall` (its items, exclusions and what
the query was read as), a context :class:`Packet` and its :class:`Replay`, and stored
traces (:class:`TraceSummary`, :class:`StoredTrace`)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime
from pydantic import JsonValue as Json

from memledger.domain.budget import Section
from memledger.read.recall import RecallExclusion, Source
from memledger.wire_models._base import WireModel
from memledger.wire_models._records import Record

__all__ = ["Packet", "Recall", "Replay", "StoredTrace", "TraceSummary"]


# -- recall ----------------------------------------------------------------------------------


class _Span(WireModel):
    start: AwareDatetime
    end: AwareDatetime
    phrase: str


class _Shape(WireModel):
    across_sessions: bool
    ordered: bool
    to_agent: bool
    gathers: bool
    dates: bool


class _Understood(WireModel):
    queries: list[str]
    people: list[str]
    time: _Span | None
    notes: list[str]
    shape: _Shape
    unnamed: str | None
    """The query with the people it names replaced by "they" (what was embedded)."""


class _Passage(WireModel):
    text: str
    start: int
    end: int
    whole: bool


class _Recalled(WireModel):
    memory_id: str
    revision: int
    source_event_id: str
    score: float
    relevance: float
    time_weight: float
    confidence: float | None
    """The confidence it ranked with (decayed for a volatile kind)."""
    sources: list[Source]
    context: list[str]
    outdated_by: str | None
    possibly_outdated_by: str | None = None
    """A later turn of the same speaker that seems to change it (no claim says so)."""
    passage: _Passage | None
    record: Record


class _Excluded(WireModel):
    memory_id: str
    reason: RecallExclusion


class Recall(WireModel):
    """:func:`memledger.wire.recall_to_dict`."""

    query: str
    abstained: bool
    mode: Literal["hybrid", "lexical"]
    degraded: str | None
    index_lag: int
    order: Literal["relevance", "time"]
    understood: _Understood
    items: list[_Recalled]
    excluded: list[_Excluded]


# -- context packets and traces --------------------------------------------------------------


class _Budget(WireModel):
    total: int
    sections: dict[Section, int]


class _Routing(WireModel):
    memory: bool
    corpus: bool
    long_context: bool
    specificity: float
    reasons: list[str]
    entities: list[str]


class _PacketItem(WireModel):
    section: Section
    key: str
    memory_id: str | None
    revision: int | None
    relevance: float
    tokens: int
    fields: dict[str, Json]


class _Left(WireModel):
    section: Section
    key: str
    reason: str


class Packet(WireModel):
    """:meth:`memledger.read.context.Packet.to_dict`: the packet as data, its rendered
    ``text`` (what the model is given) and the ``trace_id`` it is stored under."""

    trace_id: str
    tenant: str
    subject: str | None
    request: str
    created_at: AwareDatetime
    valid_at: AwareDatetime
    tokens: int
    tokenizer: str
    budget: _Budget
    routing: _Routing
    items: list[_PacketItem]
    excluded: list[_Left]
    notes: list[str]
    index_lag: int | None
    """Outbox rows of the tenant the index had not applied when the packet's recall read
    it (``null``: no recall read the index)."""
    sha256: str
    text: str


class Replay(Packet):
    """A stored packet rebuilt from the store, as ``memledger trace show --json`` prints it."""

    matches: bool
    revoked_since: list[str]
    missing: list[str]
    gate_decisions: list[dict[str, Json]]


class _TraceMemory(WireModel):
    memory_id: str
    revision: int


class TraceSummary(WireModel):
    """:func:`memledger.read.trace.recent`: one recent trace."""

    trace_id: str
    subject: str | None
    created_at: AwareDatetime
    request: str
    memories: list[_TraceMemory]
    excluded: int
    tokens: int


class StoredTrace(WireModel):
    """A trace as stored: its JSON body (see :mod:`memledger.read.trace`) and the sha256
    of the text the model was given."""

    trace_id: str
    subject: str | None
    created_at: AwareDatetime
    rendered_sha256: str
    body: dict[str, Json]
