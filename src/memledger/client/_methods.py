"""Every call of :mod:`memledger.client._calls` as a method of both clients, declared once.

* :class:`Methods` lists them: ``ingest = sends(calls.ingest)`` for a call,
  ``ready = runs(calls.ready)`` for a :data:`~memledger.client._requests.Flow` of
  several. Each line is a :class:`Route`.
* The first class below it with a ``send`` gets every route as a plain function of
  its own (:meth:`Route.method`), which its subclasses inherit: ``def`` when its
  ``send`` is, ``async def`` when its ``send`` is a coroutine function, with the
  call's parameters, defaults and docstring (``help`` and :func:`inspect.signature`
  show them) and the call's answer as its return annotation. It sends the call with
  ``self.send`` (a flow with ``self.run``).
* For a type checker a route is a descriptor (:meth:`Route.__get__`): on a client whose
  ``send`` answers ``T`` (:class:`Sending`) the method takes the call's parameters and
  answers ``T``; on one whose ``send`` answers a coroutine (:class:`Awaiting`) it
  answers ``Coroutine[Any, Any, T]``. So ``client.ingest(...)`` is checked against
  :func:`memledger.client._events.ingest` on both clients.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, Literal, ParamSpec, Protocol, TypeVar, overload

from memledger.client import _calls as calls
from memledger.client._requests import Call, Flow

__all__ = ["Awaiting", "Methods", "Route", "Sending", "runs", "sends"]

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S")


class Sending(Protocol):
    """A client that answers a call as it sends it: :class:`~memledger.client.Client`."""

    def send(self, call: Call[S], /) -> S: ...


class Awaiting(Protocol):
    """A client whose sending is awaited: :class:`~memledger.client.AsyncClient`."""

    def send(self, call: Call[S], /) -> Coroutine[Any, Any, S]: ...


SendingT = TypeVar("SendingT", bound=Sending)
AwaitingT = TypeVar("AwaitingT", bound=Awaiting)

_SELF = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
_ANSWER = re.compile(r"(?:Call|Flow)\[(?P<answer>.+)\]")


@dataclass(frozen=True, slots=True)
class Route(Generic[P, T]):
    """A call (or a flow) of :mod:`memledger.client._calls` as a method of the clients."""

    make: Callable[P, Call[T] | Flow[T]]
    """Builds the call (or the flow) from the method's arguments."""
    via: Literal["send", "run"]
    """The client's method that carries it out: ``send`` a call, ``run`` a flow."""

    @overload
    def __get__(
        self, client: None, owner: type[SendingT]
    ) -> Callable[Concatenate[SendingT, P], T]: ...
    @overload
    def __get__(
        self, client: None, owner: type[AwaitingT]
    ) -> Callable[Concatenate[AwaitingT, P], Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, client: Sending, owner: type[object]) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, client: Awaiting, owner: type[object]
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, client: object, owner: type[object]) -> object:
        # A client class holds the method made from the route (Methods.__init_subclass__),
        # so only the classes without a ``send`` reach the route itself.
        return self

    def method(self, owner: type[object], name: str, *, awaited: bool) -> Callable[..., Any]:
        """The method ``name`` of ``owner``: a coroutine function when ``awaited``."""
        make = self.make
        method = _awaiting(make, self.via) if awaited else _sending(make, self.via)
        functools.update_wrapper(method, make)
        method.__module__ = owner.__module__
        method.__name__ = name
        method.__qualname__ = f"{owner.__qualname__}.{name}"
        signature = inspect.signature(make)
        answer = _answer(signature.return_annotation, make)
        method.__annotations__ = {**make.__annotations__, "return": answer}
        method.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[_SELF, *signature.parameters.values()], return_annotation=answer
        )
        return method


def _sending(make: Callable[..., object], via: str) -> Callable[..., Any]:
    def method(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, via)(make(*args, **kwargs))

    return method


def _awaiting(make: Callable[..., object], via: str) -> Callable[..., Any]:
    async def method(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return await getattr(self, via)(make(*args, **kwargs))

    return method


def _answer(annotation: object, make: Callable[..., object]) -> str:
    """``T`` of a call's ``Call[T]`` or a flow's ``Flow[T]``, as the source writes it."""
    found = _ANSWER.fullmatch(annotation) if isinstance(annotation, str) else None
    if found is None:
        raise TypeError(f"{make.__qualname__} must answer Call[...] or Flow[...]")
    return found["answer"]


def sends(call: Callable[P, Call[T]]) -> Route[P, T]:
    """The method that builds ``call``'s request from its arguments and sends it."""
    return Route(call, "send")


def runs(flow: Callable[P, Flow[T]]) -> Route[P, T]:
    """The method that starts ``flow`` with its arguments and runs it to its result."""
    return Route(flow, "run")


class Methods:
    """The methods both clients have, one line each: every call of the API."""

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        send = getattr(cls, "send", None)
        if send is None:
            return
        awaited = inspect.iscoroutinefunction(send)
        for name, route in vars(Methods).items():
            if isinstance(route, Route) and inspect.getattr_static(cls, name) is route:
                setattr(cls, name, route.method(cls, name, awaited=awaited))

    # -- the short path --------------------------------------------------------------------------

    add = sends(calls.add)
    search = sends(calls.search)
    get_all = sends(calls.get_all)
    delete = sends(calls.delete)

    # -- events ----------------------------------------------------------------------------------

    ingest = sends(calls.ingest)
    ingest_batch = sends(calls.ingest_batch)
    event = sends(calls.event)
    forget = sends(calls.forget)
    erase = sends(calls.erase)
    erasures = sends(calls.erasures)
    undo = sends(calls.undo)
    restore = sends(calls.restore)
    change_log = sends(calls.change_log)
    rollback = sends(calls.rollback)
    compact = sends(calls.compact)
    consolidate = sends(calls.consolidate)
    retention = sends(calls.retention)
    set_retention = sends(calls.set_retention)
    process = sends(calls.process)
    jobs = sends(calls.jobs)

    # -- reads -----------------------------------------------------------------------------------

    recall = sends(calls.recall)
    context = sends(calls.context)
    current = sends(calls.current)
    timeline = sends(calls.timeline)
    history = sends(calls.history)
    changes = sends(calls.changes)
    records = sends(calls.records)
    families = sends(calls.families)
    subjects = sends(calls.subjects)
    get = sends(calls.get)
    revoke = sends(calls.revoke)

    # -- the review queue, keys, families --------------------------------------------------------

    reviews = sends(calls.reviews)
    accept = sends(calls.accept)
    reject = sends(calls.reject)
    keys = sends(calls.keys)
    create_key = sends(calls.create_key)
    revoke_key = sends(calls.revoke_key)
    families_of = sends(calls.families_of)
    register_family = sends(calls.register_family)
    me = sends(calls.me)
    ready = runs(calls.ready)

    # -- traces and the shared corpus ------------------------------------------------------------

    traces = sends(calls.traces)
    trace = sends(calls.trace)
    replay = sends(calls.replay)
    documents = sends(calls.documents)
    add_document = sends(calls.add_document)
    remove_document = sends(calls.remove_document)
    search_corpus = sends(calls.search_corpus)
