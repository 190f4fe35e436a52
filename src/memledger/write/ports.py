"""What the write path's worker is handed by the facade: the ports it writes through
and the few services of the facade it calls back, never the facade itself.

:attr:`memledger.Memory.writing` builds one; :class:`~memledger.write.worker.Worker`
takes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from memledger.domain.families import Schema
from memledger.domain.limits import Limits
from memledger.domain.policy import WritePolicy
from memledger.domain.quotas import Quotas
from memledger.ports import Clock, Store, handed

if TYPE_CHECKING:
    from memledger.index.catchup import Syncs
    from memledger.write.erase import ErasureReceipt

__all__ = ["HasWriting", "WritePorts", "write_ports"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WritePorts:
    """The canonical ``store`` and the ``clock`` of record time; the write ``policy``
    and input ``limits``; ``schema_for(tenant, families)``, the schema a tenant writes
    under; ``index()``, the derived index (opened on first use) the worker keeps
    caught up; ``expire(tenant)``, the erasure of what expired; ``quotas(tenant)``,
    the tenant's quotas a new event is held to (``None``: no quotas); the derived
    stores' parts of an erasure: ``purge_index(tenant)``, the index applying the
    deletions and purging what they leave, and ``invalidate(tenant, subject)``, the hot
    cache dropping a subject's values (``None``: the store has neither)."""

    store: Store
    clock: Clock
    policy: WritePolicy
    limits: Limits
    schema_for: Callable[[str, Iterable[str]], Schema]
    index: Callable[[], Syncs]
    expire: Callable[[str | None], Sequence[ErasureReceipt]]
    quotas: Callable[[str], Quotas] | None = None
    purge_index: Callable[[str], Literal["erased", "nothing_held"]] | None = None
    invalidate: Callable[[str, str], None] | None = None


class HasWriting(Protocol):
    """An object that hands out its write ports (a ``Memory``)."""

    @property
    def writing(self) -> WritePorts: ...


def write_ports(given: WritePorts | HasWriting) -> WritePorts:
    """``given`` as the write path's ports. An object that has them as ``writing`` (a
    ``Memory``, as the worker took before) still works, with a ``DeprecationWarning``;
    anything else is refused."""
    return handed(given, WritePorts, "writing", "the write ports")
