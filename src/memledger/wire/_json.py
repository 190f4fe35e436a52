"""What every output helper of :mod:`memledger.wire` shares: the :data:`JsonObject` it
builds, times as the wire writes them (:func:`isoformat`, :func:`iso_or_none`), grants
as sorted strings (:func:`grant_strings`), a field's value as the wire writes it
(:func:`plain`) and :class:`Fields`, a type's JSON object declared by its keys in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Generic, TypeAlias, TypeVar, cast

from memledger.domain.records import Grant, JsonValue

__all__ = ["Fields", "JsonObject", "grant_strings", "iso_or_none", "isoformat", "plain"]

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object as the output helpers build it."""

T = TypeVar("T")


def isoformat(value: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``: ``2026-10-02T09:00:00Z``."""
    return value.astimezone(UTC).isoformat().removesuffix("+00:00") + "Z"


def iso_or_none(value: datetime | None) -> str | None:
    """:func:`isoformat`, and ``None`` for no time."""
    return None if value is None else isoformat(value)


def grant_strings(grants: Iterable[Grant]) -> list[JsonValue]:
    """Grants as their text (``"family"``, ``"family:scope"``), sorted."""
    return [str(g) for g in sorted(grants, key=str)]


_AS_IS = frozenset({str, int, float, bool, type(None)})


def plain(value: object) -> JsonValue:
    """A field's value as the wire writes it: a time as :func:`isoformat`, a tuple or
    list as a new list of the same items, a mapping as a new dict; text, numbers,
    booleans, ``None`` and JSON values as they are."""
    if type(value) in _AS_IS:
        return cast(JsonValue, value)
    if isinstance(value, datetime):
        return isoformat(value)
    if isinstance(value, tuple | list):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return cast(JsonValue, value)


class Fields(Generic[T]):
    """The JSON object of a ``T``: ``names`` are its keys in order (space-separated,
    in one or more strings); each key's value is the attribute of that name, as
    :func:`plain` writes it, unless ``computed`` gives a function of the whole ``T``
    for that key (a nested object, a renamed or derived field)::

        Fields("id authenticated grants", grants=lambda a: grant_strings(a.grants))
    """

    __slots__ = ("_getters", "keys")

    def __init__(self, *names: str, **computed: Callable[[T], JsonValue]) -> None:
        self.keys: tuple[str, ...] = tuple(" ".join(names).split())
        if len(set(self.keys)) != len(self.keys) or not computed.keys() <= set(self.keys):
            raise ValueError(
                f"a key repeats in {self.keys}, or one of {sorted(computed)} is not there"
            )
        self._getters = tuple((key, computed.get(key)) for key in self.keys)

    def __call__(self, item: T) -> JsonObject:
        return {
            key: plain(getattr(item, key)) if get is None else get(item)
            for key, get in self._getters
        }

    def each(self, items: Iterable[T]) -> list[JsonValue]:
        """Every item's object, in order."""
        return [self(item) for item in items]

    def maybe(self, item: T | None) -> JsonObject | None:
        """The item's object, and ``None`` for no item."""
        return None if item is None else self(item)
