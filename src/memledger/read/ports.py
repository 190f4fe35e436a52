"""What the read path is handed by the facade: the ports it reads through and the
counters it keeps, never the facade itself.

:attr:`memledger.Memory.reading` builds one for every read; a program that keeps
its own store and index may build its own and call :func:`memledger.read.recall.recall`
or :func:`memledger.read.context.build` with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from memledger.domain.families import Schema
from memledger.freshness import ReadStats
from memledger.ports import Clock, Store, handed
from memledger.read.access import AccessLog

__all__ = ["HasReading", "ReadPorts", "read_ports"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPorts:
    """The canonical ``store`` every hit is rechecked against, the ``clock`` of record
    time, the ``accesses`` a read notes (what it returned, for decay) and the
    ``stats`` it counts (recalls, abstentions, lexical-only reads); ``schema_for(tenant,
    families)``, the schema a family named by a read is checked against (``None``: the
    built-in families)."""

    store: Store
    clock: Clock
    accesses: AccessLog
    stats: ReadStats
    schema_for: Callable[[str, Iterable[str]], Schema] | None = None

    def schema(self, tenant: str, families: Iterable[str] = ()) -> Schema:
        """The schema ``tenant`` reads ``families`` under."""
        if self.schema_for is None:
            return Schema.default()
        return self.schema_for(tenant, families)


class HasReading(Protocol):
    """An object that hands out its read ports (a ``Memory``)."""

    @property
    def reading(self) -> ReadPorts: ...


def read_ports(given: ReadPorts | HasReading) -> ReadPorts:
    """``given`` as the read path's ports. An object that has them as ``reading`` (a
    ``Memory``, as the hot tier's methods took before) still works, with a
    ``DeprecationWarning``; anything else is refused."""
    return handed(given, ReadPorts, "reading", "the read ports")
