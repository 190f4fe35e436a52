"""Searching the corpus: query checks, lexical candidates, rank fusion, confidence.

Confidence is absolute, in [0, 1]: the share of the query's content words
(:func:`memledger.domain.gates.content_words` of its terms, stop words dropped,
lightly stemmed) that a chunk's title, section and text hold; with a semantic
embedder (any but the spelling-only hashing one) the chunk's cosine to the query
when that is higher. Fused scores are reciprocal-rank sums: they order the hits
of one search only.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Mapping, Sequence

from memledger.corpus._model import Chunk, HitSource
from memledger.domain.gates import content_words
from memledger.domain.records import parse_time, require_id, require_text
from memledger.errors import InvalidQueryError
from memledger.index.embedders import Embedder

__all__ = [
    "CHUNK_COLUMNS",
    "MAX_K",
    "MAX_QUERY",
    "MAX_TERMS",
    "check_search",
    "chunk_from_row",
    "confidence",
    "embed_text",
    "fuse",
    "is_semantic",
    "lexical",
    "table_name",
]

MAX_QUERY = 4000
MAX_K = 100
MAX_TERMS = 64
"""Query terms past this many are not searched."""
_RRF = 60
CHUNK_COLUMNS = (
    "c.id, c.chunk_id, c.path, d.title, c.section, c.text, c.tokens, c.char_start,"
    " c.char_end, c.is_table, c.is_code, d.indexed_at, d.last_modified"
)
"""What :func:`chunk_from_row` reads, from ``chunks c JOIN documents d``."""


def table_name(tenant: str) -> str:
    """The tenant's own FTS5 table."""
    return "cfts_" + hashlib.sha256(tenant.encode()).hexdigest()[:20]


def embed_text(title: str, section: str, text: str) -> str:
    """What a chunk's vector is made of: where it sits, then its text."""
    return " > ".join(part for part in (title, section) if part) + "\n" + text


def is_semantic(embedder: Embedder | None) -> bool:
    """Whether ``embedder``'s cosines mean something (not the spelling-only hashing one)."""
    return embedder is not None and not embedder.name.startswith("hashing:")


def lexical(conn: sqlite3.Connection, tenant: str, terms: Sequence[str], limit: int) -> list[int]:
    """Row ids of the tenant's chunks holding any of ``terms`` (words of ``[0-9a-z]``
    only, from :func:`memledger.index.lexical.query_terms`: never FTS5 syntax), best
    BM25 first."""
    if not terms:
        return []
    table = table_name(tenant)
    match = " OR ".join(f'"{term}"' for term in terms)
    try:
        rows = conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
            f" ORDER BY bm25({table}, 0.5, 1.0, 1.0), rowid LIMIT ?",
            (match, limit),
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []  # nothing added for this tenant yet
        raise
    return [int(row[0]) for row in rows]


def fuse(
    ranked: Mapping[HitSource, Sequence[int]],
) -> tuple[dict[int, float], dict[int, tuple[HitSource, ...]]]:
    """Reciprocal rank fusion: each row's ``sum(1 / (60 + rank))`` over the lists, and
    the lists that hold it."""
    fused: dict[int, float] = {}
    sources: dict[int, tuple[HitSource, ...]] = {}
    for source, ids in ranked.items():
        for rank, rowid in enumerate(ids, 1):
            fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (_RRF + rank)
            sources[rowid] = (*sources.get(rowid, ()), source)
    return fused, sources


def confidence(wanted: frozenset[str] | set[str], chunk: Chunk, cosine: float | None) -> float:
    """How relevant ``chunk`` is to a query with content words ``wanted``, in [0, 1]
    (``cosine``: from a semantic embedder, else ``None``)."""
    words = content_words(f"{chunk.title} {chunk.section} {chunk.text}")
    share = len(wanted & words) / len(wanted) if wanted else 0.0
    if cosine is None:
        return share
    return max(share, min(1.0, max(0.0, cosine)))


def chunk_from_row(tenant: str, row: Sequence[object]) -> Chunk:
    (_, chunk_id, path, title, section, text, tokens, start, end, table, code, at, modified) = row
    return Chunk(
        tenant=tenant,
        chunk_id=str(chunk_id),
        path=str(path),
        title=str(title),
        section=str(section),
        text=str(text),
        tokens=int(tokens),  # type: ignore[call-overload]
        start=int(start),  # type: ignore[call-overload]
        end=int(end),  # type: ignore[call-overload]
        indexed_at=parse_time(str(at)),
        last_modified=parse_time(str(modified)),
        is_table=bool(table),
        is_code=bool(code),
    )


def check_search(query: object, *, tenant: object, k: object, floor: object) -> None:
    """Refuse, with ``InvalidQueryError``, what :meth:`Corpus.search` would refuse."""
    require_id(tenant, "tenant", InvalidQueryError)
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query must be a non-empty string")
    require_text(query, "query", InvalidQueryError)
    if len(query) > MAX_QUERY:
        raise InvalidQueryError(f"query has {len(query)} characters; at most {MAX_QUERY}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidQueryError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    if (
        isinstance(floor, bool)
        or not isinstance(floor, int | float)
        or not 0.0 <= floor <= 1.0  # NaN fails this too
    ):
        raise InvalidQueryError(f"floor must be a number from 0 to 1, got {floor!r}")
