"""Copy a SQLite store into an empty PostgreSQL store: the move from the embedded default
to a server (``memledger copy-store``).

Every canonical table is copied row for row from one read snapshot of the SQLite
file, in one PostgreSQL transaction (``COPY``), sequence numbers included (the
outbox's and history's: an index fed from the copy sees the same sequence), and
the target's identity sequences then continue after them. Nothing is derived or
re-decided: events, outcomes, records, history, jobs, keys and traces arrive as
they were. The target must be at the same schema (the latest of this memledger
on both sides) and hold no rows; on any error the transaction is rolled back and
the target stays empty. The derived index is not copied: open one on the target
(:func:`~memledger.index.backends.open_index`) and it is fed from the copied outbox.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memledger.errors import InvalidInputError, StoreError
from memledger.ports import Store

__all__ = ["copy_store"]

SKIPPED = frozenset({"schema_migrations", "sqlite_sequence"})
"""Tables of the SQLite file that are not data: each side keeps its own migrations."""
IDENTITIES = {"history": "seq", "outbox": "seq", "gate_decisions": "arrival"}
"""Columns PostgreSQL numbers itself: copied as they are, then their sequence moved past."""

Progress = Callable[[str, int], None]
"""Called as ``progress(table, rows_copied_so_far)``."""


def copy_store(source: Store, target: Store, *, progress: Progress | None = None) -> dict[str, int]:
    """Copy every row of the SQLite store ``source`` into the empty PostgreSQL store
    ``target``; the rows copied per table. Raises
    :class:`~memledger.errors.InvalidInputError` (nothing written) when the stores are
    not SQLite and PostgreSQL, are at different schemas, or the target holds rows."""
    from memledger.store.sqlite import SQLiteStore, load_migrations

    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise InvalidInputError(
            "copying into PostgreSQL needs the postgres extra: pip install 'memledger[postgres]'"
        ) from exc
    dsn = getattr(target, "dsn", None)
    if not isinstance(source, SQLiteStore) or not isinstance(dsn, str):
        raise InvalidInputError(
            f"copy-store copies a SQLite store into a PostgreSQL one, got {source.url!r}"
            f" into {target.url!r}"
        )
    latest = max(version for version, _, _ in load_migrations())
    if source.schema_version() != latest:
        raise InvalidInputError(
            f"{source.url!r} is at schema {source.schema_version()}, not {latest}: open it"
            " with this memledger once (that migrates it), then copy"
        )
    copied: dict[str, int] = {}
    with source.read() as unit, psycopg.connect(dsn) as pg:
        lite: sqlite3.Connection = unit.conn
        tables = [
            name
            for (name,) in lite.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            if name not in SKIPPED
        ]
        for table in tables:
            wanted = [row[1] for row in lite.execute(f"PRAGMA table_info({table})")]
            found = {
                name
                for (name,) in pg.execute(
                    "SELECT column_name FROM information_schema.columns"
                    " WHERE table_schema = current_schema() AND table_name = %s",
                    (table,),
                )
            }
            if not found:
                raise InvalidInputError(f"{target.url!r} has no table {table!r}: not a store?")
            if missing := [c for c in wanted if c not in found]:
                raise InvalidInputError(
                    f"{target.url!r} has no column {missing[0]!r} in {table!r}: another schema"
                )
            if pg.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
                raise InvalidInputError(
                    f"{target.url!r} is not empty ({table!r} holds rows): copy into a new store"
                )
            columns = ", ".join(wanted)
            count = 0
            try:
                with pg.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for row in lite.execute(f"SELECT {columns} FROM {table}"):
                        copy.write_row(row)
                        count += 1
                        if progress is not None and count % 10_000 == 0:
                            progress(table, count)
                if table in IDENTITIES:
                    column = IDENTITIES[table]
                    pg.execute(
                        f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                        f" coalesce((SELECT max({column}) FROM {table}), 0) + 1, false)"
                    )
            except psycopg.Error as exc:
                raise StoreError(
                    f"copying {table!r} into {target.url!r} failed (nothing was written): {exc}"
                ) from exc
            copied[table] = count
            if progress is not None:
                progress(table, count)
    # the planner's statistics of the loaded tables, now rather than whenever autovacuum
    # comes by: without them the first queries on a big copy plan from guesses
    with psycopg.connect(dsn, autocommit=True) as pg:
        for table in tables:
            pg.execute(f"ANALYZE {table}")
    return copied
