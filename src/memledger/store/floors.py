"""Revision floors a read must see: what routes a read to a replica or to the primary.

A store with read replicas (:class:`~memledger.store.postgres.PostgresStore`) serves
a read from a replica only if that replica holds every floor in force, a revision
of a (tenant, subject, family) the caller's consistency token names. Floors are put
in force around a read with :func:`at_least` (the read path does it for
``min_revision``, the HTTP API for a ``Memledger-Consistency`` token), in a context
variable: they follow the read on its thread (and task) and nowhere else. A store
without replicas has nothing to choose and needs none of it: the read path still
checks each floor against what the read sees (:func:`memledger.read.views.check_floor`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType

FamilyKey = tuple[str, str, str]
"""``(tenant, subject, family)``."""

_NONE: Mapping[FamilyKey, int] = MappingProxyType({})
_FLOORS: ContextVar[Mapping[FamilyKey, int]] = ContextVar("memledger_read_floors", default=_NONE)


def in_force() -> Mapping[FamilyKey, int]:
    """The floors reads in this context must see (empty: none)."""
    return _FLOORS.get()


def merged(floors: Mapping[FamilyKey, int]) -> dict[FamilyKey, int]:
    """The floors in force with ``floors`` added, the higher revision of each family."""
    found = dict(_FLOORS.get())
    for key, revision in floors.items():
        found[key] = max(revision, found.get(key, 0))
    return found


@contextmanager
def at_least(floors: Mapping[FamilyKey, int]) -> Iterator[None]:
    """Reads inside the block see at least ``floors`` (added to those in force)."""
    token = _FLOORS.set(merged(floors))
    try:
        yield
    finally:
        _FLOORS.reset(token)


def require(floors: Mapping[FamilyKey, int]) -> None:
    """Put ``floors`` in force for the rest of the current context (a request handler's:
    each request runs in a context of its own)."""
    _FLOORS.set(merged(floors))
