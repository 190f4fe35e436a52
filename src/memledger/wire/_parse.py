"""Source events in: the strict input models (:class:`EventIn`, :class:`ClaimIn`,
:class:`ActorIn`), the parsers (:func:`parse_event_json`, :func:`parse_events_json`)
that turn JSON into a :class:`ParsedEvent`, and the translation of pydantic's errors
into one :class:`~memledger.errors.InvalidInputError` line naming the fields at fault."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError
from pydantic import JsonValue as WireValue
from pydantic_core import ErrorDetails

from memledger.domain.faults import listing, names, place, with_faults
from memledger.domain.records import (
    CHANNELS,
    KINDS,
    MAX_DEPTH,
    Actor,
    Channel,
    Claim,
    Grant,
    Kind,
    Role,
    SourceEvent,
    require_text,
)
from memledger.errors import (
    InvalidClaimError,
    InvalidEventError,
    InvalidInputError,
    InvalidIntervalError,
    UnknownKindError,
)

__all__ = [
    "ActorIn",
    "ClaimIn",
    "EventIn",
    "ParsedEvent",
    "parse_event_json",
    "parse_events_json",
    "required_fields",
]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


# -- input ------------------------------------------------------------------------------


class ActorIn(BaseModel):
    """Who produced the event. ``grants`` are ``"family"`` or ``"family:scope"``."""

    model_config = _STRICT

    id: str
    authenticated: bool = False
    grants: tuple[str, ...] = ()


class ClaimIn(BaseModel):
    """A candidate claim the caller proposes for the event."""

    model_config = _STRICT

    family: str
    kind: Kind
    statement: str
    value: WireValue
    scope: str = "global"
    subject: str | None = None
    valid_from: AwareDatetime | None = None
    valid_until: AwareDatetime | None = None
    grounding: str | None = None
    confidence: float = 0.65
    polarity: Literal["assert", "retract"] = "assert"
    """``"retract"``: the claim says its value stopped being true."""
    expires_at: AwareDatetime | None = None
    """When memledger stops holding the record (a TTL; after the event's time)."""

    def to_claim(self) -> Claim:
        return Claim(
            family=self.family,
            kind=self.kind,
            statement=self.statement,
            value=self.value,
            scope=self.scope,
            subject=self.subject,
            valid_from=self.valid_from,
            valid_until=self.valid_until,
            grounding=self.grounding,
            confidence=self.confidence,
            polarity=self.polarity,
            expires_at=self.expires_at,
        )


class EventIn(BaseModel):
    """One source event, optionally with its complete candidate batch."""

    model_config = _STRICT

    tenant: str | None = None
    event_id: str
    subject: str
    actor: ActorIn
    channel: Channel
    occurred_at: AwareDatetime
    text: str
    sequence: int | None = None
    stream: str | None = None
    metadata: dict[str, WireValue] = Field(default_factory=dict)
    role: Role | None = None
    claims: tuple[ClaimIn, ...] | None = None
    complete: bool = True


def required_fields(model: type[BaseModel]) -> list[str]:
    """The fields a JSON object of ``model`` must hold, in the model's order."""
    return [name for name, info in model.model_fields.items() if info.is_required()]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedEvent:
    """What ``Memory.ingest`` needs: the event, its claims (``None``: queue extraction)
    and whether the batch is complete."""

    event: SourceEvent
    claims: tuple[Claim, ...] | None
    complete: bool = True


def parse_event_json(text: str, *, tenant: str | None = None) -> ParsedEvent:
    """Parse one JSON event object.

    ``tenant`` is the caller's tenant: it fills an event without ``"tenant"``,
    and an event naming another tenant is rejected.
    """
    data = _load(text)
    if isinstance(data, list):
        raise InvalidEventError("expected one JSON event object, got a list")
    return _parse_one(data, tenant=tenant, fill=tenant, index=None)


def parse_events_json(
    text: str, *, tenant: str | None = None, default_tenant: str | None = None
) -> tuple[ParsedEvent, ...]:
    """Parse a JSON event object or a non-empty list of them, all before any is used.

    ``tenant`` is the caller's, as for :func:`parse_event_json`; with none,
    ``default_tenant`` fills an event without ``"tenant"`` (and refuses no other).
    Errors in a list name the event by position (``event #2``, counting from 1).
    """
    data = _load(text)
    fill = tenant or default_tenant
    if not isinstance(data, list):
        return (_parse_one(data, tenant=tenant, fill=fill, index=None),)
    if not data:
        raise InvalidEventError("the JSON list holds no events")
    return tuple(_parse_one(item, tenant=tenant, fill=fill, index=n) for n, item in enumerate(data))


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _load(text: str) -> object:
    if not text.strip():
        raise InvalidEventError(
            f"no input: expected a JSON event object (with {names(required_fields(EventIn))}) "
            "or a list of them"
        )
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidEventError(
            f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise InvalidEventError(
            f"malformed JSON: nested too deeply (an event nests at most {MAX_DEPTH} levels)"
        ) from None
    except ValueError as exc:
        raise InvalidEventError(f"malformed JSON: {exc}") from None


_ENVELOPE = 3
"""Levels above a claim's value: the event object, its claims list, the claim."""


def _check_shape(data: dict[str, object], name: str) -> None:
    """Refuse what the strict models would misreport: a string holding a lone
    surrogate (a ``"\\ud800"`` escape without its pair) and nesting deeper than
    :data:`MAX_DEPTH` (the models stop at their own recursion limit). Iterative."""
    stack: list[tuple[object, int, tuple[str | int, ...]]] = [(data, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        claim = bool(path) and path[0] == "claims"
        error = InvalidClaimError if claim else InvalidEventError
        field = _where(path[:3] if claim else path[:1])
        if depth > MAX_DEPTH + _ENVELOPE:
            raise error(f"{name}: {field} nests more than {MAX_DEPTH} levels deep")
        if isinstance(item, str):
            require_text(item, f"{name}: {_where(path)}", error)
        elif isinstance(item, dict):
            for key, inner in item.items():
                require_text(key, f"{name}: a key of {_where(path)}", error)
                stack.append((inner, depth + 1, (*path, key)))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1, (*path, n)) for n, inner in enumerate(item))


def _parse_one(
    data: object, *, tenant: str | None, fill: str | None, index: int | None
) -> ParsedEvent:
    """One event; ``index``: its place in a list (named ``event #<index + 1>``); ``fill``:
    the tenant of an event that names none."""
    name = "event" if index is None else f"event #{index + 1}"
    if isinstance(data, dict) and isinstance(data.get("event_id"), str):
        name = f"{name} {data['event_id']!r}"
    if not isinstance(data, dict):
        raise InvalidEventError(f"{name}: expected a JSON object, got {_json_type(data)}")
    if name == "event":
        name = "invalid event"
    _check_shape(data, name)
    try:
        model = EventIn.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        raise _translate(exc, name, () if index is None else (index,)) from None
    try:
        return _convert(model, tenant, fill)
    except InvalidInputError as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _convert(model: EventIn, tenant: str | None, fill: str | None) -> ParsedEvent:
    event = SourceEvent(
        tenant=_resolve_tenant(model.tenant, tenant, fill),
        event_id=model.event_id,
        subject=model.subject,
        actor=Actor(
            id=model.actor.id,
            authenticated=model.actor.authenticated,
            grants=frozenset(Grant.parse(g) for g in model.actor.grants),
        ),
        channel=model.channel,
        occurred_at=model.occurred_at,
        text=model.text,
        sequence=model.sequence,
        stream=model.stream,
        metadata=model.metadata,
        role=model.role,
    )
    if model.claims is None:
        return ParsedEvent(event=event, claims=None, complete=model.complete)
    claims: list[Claim] = []
    for index, claim in enumerate(model.claims):
        try:
            claims.append(claim.to_claim())
        except InvalidInputError as exc:
            raise type(exc)(f"claims[{index}]: {exc}") from None
    return ParsedEvent(event=event, claims=tuple(claims), complete=model.complete)


def _resolve_tenant(given: str | None, caller: str | None, fill: str | None) -> str:
    """The event's tenant: the one it names, which must be the ``caller``'s when there is
    one; else ``fill``."""
    if given is None:
        if fill is None:
            raise InvalidEventError(
                'names no "tenant"; add it to the event or give a default tenant '
                "(CLI: --tenant or MEMLEDGER_TENANT)"
            )
        return fill
    if caller is not None and given != caller:
        raise InvalidEventError(f"names tenant {given!r} but the caller acts for tenant {caller!r}")
    return given


# -- translating pydantic errors --------------------------------------------------------


def _translate(exc: ValidationError, name: str, at: tuple[int, ...]) -> InvalidInputError:
    """One error naming every problem of ``exc`` (the first ten, with the count) and
    holding each as a fault placed at ``at`` (an event's index in a batch)."""
    errors = exc.errors(include_url=False)
    told = [(tuple(e["loc"]), _problem(e)) for e in errors]
    message = listing([f"{place(loc, empty='the event')}{text}" for loc, text in told])
    faults = [((*at, *loc), text.removeprefix(":").strip()) for loc, text in told]
    return with_faults(_error_class(errors)(f"{name}: {message}"), faults)


def _error_class(errors: Sequence[ErrorDetails]) -> type[InvalidInputError]:
    if not all(len(e["loc"]) >= 2 and e["loc"][0] == "claims" for e in errors):
        return InvalidEventError
    if all(e["type"] == "literal_error" and e["loc"][-1] == "kind" for e in errors):
        return UnknownKindError
    if all(e["type"] == "timezone_aware" for e in errors):
        return InvalidIntervalError
    return InvalidClaimError


def _where(loc: tuple[int | str, ...]) -> str:
    return place(loc, empty="the event")


def _problem(error: ErrorDetails) -> str:
    """What is wrong, as it follows the place in a message (``" is required"``,
    ``": unknown kind 'x'; ..."``)."""
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return " is required"
    if kind == "extra_forbidden":
        return " is not a known field"
    if kind == "timezone_aware":
        return f" {value!r} has no time zone; add 'Z' or an offset such as '+02:00'"
    if kind == "literal_error" and error["loc"][-1] == "kind":
        return f": unknown kind {value!r}; expected one of {sorted(KINDS)}"
    if kind == "literal_error" and error["loc"][-1] == "channel":
        return f": unknown channel {value!r}; expected one of {sorted(CHANNELS)}"
    message = error["msg"][:1].lower() + error["msg"][1:]
    if isinstance(value, dict | list):
        return f": {message}, got a JSON {_json_type(value)}"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f": {message}, got {shown}"


def _json_type(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"
