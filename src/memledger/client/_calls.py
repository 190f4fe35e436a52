"""Every route of the HTTP API as a :class:`Call`: what to send and how to read the answer.

Pure: no I/O, no clock, no client state. :class:`~memledger.client.Client` and
:class:`~memledger.client.AsyncClient` send the same calls; only the sending differs.
Inputs are checked here as far as the route would refuse them anyway for a reason the
client can name better (a naive datetime, a value that is not JSON); everything else is
the server's to judge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, ParamSpec, TypeAlias, TypeVar
from urllib.parse import quote

from pydantic import TypeAdapter

from memledger import wire_models as wm
from memledger.domain.budget import Budget
from memledger.domain.families import Family
from memledger.domain.keys import KeyRole, PrincipalKind
from memledger.domain.records import Claim, Grant, SourceEvent
from memledger.errors import InvalidEventError, InvalidInputError, InvalidQueryError, StoreError
from memledger.read.context import Constraint, LiveState, Material
from memledger.wire import claim_to_dict, event_to_dict, isoformat
from memledger.wire_models import SubjectPage

__all__ = [
    "Call",
    "ClaimInput",
    "ConsistencyInput",
    "EventInput",
    "Floors",
    "Flow",
    "Json",
    "accept",
    "add_document",
    "changes",
    "context",
    "create_key",
    "current",
    "doc_of",
    "documents",
    "erase",
    "erasures",
    "event",
    "families",
    "families_of",
    "forget",
    "get",
    "history",
    "ingest",
    "ingest_batch",
    "jobs",
    "keys",
    "me",
    "process",
    "ready",
    "recall",
    "records",
    "register_family",
    "reject",
    "remove_document",
    "replay",
    "retention",
    "reviews",
    "revoke",
    "revoke_key",
    "search_corpus",
    "set_retention",
    "subjects",
    "timeline",
    "trace",
    "traces",
]

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
Json: TypeAlias = object
"""A body as :func:`json.dumps` takes it; checked when it is encoded."""

EventInput: TypeAlias = SourceEvent | Mapping[str, object]
"""A source event: the library's :class:`SourceEvent`, or the JSON object the API reads
(``tenant`` and ``actor`` may be left out: the API key decides both)."""
ClaimInput: TypeAlias = Claim | Mapping[str, object]
"""A candidate claim: the library's :class:`Claim`, or its JSON object."""
ConsistencyInput: TypeAlias = wm.ConsistencyToken | str | None
"""A read's consistency token: ``None`` sends the client's own (every write it has
seen, :attr:`Client.consistency`); a token, or its text, sends that one instead; an
empty ``ConsistencyToken({})`` sends none."""


@dataclass(frozen=True, slots=True)
class Floors:
    """Which floors of a consistency token concern a read: those of ``subject`` (and of
    ``family`` too, for a family's views); ``subject=None``: a read across the tenant."""

    subject: str | None
    family: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Call(Generic[T]):
    """One request to the API and how to read its answer."""

    method: Literal["GET", "POST", "PUT", "DELETE"]
    path: str
    """Already quoted, from the API's root: ``/v1/memories/mem-1``."""
    read: Callable[[bytes], T]
    """Reads a successful answer's body (``b""`` for 204) into a wire model."""
    params: tuple[tuple[str, str], ...] = ()
    body: Json | None = None
    floors: Floors | None = None
    """``None``: no consistency token is sent (writes and administration)."""
    consistency: ConsistencyInput = None
    extra: Mapping[str, str] = field(default_factory=dict)
    """Headers of this call alone."""

    def describe(self) -> str:
        return f"{self.method} {self.path}"


Flow: TypeAlias = Generator["Call[Any]", Any, T]
"""Work of several requests, written once for both clients: it yields calls, is sent
their results, has their errors thrown into it, and returns its own result
(:meth:`Client.run` and :meth:`AsyncClient.run` drive it)."""


def doc_of(source: Callable[..., object]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Give a client method the docstring of the call it sends (written once, there)."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        method.__doc__ = source.__doc__
        return method

    return decorate


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def _reader(kind: type[T]) -> Callable[[bytes], T]:
    """How to read an answer as ``kind`` (one adapter per kind, built once)."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:  # a race builds it twice, harmlessly
        adapter = _ADAPTERS.setdefault(kind, TypeAdapter(kind))
    read: Callable[[bytes], T] = adapter.validate_json
    return read


def _nothing(_: bytes) -> None:
    return None


_RECEIPT: Callable[[bytes], wm.Receipt] = _reader(wm.Receipt)
_RECEIPTS: Callable[[bytes], list[wm.Receipt]] = _reader(list[wm.Receipt])
_RECORD: Callable[[bytes], wm.Record] = _reader(wm.Record)
_RECORDS: Callable[[bytes], list[wm.Record]] = _reader(list[wm.Record])


def _segment(text: str) -> str:
    """One path segment (an id without ``/``), quoted."""
    return quote(text, safe="")


def _path(text: str) -> str:
    """A path parameter that may hold ``/`` (subjects, event ids), quoted."""
    return quote(text, safe="/:@+")


def _subject(subject: str) -> str:
    return f"/v1/subjects/{_path(subject)}"


def _slot(subject: str, family: str, view: str) -> str:
    return f"{_subject(subject)}/families/{_segment(family)}/{view}"


def _when(value: datetime | None, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidQueryError(f"{name} must be a timezone-aware datetime, got {value!r}")
    return isoformat(value)


def _params(**given: str | bool | int | datetime | None) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    for name, value in given.items():
        if value is None or value is False:
            continue
        if isinstance(value, bool):
            found.append((name, "true"))
        elif isinstance(value, datetime):
            found.append((name, _when(value, name) or ""))
        else:
            found.append((name, str(value)))
    return tuple(found)


def encode(body: Json) -> bytes:
    """``body`` as the JSON the API reads; :class:`InvalidInputError` naming what is not
    JSON (the client never sends ``NaN`` or an object it would have to guess at)."""
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"the request body is not JSON: {exc}") from None


# -- events ---------------------------------------------------------------------------------


def _claim_json(claim: ClaimInput) -> object:
    if isinstance(claim, Claim):
        return claim_to_dict(claim)
    if isinstance(claim, Mapping):
        return dict(claim)
    raise InvalidEventError(f"a claim must be a Claim or a JSON object, got {type(claim).__name__}")


def event_body(
    event: EventInput, claims: Sequence[ClaimInput] | None = None, *, complete: bool = True
) -> dict[str, object]:
    """The JSON of one event with its claims (``None``: queue it for extraction)."""
    body: dict[str, object]
    if isinstance(event, SourceEvent):
        body = dict(event_to_dict(event))
    elif isinstance(event, Mapping):
        body = dict(event)
    else:
        raise InvalidEventError(
            f"an event must be a SourceEvent or a JSON object, got {type(event).__name__}"
        )
    if claims is not None:
        if body.get("claims") is not None:
            raise InvalidEventError(
                "the event's claims are given twice: in the event and as `claims`"
            )
        if isinstance(claims, str | bytes) or not isinstance(claims, Sequence):
            raise InvalidEventError("claims must be a sequence of claims")
        body["claims"] = [_claim_json(c) for c in claims]
    if not complete:
        body["complete"] = False
    return body


def ingest(
    event: EventInput, claims: Sequence[ClaimInput] | None = None, *, complete: bool = True
) -> Call[wm.Receipt]:
    """Append a source event to the ledger and commit its claims atomically (all or none);
    without claims it is queued for extraction (run :meth:`process`). The same event again
    returns its stored receipt (``duplicate``); the same id with other content is an
    :class:`~memledger.errors.EventConflictError`. The event's tenant and actor are the API
    key's. The receipt's revisions become part of the client's consistency token."""
    return Call(
        method="POST",
        path="/v1/events",
        read=_RECEIPT,
        body=event_body(event, claims, complete=complete),
    )


def ingest_batch(
    events: Iterable[EventInput | tuple[EventInput, Sequence[ClaimInput] | None]],
) -> Call[list[wm.Receipt]]:
    """Ingest several events, each as :meth:`ingest` does, in order; every one is checked
    before any is written, but the batch is not atomic across events (a failure names the
    failing event; those before it stay written, and sending the batch again is safe).
    An item is an event, or an ``(event, claims)`` pair."""
    bodies = [
        event_body(item[0], item[1]) if isinstance(item, tuple) else event_body(item)
        for item in events
    ]
    if not bodies:
        raise InvalidEventError("a batch needs at least one event")
    return Call(method="POST", path="/v1/events/batch", read=_RECEIPTS, body=bodies)


def event(event_id: str) -> Call[wm.EventStatus]:
    """A source event as the ledger holds it, its receipt (``None`` until processed) and
    its extraction job."""
    return Call(method="GET", path=f"/v1/events/{_path(event_id)}", read=_reader(wm.EventStatus))


def forget(event_id: str, *, reason: str = "forgotten") -> Call[wm.Forget]:
    """Stop using everything the event gave, in every subject and family; it stays in the
    ledger (this is not erasure), and no job, replay or re-extraction writes from it again."""
    return Call(
        method="POST",
        path=f"/v1/events/{_path(event_id)}/forget",
        read=_reader(wm.Forget),
        body={"reason": reason},
    )


def erase(
    *,
    event: str | None = None,
    memory_id: str | None = None,
    subject: str | None = None,
    reason: str = "erased",
) -> Call[wm.Erasure]:
    """Erase exactly one of an event, a memory (and the event it came from) or a subject,
    in every store; the receipt lists each store's status. Admin keys only."""
    body: dict[str, object] = {"reason": reason}
    for name, value in (("event", event), ("memory_id", memory_id), ("subject", subject)):
        if value is not None:
            body[name] = value
    return Call(method="POST", path="/v1/erasures", read=_reader(wm.Erasure), body=body)


def erasures() -> Call[list[wm.Erasure]]:
    """The tenant's erasure receipts, oldest first. Admin keys only."""
    return Call(method="GET", path="/v1/erasures", read=_reader(list[wm.Erasure]))


def undo(change_id: str, *, reason: str = "undone") -> Call[wm.Undo]:
    """Undo a revocation or forget (the ``change_id`` of its receipt), a rollback, or the
    correction an event made (its event id): what it closed comes back as new records,
    what it wrote is closed; history keeps both. Admin keys only."""
    return Call(
        method="POST",
        path="/v1/undo",
        read=_reader(wm.Undo),
        body={"change_id": change_id, "reason": reason},
    )


def restore(memory_id: str, *, reason: str = "restored") -> Call[wm.Undo]:
    """Undo the change that closed a memory (as :func:`undo`). Admin keys only."""
    return Call(
        method="POST",
        path=f"/v1/memories/{_segment(memory_id)}/restore",
        read=_reader(wm.Undo),
        body={"reason": reason},
    )


def change_log(*, limit: int = 100) -> Call[list[wm.ChangeOut]]:
    """The tenant's recorded changes, newest first. Admin keys only."""
    return Call(
        method="GET",
        path="/v1/change-log",
        read=_reader(list[wm.ChangeOut]),
        params=_params(limit=limit),
    )


def rollback(
    extractor: str,
    *,
    since: datetime | None = None,
    rederive: bool = False,
    reason: str = "rollback",
) -> Call[wm.Rollback]:
    """Roll back what extractor ``NAME@VERSION`` wrote (at or after ``since``) as one
    recorded change that :func:`undo` reverses; ``rederive`` extracts the same events
    again with the service's extractor. Admin keys only."""
    body: dict[str, object] = {"extractor": extractor, "reason": reason, "rederive": rederive}
    if since is not None:
        body["since"] = _when(since, "since")
    return Call(method="POST", path="/v1/rollbacks", read=_reader(wm.Rollback), body=body)


def compact(
    *,
    subject: str | None = None,
    older_than_days: float | None = None,
    before: datetime | None = None,
    min_turns: int = 2,
    max_tokens: int = 300,
    dry_run: bool = False,
    reason: str = "compacted",
) -> Call[wm.Compaction]:
    """Compact the old sessions (of one ``subject``, or every one) into session summary
    records, as one recorded change that :func:`undo` reverses. Admin keys only."""
    body: dict[str, object] = {
        "min_turns": min_turns,
        "max_tokens": max_tokens,
        "dry_run": dry_run,
        "reason": reason,
    }
    if subject is not None:
        body["subject"] = subject
    if older_than_days is not None:
        body["older_than_days"] = older_than_days
    if before is not None:
        body["before"] = _when(before, "before")
    return Call(method="POST", path="/v1/compactions", read=_reader(wm.Compaction), body=body)


def consolidate(
    *,
    subject: str | None = None,
    family: str | None = None,
    threshold: float | None = None,
    dry_run: bool = False,
    reason: str = "consolidated",
) -> Call[wm.Consolidation]:
    """Merge near-duplicate records of one family and subject (of one ``subject``, or
    every one) as one recorded change that :func:`undo` reverses. Admin keys only."""
    body: dict[str, object] = {"dry_run": dry_run, "reason": reason}
    for name, value in (("subject", subject), ("family", family), ("threshold", threshold)):
        if value is not None:
            body[name] = value
    return Call(method="POST", path="/v1/consolidations", read=_reader(wm.Consolidation), body=body)


def retention() -> Call[dict[str, int]]:
    """Days the tenant keeps records of each kind that has a retention. Admin keys only."""
    return Call(method="GET", path="/v1/retention", read=_reader(dict[str, int]))


def set_retention(kind: str, days: int | None) -> Call[dict[str, int]]:
    """Keep the tenant's records of ``kind`` ``days`` days (``None``: no retention); the
    tenant's retention per kind after it. Admin keys only."""
    return Call(
        method="PUT",
        path=f"/v1/retention/{_path(kind)}",
        read=_reader(dict[str, int]),
        body={"days": days},
    )


def process(*, max_jobs: int = 100) -> Call[wm.WorkReport]:
    """Run at most ``max_jobs`` queued extraction jobs of the key's tenant, on the server,
    with its extractor."""
    return Call(
        method="POST",
        path="/v1/process",
        read=_reader(wm.WorkReport),
        body={"max_jobs": max_jobs},
    )


def jobs(*, include_done: bool = False) -> Call[list[wm.Job]]:
    """Extraction jobs not done yet, oldest first (``include_done``: all of them)."""
    return Call(
        method="GET",
        path="/v1/jobs",
        read=_reader(list[wm.Job]),
        params=_params(all=include_done),
    )


# -- reads ----------------------------------------------------------------------------------


def recall(
    query: str,
    *,
    subject: str | None = None,
    k: int = 10,
    valid_at: datetime | None = None,
    consistency: ConsistencyInput = None,
) -> Call[wm.Recall]:
    """The ``k`` memories most useful for ``query`` (of ``subject``, or across the key's
    tenant); below the relevance floor it abstains rather than answer the nearest thing.
    Never below the client's consistency token (the floors of ``subject``, or all of them
    for a read across the tenant)."""
    body: dict[str, object] = {"query": query, "k": k}
    if subject is not None:
        body["subject"] = subject
    if valid_at is not None:
        body["valid_at"] = _when(valid_at, "valid_at")
    return Call(
        method="POST",
        path="/v1/recall",
        read=_reader(wm.Recall),
        body=body,
        floors=Floors(subject),
        consistency=consistency,
    )


def _live(item: LiveState | Mapping[str, object]) -> object:
    if isinstance(item, LiveState):
        return {
            "name": item.name,
            "value": dict(item.value),
            "observed_at": _when(item.observed_at, "observed_at"),
            "source": item.source,
        }
    return dict(item)


def _constraint(item: Constraint | Mapping[str, object]) -> object:
    if isinstance(item, Constraint):
        return {
            "id": item.id,
            "rule": item.rule,
            "effective_from": _when(item.effective_from, "effective_from"),
        }
    return dict(item)


def _material(item: Material | Mapping[str, object]) -> object:
    if isinstance(item, Material):
        return {"name": item.name, "text": item.text}
    return dict(item)


def context(
    request: str,
    *,
    subject: str | None = None,
    budget: int | Budget = 2000,
    live: Sequence[LiveState | Mapping[str, object]] = (),
    constraints: Sequence[Constraint | Mapping[str, object]] = (),
    material: Sequence[Material | Mapping[str, object]] = (),
    k: int = 20,
    valid_at: datetime | None = None,
    corpus: bool = True,
    consistency: ConsistencyInput = None,
) -> Call[wm.Packet]:
    """The context packet for ``request`` within ``budget`` tokens (a total, or a
    :class:`~memledger.domain.budget.Budget` with caps per section): constraints and live
    state first, memories and documents next, the request last; stored as a trace."""
    body: dict[str, object] = {
        "request": request,
        "budget": (
            {"total": budget.total, "sections": dict(budget.sections)}
            if isinstance(budget, Budget)
            else budget
        ),
        "live": [_live(i) for i in live],
        "constraints": [_constraint(i) for i in constraints],
        "material": [_material(i) for i in material],
        "k": k,
        "corpus": corpus,
    }
    if subject is not None:
        body["subject"] = subject
    if valid_at is not None:
        body["valid_at"] = _when(valid_at, "valid_at")
    return Call(
        method="POST",
        path="/v1/context",
        read=_reader(wm.Packet),
        body=body,
        floors=Floors(subject),
        consistency=consistency,
    )


def current(
    subject: str,
    family: str,
    *,
    valid_at: datetime | None = None,
    as_of: datetime | None = None,
    scope: str | None = None,
    include_revoked: bool = False,
    consistency: ConsistencyInput = None,
) -> Call[list[wm.Record]]:
    """The authorised values of a family, one per scope, meant to be true at ``valid_at``
    (default now) as memledger held them at ``as_of`` (default now). ``include_revoked``:
    an audit (admin keys)."""
    return Call(
        method="GET",
        path=_slot(subject, family, "current"),
        read=_RECORDS,
        params=_params(
            valid_at=valid_at, as_of=as_of, scope=scope, include_revoked=include_revoked
        ),
        floors=Floors(subject, family),
        consistency=consistency,
    )


def timeline(
    subject: str,
    family: str,
    *,
    as_of: datetime | None = None,
    scope: str | None = None,
    consistency: ConsistencyInput = None,
) -> Call[list[wm.Record]]:
    """Every authorised valid-time window of a family held at record time ``as_of``, in
    valid-time order."""
    return Call(
        method="GET",
        path=_slot(subject, family, "timeline"),
        read=_RECORDS,
        params=_params(as_of=as_of, scope=scope),
        floors=Floors(subject, family),
        consistency=consistency,
    )


def history(
    subject: str,
    family: str,
    *,
    include_revoked: bool = False,
    consistency: ConsistencyInput = None,
) -> Call[list[wm.Record]]:
    """Every record a family held, in record-time order: closed, superseded, historical
    and observed ones too; revoked ones only in an audit (``include_revoked``, admin keys)."""
    return Call(
        method="GET",
        path=_slot(subject, family, "history"),
        read=_RECORDS,
        params=_params(include_revoked=include_revoked),
        floors=Floors(subject, family),
        consistency=consistency,
    )


def changes(subject: str, family: str) -> Call[list[wm.HistoryEntry]]:
    """The append-only change log of a family: every record written, closed or revoked,
    and every review resolved (ids and actions, no values)."""
    return Call(
        method="GET",
        path=_slot(subject, family, "changes"),
        read=_reader(list[wm.HistoryEntry]),
    )


def records(
    subject: str, *, valid_at: datetime | None = None, consistency: ConsistencyInput = None
) -> Call[list[wm.Record]]:
    """The current records of every family of ``subject`` at ``valid_at``."""
    return Call(
        method="GET",
        path=f"{_subject(subject)}/records",
        read=_RECORDS,
        params=_params(valid_at=valid_at),
        floors=Floors(subject),
        consistency=consistency,
    )


def families(subject: str) -> Call[list[wm.FamilySlot]]:
    """The families ``subject`` has had a write in, with revision and generation."""
    return Call(
        method="GET",
        path=f"{_subject(subject)}/families",
        read=_reader(list[wm.FamilySlot]),
    )


def subjects(
    *, prefix: str | None = None, after: str | None = None, limit: int = 50
) -> Call[SubjectPage]:
    """One page of the tenant's subjects, in order; pass a page's ``next`` as ``after``
    for the next one."""
    return Call(
        method="GET",
        path="/v1/subjects",
        read=_reader(SubjectPage),
        params=_params(prefix=prefix or None, after=after, limit=limit),
    )


def get(memory_id: str) -> Call[wm.Record]:
    """One memory record, whatever its status."""
    return Call(method="GET", path=f"/v1/memories/{_segment(memory_id)}", read=_RECORD)


def revoke(memory_id: str, *, reason: str = "revoked") -> Call[wm.Revocation]:
    """Revoke a memory: the claims its source event made in its family stop being used, and
    no late job, retry or stale index entry brings them back. History keeps it, as revoked."""
    return Call(
        method="POST",
        path=f"/v1/memories/{_segment(memory_id)}/revoke",
        read=_reader(wm.Revocation),
        body={"reason": reason},
    )


# -- the review queue, keys, families ---------------------------------------------------------


def reviews(*, include_resolved: bool = False) -> Call[list[wm.Review]]:
    """Events whose batch waits for review (``include_resolved``: the decided ones too)."""
    return Call(
        method="GET",
        path="/v1/reviews",
        read=_reader(list[wm.Review]),
        params=_params(all=include_resolved),
    )


def _resolve(review_id: str, decision: str, reason: str) -> Call[wm.ReviewResolution]:
    return Call(
        method="POST",
        path=f"/v1/reviews/{_segment(review_id)}/{decision}",
        read=_reader(wm.ReviewResolution),
        body={"reason": reason},
    )


def accept(review_id: str, *, reason: str) -> Call[wm.ReviewResolution]:
    """Accept a held batch: it is committed as if the order rule had applied it, with the
    key's actor recorded as who decided and ``reason`` as why (admin keys)."""
    return _resolve(review_id, "accept", reason)


def reject(review_id: str, *, reason: str) -> Call[wm.ReviewResolution]:
    """Reject a held batch: nothing is committed; who and why are recorded (admin keys)."""
    return _resolve(review_id, "reject", reason)


def keys() -> Call[list[wm.Key]]:
    """The tenant's API keys, revoked ones included; never a token (admin keys)."""
    return Call(method="GET", path="/v1/keys", read=_reader(list[wm.Key]))


def create_key(
    actor: str,
    *,
    principal: PrincipalKind = "user",
    role: KeyRole = "write",
    grants: Iterable[Grant | str] = (),
    label: str = "",
    reads: Iterable[str] = (),
) -> Call[wm.KeyCreated]:
    """A new API key of the tenant for ``actor``; its token is in the answer this once
    (admin keys). ``reads``: other agents' private namespaces (``agent:<id>``) it reads."""
    return Call(
        method="POST",
        path="/v1/keys",
        read=_reader(wm.KeyCreated),
        body={
            "actor": actor,
            "principal": principal,
            "role": role,
            "grants": [str(g) for g in grants],
            "label": label,
            "reads": list(reads),
        },
    )


def revoke_key(key_id: str) -> Call[wm.Key]:
    """Revoke an API key: from now on it authenticates nothing (admin keys)."""
    return Call(method="POST", path=f"/v1/keys/{_segment(key_id)}/revoke", read=_reader(wm.Key))


def families_of() -> Call[list[wm.Family]]:
    """The claim families of the tenant: the built-in ones and those registered for it."""
    return Call(method="GET", path="/v1/families", read=_reader(list[wm.Family]))


def register_family(family: Family) -> Call[wm.Family]:
    """Register a claim family for the tenant (admin keys); the same definition again is a
    no-op, another definition of the name a :class:`~memledger.errors.ConflictError`."""
    if not isinstance(family, Family):
        raise InvalidInputError(f"expected a Family, got {type(family).__name__}")
    return Call(
        method="POST",
        path="/v1/families",
        read=_reader(wm.Family),
        body={
            "name": family.name,
            "kinds": sorted(family.kinds),
            "description": family.description,
            "own_say": family.own_say,
        },
    )


def me() -> Call[wm.WhoAmI]:
    """Who the API key acts as: its tenant, actor, role and grants."""
    return Call(method="GET", path="/v1/me", read=_reader(wm.WhoAmI))


def ready() -> Flow[bool]:
    """Whether the service answers reads (``/readyz``): ``False`` when it is not ready or
    cannot be reached."""
    try:
        yield Call(method="GET", path="/readyz", read=_nothing)
    except StoreError:
        return False
    return True


# -- traces and the shared corpus ---------------------------------------------------------------


def traces(*, subject: str | None = None, limit: int = 20) -> Call[list[wm.TraceSummary]]:
    """The most recent context traces, newest first."""
    return Call(
        method="GET",
        path="/v1/traces",
        read=_reader(list[wm.TraceSummary]),
        params=_params(subject=subject, limit=limit),
    )


def trace(trace_id: str) -> Call[wm.StoredTrace]:
    """A context trace as stored."""
    return Call(method="GET", path=f"/v1/traces/{_segment(trace_id)}", read=_reader(wm.StoredTrace))


def replay(trace_id: str) -> Call[wm.Replay]:
    """A stored packet rebuilt from the store, and whether it matches what was given."""
    return Call(
        method="POST", path=f"/v1/traces/{_segment(trace_id)}/replay", read=_reader(wm.Replay)
    )


def documents() -> Call[list[wm.Document]]:
    """The documents of the tenant's shared corpus."""
    return Call(method="GET", path="/v1/corpus/documents", read=_reader(list[wm.Document]))


def add_document(
    name: str,
    content: str,
    *,
    media_type: Literal["text/plain", "text/markdown", "text/html"] = "text/markdown",
) -> Call[wm.DocumentAdded]:
    """Add (or replace) a shared document given as text (admin keys)."""
    return Call(
        method="POST",
        path="/v1/corpus/documents",
        read=_reader(wm.DocumentAdded),
        body={"name": name, "content": content, "media_type": media_type},
    )


def remove_document(name: str) -> Call[None]:
    """Remove a shared document (admin keys)."""
    return Call(method="DELETE", path=f"/v1/corpus/documents/{_path(name)}", read=_nothing)


def search_corpus(query: str, *, k: int = 5, floor: float | None = None) -> Call[wm.SearchResult]:
    """The shared document chunks most relevant to ``query`` (none below ``floor``)."""
    body: dict[str, object] = {"query": query, "k": k}
    if floor is not None:
        body["floor"] = floor
    return Call(method="POST", path="/v1/corpus/search", read=_reader(wm.SearchResult), body=body)
