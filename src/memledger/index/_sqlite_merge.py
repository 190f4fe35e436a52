"""Keeping the SQLite index's FTS5 tables in few segments, off the read path.

FTS5 writes the rows of each transaction as a new segment (a b-tree of its own) and
merges segments on its own only once 64 pages have been written since it last did,
so a feed of many small transactions leaves many small segments; a MATCH looks each
of its phrases up in every segment of its table. Scores do not depend on how the
rows are split into segments, only the work of a search does.

* Each write transaction of the feed (a read's bounded catch-up as well) records the
  tenants whose tables it wrote in ``unmerged`` (:meth:`SqliteMerge._mark`);
* after a sync of the indexer (never a read's catch-up,
  :func:`memledger.index.catchup.catch_up`), :meth:`SqliteMerge._merge_segments` merges the
  marked tenants' tables level by level: FTS5's ``'merge'`` command with
  ``usermerge`` 2, so any two segments of about the same size become one, which
  leaves about one segment per size (a few, where a table grows by small
  transactions) for a total work that grows as n log n with the rows written. Each
  step writes at most :data:`MERGE_STEP` pages of each table in a transaction of its
  own (a search or a write of this handle waits for one step at most), a sync about
  :data:`MERGE_PAGES`; a
  tenant stays marked until neither table has anything left to merge, checked in
  the transaction that unmarks it;
* after a rebuild, :meth:`SqliteMerge._compact_segments` merges every segment of the rebuilt
  tables into one (a negative ``'merge'``, in the same bounded steps);
* :func:`segments` counts a table's segments from its structure record.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from memledger.index._fts import table_name
from memledger.index._sqlite_base import SqliteIndexBase

__all__ = ["MERGE_PAGES", "MERGE_STEP", "SqliteMerge", "segments"]

MERGE_STEP = 200
"""Pages (of about 4 KB) one merge step writes at most, about 20 ms of work."""
MERGE_PAGES = 2000
"""Pages the merges after one sync write (the step under way when they are reached
finishes); what is left waits for the next sync."""
USERMERGE = 2
"""Segments of one level that FTS5's ``'merge'`` command merges (its least)."""


class SqliteMerge(SqliteIndexBase):
    """The merging of the tenants' FTS5 segments after the indexer's syncs."""

    def _mark(self, tenants: Iterable[str]) -> None:
        """Record, inside a write transaction, that these tenants' tables were written."""
        self._conn.executemany(
            "INSERT OR IGNORE INTO unmerged VALUES (?)", [(t,) for t in sorted(set(tenants))]
        )

    def _merge_segments(self, pages: int = MERGE_PAGES) -> None:
        """Merge the marked tenants' segments level by level, :data:`MERGE_STEP` pages a
        step, until ``pages`` are written or nothing is left to merge."""
        with self._lock:
            marked = [t for (t,) in self._conn.execute("SELECT tenant FROM unmerged")]
        for tenant in marked:
            while pages > 0:
                done, written = self._step(tenant, MERGE_STEP)
                pages -= written
                if done:
                    break

    def _compact_segments(self, tenant: str | None) -> None:
        """Merge every segment of ``tenant``'s tables (of every marked tenant's, for
        ``None``) into one, in steps of :data:`MERGE_STEP` pages."""
        with self._lock:
            marked = [t for (t,) in self._conn.execute("SELECT tenant FROM unmerged")]
        for each in marked if tenant is None else [tenant]:
            while not self._step(each, -MERGE_STEP)[0]:
                pass

    def _step(self, tenant: str, pages: int) -> tuple[bool, int]:
        """One merge step of ``tenant``'s tables in one transaction (``pages`` < 0: every
        segment towards one); whether nothing was left to merge (the tenant is then
        unmarked), and the pages the step may have written. A busy or broken file is a
        store error of the transaction, and the tenant stays marked."""
        with self._lock, self._transaction():
            written, done = 0, True
            for table in self._tables(tenant):
                if (
                    pages > 0
                    and self._conn.execute(
                        f"SELECT 1 FROM {table}_config WHERE k = 'usermerge' AND v = ?",
                        (USERMERGE,),
                    ).fetchone()
                    is None
                ):
                    self._conn.execute(
                        f"INSERT INTO {table} ({table}, rank) VALUES ('usermerge', ?)",
                        (USERMERGE,),
                    )
                before = self._conn.total_changes
                self._conn.execute(
                    f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (pages,)
                )
                if self._conn.total_changes - before >= 2:  # (FTS5's sign that it merged)
                    written, done = written + abs(pages), False
            if done:
                self._conn.execute("DELETE FROM unmerged WHERE tenant = ?", (tenant,))
            return done, written

    def _tables(self, tenant: str) -> list[str]:
        """Those of ``tenant``'s FTS5 tables that exist."""
        names = [table_name(tenant, kind) for kind in ("fts", "win")]
        found = {
            name
            for (name,) in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", names
            )
        }
        return [name for name in names if name in found]


def segments(conn: sqlite3.Connection, table: str) -> int:
    """How many segments the FTS5 table ``table`` holds, read from its structure record
    (the row of id 10 of its ``_data`` table: a 4-byte cookie, or a version tag and
    the cookie, then the number of levels and the number of segments as varints)."""
    (record,) = conn.execute(f"SELECT block FROM {table}_data WHERE id = 10").fetchone()
    at = 8 if record[:4] == b"\xff\x00\x00\x01" else 4
    _, at = _varint(record, at)  # the levels
    count, _ = _varint(record, at)
    return count


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's big-endian varint at ``at`` (up to 9 bytes) and the offset after it."""
    value = 0
    for place in range(9):
        byte = data[at + place]
        if place == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + place + 1
    raise AssertionError("unreachable")
