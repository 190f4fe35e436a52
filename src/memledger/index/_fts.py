"""Lexical search over a tenant's FTS5 tables: BM25 tenant-wide, or within subjects.

Each tenant has two FTS5 tables (``fts``: each entry's own words; ``win``: a turn
with the turns around it), each row with one scope token naming its subject.
Tenant-wide searches rank with FTS5's ``bm25()``; subject-scoped ones with the
subjects' own statistics (:mod:`memledger.index._subject_bm25`), so no other
subject's words move a score. The subject filter is part of every MATCH.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence

from memledger.index import _subject_bm25 as bm25
from memledger.index._base import Hit
from memledger.index._common import hit
from memledger.index.passages import best_per_memory

_ENTRY = "memory_id, subject, family, kind, revision, generation"
_SPAN = "span_start, span_end"


def scope_token(subject: str) -> str:
    """One FTS5 token for a subject (letters and digits only, so no tokenizer splits it)."""
    return "s" + hashlib.sha256(subject.encode()).hexdigest()[:24]


def table_name(tenant: str, kind: str = "fts") -> str:
    """The tenant's FTS5 table: ``fts`` (each entry's own words) or ``win`` (a turn with
    the turns around it)."""
    return f"{kind}_" + hashlib.sha256(tenant.encode()).hexdigest()[:20]


def search_tenant(
    conn: sqlite3.Connection, terms: Sequence[str], *, tenant: str, k: int, table: str
) -> list[Hit]:
    """The ``k`` best entries of the tenant's ``table`` for any of ``terms`` by FTS5's BM25.
    Raises ``sqlite3.OperationalError`` (no such table) when nothing is indexed yet."""
    match = "text : (" + " OR ".join(f'"{term}"' for term in terms) + ")"
    limit = k
    while True:  # more rows when passages of one turn take several of the top places
        rows = conn.execute(
            f"SELECT e.{_ENTRY.replace(', ', ', e.')}, f.score, e.text, e.span_start,"
            f" e.span_end FROM (SELECT rowid, bm25({table}, 1.0, 0.0) AS score FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY score LIMIT ?) AS f"
            " JOIN entries e ON e.id = f.rowid WHERE e.tenant = ? ORDER BY f.score",
            (match, limit, tenant),
        ).fetchall()
        hits = best_per_memory(hit(tenant, row[:6], -row[6], row[7], row[8:]) for row in rows)
        if len(hits) >= k or len(rows) < limit:
            return hits[:k]
        limit *= 4


def search_subjects(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    *,
    tenant: str,
    k: int,
    subjects: Sequence[str],
    table: str,
) -> list[Hit]:
    """The ``k`` best entries of the subjects in the tenant's ``table``, scored by BM25
    with the subjects' own statistics. Raises ``sqlite3.OperationalError`` (no such
    table) when nothing is indexed yet."""
    wanted = list(dict.fromkeys(subjects))
    if not wanted:
        return []
    scopes = " OR ".join(f'"{scope_token(s)}"' for s in wanted)
    counted = "win_length" if table.startswith("win_") else "length"
    marks = f"highlight({table}, 0, '{bm25.MARK_OPEN}', '{bm25.MARK_CLOSE}')"
    # a document's length is counted once, when it is written (entries.length, win_length)
    matching = (
        f"SELECT f.rowid, {marks}, e.{counted} FROM {table} AS f"
        f" JOIN entries AS e ON e.id = f.rowid WHERE {table} MATCH ?"
    )
    frequencies: dict[int, dict[str, int]] = {}
    sizes: dict[int, int] = {}
    holding: dict[str, int] = {}
    for term in terms:  # one MATCH per term: how many of the subjects' documents hold it
        rows = conn.execute(matching, (f'scope : ({scopes}) AND text : "{term}"',)).fetchall()
        holding[term] = len(rows)
        for rowid, marked, size in rows:
            frequencies.setdefault(rowid, {})[term] = marked.count(bm25.MARK_OPEN)
            sizes[rowid] = size
    if not frequencies:  # no term matched: no statistics needed
        return []
    documents, tokens = conn.execute(
        f"SELECT count({counted}), coalesce(sum({counted}), 0) FROM entries"
        f" WHERE tenant = ? AND subject IN ({', '.join('?' * len(wanted))})",
        (tenant, *wanted),
    ).fetchone()
    if not documents:
        return []
    weights = {term: bm25.idf(documents, n) for term, n in holding.items()}
    average = tokens / documents
    ranked = sorted(
        (
            (bm25.score(f, size=sizes[r], average=average, weights=weights), r)
            for r, f in frequencies.items()
        ),
        key=lambda item: (-item[0], item[1]),
    )
    limit = k
    while True:  # more rows when passages of one turn take several of the top places
        best = ranked[:limit]
        if not best:
            return []
        found = {
            row[0]: row[1:]
            for row in conn.execute(
                f"SELECT id, {_ENTRY}, text, {_SPAN} FROM entries"
                # "+": rows by their ids, never a scan of the tenant's rows
                f" WHERE id IN ({', '.join('?' * len(best))}) AND +tenant = ?",
                (*(r for _, r in best), tenant),
            )
        }
        hits = best_per_memory(
            hit(tenant, found[rowid][:6], value, found[rowid][6], found[rowid][7:])
            for value, rowid in best
            if rowid in found
        )
        if len(hits) >= k or len(best) == len(ranked):
            return hits[:k]
        limit *= 4
