"""The derived index in PostgreSQL: BM25 over a postings table, vectors in pgvector.

What :class:`~memledger.index.derived.DerivedIndex` is for a SQLite store, in the
canonical store's own database (schema ``memledger_index``), so every service
process and worker shares one index instead of feeding one file per machine
(``memledger[postgres]``; vectors need the ``vector`` extension). The same
contract: fed from the outbox by sequence (the cursor and the rows move in one
transaction, feeders take turns on an advisory lock, a tenant's sync moves that
tenant's cursor ahead of the global one), derived (a schema, tokenizer or embedder
change drops and refills it; :meth:`PostgresIndex.rebuild`), every entry carrying
tenant, subject, family, kind, memory id, revision and generation for the read
path's canonical recheck, episodes their speaker, thread and time.

Lexical: SQLite's FTS5 ``porter unicode61`` tokens, computed in Python
(:mod:`memledger.index._tokens`), stored one row per (document, distinct token)
in ``postings`` (an entry's own words) and ``win_postings`` (a turn with the turns
around it, rewritten as they come and go), keyed ``(tenant, lexeme, subject,
doc)``. A search reads the query's lexemes of one tenant, and of the subjects
asked for, from that key, index only: tenant and subject filter inside the query,
never after ranking. BM25 has FTS5's formula and constants, with the statistics
of the tenant (tenant-wide, as FTS5's per-tenant tables) or of the subjects
(subject-scoped, as :mod:`memledger.index._fts`), so both backends rank alike.
Why not ``tsvector`` with GIN: a tenant-wide query whose words are common reads and
unnests half a tenant's vectors: 878 ms p50 at 60k documents against 48 ms here
(``docs/design/postgres-index.md``).

Vectors: a ``vector(d)`` column. A search scores by inner product (rows are unit
length: the cosine) minus the median cosine of the rows searched, as the SQLite
index does. Subject-scoped searches, and tenant-wide ones of tenants below
``ann_threshold`` live vectors, are exact scans of just those rows. A tenant at or
past it gets a partial HNSW index of its own rows (``WHERE tenant = '...'``),
built on its first tenant-wide search, by :meth:`PostgresIndex.warm` or by
:meth:`PostgresIndex.rebuild`; its candidates are ranked by their exact
cosines and the median is estimated from a fixed sample of the tenant's rows. One
HNSW index over every tenant would filter after the graph search (pgvector before
0.8) and lose small tenants' neighbours: recall 0.17 for a tenant of 0.5% of the
rows, measured.

The parts, each a module a reader looks in for one thing:

* :mod:`memledger.index._postgres_base`: the driver, the pool, the tables and their
  version, the locks, the index's state (cursors, stamp, epoch);
* :mod:`memledger.index._postgres_lexical`: :meth:`PostgresIndex.search` and the
  writing of postings;
* :mod:`memledger.index._postgres_vectors`: :meth:`PostgresIndex.search_vectors` and
  the tenants' HNSW indexes;
* :mod:`memledger.index._postgres_maintenance`: the bulk writing of a batch of outbox
  rows, resets for a rebuild and :meth:`PostgresIndex.purge`, under the loops both
  backends share (:mod:`memledger.index._maintenance`: :meth:`PostgresIndex.sync`,
  :meth:`PostgresIndex.rebuild`, :meth:`PostgresIndex.rebuild_tenant`,
  :meth:`PostgresIndex.lag`, :meth:`PostgresIndex.status`);
* this module: :class:`PostgresIndex` with what a read asks besides a search
  (standing instructions, names, speakers, neighbouring turns, a glance).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memledger.index._common import Glance, Names, neighbour_offsets
from memledger.index._names import KnownNames
from memledger.index._postgres_base import one
from memledger.index._postgres_maintenance import PostgresMaintenance

__all__ = ["PostgresIndex"]


class PostgresIndex(PostgresMaintenance, Names):
    """Lexical and vector search over the records of a PostgreSQL store, kept in that
    store's database. Safe to share between threads (a pool of connections).

    ``embedder=None`` keeps the index lexical only. ``ann_threshold``: the live vectors
    from which a tenant's tenant-wide vector searches use its HNSW index (``None``:
    never).
    """

    def standing(
        self, tenant: str, *, subjects: Sequence[str] | None = None, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """``(memory_id, text, when)`` of the entries of ``tenant`` (of ``subjects``) that
        state a standing instruction or preference, newest first."""
        ns = self.ns
        sql_text = (
            f"SELECT memory_id, text, standing FROM {ns}.entries"
            " WHERE tenant = %(tenant)s AND standing IS NOT NULL"
        )
        params: dict[str, Any] = {"tenant": tenant, "limit": limit}
        if subjects is not None:
            sql_text += " AND subject = ANY(%(subjects)s)"
            params["subjects"] = list(dict.fromkeys(subjects))
        sql_text += " ORDER BY at DESC, id DESC LIMIT %(limit)s"
        with self._connection() as conn:
            return [(m, t, w) for m, t, w in conn.execute(sql_text, params)]

    def _known(self, tenant: str, subject: str | None) -> KnownNames:
        return self.glance(tenant, subject=subject).known

    def glance(self, tenant: str, *, subject: str | None = None) -> Glance:
        """:meth:`names`, :meth:`cursor_of` and :attr:`degraded` together, in one round
        trip (two when names changed since this handle last looked)."""
        ns = self.ns
        with self._connection() as conn:
            stamp, epoch, degraded, cursor = one(
                conn,
                f"SELECT (SELECT value FROM {ns}.meta WHERE key = 'stamp'),"
                f" (SELECT value FROM {ns}.meta WHERE key = 'epoch'),"
                f" (SELECT value FROM {ns}.meta WHERE key = 'degraded'),"
                f" greatest((SELECT value::bigint FROM {ns}.meta WHERE key = 'cursor'),"
                f" (SELECT seq FROM {ns}.cursors WHERE tenant = %s), 0)",
                (tenant,),
            )
            query = (
                f"SELECT DISTINCT speaker, subject FROM {ns}.entries"
                " WHERE tenant = %s AND changed > %s"
            )
            if subject is not None:
                query += " AND subject = %s"

            def changed(since: int) -> Iterable[tuple[str | None, str]]:
                extra = () if subject is None else (subject,)
                return conn.execute(query, (tenant, since, *extra)).fetchall()

            known = self._names.get(
                tenant,
                subject,
                epoch=int(epoch or 0),
                stamp=int(stamp or 0),
                changed=changed,
            )
        return Glance(known=known, cursor=int(cursor), degraded=degraded)

    def speakers(self, tenant: str, memory_ids: Iterable[str]) -> dict[str, str]:
        """The speaker of each episode among ``memory_ids``."""
        ns = self.ns
        ids = list(memory_ids)
        if not ids:
            return {}
        with self._connection() as conn:
            return {
                m: s
                for m, s in conn.execute(
                    f"SELECT memory_id, speaker FROM {ns}.entries WHERE tenant = %s"
                    " AND memory_id = ANY(%s) AND speaker IS NOT NULL",
                    (tenant, ids),
                )
            }

    def neighbours(
        self, tenant: str, memory_ids: Iterable[str], *, window: int
    ) -> dict[str, list[tuple[str, int]]]:
        """For each episode among ``memory_ids``: the entries of its thread within
        ``window`` places before or after it, as ``(memory_id, offset)``."""
        ns = self.ns
        ids = list(memory_ids)
        found: dict[str, list[tuple[str, int]]] = {}
        if not ids or window < 1:
            return found
        with self._connection() as conn:  # an anchor without neighbours: one row of NULLs
            rows = conn.execute(
                "SELECT a.memory_id, n.side, n.memory_id, n.at, n.id"
                f" FROM {ns}.entries a LEFT JOIN LATERAL ("
                f"(SELECT -1 AS side, memory_id, at, id FROM {ns}.entries"
                " WHERE tenant = a.tenant AND thread = a.thread AND (at, id) < (a.at, a.id)"
                " ORDER BY at DESC, id DESC LIMIT %(w)s) UNION ALL"
                f" (SELECT 1, memory_id, at, id FROM {ns}.entries"
                " WHERE tenant = a.tenant AND thread = a.thread AND (at, id) > (a.at, a.id)"
                " ORDER BY at, id LIMIT %(w)s)) n ON true"
                " WHERE a.tenant = %(tenant)s AND a.memory_id = ANY(%(ids)s)"
                " AND a.thread IS NOT NULL",
                {"tenant": tenant, "ids": ids, "w": window},
            ).fetchall()
        for anchor in dict.fromkeys(r[0] for r in rows):
            found[anchor] = neighbour_offsets(
                r[1:] for r in rows if r[0] == anchor and r[1] is not None
            )
        return found
