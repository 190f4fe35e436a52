"""Vector search of the PostgreSQL index: :meth:`PostgresVectors.search_vectors` over a
``vector(d)`` column (pgvector), and each tenant's HNSW index.

A search scores by inner product (rows are unit length: the cosine) minus the median
cosine of the rows searched, as the SQLite index does. Subject-scoped searches, and
tenant-wide ones of tenants below ``ann_threshold`` live vectors, are exact scans of
just those rows. A tenant at or past it gets a partial HNSW index of its own rows
(``WHERE tenant = '...'``, :meth:`PostgresVectors._ann`), built on its first
tenant-wide search, by :meth:`PostgresVectors.warm` or by a rebuild
(:meth:`PostgresVectors._build_anns`); its candidates
(:data:`~memledger.index._postgres_base.OVERFETCH` beyond what is asked, searched at
:data:`~memledger.index._postgres_base.EF_SEARCH`) are ranked by their exact cosines
and the median is estimated from a fixed sample
(:data:`~memledger.index._postgres_base.SAMPLE`) of the tenant's rows. One HNSW index
over every tenant would filter after the graph search (pgvector before 0.8) and lose
small tenants' neighbours: recall 0.17 for a tenant of 0.5% of the rows, measured.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memledger.index._ann import AnnStatus
from memledger.index._base import Hit
from memledger.index._common import hit, query_vector
from memledger.index._postgres_base import (
    EF_SEARCH,
    OVERFETCH,
    SAMPLE,
    PostgresIndexBase,
    one,
    psycopg,
    relation_name,
    sql,
)
from memledger.index.passages import best_per_memory

__all__ = ["PostgresVectors"]


class PostgresVectors(PostgresIndexBase):
    """Exact and HNSW vector search over a tenant's rows."""

    def search_vectors(
        self, query: str, *, tenant: str, k: int, subjects: Sequence[str] | None = None
    ) -> list[Hit]:
        """The ``k`` entries of ``tenant`` nearest to ``query`` by cosine, of ``subjects``
        only when given: an exact scan of those rows, or for a tenant-wide search of a
        tenant past ``ann_threshold`` its HNSW index's candidates ranked exactly.
        Scores are the cosine above the median cosine of the rows searched (on the
        HNSW path, of a fixed sample of them).

        Raises :class:`~memledger.errors.EmbedderError` when there is no embedder or it
        fails."""
        ns = self.ns
        vector = query_vector(self.embedder, query, k=k).astype(np.float32)
        if subjects is None and self._ann(tenant) is not None:
            self.vector_searches["ann"] += 1
            return self._search_ann(vector, tenant=tenant, k=k)
        self.vector_searches["exact"] += 1
        params: dict[str, Any] = {"tenant": tenant, "q": vector, "k": k}
        scope = ""
        if subjects is not None:
            params["subjects"] = list(dict.fromkeys(subjects))
            scope = " AND subject = ANY(%(subjects)s)"
        with self._connection() as conn:
            query = (
                "WITH s AS MATERIALIZED (SELECT id, -(vector <#> %(q)s)::float4 AS cosine"
                f" FROM {ns}.entries WHERE tenant = %(tenant)s AND vector IS NOT NULL"
                f"{scope}),"
                " m AS (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cosine) AS typical"
                " FROM s),"
                " top AS (SELECT id, cosine FROM s ORDER BY cosine DESC, id LIMIT %(k)s)"
                " SELECT e.memory_id, e.subject, e.family, e.kind, e.revision, e.generation,"
                f" top.cosine::float8, e.text, e.span_start, e.span_end, m.typical"
                f" FROM top JOIN {ns}.entries e"
                " ON e.tenant = %(tenant)s AND e.id = top.id CROSS JOIN m"
                " ORDER BY top.cosine DESC, top.id"
            )
            while True:  # more rows when passages of one turn take several top places
                rows = conn.execute(query, params).fetchall()
                hits = best_per_memory(_vector_hit(tenant, r, typical=float(r[10])) for r in rows)
                if len(hits) >= k or len(rows) < params["k"]:
                    return hits[:k]
                params["k"] *= 4

    def _ann_query(self, tenant: str) -> sql.Composed:
        """The HNSW candidates of ``tenant``: its own partial index, which the planner
        matches only against a literal tenant (never a parameter)."""
        return sql.SQL(
            "SELECT id, (-(vector <#> %(q)s)::float4)::float8 AS cosine FROM {t}.entries"
            " WHERE tenant = {tenant} ORDER BY vector <#> %(q)s LIMIT %(n)s"
        ).format(t=sql.Identifier(self.ns), tenant=sql.Literal(tenant))

    def _search_ann(self, vector: np.ndarray, *, tenant: str, k: int) -> list[Hit]:
        ns = self.ns
        with self._transaction() as conn:
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(EF_SEARCH))
            candidates = conn.execute(
                self._ann_query(tenant), {"q": vector, "n": 4 * k + OVERFETCH}
            ).fetchall()  # (4 k: room for a long turn's passages, one hit per memory id)
            best = sorted(candidates, key=lambda row: (-row[1], row[0]))
            if not best:
                return []
            (typical,) = one(
                conn,
                "SELECT coalesce(percentile_cont(0.5) WITHIN GROUP"
                " (ORDER BY -(vector <#> %(q)s)::float4), 0) FROM (SELECT vector"
                f" FROM {ns}.entries WHERE tenant = %(tenant)s AND vector IS NOT NULL"
                " ORDER BY sample LIMIT %(sample)s) s",
                {"q": vector, "tenant": tenant, "sample": SAMPLE},
            )
            found = {
                row[0]: row[1:]
                for row in conn.execute(
                    "SELECT id, memory_id, subject, family, kind, revision, generation, text,"
                    f" span_start, span_end FROM {ns}.entries WHERE tenant = %s AND id = ANY(%s)",
                    (tenant, [row[0] for row in best]),
                )
            }
        status = self._anns.get(tenant)
        if status is not None:
            self._anns[tenant] = replace(status, searches=status.searches + 1)
        hits = best_per_memory(
            _vector_hit(tenant, (*found[i][:6], cosine, *found[i][6:]), typical=float(typical))
            for i, cosine in best
            if i in found
        )
        return hits[:k]

    def _live_vectors(self, conn: psycopg.Connection[Any], tenant: str) -> int:
        ns = self.ns
        row = conn.execute(
            f"SELECT docs FROM {ns}.stats WHERE tenant = %s AND kind = 'vectors'",
            (tenant,),
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _ann(self, tenant: str, *, build: bool = True) -> AnnStatus | None:
        """``tenant``'s HNSW index if its tenant-wide searches use one, built when missing
        (``build=False``: only if it exists already)."""
        if self.embedder is None or self.ann_threshold is None:
            return None
        with self._connection() as conn:
            live = self._live_vectors(conn, tenant)
            if live < self.ann_threshold:
                return None
            name = relation_name("hnsw", tenant)
            exists = conn.execute(
                "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
                (self.ns, name),
            ).fetchone()
        status = self._anns.get(tenant)
        if exists is not None:
            if status is None:
                status = AnnStatus(
                    vectors=live, searches=0, builds=0, loads=1, repaired=0, saves=0,
                    build_seconds=0.0,
                )  # fmt: skip
            else:
                status = replace(status, vectors=live)
            self._anns[tenant] = status
            return status
        if not build:
            return None
        started = time.perf_counter()
        with self._transaction() as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {name} ON {t}.entries"
                    " USING hnsw (vector vector_ip_ops) WITH (m = 16, ef_construction = 64)"
                    " WHERE tenant = {tenant}"
                ).format(
                    name=sql.Identifier(name),
                    t=sql.Identifier(self.ns),
                    tenant=sql.Literal(tenant),
                )
            )
        built = time.perf_counter() - started
        previous = self._anns.get(tenant)
        self._anns[tenant] = AnnStatus(
            vectors=live,
            searches=0 if previous is None else previous.searches,
            builds=1 if previous is None else previous.builds + 1,
            loads=0 if previous is None else previous.loads,
            repaired=0,
            saves=1 if previous is None else previous.saves + 1,
            build_seconds=built,
        )
        return self._anns[tenant]

    def _build_anns(self) -> None:
        ns = self.ns
        if self.embedder is None or self.ann_threshold is None:
            return
        with self._connection() as conn:
            tenants = [
                t
                for (t,) in conn.execute(
                    f"SELECT tenant FROM {ns}.stats WHERE kind = 'vectors' AND docs >= %s",
                    (self.ann_threshold,),
                )
            ]
        for tenant in tenants:
            self._ann(tenant)

    def warm(self, tenant: str) -> AnnStatus | None:
        """Build ``tenant``'s HNSW index now if its tenant-wide searches will use one (else
        the first such search builds it); its status (``None``: searches stay exact)."""
        return self._ann(tenant)

    def ann_status(self, tenant: str) -> AnnStatus | None:
        """``tenant``'s HNSW index as this handle knows it, or ``None``."""
        return self._ann(tenant, build=False)


def _vector_hit(tenant: str, row: Sequence[Any], *, typical: float) -> Hit:
    """A vector hit: ``row[6]`` its cosine (a float32 value, as the SQLite index's),
    ``row[7]`` its text, ``row[8:10]`` its passage's span."""
    cosine = float(row[6])
    return replace(hit(tenant, row[:6], cosine - typical, row[7], row[8:10]), cosine=cosine)
