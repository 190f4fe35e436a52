"""Context assembly: the packet the next model call gets, inside a token budget,
placed where models read, routed per request, and traced.

:func:`build` (behind :meth:`memledger.memory.Memory.context`):

1. **Route** the request (:func:`memledger.read.routing.route`): memory always;
   the shared corpus when the request is a general how-to with low specificity
   or names a known corpus entity; long context only when the caller supplies
   material now. The specificity score and the reasons are in the packet's trace.
2. **Gather**: the caller's constraints (current policy or rules) and live
   state, marked authoritative with when they were observed; memories from
   :func:`memledger.read.recall.recall` (a long turn enters as the passage that
   matched), each with memory id, revision, source and what it does not prove;
   documents from the corpus, with a staleness marker past the threshold and,
   below the confidence floor, a note that nothing relevant was found instead of
   the nearest chunk; the paragraphs of the supplied long material most related
   to the request, in their order.
3. **Budget and place** (:mod:`memledger.domain.budget`): required parts must
   fit or :class:`~memledger.errors.BudgetError`; the rest most relevant first;
   the rendered text is counted whole and never exceeds ``budget.total``.
4. **Render** as YAML-like text (seed 000's order-7842 packet) and as data
   (:mod:`memledger.read.packet`).
5. **Trace**: stored in the canonical store (:mod:`memledger.read.trace`):
   every memory id and revision included, every candidate left out with its
   reason, budgets, routing and the sha256 of the rendered text, so
   :func:`memledger.read.trace.replay` can rebuild the same packet later.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memledger.deadline import check as check_budget
from memledger.domain.budget import SECTIONS, Budget, Packing, Section, pack
from memledger.domain.gates import content_words
from memledger.domain.keys import namespace_of
from memledger.domain.records import (
    JsonValue,
    MemoryRecord,
    json_depth,
    require_aware,
    require_id,
    require_text,
)
from memledger.errors import BudgetError, InvalidInputError
from memledger.index.lexical import entry_text
from memledger.read._material import shares
from memledger.read._sizing import sizes
from memledger.read.access import flush_quietly
from memledger.read.packet import (
    Left,
    Packet,
    PacketItem,
    header,
    isoformat,
    render,
    render_item,
)
from memledger.read.routing import Routing, route, specificity

if TYPE_CHECKING:
    from memledger.index.backends import Index
    from memledger.ports import Tokenizer
    from memledger.read.hot import HotTier, Tier
    from memledger.read.ports import HasReading, ReadPorts
    from memledger.read.procedures import DependencyChecker
    from memledger.read.recall import RecallResult, RecallSettings
    from memledger.session import SessionView

__all__ = [
    "Candidate",
    "Constraint",
    "DocumentSource",
    "Left",
    "LiveState",
    "Material",
    "Packet",
    "PacketItem",
    "Routing",
    "assemble",
    "build",
    "check_request",
    "header",
    "memory_fields",
    "render",
    "render_item",
    "route",
    "specificity",
]
"""The packet's types and rendering (:mod:`memledger.read.packet`) and the routing
(:mod:`memledger.read.routing`) are named here too, as before."""

MAX_REQUEST = 8_000
MAX_MATERIAL = 2_000_000
"""Characters of long material a packet may be given in all."""
DOCUMENT_FLOOR = 0.5
"""Least confidence of a corpus chunk to enter a packet: the corpus's own default
(:data:`memledger.corpus.DEFAULT_FLOOR`; see its ``search``)."""
STALE_AFTER_DAYS = 14.0


# -- what the caller supplies ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveState:
    """Current business state read by the caller from its system of record just now:
    authoritative, unlike anything remembered."""

    name: str
    value: Mapping[str, JsonValue]
    observed_at: datetime
    source: str = "caller"

    def __post_init__(self) -> None:
        require_id(self.name, "live state name", InvalidInputError)
        require_aware(self.observed_at, "observed_at", InvalidInputError)
        require_text(self.source, "live state source", InvalidInputError)
        if not isinstance(self.value, Mapping):
            raise InvalidInputError(f"live state {self.name!r} must be a mapping")
        _json(dict(self.value), f"live state {self.name!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraint:
    """A rule in force (current policy), supplied by the caller."""

    id: str
    rule: str
    effective_from: datetime | None = None
    source: str = "caller"

    def __post_init__(self) -> None:
        require_id(self.id, "constraint id", InvalidInputError)
        if not isinstance(self.rule, str) or not self.rule.strip():
            raise InvalidInputError(f"constraint {self.id!r} needs a rule")
        require_text(self.rule, "rule", InvalidInputError)
        if self.effective_from is not None:
            require_aware(self.effective_from, "effective_from", InvalidInputError)


@dataclass(frozen=True, slots=True, kw_only=True)
class Material:
    """Long material the user supplied with this request (a document, a log)."""

    name: str
    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidInputError("material needs a name")
        if not isinstance(self.text, str) or not self.text.strip():
            raise InvalidInputError(f"material {self.name!r} is empty")
        require_text(self.name, "material name", InvalidInputError)
        require_text(self.text, "material", InvalidInputError)


class ChunkLike(Protocol):
    @property
    def chunk_id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def section(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def indexed_at(self) -> datetime: ...
    @property
    def last_modified(self) -> datetime: ...


class HitLike(Protocol):
    @property
    def chunk(self) -> ChunkLike: ...
    @property
    def confidence(self) -> float: ...


class DocumentSource(Protocol):
    """The shared corpus as the packet reads it (:class:`memledger.corpus.Corpus`)."""

    def search(self, query: str, *, tenant: str, k: int = 5, floor: float = ...) -> Sequence[Any]:
        """Hits (:class:`HitLike`) at or above ``floor``, best first."""
        ...

    def entities(self, tenant: str) -> frozenset[str]: ...


# -- items ---------------------------------------------------------------------------------


def _json(value: object, what: str) -> None:
    json_depth(value, what, InvalidInputError)  # JSON data, every string and key text


def _limits(
    record: MemoryRecord, *, outdated_by: str | None, possibly_outdated_by: str | None = None
) -> list[JsonValue]:
    """What a memory does not prove: the reader's reminders, as ``key: value``."""
    out: list[JsonValue] = []
    role = record.value.get("role") if isinstance(record.value, dict) else None
    if record.kind == "episode":
        out.append("said_in_conversation: not_a_setting")
        if role == "assistant":
            out.append("agent_words: not_evidence_about_the_user")
    elif not record.operational_setting_confirmed:
        out.append("operational_setting: verify_in_account_service")
    if record.kind == "procedure":
        out.append("procedure: check_before_use")
    if not record.source_identity_authenticated:
        out.append("identity: unauthenticated_source")
    if outdated_by is not None:
        out.append(f"current: replaced_by {outdated_by}")
    elif possibly_outdated_by is not None:  # a later turn seems to change it, no claim says
        out.append(f"current: possibly_changed_by {possibly_outdated_by}")
    return out


def memory_fields(
    record: MemoryRecord,
    *,
    revision: int,
    passage: tuple[int, int] | None,
    outdated_by: str | None,
    possibly_outdated_by: str | None = None,
) -> dict[str, JsonValue]:
    """A memory's block: built from what never changes under its memory id (its words,
    window and source) and what the trace keeps (revision, passage, outdated_by,
    possibly_outdated_by), so a replay renders it the same."""
    text = record.value.get("text") if isinstance(record.value, dict) else None
    if record.kind == "episode" and isinstance(text, str) and passage is not None:
        start, end = passage
        whole = start == 0 and end == len(text)
        said = text if whole else f"... {text[start:end]} ..."
        speaker = record.value.get("speaker") if isinstance(record.value, dict) else None
        statement = f"{speaker}: {said}" if speaker else said
    else:
        statement = record.claim
    window = f"from {isoformat(record.valid_from)}"
    if record.valid_until is not None:
        window = f"{isoformat(record.valid_from)} to {isoformat(record.valid_until)}"
    fields: dict[str, JsonValue] = {
        "memory_id": record.memory_id,
        "revision": revision,
        "kind": record.kind,
        "family": record.family,
        "statement": statement,
        **({} if record.kind == "episode" else {"value": record.value}),
        "valid": window,
        "source": {
            "event": record.source_event_id,
            "actor": record.source_actor_id,
            "channel": record.source_channel,
            "authenticated": record.source_identity_authenticated,
        },
    }
    private = namespace_of(record.subject)
    if private is not None:  # whose memory it is: an agent's own notes, not the tenant's
        fields["namespace"] = f"{private} (private)"
    limits = _limits(record, outdated_by=outdated_by, possibly_outdated_by=possibly_outdated_by)
    if limits:
        fields["does_not_prove"] = limits
    return fields


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _share(request_words: frozenset[str], text: str) -> float:
    if not request_words:
        return 0.0
    return len(request_words & content_words(text)) / len(request_words)


# -- build ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """A block that may enter a packet, before budgeting (also what a trace stores)."""

    section: Section
    key: str
    fields: Mapping[str, JsonValue]
    relevance: float = 0.0
    order: int = 0
    memory_id: str | None = None
    revision: int | None = None
    passage: tuple[int, int] | None = None
    outdated_by: str | None = None
    possibly_outdated_by: str | None = None


@dataclass(slots=True)
class _Gathered:
    candidates: list[Candidate] = field(default_factory=list)
    excluded: list[Left] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_request(request: object, tenant: object, subject: object) -> str:
    require_id(tenant, "tenant", InvalidInputError)
    if subject is not None:
        require_id(subject, "subject", InvalidInputError)
    if not isinstance(request, str) or not request.strip():
        raise InvalidInputError("request must be a non-empty string")
    require_text(request, "request", InvalidInputError)
    if len(request) > MAX_REQUEST:
        raise InvalidInputError(f"request has {len(request)} characters; at most {MAX_REQUEST}")
    return request


def assemble(
    candidates: Sequence[Candidate],
    *,
    budget: Budget,
    tokenizer: Tokenizer,
) -> tuple[tuple[PacketItem, ...], list[Left], int, str]:
    """Budget and place ``candidates``; the rendered text is counted whole and the
    least relevant optional item dropped until it fits (a tokenizer need not be
    additive); a long material block is counted only if it could be placed
    (:mod:`memledger.read._sizing`). Returns the items, what was left out, the
    tokens and the text."""
    pieces, exact = sizes(candidates, tokenizer=tokenizer, render=render_item)
    headers = {s: tokenizer.count(header(s)) for s in SECTIONS}
    packing: Packing = pack(pieces, budget, headers=headers, exact=exact)
    by_key = {(c.section, c.key): c for c in candidates}
    left = [Left(section=p.section, key=p.key, reason=why) for p, why in packing.excluded]
    chosen = list(packing.included)
    while True:
        items = tuple(
            PacketItem(
                section=p.section,
                key=p.key,
                fields=by_key[(p.section, p.key)].fields,
                tokens=p.tokens,
                relevance=p.relevance,
                memory_id=by_key[(p.section, p.key)].memory_id,
                revision=by_key[(p.section, p.key)].revision,
            )
            for p in chosen
        )
        check_budget("context assembly")
        text = render(items)
        tokens = tokenizer.count(text)
        if tokens <= budget.total:
            return items, left, tokens, text
        optional = [p for p in chosen if not p.required]
        if not optional:  # only what must fit, and it does not, as rendered
            raise BudgetError(
                f"the request, constraints and live state render to {tokens} tokens; "
                f"the total budget is {budget.total}"
            )
        worst = min(optional, key=lambda p: (p.relevance, -p.order, p.key))
        chosen.remove(worst)
        left.append(Left(section=worst.section, key=worst.key, reason="total_budget"))


def build(
    ports: ReadPorts | HasReading,
    index: Index | None,
    request: str,
    *,
    tenant: str,
    subject: str | None,
    budget: Budget,
    live: Sequence[LiveState] = (),
    constraints: Sequence[Constraint] = (),
    material: Sequence[Material] = (),
    corpus: DocumentSource | None = None,
    tokenizer: Tokenizer | None = None,
    valid_at: datetime | None = None,
    k: int = 20,
    settings: RecallSettings | None = None,
    store: bool = True,
    tier: Tier = "full",
    hot: HotTier | None = None,
    checkers: Mapping[str, DependencyChecker] | None = None,
    session: SessionView | None = None,
    visible: Callable[[str], bool] | None = None,
) -> Packet:
    """The packet for ``request`` (see the module docstring); stored as a trace unless
    ``store=False``. ``tier`` picks the memory tier (:mod:`memledger.read.hot`):
    ``"full"`` the whole read path; ``"prepared"`` the result :meth:`HotTier.prepare`
    made between turns if still valid, else the hot cache; ``"hot"`` only the hot
    cache of current values (no index read). The last two need ``subject`` and
    ``hot``. A procedure is checked against what it depends on before it enters
    (``checkers`` by dependency kind, default file and git from the working
    directory: :mod:`memledger.read.procedures`). ``session`` (a
    :class:`memledger.session.SessionView`) adds the session's summary and recent
    turns just before the request, the newest turns kept first when the budget is
    short."""
    from memledger.read.ports import read_ports
    from memledger.read.recall import recall
    from memledger.read.trace import save
    from memledger.tokens import ApproxBpeTokenizer

    ports = read_ports(ports)
    check_request(request, tenant, subject)
    if not isinstance(budget, Budget):
        raise BudgetError("budget must be a memledger Budget")
    for name, given, kind in (
        ("live", live, LiveState),
        ("constraints", constraints, Constraint),
        ("material", material, Material),
    ):
        if not all(isinstance(x, kind) for x in given):
            raise InvalidInputError(f"{name} must be a sequence of {kind.__name__}")
    if len({s.name for s in live}) != len(live):
        raise InvalidInputError("two live states share a name")
    if len({m.name for m in material}) != len(material):
        raise InvalidInputError("two pieces of material share a name")
    if len({c.id for c in constraints}) != len(constraints):
        raise InvalidInputError("two constraints share an id")
    if sum(len(m.text) for m in material) > MAX_MATERIAL:
        raise InvalidInputError(f"material over {MAX_MATERIAL:,} characters in all")
    if valid_at is not None:
        require_aware(valid_at, "valid_at", InvalidInputError)
    counter = tokenizer or ApproxBpeTokenizer()
    created = ports.clock.now()
    at = valid_at or created
    # the hot tiers read no index: their routing goes without the tenant's names
    names = (
        index.names(tenant, subject=subject, visible=visible) if index is not None else frozenset()
    )
    entities = corpus.entities(tenant) if corpus is not None else frozenset()
    routing = route(
        request,
        at=at,
        names=names,
        corpus_entities=entities,
        has_corpus=corpus is not None,
        has_material=bool(material),
        live_words=" ".join(
            str(v) for state in live for v in state.value.values() if isinstance(v, str)
        ),
    )
    gathered = _Gathered()
    wanted = frozenset(content_words(request))
    for n, rule in enumerate(constraints):
        fields: dict[str, JsonValue] = {"id": rule.id, "rule": rule.rule}
        if rule.effective_from is not None:
            fields["effective_from"] = isoformat(rule.effective_from)
        fields["source"] = rule.source
        gathered.candidates.append(
            Candidate(section="constraints", key=rule.id, fields=fields, order=n)
        )
    for n, state in enumerate(live):
        fields = {
            "authoritative": True,
            "observed_at": isoformat(state.observed_at),
            "source": state.source,
            **dict(state.value),
        }
        gathered.candidates.append(
            Candidate(section="live_state", key=state.name, fields=fields, order=n)
        )
    order = 0
    for doc in material:
        paragraphs = _paragraphs(doc.text)
        scored = zip(paragraphs, shares(wanted, paragraphs), strict=True)
        for part, (paragraph, share) in enumerate(scored, start=1):
            gathered.candidates.append(
                Candidate(
                    section="long_material",
                    key=f"{doc.name}#{part}",
                    fields={"name": doc.name, "part": part, "text": paragraph},
                    relevance=share,
                    order=order,
                )
            )
            order += 1
        check_budget("context assembly over supplied material")
    if routing.corpus and corpus is not None:
        queries = (request, *routing.entities)
        _documents(corpus, queries, tenant=tenant, now=created, into=gathered)
    index_lag: int | None = None
    if routing.memory and tier != "full":
        if subject is None or hot is None:
            raise InvalidInputError(f"tier {tier!r} needs a subject and a hot tier")
        ready = hot.prepared(ports, tenant=tenant, subject=subject) if tier == "prepared" else None
        if ready is None:
            _hot_values(ports, hot, request, tenant=tenant, subject=subject, into=gathered)
        else:
            gathered.notes.append(f"memory: prepared for {hot.prepared_request(tenant, subject)!r}")
            _recalled(ready, into=gathered)
    elif routing.memory:
        if index is None:
            raise InvalidInputError("the full tier needs the derived index")
        found = recall(
            ports,
            index,
            request,
            tenant=tenant,
            subject=subject,
            k=k,
            valid_at=at,
            settings=settings,
            visible=visible,
            touch=False,  # the packet notes what it places, below
        )
        _recalled(found, into=gathered)
        index_lag = found.index_lag
        if subject is not None and hot is not None:
            _preferences(ports, hot, tenant=tenant, subject=subject, at=valid_at, into=gathered)
    if session is not None:
        _session(session, into=gathered)
    _check_procedures(ports, gathered, tenant=tenant, checkers=checkers)
    gathered.candidates.append(
        Candidate(section="request", key="request", fields={"text": request}, order=0)
    )
    items, left, tokens, text = assemble(gathered.candidates, budget=budget, tokenizer=counter)
    packet = Packet(
        trace_id=f"ctx-{secrets.token_hex(10)}",
        tenant=tenant,
        subject=subject,
        request=request,
        created_at=created,
        valid_at=at,
        items=items,
        excluded=(*gathered.excluded, *left),
        routing=routing,
        budget=budget,
        tokens=tokens,
        text=text,
        tokenizer=getattr(counter, "name", type(counter).__name__),
        notes=tuple(gathered.notes),
        index_lag=index_lag,
    )
    check_budget("context assembly")  # before the trace is written: nothing is half-kept
    if store:
        save(ports.store, packet, gathered.candidates)
    placed = [item.memory_id for item in items if item.memory_id is not None]
    if placed:  # what the model is shown is touched: it keeps its weight in recall
        ports.accesses.note(tenant, placed, at=created)
        flush_quietly(ports.accesses, ports.store, due_only=True)
    return packet


def _memory(
    record: MemoryRecord,
    *,
    relevance: float,
    order: int,
    passage: tuple[int, int] | None = None,
    outdated_by: str | None = None,
    possibly_outdated_by: str | None = None,
) -> Candidate:
    """A memory as a packet candidate, with what a trace keeps of it."""
    return Candidate(
        section="memories",
        key=record.memory_id,
        fields=memory_fields(
            record,
            revision=record.revision,
            passage=passage,
            outdated_by=outdated_by,
            possibly_outdated_by=possibly_outdated_by,
        ),
        relevance=relevance,
        order=order,
        memory_id=record.memory_id,
        revision=record.revision,
        passage=passage,
        outdated_by=outdated_by,
        possibly_outdated_by=possibly_outdated_by,
    )


def _check_procedures(
    ports: ReadPorts,
    gathered: _Gathered,
    *,
    tenant: str,
    checkers: Mapping[str, DependencyChecker] | None,
) -> None:
    """Leave out the procedures whose dependencies no longer hold (or cannot be
    checked), saying what changed."""
    from memledger.read.procedures import check_procedure, default_checkers

    ids = [c.memory_id for c in gathered.candidates if c.memory_id is not None]
    if not ids:
        return
    with ports.store.read() as unit:
        records = unit.get_records(tenant, ids)
    using = default_checkers() if checkers is None else checkers
    kept: list[Candidate] = []
    for candidate in gathered.candidates:
        record = records.get(candidate.memory_id or "")
        found = None if record is None else check_procedure(record, using)
        if found is None:
            kept.append(candidate)
            continue
        reason, what = found
        gathered.excluded.append(Left(section="memories", key=candidate.key, reason=reason))
        gathered.notes.append(f"procedure {candidate.key} left out ({reason}): {what}")
    gathered.candidates[:] = kept


def _recalled(found: RecallResult, *, into: _Gathered) -> None:
    for e in found.excluded:
        into.excluded.append(Left(section="memories", key=e.memory_id, reason=e.reason))
    if found.abstained:
        into.notes.append("memory: no relevant memory")
    count = len(found.items)
    for rank, item in enumerate(found.items):
        passage = None if item.passage is None else (item.passage.start, item.passage.end)
        into.candidates.append(
            _memory(
                item.record,
                relevance=float(count - rank),  # recall's order decides
                order=rank,
                passage=passage,
                outdated_by=item.outdated_by,
                possibly_outdated_by=item.possibly_outdated_by,
            )
        )


def _session(view: SessionView, *, into: _Gathered) -> None:
    """The session's summary and turns, in order; a tight budget keeps the newest turns
    first, then the summary."""
    for item in view.items:
        fields: dict[str, JsonValue]
        if item.role == "summary":
            first, last = item.covers or (0, 0)
            fields = {"summary": item.text, "covers": f"turns {first}-{last}"}
            relevance = 0.5  # under a tight budget the newest turns go first
        else:
            fields = {"role": item.role}
            if item.name:
                fields["tool"] = item.name
            if item.compression is not None:
                fields["compressed"] = item.compression.dropped
            fields["text"] = item.text
            relevance = float(item.seq)
        into.candidates.append(
            Candidate(
                section="session",
                key=f"session#{item.seq}",
                fields=fields,
                relevance=relevance,
                order=item.seq,
            )
        )


def _preferences(
    ports: ReadPorts,
    hot: HotTier,
    *,
    tenant: str,
    subject: str,
    at: datetime | None,
    into: _Gathered,
) -> None:
    """The subject's current preferences and standing instructions, whether or not the
    request shares their words (how the user wants things done applies to every
    request), below everything recall ranked."""
    have = {c.memory_id for c in into.candidates if c.memory_id is not None}
    values = hot.current(ports, tenant=tenant, subject=subject, valid_at=at).values
    order = 0
    for family, records in sorted(values.items()):
        for record in records:
            wanted = record.kind == "preference" or family == "instruction"
            if not wanted or record.memory_id in have:
                continue
            # below recall's hits, which count from 1 up
            into.candidates.append(_memory(record, relevance=0.5, order=1000 + order))
            order += 1


def _hot_values(
    ports: ReadPorts, hot: HotTier, request: str, *, tenant: str, subject: str, into: _Gathered
) -> None:
    """The subject's current values from the hot cache: the families the request names
    first, then the others by how much of the request each holds."""
    from memledger.read.understand import families_named

    named = set(families_named(request))
    wanted = frozenset(content_words(request))
    values = hot.current(ports, tenant=tenant, subject=subject).values
    into.notes.append("memory: hot tier (current values only)")
    order = 0
    for family, records in values.items():
        for record in records:
            score = (1.0 if family in named else 0.0) + _share(wanted, entry_text(record))
            into.candidates.append(_memory(record, relevance=score, order=order))
            order += 1


def _documents(
    corpus: DocumentSource,
    queries: Sequence[str],
    *,
    tenant: str,
    now: datetime,
    into: _Gathered,
) -> None:
    """The corpus chunks for the request and for each entity it (or the live state)
    named, each at its best confidence; below the floor, a note instead."""
    from memledger.corpus import stale_marker

    best: dict[str, Any] = {}
    for query in queries:
        for hit in corpus.search(query, tenant=tenant, k=5, floor=DOCUMENT_FLOOR):
            seen = best.get(hit.chunk.chunk_id)
            if seen is None or hit.confidence > seen.confidence:
                best[hit.chunk.chunk_id] = hit
    hits = sorted(best.values(), key=lambda h: (-h.confidence, h.chunk.chunk_id))[:5]
    if not hits:
        into.notes.append("documents: nothing relevant found in the shared corpus")
        into.candidates.append(
            Candidate(
                section="documents",
                key="none-relevant",
                fields={
                    "found": "nothing relevant in the shared corpus",
                    "floor": DOCUMENT_FLOOR,
                },
                relevance=1e9,  # the note goes in before any other document
            )
        )
        return
    for rank, hit in enumerate(hits):
        chunk = hit.chunk
        fields: dict[str, JsonValue] = {
            "source": f"{chunk.path} > {chunk.section}" if chunk.section else chunk.path,
            "chunk_id": chunk.chunk_id,
            "indexed_at": isoformat(chunk.indexed_at),
            "last_modified": isoformat(chunk.last_modified),
            "confidence": round(float(hit.confidence), 3),
        }
        marker = stale_marker(chunk, now=now, after_days=STALE_AFTER_DAYS)
        if marker:
            fields["marker"] = marker
        fields["text"] = chunk.text
        into.candidates.append(
            Candidate(
                section="documents",
                key=chunk.chunk_id,
                fields=fields,
                relevance=float(hit.confidence),
                order=rank,
            )
        )
