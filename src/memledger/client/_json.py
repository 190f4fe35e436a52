"""A body as the client sends it: :func:`plain` turns what a caller gives (dicts,
lists, datetimes ...) into JSON data, at any depth, or says where it cannot.

* an aware :class:`~datetime.datetime` is ISO 8601 in UTC with a ``Z``, as the API writes
  one (:func:`memledger.wire.isoformat`); a naive one is refused: which time zone it
  means is the caller's to say, as for the client's own parameters;
* a :class:`~datetime.date` is ``YYYY-MM-DD``; a :class:`~uuid.UUID` its text;
* a mapping is an object (its keys strings, numbers, booleans or ``null`` as JSON takes
  them, or any of the values above); a list or tuple is a list;
* a string must be text (no lone surrogate), a float finite.

Anything else is an error of the class given (:class:`~memledger.errors.InvalidInputError`
unless said), naming its place: ``metadata.when``, ``claims[0].value``. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime
from uuid import UUID

from memledger.domain.faults import place
from memledger.errors import InvalidInputError
from memledger.wire import isoformat

__all__ = ["plain"]

_Loc = tuple[str | int, ...]


def plain(
    value: object,
    *,
    what: str = "the request body",
    error: type[InvalidInputError] = InvalidInputError,
) -> object:
    """``value`` as JSON data (dicts, lists, strings, numbers, booleans, ``None``)."""
    try:
        return _Walk(what, error).value(value, ())
    except RecursionError:
        raise error(f"{what} nests too deeply to send") from None


class _Walk:
    def __init__(self, what: str, error: type[InvalidInputError]) -> None:
        self.what = what
        self.error = error
        self.open: set[int] = set()  # the containers on the way down: a cycle is refused

    def refuse(self, loc: _Loc, problem: str) -> InvalidInputError:
        where = f"{self.what}'s {place(loc)}" if loc else self.what
        return self.error(f"{where} {problem}")

    def value(self, value: object, loc: _Loc) -> object:
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, str):
            return self.text(value, loc)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.refuse(loc, f"is {value!r}, which JSON cannot hold")
            return value
        if isinstance(value, datetime | date | UUID):
            return self.scalar(value, loc)
        if isinstance(value, Mapping | list | tuple):
            return self.container(value, loc)
        raise self.refuse(
            loc, f"is of type {type(value).__name__}, not JSON data (nor a datetime, date or UUID)"
        )

    def container(
        self, value: Mapping[object, object] | list[object] | tuple[object, ...], loc: _Loc
    ) -> object:
        if id(value) in self.open:
            raise self.refuse(loc, "holds itself")
        self.open.add(id(value))
        try:
            if isinstance(value, Mapping):
                return {self.key(k, loc): self.value(v, (*loc, str(k))) for k, v in value.items()}
            return [self.value(item, (*loc, n)) for n, item in enumerate(value)]
        finally:
            self.open.discard(id(value))

    def key(self, key: object, loc: _Loc) -> object:
        if key is None or isinstance(key, str | bool | int | float):
            return self.text(key, loc) if isinstance(key, str) else key
        if isinstance(key, datetime | date | UUID):
            return self.scalar(key, loc)
        raise self.refuse(loc, f"has a key of type {type(key).__name__}, which JSON cannot hold")

    def scalar(self, value: datetime | date | UUID, loc: _Loc) -> str:
        if isinstance(value, UUID):
            return str(value)
        if not isinstance(value, datetime):
            return value.isoformat()
        if value.tzinfo is None or value.utcoffset() is None:
            raise self.refuse(
                loc, f"is a naive datetime, {value!r}: give it a time zone (tzinfo=UTC)"
            )
        return isoformat(value)

    def text(self, value: str, loc: _Loc) -> str:
        try:
            value.encode()
        except UnicodeEncodeError:
            raise self.refuse(loc, "is not text: it holds a lone surrogate") from None
        return value
