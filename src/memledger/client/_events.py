"""The routes of source events and their extraction, as calls: :func:`ingest` and
:func:`ingest_batch` (with :func:`event_body`, an event's JSON with its claims),
:func:`event` (an event's status), :func:`forget`, and the extraction work,
:func:`process` and :func:`jobs`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from memledger import wire_models as wm
from memledger.client._json import plain
from memledger.client._requests import (
    Call,
    ClaimInput,
    EventInput,
    get_call,
    path_param,
    post_call,
)
from memledger.domain.records import Claim, SourceEvent
from memledger.errors import InvalidEventError
from memledger.wire import claim_to_dict, event_to_dict

__all__ = ["event", "event_body", "forget", "ingest", "ingest_batch", "jobs", "process"]


def _claim_json(claim: ClaimInput) -> object:
    if isinstance(claim, Claim):
        return claim_to_dict(claim)
    if isinstance(claim, Mapping):
        return dict(claim)
    raise InvalidEventError(f"a claim must be a Claim or a JSON object, got {type(claim).__name__}")


def event_body(
    event: EventInput,
    claims: Sequence[ClaimInput] | None = None,
    *,
    complete: bool = True,
    what: str = "the event",
) -> object:
    """The JSON of one event with its claims (``None``: queue it for extraction); its
    datetimes, dates and UUIDs written as the API reads them, at any depth, and
    :class:`~memledger.errors.InvalidEventError` naming the place in ``what`` of a naive
    datetime or of anything else that is not JSON."""
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
    return plain(body, what=what, error=InvalidEventError)


def ingest(
    event: EventInput, claims: Sequence[ClaimInput] | None = None, *, complete: bool = True
) -> Call[wm.Receipt]:
    """Append a source event to the ledger and commit its claims atomically (all or none);
    without claims it is queued for extraction (run :meth:`process`). The same event again
    returns its stored receipt (``duplicate``); the same id with other content is an
    :class:`~memledger.errors.EventConflictError`. The event's tenant and actor are the API
    key's. The receipt's revisions become part of the client's consistency token."""
    return post_call("/v1/events", wm.Receipt, event_body(event, claims, complete=complete))


def ingest_batch(
    events: Iterable[EventInput | tuple[EventInput, Sequence[ClaimInput] | None]],
) -> Call[list[wm.Receipt]]:
    """Ingest several events, each as :meth:`ingest` does, in order; every one is checked
    before any is written, but the batch is not atomic across events (a failure names the
    failing event; those before it stay written, and sending the batch again is safe).
    An item is an event, or an ``(event, claims)`` pair."""
    bodies = [
        event_body(item[0], item[1], what=f"event #{n}")
        if isinstance(item, tuple)
        else event_body(item, what=f"event #{n}")
        for n, item in enumerate(events, 1)
    ]
    if not bodies:
        raise InvalidEventError("a batch needs at least one event")
    return post_call("/v1/events/batch", list[wm.Receipt], bodies)


def event(event_id: str) -> Call[wm.EventStatus]:
    """A source event as the ledger holds it, its receipt (``None`` until processed) and
    its extraction job."""
    return get_call(f"/v1/events/{path_param(event_id)}", wm.EventStatus)


def forget(event_id: str, *, reason: str = "forgotten") -> Call[wm.Forget]:
    """Stop using everything the event gave, in every subject and family; it stays in the
    ledger (this is not erasure), and no job, replay or re-extraction writes from it again."""
    return post_call(f"/v1/events/{path_param(event_id)}/forget", wm.Forget, {"reason": reason})


def process(*, max_jobs: int = 100) -> Call[wm.WorkReport]:
    """Run at most ``max_jobs`` queued extraction jobs of the key's tenant, on the server,
    with its extractor."""
    return post_call("/v1/process", wm.WorkReport, {"max_jobs": max_jobs})


def jobs(*, include_done: bool = False) -> Call[list[wm.Job]]:
    """Extraction jobs not done yet, oldest first (``include_done``: all of them)."""
    return get_call("/v1/jobs", list[wm.Job], all=include_done)
