"""What a request to the API is, and the pieces every route builds one from.

* :class:`Call`: one request (method, quoted path, query, JSON body, the consistency
  :class:`Floors` that concern it) and how to read its answer; :data:`Flow`: work of
  several calls, written once for both clients, which drive it as :class:`Running`.
* The inputs a route takes besides plain values: :data:`EventInput`,
  :data:`ClaimInput`, :data:`ConsistencyInput`.
* Building a call: :func:`get_call` and :func:`post_call` (a route's path, the wire
  model that answers it, its query or body); :func:`reader` (an answer's body to a
  wire model, one adapter per model), :func:`nothing` (an answer without one).
* Its parts: :func:`segment`, :func:`path_param` and :func:`subject_path` quote paths;
  :func:`when` checks and writes a datetime; :func:`params` writes a query and
  :func:`given` the optional fields of a body; :func:`encode` a body as JSON (datetimes,
  dates and UUIDs in it too).

Pure: no I/O, no clock, no client state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeAlias, TypeVar, cast
from urllib.parse import quote

from pydantic import TypeAdapter

from memledger import wire_models as wm
from memledger.client._json import plain
from memledger.domain.records import Claim, SourceEvent
from memledger.errors import InvalidQueryError, MemledgerError
from memledger.wire import isoformat

__all__ = [
    "Call",
    "ClaimInput",
    "ConsistencyInput",
    "EventInput",
    "Floors",
    "Flow",
    "Json",
    "Param",
    "Running",
    "encode",
    "get_call",
    "given",
    "nothing",
    "params",
    "path_param",
    "post_call",
    "reader",
    "segment",
    "subject_path",
    "when",
]

T = TypeVar("T")
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
Param: TypeAlias = str | bool | int | datetime | None
"""A query parameter's value: ``None`` and ``False`` leave it out."""


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


Flow: TypeAlias = Generator[Call[Any], Any, T]
"""Work of several requests, written once for both clients: it yields calls, is sent
their results, has their errors thrown into it, and returns its own result
(:meth:`Client.run` and :meth:`AsyncClient.run` drive it, as :class:`Running`)."""


class Running(Generic[T]):
    """A flow under way: :attr:`call` is the call it waits on, ``None`` once it has
    returned :attr:`result`. A client sends the call inside :meth:`answering`."""

    def __init__(self, flow: Flow[T]) -> None:
        self._flow = flow
        self._result: T | None = None
        self.call: Call[Any] | None = None
        self._resume(flow.send, None)

    @property
    def result(self) -> T:
        return cast(T, self._result)

    @contextmanager
    def answering(self) -> Iterator[Callable[[object], None]]:
        """Where the client sends :attr:`call` and passes its wire model to the callable
        given; on leaving, that is sent into the flow, or the library's error raised
        inside is thrown into it, and :attr:`call` is the flow's next call."""
        answers: list[object] = []
        try:
            yield answers.append
        except MemledgerError as exc:
            self._resume(self._flow.throw, exc)
        else:
            self._resume(self._flow.send, answers[0])

    def _resume(self, step: Callable[[Any], Call[Any]], value: object) -> None:
        try:
            self.call = step(value)
        except StopIteration as done:
            self.call, self._result = None, done.value


# -- reading answers --------------------------------------------------------------------------

_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def reader(kind: type[T]) -> Callable[[bytes], T]:
    """How to read an answer as ``kind`` (one adapter per kind, built once)."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:  # a race builds it twice, harmlessly
        adapter = _ADAPTERS.setdefault(kind, TypeAdapter(kind))
    read: Callable[[bytes], T] = adapter.validate_json
    return read


def nothing(_: bytes) -> None:
    """The reading of an answer that carries nothing to read (``204``, ``/readyz``)."""
    return None


def get_call(path: str, answer: type[T], /, **query: Param) -> Call[T]:
    """A ``GET`` of ``path`` answered by ``answer``, with the ``query`` parameters set."""
    return Call(method="GET", path=path, read=reader(answer), params=params(**query))


def post_call(path: str, answer: type[T], /, body: Json | None = None) -> Call[T]:
    """A ``POST`` of ``body`` (``None``: no body) to ``path``, answered by ``answer``."""
    return Call(method="POST", path=path, read=reader(answer), body=body)


# -- the parts of a request -------------------------------------------------------------------


def segment(text: str) -> str:
    """One path segment (an id without ``/``), quoted."""
    return quote(text, safe="")


def path_param(text: str) -> str:
    """A path parameter that may hold ``/`` (subjects, event ids), quoted."""
    return quote(text, safe="/:@+")


def subject_path(subject: str) -> str:
    return f"/v1/subjects/{path_param(subject)}"


def when(value: datetime | None, name: str) -> str | None:
    """``value`` as the API reads a time; :class:`InvalidQueryError` for a naive one."""
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidQueryError(f"{name} must be a timezone-aware datetime, got {value!r}")
    return isoformat(value)


def params(**given: Param) -> tuple[tuple[str, str], ...]:
    """A query: the parameters set (``True`` as ``true``), in the order given."""
    found: list[tuple[str, str]] = []
    for name, value in given.items():
        if value is None or value is False:
            continue
        if isinstance(value, bool):
            found.append((name, "true"))
        elif isinstance(value, datetime):
            found.append((name, when(value, name) or ""))
        else:
            found.append((name, str(value)))
    return tuple(found)


def given(**fields: object) -> dict[str, object]:
    """The optional fields of a body that are set (``None`` leaves one out)."""
    return {name: value for name, value in fields.items() if value is not None}


def encode(body: Json) -> bytes:
    """``body`` as the JSON the API reads: datetimes, dates and UUIDs written as the API
    reads them, at any depth (:func:`~memledger.client._json.plain`);
    :class:`InvalidInputError` naming the place of a naive datetime or of anything else
    that is not JSON (the client never sends ``NaN`` or an object it would have to guess
    at)."""
    return json.dumps(plain(body), ensure_ascii=False, allow_nan=False).encode()
