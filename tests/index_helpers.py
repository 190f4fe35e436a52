"""Reading a derived index's own tables in a test, on either backend: ``entries``."""

from __future__ import annotations

from typing import Any

from memledger.index.derived import DerivedIndex
from memledger.index.postgres import PostgresIndex


def entries(
    index: DerivedIndex | PostgresIndex, columns: str, where: str, params: tuple[object, ...]
) -> list[Any]:
    """The rows of ``SELECT columns FROM entries WHERE where`` in ``index``'s entries
    table: its file's for SQLite, its schema's for PostgreSQL (``where`` writes each
    parameter as ``?``)."""
    if isinstance(index, PostgresIndex):
        sql = f"SELECT {columns} FROM {index.ns}.entries WHERE {where.replace('?', '%s')}"
        with index._connection() as conn:
            return conn.execute(sql, params).fetchall()
    return index._conn.execute(f"SELECT {columns} FROM entries WHERE {where}", params).fetchall()
