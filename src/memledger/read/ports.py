"""What the read path is handed by the facade: the ports it reads through and the
counters it keeps, never the facade itself.

:attr:`memledger.Memory.reading` builds one for every read; a program that keeps
its own store and index may build its own and call :func:`memledger.read.recall.recall`
or :func:`memledger.read.context.build` with it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Protocol

from memledger.errors import InvalidInputError
from memledger.freshness import ReadStats
from memledger.ports import Clock, Store
from memledger.read.access import AccessLog

__all__ = ["HasReading", "ReadPorts", "read_ports"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPorts:
    """The canonical ``store`` every hit is rechecked against, the ``clock`` of record
    time, the ``accesses`` a read notes (what it returned, for decay) and the
    ``stats`` it counts (recalls, abstentions, lexical-only reads)."""

    store: Store
    clock: Clock
    accesses: AccessLog
    stats: ReadStats


class HasReading(Protocol):
    """An object that hands out its read ports (a ``Memory``)."""

    @property
    def reading(self) -> ReadPorts: ...


def read_ports(given: ReadPorts | HasReading) -> ReadPorts:
    """``given`` as the read path's ports. An object that has them as ``reading`` (a
    ``Memory``, as the hot tier's methods took before) still works, with a
    ``DeprecationWarning``; anything else is refused."""
    if isinstance(given, ReadPorts):
        return given
    reading = getattr(given, "reading", None)
    if isinstance(reading, ReadPorts):
        warnings.warn(
            "passing the Memory is deprecated: pass memory.reading",
            DeprecationWarning,
            stacklevel=3,
        )
        return reading
    raise InvalidInputError(
        f"expected the read ports (memory.reading), got a {type(given).__name__}"
    )
