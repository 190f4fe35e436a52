"""The ``meta`` table of memledger's own SQLite files (the derived index, the corpus):
text values by key, and the ``stamp`` every write moves so that other handles of the
file see that it changed.

:class:`SqliteMeta` gives a class holding such a file's connection (``_conn``) the
reads and writes of that table.
"""

from __future__ import annotations

import sqlite3

__all__ = ["SqliteMeta"]


class SqliteMeta:
    """``_get``, ``_get_many``, ``_set`` and ``_stamp`` over the ``meta (key, value)`` table of
    ``self._conn``."""

    _conn: sqlite3.Connection

    def _get(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _get_many(self, *keys: str) -> dict[str, str]:
        """The values of those of ``keys`` that are set, in one read."""
        rows = self._conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(keys))})", keys
        )
        return {str(key): str(value) for key, value in rows}

    def _set(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    @property
    def _stamp(self) -> int:
        """The file's change stamp (0 before its first write)."""
        return int(self._get("stamp") or 0)
