"""The feed of the PostgreSQL index: what :class:`~memledger.index._maintenance.Maintenance`
(sync, rebuild, lag, status) needs of the tables, and the bulk writing of a batch.

* :meth:`PostgresMaintenance._batch`: one transaction holding the feed's advisory lock
  (feeders take turns) at the next stamp, whose :class:`_Feed` applies outbox rows,
  moves the cursors and fills in missing vectors, keeping ``stats`` (documents,
  tokens, vectors per tenant) in step;
* :meth:`PostgresMaintenance._forget`: one tenant's entries dropped for a rebuild (a new
  epoch), :meth:`~memledger.index._postgres_base.PostgresIndexBase._reset` every table;
* :meth:`PostgresMaintenance.purge`: after an erasure, the tables vacuumed.

A batch is planned in Python and written in bulk (:class:`_Feed`): the rows are
played in order against what the index holds, then each tenant's removals, updates
and inserts are written with a few statements (``COPY`` for new entries and their
postings, :func:`~memledger.index._postgres_lexical.write_postings`), and the windows
of the turns whose neighbourhood changed are rewritten once each.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memledger.domain.records import MemoryRecord, format_time
from memledger.errors import StoreError
from memledger.index import _subject_bm25 as bm25
from memledger.index._common import WINDOW_AFTER, WINDOW_BEFORE
from memledger.index._common import lead as _lead
from memledger.index._common import speaker as _speaker
from memledger.index._common import standing as _standing
from memledger.index._common import thread as _thread
from memledger.index._maintenance import Embedded, Maintenance, Records, Vector
from memledger.index._postgres_base import (
    add_stats,
    cursors,
    get_meta,
    int4,
    one,
    psycopg,
    set_meta,
    sql,
    tenant_cursor,
)
from memledger.index._postgres_lexical import PostgresLexical, write_postings
from memledger.index._postgres_vectors import PostgresVectors
from memledger.ports import OutboxEntry

__all__ = ["PostgresMaintenance"]


class PostgresMaintenance(PostgresLexical, PostgresVectors, Maintenance):
    """The PostgreSQL index's feed from the outbox, its rebuilds and its state."""

    def _tally(self) -> tuple[int, int, int, str | None]:
        ns = self.ns
        with self._connection() as conn:
            entries, vectors = one(conn, f"SELECT count(*), count(vector) FROM {ns}.entries")
            cursor = int(get_meta(conn, ns, "cursor") or 0)
            return cursor, entries, vectors, get_meta(conn, ns, "degraded")

    @contextmanager
    def _batch(self) -> Iterator[_Feed]:
        with self._feeding() as (conn, stamp):
            yield _Feed(conn, self.ns, stamp)

    def _forget(self, tenant: str) -> int:
        ns = self.ns
        with self._feeding() as (conn, stamp):
            for table in ("entries", "postings", "win_postings", "stats"):
                conn.execute(f"DELETE FROM {ns}.{table} WHERE tenant = %s", (tenant,))
            reached = tenant_cursor(conn, ns, tenant)  # what syncs had applied for it
            set_meta(conn, ns, "epoch", str(stamp))
        return reached

    def _note_degraded(self, reason: str) -> None:
        with self._connection() as conn:
            set_meta(conn, self.ns, "degraded", reason)

    def _unvectored(self, limit: int) -> list[tuple[str, int, str]]:
        with self._connection() as conn:
            return conn.execute(
                f"SELECT tenant, id, text FROM {self.ns}.entries WHERE vector IS NULL LIMIT %s",
                (limit,),
            ).fetchall()

    def _clear_degraded(self) -> None:
        with self._connection() as conn:
            conn.execute(f"DELETE FROM {self.ns}.meta WHERE key = 'degraded'")

    def purge(self, tenant: str) -> None:
        """After an erasure (synced first): vacuum the index's tables, so the deleted
        entries' space is pruned and reused (PostgreSQL does not zero it; see
        :meth:`memledger.store.postgres.PostgresStore.scrub`). ``tenant`` is for the
        interface: a vacuum covers every tenant."""
        del tenant
        try:
            with self._pool.connection() as conn:
                for table in ("entries", "postings", "win_postings"):
                    conn.execute(
                        sql.SQL("VACUUM {}.{}").format(
                            sql.Identifier(self.ns), sql.Identifier(table)
                        )
                    )
        except psycopg.Error as exc:
            raise StoreError(
                f"index in {self.url!r}: vacuum after an erasure failed: {exc}"
            ) from exc


# -- feeding, inside one transaction --------------------------------------------------------


@dataclass(slots=True)
class _Doc:
    """What a batch needs to know of one entry: as stored, or as the batch leaves it."""

    id: int | None
    """``None``: inserted by this batch (an id is drawn when it is written)."""
    revision: int
    length: int
    win_length: int | None
    has_vector: bool
    thread: str | None
    at: str


@dataclass(slots=True)
class _Write:
    record: MemoryRecord
    revision: int
    generation: int
    vector: Vector | None
    text: str
    length: int
    part: int
    span: tuple[int, int] | None


class _Feed:
    """One batch of outbox rows applied on ``conn`` at ``stamp``, planned in Python and
    written in bulk: the rows are played in order against what the index holds (a
    newer revision is never replaced by an older one, a delete takes the entry out,
    a later upsert brings a new one), then each tenant's removals, updates and
    inserts are written with a few statements, and the windows of the turns whose
    neighbourhood changed are rewritten once each. The result is the one applying
    the rows one by one would give (the tests compare it with the SQLite index).

    The PostgreSQL :class:`~memledger.index._maintenance.Batch`: it also moves the
    cursors and fills in the vectors of entries stored without one."""

    def __init__(self, conn: psycopg.Connection[Any], ns: str, stamp: int) -> None:
        self.conn = conn
        self.ns = ns
        self.stamp = stamp
        self.stats: dict[tuple[str, str], list[int]] = {}

    def _count(self, tenant: str, kind: str, *, docs: int, tokens: int) -> None:
        moved = self.stats.setdefault((tenant, kind), [0, 0])
        moved[0] += docs
        moved[1] += tokens

    def cursors(self) -> tuple[int, dict[str, int]]:
        return cursors(self.conn, self.ns)

    def advance(self, seq: int, *, tenant: str | None) -> None:
        ns = self.ns
        if tenant is None:
            set_meta(self.conn, ns, "cursor", str(seq))
            self.conn.execute(f"DELETE FROM {ns}.cursors WHERE seq <= %s", (seq,))
        else:
            self.conn.execute(
                f"INSERT INTO {ns}.cursors VALUES (%s, %s) ON CONFLICT (tenant)"
                " DO UPDATE SET seq = excluded.seq",
                (tenant, seq),
            )

    def fill_vectors(self, entries: Sequence[tuple[str, int]], vectors: Sequence[Vector]) -> None:
        self.conn.cursor().executemany(
            f"UPDATE {self.ns}.entries SET vector = %s, changed = %s"
            " WHERE tenant = %s AND id = %s AND vector IS NULL",
            [(v, self.stamp, t, i) for (t, i), v in zip(entries, vectors, strict=True)],
        )
        for tenant, count in Counter(t for t, _ in entries).items():
            add_stats(self.conn, self.ns, tenant, "vectors", docs=count, tokens=0)

    def apply(
        self,
        rows: Sequence[OutboxEntry],
        records: Records,
        vectors: Embedded,
    ) -> None:
        by_tenant: dict[str, list[OutboxEntry]] = {}
        for row in rows:
            by_tenant.setdefault(row.tenant, []).append(row)
        for tenant, mine in by_tenant.items():
            self._tenant(tenant, mine, records, vectors)
        for (tenant, kind), (docs, tokens_) in sorted(self.stats.items()):
            if docs or tokens_:
                add_stats(self.conn, self.ns, tenant, kind, docs=docs, tokens=tokens_)
        self.stats.clear()

    def _tenant(
        self,
        tenant: str,
        rows: Sequence[OutboxEntry],
        records: Records,
        vectors: Embedded,
    ) -> None:
        ns = self.ns
        # keyed (memory id, part): a long turn has an entry per passage
        alive: dict[tuple[str, int], _Doc] = {
            (m, p): _Doc(id=i, revision=r, length=n, win_length=w, has_vector=v, thread=t, at=a)
            for m, p, i, r, n, w, v, t, a in self.conn.execute(
                "SELECT memory_id, part, id, revision, length, win_length, vector IS NOT NULL,"
                f" thread, at FROM {ns}.entries WHERE tenant = %s AND memory_id = ANY(%s)",
                (tenant, list(dict.fromkeys(r.memory_id for r in rows))),
            )
        }
        parts = Counter(m for m, _ in alive)
        removed: list[_Doc] = []
        writes: dict[tuple[str, int], _Write] = {}

        def drop(memory_id: str, first: int) -> None:
            """Take the entries of ``memory_id`` from part ``first`` on out."""
            for part in range(first, parts[memory_id]):
                gone = alive.pop((memory_id, part))
                writes.pop((memory_id, part), None)
                if gone.id is not None:
                    removed.append(gone)
            parts[memory_id] = min(first, parts[memory_id])

        for row in rows:  # in outbox order
            current = alive.get((row.memory_id, 0))
            if row.op == "upsert":
                record = records.get((tenant, row.memory_id))
                if record is None or (current is not None and current.revision > row.revision):
                    continue  # gone since, or a newer revision is already indexed
                docs = vectors[(tenant, row.memory_id)]
                drop(row.memory_id, len(docs))  # passages it no longer has
                for passage, vector in docs:
                    key = (row.memory_id, passage.part)
                    current = alive.get(key)
                    if current is None:
                        current = alive[key] = _Doc(
                            id=None, revision=row.revision, length=0, win_length=None,
                            has_vector=False,
                            thread=_thread(record) if passage.part == 0 else None,  # one place
                            at=format_time(record.valid_from),
                        )  # fmt: skip
                    current.revision = row.revision
                    writes[key] = _Write(
                        record, row.revision, row.generation, vector, passage.text,
                        bm25.length(passage.text), passage.part, passage.span,
                    )  # fmt: skip
                parts[row.memory_id] = len(docs)
            elif row.op == "delete":
                if current is None or current.revision > row.revision:
                    continue
                drop(row.memory_id, 0)
        touched: list[_Doc] = [*removed]
        # removals: the entry, its postings, its window (the neighbours' come below)
        if removed:
            gone = [d.id for d in removed]
            for table in ("entries", "postings", "win_postings"):
                column = "id" if table == "entries" else "doc"
                self.conn.execute(
                    f"DELETE FROM {ns}.{table} WHERE tenant = %s AND {column} = ANY(%s)",
                    (tenant, gone),
                )
            for doc in removed:
                self._count(tenant, "entries", docs=-1, tokens=-doc.length)
                self._count(tenant, "vectors", docs=-int(doc.has_vector), tokens=0)
                if doc.win_length is not None:
                    self._count(tenant, "windows", docs=-1, tokens=-doc.win_length)
        # updates in place, then inserts with ids drawn up front
        updated = [(m, w) for m, w in writes.items() if alive[m].id is not None]
        inserted = [(m, w) for m, w in writes.items() if alive[m].id is None]
        if updated:
            self.conn.execute(
                f"DELETE FROM {ns}.postings WHERE tenant = %s AND doc = ANY(%s)",
                (tenant, [alive[m].id for m, _ in updated]),
            )
            self.conn.cursor().executemany(
                f"UPDATE {ns}.entries SET revision = %s, generation = %s, text = %s,"
                " vector = %s, changed = %s, length = %s, span_start = %s, span_end = %s"
                " WHERE tenant = %s AND id = %s",
                [
                    (
                        w.revision,
                        w.generation,
                        w.text,
                        w.vector,
                        self.stamp,
                        w.length,
                        *(w.span or (None, None)),
                        tenant,
                        alive[m].id,
                    )
                    for m, w in updated
                ],
            )
            for m, w in updated:
                doc = alive[m]
                self._count(tenant, "entries", docs=0, tokens=w.length - doc.length)
                has = w.vector is not None
                self._count(tenant, "vectors", docs=int(has) - int(doc.has_vector), tokens=0)
                doc.length, doc.has_vector = w.length, has
        if inserted:
            drawn = [
                i
                for (i,) in self.conn.execute(
                    f"SELECT nextval(pg_get_serial_sequence('{ns}.entries', 'id'))"
                    " FROM generate_series(1, %s)",
                    (len(inserted),),
                )
            ]
            with self.conn.cursor().copy(
                f"COPY {ns}.entries (tenant, id, memory_id, subject, family, kind, revision,"
                " generation, text, speaker, thread, at, vector, sample, changed, length,"
                " standing, part, span_start, span_end) FROM STDIN"
            ) as copy:
                for entry_id, (m, w) in zip(drawn, inserted, strict=True):
                    doc, record = alive[m], w.record
                    doc.id, doc.length, doc.has_vector = entry_id, w.length, w.vector is not None
                    copy.write_row(
                        (tenant, entry_id, m[0], record.subject, record.family, record.kind,
                         w.revision, w.generation, w.text, _speaker(record), doc.thread,
                         doc.at, w.vector, int4(m[0] if not m[1] else f"{m[0]}#{m[1]}"),
                         self.stamp, w.length, _standing(record), w.part,
                         *(w.span or (None, None)))
                    )  # fmt: skip
                    self._count(tenant, "entries", docs=1, tokens=w.length)
                    self._count(tenant, "vectors", docs=int(w.vector is not None), tokens=0)
        write_postings(
            self.conn,
            f"{ns}.postings",
            tenant,
            [(w.record.subject, alive[m].id, w.text, w.length) for m, w in writes.items()],
        )
        touched += [alive[m] for m in writes]
        self._rewindow(tenant, touched)

    def _rewindow(self, tenant: str, touched: Sequence[_Doc]) -> None:
        """Rewrite the windows of the turns whose neighbourhood ``touched`` changed: each
        written turn and those within reach of it, and the turns that were within reach
        of a removed one; each once."""
        ns = self.ns
        threads = sorted({d.thread for d in touched if d.thread is not None})
        if not threads:
            return
        turns: dict[str, list[tuple[str, int, str, str, int | None]]] = {}
        for thread, at, entry_id, text, subject, win_length in self.conn.execute(
            f"SELECT thread, at, id, text, subject, win_length FROM {ns}.entries"
            " WHERE tenant = %s AND thread = ANY(%s) ORDER BY thread, at, id",
            (tenant, threads),
        ):
            turns.setdefault(thread, []).append((at, entry_id, text, subject, win_length))
        rewrite: list[tuple[int, str, str, int | None]] = []  # (id, subject, words, old)
        for thread in threads:
            line = turns.get(thread, [])
            keys = [(at, entry_id) for at, entry_id, *_ in line]
            wanted: set[int] = set()
            for doc in touched:
                if doc.thread != thread or doc.id is None:
                    continue
                place = bisect.bisect_left(keys, (doc.at, doc.id))
                present = place < len(keys) and keys[place] == (doc.at, doc.id)
                # a turn's window holds WINDOW_BEFORE turns before it, WINDOW_AFTER after
                last = place + WINDOW_BEFORE if present else place + WINDOW_BEFORE - 1
                wanted.update(range(max(0, place - WINDOW_AFTER), min(len(line), last + 1)))
            for at_ in sorted(wanted):
                _, entry_id, text, subject, old = line[at_]
                around = (
                    line[max(0, at_ - WINDOW_BEFORE) : at_] + line[at_ + 1 : at_ + 1 + WINDOW_AFTER]
                )
                words = " ".join([text, *(_lead(t[2]) for t in around)])
                rewrite.append((entry_id, subject, words, old))
        if not rewrite:
            return
        self.conn.execute(
            f"DELETE FROM {ns}.win_postings WHERE tenant = %s AND doc = ANY(%s)",
            (tenant, [r[0] for r in rewrite]),
        )
        lengths = [bm25.length(words) for _, _, words, _ in rewrite]
        for (_, _, _, old), length in zip(rewrite, lengths, strict=True):
            if old is not None:
                self._count(tenant, "windows", docs=-1, tokens=-old)
            self._count(tenant, "windows", docs=1, tokens=length)
        write_postings(
            self.conn,
            f"{ns}.win_postings",
            tenant,
            [
                (subject, entry_id, words, n)
                for (entry_id, subject, words, _), n in zip(rewrite, lengths, strict=True)
            ],
        )
        self.conn.execute(
            f"UPDATE {ns}.entries e SET win_length = v.length"
            " FROM unnest(%s::bigint[], %s::integer[]) AS v(id, length)"
            " WHERE e.tenant = %s AND e.id = v.id",
            ([r[0] for r in rewrite], lengths, tenant),
        )
