"""Lexical search of the PostgreSQL index: :meth:`PostgresLexical._match` (what
:meth:`~memledger.index._common.LexicalSearch.search` asks of it), BM25 over the
postings tables, and :func:`write_postings`, how a document's postings are written.

SQLite's FTS5 ``porter unicode61`` tokens, computed in Python
(:mod:`memledger.index._tokens`), are stored one row per (document, distinct token) in
``postings`` (an entry's own words) and ``win_postings`` (a turn with the turns around
it), keyed ``(tenant, lexeme, subject, doc)``. A search reads the query's lexemes of
one tenant, and of the subjects asked for, from that key, index only: tenant and
subject filter inside the query, never after ranking. BM25 has FTS5's formula and
constants (:mod:`memledger.index._subject_bm25`), with the statistics of the tenant
(tenant-wide, from ``stats``, as FTS5's per-tenant tables) or of the subjects
(subject-scoped, from ``entries``, as :mod:`memledger.index._fts`), so both backends
rank alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from memledger.index import _subject_bm25 as bm25
from memledger.index._base import Hit
from memledger.index._common import LexicalQuery, LexicalSearch, hit
from memledger.index._postgres_base import PostgresIndexBase, psycopg
from memledger.index._tokens import stem, tokens
from memledger.index.passages import best_per_memory

__all__ = ["PostgresLexical", "write_postings"]


class PostgresLexical(PostgresIndexBase, LexicalSearch):
    """BM25 search over a tenant's postings."""

    def _match(self, query: LexicalQuery) -> list[Hit]:
        """One statement: the query's lexemes' postings of the tenant (of the subjects),
        their documents' BM25 with the statistics of the tenant (or of the subjects),
        the best ``k`` joined to their entries."""
        ns = self.ns
        tenant, k, subjects, windows = query.tenant, query.k, query.subjects, query.windows
        # a term twice (by its stem) counts twice, as in FTS5
        lexemes = [stem(t) for t in query.terms]
        table = "win_postings" if windows else "postings"
        column = "win_length" if windows else "length"
        params: dict[str, Any] = {"tenant": tenant, "lexemes": lexemes, "k": k}
        if subjects is None:
            stats = (
                f"SELECT docs::float8 AS docs, tokens::float8 / nullif(docs, 0) AS avgdl"
                f" FROM {ns}.stats WHERE tenant = %(tenant)s AND kind = %(kind)s"
            )
            scope = ""
            params["kind"] = "windows" if windows else "entries"
        else:
            wanted = list(dict.fromkeys(subjects))
            if not wanted:
                return []
            stats = (
                f"SELECT count({column})::float8 AS docs,"
                f" sum({column})::float8 / nullif(count({column}), 0) AS avgdl"
                f" FROM {ns}.entries WHERE tenant = %(tenant)s"
                " AND subject = ANY(%(subjects)s)"
            )
            scope = " AND subject = ANY(%(subjects)s)"
            params["subjects"] = wanted
        query_sql = (
            f"WITH stats AS MATERIALIZED ({stats}),"
            " q AS (SELECT lexeme, count(*) AS times FROM unnest(%(lexemes)s::text[])"
            " AS q(lexeme) GROUP BY lexeme),"
            f" p AS MATERIALIZED (SELECT lexeme, doc, tf, length FROM {ns}.{table}"
            f" WHERE tenant = %(tenant)s AND lexeme = ANY(%(lexemes)s::text[]){scope}),"
            " d AS (SELECT lexeme, count(*)::float8 AS hold FROM p GROUP BY lexeme),"
            " w AS (SELECT q.lexeme, q.times * CASE WHEN x > 0 THEN x ELSE 1e-6 END AS idf"
            " FROM q JOIN d USING (lexeme) CROSS JOIN stats,"
            " LATERAL ln((stats.docs - d.hold + 0.5) / (d.hold + 0.5)) AS x),"
            " best AS (SELECT p.doc, sum(w.idf * (p.tf * %(k1p1)s::float8) / (p.tf"
            " + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * p.length / stats.avgdl)))"
            " AS score FROM p JOIN w USING (lexeme) CROSS JOIN stats"
            " GROUP BY p.doc ORDER BY score DESC, p.doc LIMIT %(k)s)"
            " SELECT e.memory_id, e.subject, e.family, e.kind, e.revision, e.generation,"
            f" best.score, e.text, e.span_start, e.span_end FROM best JOIN {ns}.entries e"
            " ON e.tenant = %(tenant)s AND e.id = best.doc ORDER BY best.score DESC, best.doc"
        )
        params.update(k1=bm25.K1, k1p1=bm25.K1 + 1.0, b=bm25.B)
        with self._connection() as conn:
            while True:  # more rows when passages of one turn take several top places
                rows = conn.execute(query_sql, params).fetchall()
                hits = best_per_memory(
                    hit(tenant, row[:6], float(row[6]), row[7], row[8:]) for row in rows
                )
                if len(hits) >= k or len(rows) < params["k"]:
                    return hits[:k]
                params["k"] *= 4


def write_postings(
    conn: psycopg.Connection[Any],
    table: str,
    tenant: str,
    docs: Sequence[tuple[str, int | None, str, int]],
) -> None:
    """One ``COPY`` into ``table`` (``<namespace>.postings`` or ``.win_postings``) of the
    postings of ``(subject, doc, text, length)`` documents of ``tenant``'s."""
    if not docs:
        return
    with conn.cursor().copy(
        f"COPY {table} (tenant, lexeme, subject, doc, tf, length) FROM STDIN"
    ) as copy:
        for subject, doc, text, length in docs:
            for lexeme, tf in Counter(tokens(text)).items():
                copy.write_row((tenant, lexeme, subject, doc, tf, length))
