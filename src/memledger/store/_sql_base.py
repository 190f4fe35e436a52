"""What every part of a SQL unit of work builds on: the connection, writes that pass
the failpoint, nested transactions and lookups in chunks.

:class:`SqlBase` holds one transaction's connection and its primitives (``_write``,
``_one``, ``savepoint``) and the two facts a backend states about itself: the errors
a broken unique key raises (``_integrity_errors``) and the column that orders a
table's rows by arrival (``_arrival``). :func:`_chunks` cuts a list of ids into
``IN (...)`` lists the drivers accept. The concerns of the unit
(:class:`memledger.store._sql_unit.SqlUnit` names them) are mixins on this base.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memledger.store import Failpoint


def _chunks(
    ids: Iterable[str], *, size: int = 400, ordered: bool = False
) -> Iterator[tuple[list[str], str]]:
    """``ids`` each once, in chunks of at most ``size`` (under SQLite's bound of
    parameters) with each chunk's ``(?, ?, ...)``: sorted, or (``ordered=True``) in
    the order first given."""
    wanted = list(dict.fromkeys(ids)) if ordered else sorted(set(ids))
    for start in range(0, len(wanted), size):
        chunk = wanted[start : start + size]
        yield chunk, f"({', '.join('?' * len(chunk))})"


class SqlBase:
    """One transaction on one connection: the primitives the unit's concerns share.

    ``conn`` runs SQLite-dialect SQL (``execute(sql, params)`` returning a cursor).
    Subclasses name the errors a broken unique key raises and the column that orders
    rows of one table by arrival."""

    _integrity_errors: tuple[type[Exception], ...] = ()
    _arrival = "rowid"
    """A column that grows with every insert, to order rows written in the same instant."""

    def __init__(self, conn: Any, failpoint: Failpoint | None) -> None:
        self.conn = conn
        self._failpoint = failpoint
        self._depth = 0

    def _write(self, step: str, sql: str, params: Sequence[Any]) -> Any:
        if self._failpoint is not None:
            self._failpoint(step)
        return self.conn.execute(sql, params)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested transaction: rolled back alone if its block raises."""
        self._depth += 1
        name = f"sp{self._depth}"
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.conn.execute(f"ROLLBACK TO {name}")
            self.conn.execute(f"RELEASE {name}")
            raise
        else:
            self.conn.execute(f"RELEASE {name}")
        finally:
            self._depth -= 1

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        return self.conn.execute(sql, params).fetchone()
