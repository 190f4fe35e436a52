"""The feed of the SQLite index: what :class:`~memledger.index._maintenance.Maintenance`
(sync, rebuild, lag, status) needs of the file, and the writing of entries.

* :meth:`SqliteMaintenance._batch`: one ``BEGIN IMMEDIATE`` transaction at the next
  stamp, whose :class:`_Batch` applies outbox rows (:meth:`SqliteMaintenance._upsert`,
  :meth:`SqliteMaintenance._delete`), moves the cursors and fills in missing vectors;
* after each sync, :meth:`SqliteMaintenance._prune` forgets the recorded removals once
  ``prune_after`` have piled up (noting the stamp it pruned at, so vectors held from
  before are read again whole), and the approximate indexes this handle holds follow
  the rows;
* after a sync of the indexer (not a read's catch-up), the tenants' full-text segments
  are merged in bounded steps, and after a rebuild into one
  (:mod:`memledger.index._sqlite_merge`);
* :meth:`SqliteMaintenance._reset` and :meth:`SqliteMaintenance._forget` empty the file
  or one tenant's entries for a rebuild (a new epoch: no handle keeps vectors or
  graphs from before);
* :meth:`SqliteMaintenance.purge`: after an erasure, nothing of the deleted entries left
  in the file.

An entry is a record's document (one, or a long turn's passages,
:mod:`memledger.index.passages`): its row in ``entries`` with its vector as float32
bytes, its row in the tenant's FTS5 table, and for a turn its window and those of the
turns around it (:mod:`memledger.index._sqlite_lexical`). While the embedder fails,
entries are stored without vectors and a later sync fills them in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from memledger.domain.records import MemoryRecord, format_time
from memledger.errors import StoreError, StoreLockedError
from memledger.index import _subject_bm25 as bm25
from memledger.index._common import speaker as _speaker
from memledger.index._common import standing as _standing
from memledger.index._common import thread as _thread
from memledger.index._fts import scope_token, table_name
from memledger.index._maintenance import Embedded, Maintenance, Records, Vector
from memledger.index._sqlite_lexical import SqliteLexical
from memledger.index._sqlite_merge import SqliteMerge
from memledger.index._sqlite_vectors import SqliteVectors
from memledger.index.passages import Document
from memledger.ports import OutboxEntry

__all__ = ["SqliteMaintenance"]


class SqliteMaintenance(SqliteLexical, SqliteVectors, SqliteMerge, Maintenance):
    """The SQLite index's feed from the outbox, its rebuilds and its state."""

    def _tally(self) -> tuple[int, int, int, str | None]:
        with self._lock:
            entries, vectors = self._conn.execute(
                "SELECT count(*), count(vector) FROM entries"
            ).fetchone()
            return int(self._get("cursor") or 0), entries, vectors, self._get("degraded")

    @contextmanager
    def _batch(self) -> Iterator[_Batch]:
        with self._lock, self._transaction():
            batch = _Batch(self, stamp=self._stamp + 1)
            yield batch
            self._set("stamp", str(batch.stamp))
            self._mark(batch.tenants)
            if batch.removed:
                self._set("removed", str(int(self._get("removed") or 0) + batch.removed))

    def _synced(self, tenant: str | None) -> None:
        self._prune()
        self._follow_anns(tenant)

    def _prune(self) -> None:
        """Forget the removals recorded so far once there are ``prune_after`` of them."""
        with self._lock:
            if int(self._get("removed") or 0) < self.prune_after:
                return  # read outside a transaction: most syncs stop here
            with self._transaction():
                if int(self._get("removed") or 0) < self.prune_after:
                    return  # another handle pruned first
                stamp = self._stamp
                self._conn.execute("DELETE FROM removed WHERE changed <= ?", (stamp,))
                self._set("removed", "0")
                self._set("pruned", str(stamp))

    def _forget(self, tenant: str) -> int:
        with self._lock, self._transaction():
            for kind in ("fts", "win"):
                self._conn.execute(f"DROP TABLE IF EXISTS {table_name(tenant, kind)}")
            self._conn.execute("DELETE FROM entries WHERE tenant = ?", (tenant,))
            self._conn.execute("DELETE FROM removed WHERE tenant = ?", (tenant,))
            self._conn.execute("DELETE FROM unmerged WHERE tenant = ?", (tenant,))
            reached = self._cursor_of(tenant)  # what syncs had applied for it
            stamp = self._stamp + 1
            self._set("stamp", str(stamp))
            self._set("epoch", str(stamp))
            self._matrices.clear()
            self._names.clear()
        return reached

    def _note_degraded(self, reason: str) -> None:
        with self._lock:
            self._set("degraded", reason)

    def _unvectored(self, limit: int) -> list[tuple[str, int, str]]:
        with self._lock:
            return self._conn.execute(
                "SELECT tenant, id, text FROM entries WHERE vector IS NULL LIMIT ?", (limit,)
            ).fetchall()

    def _clear_degraded(self) -> None:
        with self._lock, self._transaction():
            self._conn.execute("DELETE FROM meta WHERE key = 'degraded'")

    # -- entries --------------------------------------------------------------------------

    def _upsert(
        self,
        record: MemoryRecord,
        *,
        revision: int,
        generation: int,
        docs: Sequence[tuple[Document, Vector | None]],
        stamp: int,
    ) -> None:
        """Index ``record`` as its documents (one, or a long turn's passages), each with
        its vector, unless the index holds a later revision."""
        rows = self._conn.execute(
            "SELECT part, id, revision FROM entries WHERE tenant = ? AND memory_id = ?",
            (record.tenant, record.memory_id),
        ).fetchall()
        if any(held > revision for _, _, held in rows):
            return  # a newer revision is already indexed
        table = self._ensure(record.tenant)
        held = {part: entry_id for part, entry_id, _ in rows}
        thread = _thread(record)
        head: int | None = None
        for doc, vector in docs:
            text = doc.text
            blob = None if vector is None else vector.tobytes()
            start, end = doc.span or (None, None)
            entry_id = held.pop(doc.part, None)
            if entry_id is not None:
                self._conn.execute(
                    "UPDATE entries SET revision = ?, generation = ?, text = ?, vector = ?,"
                    " changed = ?, length = ?, span_start = ?, span_end = ? WHERE id = ?",
                    (revision, generation, text, blob, stamp, bm25.length(text), start, end,
                     entry_id),
                )  # fmt: skip
                self._conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (entry_id,))
            else:
                entry_id = self._conn.execute(
                    "INSERT INTO entries (tenant, memory_id, subject, family, kind, revision,"
                    " generation, text, speaker, thread, at, vector, changed, length, standing,"
                    " part, span_start, span_end)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.tenant,
                        record.memory_id,
                        record.subject,
                        record.family,
                        record.kind,
                        revision,
                        generation,
                        text,
                        _speaker(record),
                        thread if doc.part == 0 else None,  # a turn holds one place
                        format_time(record.valid_from),
                        blob,
                        stamp,
                        bm25.length(text),
                        _standing(record),
                        doc.part,
                        start,
                        end,
                    ),
                ).lastrowid
            self._conn.execute(
                f"INSERT INTO {table} (rowid, text, scope) VALUES (?, ?, ?)",
                (entry_id, text, scope_token(record.subject)),
            )
            if doc.part == 0:
                head = entry_id
        if held:  # passages the record no longer has
            self._drop_entries(record.tenant, list(held.values()))
            self._conn.execute(
                "INSERT INTO removed VALUES (?, ?, ?)", (record.tenant, record.memory_id, stamp)
            )
        if thread is not None and head is not None:
            self._rewindow(record.tenant, [head, *self._affected(record.tenant, head)])

    def _drop_entries(self, tenant: str, entry_ids: Sequence[int]) -> None:
        """Delete these entries with their lexical rows and windows."""
        table, windows = self._ensure(tenant), self._ensure(tenant, "win")
        for entry_id in entry_ids:
            self._conn.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
            self._conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (entry_id,))
            self._conn.execute(f"DELETE FROM {windows} WHERE rowid = ?", (entry_id,))

    def _delete(self, tenant: str, memory_id: str, *, revision: int, stamp: int) -> bool:
        """Remove ``memory_id``'s entries (every passage of a long turn) unless the index
        holds a later revision; whether it did."""
        rows = self._conn.execute(
            "SELECT id, revision FROM entries WHERE tenant = ? AND memory_id = ? ORDER BY part",
            (tenant, memory_id),
        ).fetchall()
        if not rows or any(held > revision for _, held in rows):
            return False
        head = rows[0][0]
        affected = self._affected(tenant, head)
        self._drop_entries(tenant, [entry_id for entry_id, _ in rows])
        # the windows around it lose its words (a revoked turn leaves no trace)
        self._rewindow(tenant, [head, *affected])
        self._conn.execute("INSERT INTO removed VALUES (?, ?, ?)", (tenant, memory_id, stamp))
        return True

    # -- erasure --------------------------------------------------------------------------

    def purge(self, tenant: str) -> None:
        """After an erasure (synced first): leave nothing of ``tenant``'s deleted entries
        in the file. Their rows' bytes are overwritten as they go (``secure_delete``);
        this merges the tenant's full-text segments, which keep a deleted document's
        tokens until merged, rebuilds the tenant's approximate index if it has one (a
        graph keeps a removed key's vector until rebuilt), and checkpoints and
        truncates the write-ahead log."""
        with self._lock:
            self._rebuild_graph(tenant)
            try:
                for kind in ("fts", "win"):
                    table = table_name(tenant, kind)
                    if self._conn.execute(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
                    ).fetchone():
                        self._conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                (busy, _, _) = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"index {str(self.path)!r}: purge failed: {exc}") from exc
            if busy:
                raise StoreLockedError(
                    f"index {str(self.path)!r}: a reader held the write-ahead log; purge again"
                )


class _Batch:
    """One transaction of the SQLite feed, at ``stamp``; counts the entries it removed
    (``removed``, for :meth:`SqliteMaintenance._prune`) and notes the tenants whose
    rows it applied (``tenants``, whose full-text segments then want merging)."""

    def __init__(self, index: SqliteMaintenance, *, stamp: int) -> None:
        self.index = index
        self.stamp = stamp
        self.removed = 0
        self.tenants: set[str] = set()

    def cursors(self) -> tuple[int, dict[str, int]]:
        return self.index._cursors()

    def apply(self, rows: Sequence[OutboxEntry], records: Records, docs: Embedded) -> None:
        for row in rows:
            self.tenants.add(row.tenant)
            key = (row.tenant, row.memory_id)
            record = records.get(key)
            if row.op == "upsert" and record is not None:
                self.index._upsert(
                    record,
                    revision=row.revision,
                    generation=row.generation,
                    docs=docs[key],
                    stamp=self.stamp,
                )
            elif row.op == "delete":
                self.removed += self.index._delete(
                    row.tenant, row.memory_id, revision=row.revision, stamp=self.stamp
                )

    def advance(self, seq: int, *, tenant: str | None) -> None:
        conn = self.index._conn
        if tenant is None:
            self.index._set("cursor", str(seq))
            conn.execute("DELETE FROM cursors WHERE seq <= ?", (seq,))
        else:
            conn.execute(
                "INSERT INTO cursors VALUES (?, ?) ON CONFLICT (tenant)"
                " DO UPDATE SET seq = excluded.seq",
                (tenant, seq),
            )

    def fill_vectors(self, entries: Sequence[tuple[str, int]], vectors: Sequence[Vector]) -> None:
        self.index._conn.executemany(
            "UPDATE entries SET vector = ?, changed = ? WHERE id = ?",
            [
                (vector.tobytes(), self.stamp, entry_id)
                for (_, entry_id), vector in zip(entries, vectors, strict=True)
            ],
        )
