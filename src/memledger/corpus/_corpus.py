"""The corpus file: documents, chunks, per-tenant FTS5 tables and vectors in one SQLite file.

Layout: ``documents`` (one row per tenant and file: title, kind, content hash,
chunking, modification time, indexing time, headings), ``chunks`` (text,
offsets, section, an optional float32 vector and the name of the embedder that
made it), and for each tenant an FTS5 table ``cfts_<hash of tenant>`` over
title, section and text (each tenant its own BM25 statistics). ``meta`` holds
the schema and a stamp bumped by every write (vector and entity caches follow
it, also across handles).

Vectors made by another embedder than the handle's are re-made on the next
search of their tenant; when the embedder fails there, the search is lexical
(:attr:`Corpus.degraded` says why).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from memledger._files import private_file, sqlite_files, warn_loose
from memledger._sqlite_meta import SqliteMeta
from memledger.corpus._chunking import Piece, check_chunking, chunk_parsed
from memledger.corpus._files import SourceFile, absolute, expand, read_source
from memledger.corpus._model import (
    DEFAULT_FLOOR,
    AddReport,
    Chunk,
    CorpusHit,
    Document,
    HitSource,
    Skipped,
)
from memledger.corpus._parse import DocumentKind, parse_document
from memledger.corpus._search import (
    CHUNK_COLUMNS,
    MAX_TERMS,
    check_search,
    chunk_from_row,
    confidence,
    embed_text,
    fuse,
    is_semantic,
    lexical,
    table_name,
)
from memledger.deadline import check as check_budget
from memledger.domain.gates import content_words
from memledger.domain.records import format_time, parse_time, require_id
from memledger.errors import (
    EmbedderError,
    InvalidInputError,
    InvalidQueryError,
    MigrationError,
    StoreError,
)
from memledger.index.embedders import Embedder
from memledger.index.lexical import query_terms
from memledger.ports import Clock, SystemClock, Tokenizer
from memledger.tokens import ApproxBpeTokenizer

__all__ = ["Corpus"]

SCHEMA = "1"
_KINDS: dict[str, DocumentKind] = {"text": "text", "markdown": "markdown", "html": "html"}
_Done = Literal["added", "replaced", "unchanged"]
"""What adding one file did, when it was not skipped."""


def _chunk_id(tenant: str, path: str, piece: Piece) -> str:
    key = "\x1f".join((tenant, path, str(piece.index), piece.text))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _title_of(path: str) -> str:
    return re.sub(r"[_\-]+", " ", Path(path).stem).strip() or Path(path).name


@dataclass(slots=True)
class _Vectors:
    """One tenant's vectors of the current embedder, as of ``stamp``."""

    stamp: int
    ids: npt.NDArray[np.int64]
    rows: npt.NDArray[np.float32]


class Corpus(SqliteMeta):
    """The shared documents of each tenant (RAG), in one SQLite file (WAL).

    Thread-safe. ``embedder=None`` keeps search lexical; ``tokenizer`` counts chunk
    sizes (default :class:`~memledger.tokens.ApproxBpeTokenizer`); ``clock`` gives
    ``indexed_at``. Corpus documents never become memories: this file is all the
    corpus writes.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        embedder: Embedder | None = None,
        tokenizer: Tokenizer | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.path = Path(path)
        self.embedder = embedder
        self.tokenizer: Tokenizer = tokenizer or ApproxBpeTokenizer()
        self.clock: Clock = clock or SystemClock()
        self.degraded: str | None = None
        """Why the last search went without vectors (the embedder's error), or ``None``."""
        self._lock = threading.RLock()
        self._vectors: dict[str, _Vectors] = {}
        self._entities: dict[str, tuple[int, frozenset[str]]] = {}
        try:
            private_file(self.path)  # owner-only, and so its -wal and -shm files
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the corpus {str(self.path)!r}: {exc}") from exc
        try:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA busy_timeout = 5000")
            with self._transaction():
                self._prepare()
        except sqlite3.Error as exc:
            self._conn.close()
            raise StoreError(f"cannot open the corpus {str(self.path)!r}: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise
        if str(self.path) != ":memory:":
            warn_loose(sqlite_files(self.path), what=f"corpus {str(self.path)!r}")

    def _prepare(self) -> None:
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        found = self._get("schema")
        if found is None:
            self._set("schema", SCHEMA)
        elif found != SCHEMA:
            raise MigrationError(
                f"the corpus {str(self.path)!r} has schema {found!r}, this memledger reads "
                f"{SCHEMA!r}; move it away and add the documents again"
            )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS documents (tenant TEXT NOT NULL, path TEXT NOT NULL,"
            " title TEXT NOT NULL, kind TEXT NOT NULL, sha256 TEXT NOT NULL,"
            " chunking TEXT NOT NULL, last_modified TEXT NOT NULL, indexed_at TEXT NOT NULL,"
            " chunks INTEGER NOT NULL, headings TEXT NOT NULL, PRIMARY KEY (tenant, path))"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS chunks (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,"
            " path TEXT NOT NULL, ord INTEGER NOT NULL, chunk_id TEXT NOT NULL,"
            " section TEXT NOT NULL, text TEXT NOT NULL, tokens INTEGER NOT NULL,"
            " char_start INTEGER NOT NULL, char_end INTEGER NOT NULL,"
            " is_table INTEGER NOT NULL, is_code INTEGER NOT NULL, vector BLOB, vector_of TEXT,"
            " UNIQUE (tenant, chunk_id))"
        )
        self._conn.execute(
            "CREATE INDEX IF NOT EXISTS chunks_document ON chunks (tenant, path, ord)"
        )

    # -- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, committed only on success."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"corpus {str(self.path)!r}: {exc}") from exc
            try:
                yield
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"corpus {str(self.path)!r}: {exc}") from exc
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"corpus {str(self.path)!r}: {exc}") from exc

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"corpus {str(self.path)!r}: {exc}") from exc

    def _bump(self) -> None:
        self._set("stamp", str(self._stamp + 1))

    # -- adding and removing ----------------------------------------------------------------

    def add(
        self,
        tenant: str,
        paths: Sequence[Path | str],
        *,
        chunk_tokens: int = 300,
        overlap_tokens: int = 40,
        progress: Callable[[int, int], None] | None = None,
    ) -> AddReport:
        """Add (or refresh) the files ``paths`` name, directories walked for .txt, .md,
        .markdown, .html and .htm files, to ``tenant``'s corpus.

        Each file is read, parsed, chunked and embedded before its one write
        transaction: a file that cannot be added is listed in
        :attr:`AddReport.skipped` with its reason and leaves nothing behind. An
        unchanged file (same content hash and chunking) is not rewritten; a changed
        one has its chunks replaced at once. ``progress(done, total)`` is called
        after each file.
        """
        require_id(tenant, "tenant", InvalidInputError)
        check_chunking(chunk_tokens, overlap_tokens)
        if isinstance(paths, str | Path):
            paths = [paths]
        files, skipped = expand(paths)
        chunking = f"{chunk_tokens}/{overlap_tokens}/{_tokenizer_name(self.tokenizer)}"
        outcomes: dict[_Done, list[str]] = {"added": [], "replaced": [], "unchanged": []}
        written = 0
        for done, file in enumerate(files, 1):
            outcome, count = self._add_file(
                tenant,
                file,
                chunk_tokens=chunk_tokens,
                overlap_tokens=overlap_tokens,
                chunking=chunking,
            )
            if isinstance(outcome, Skipped):
                skipped.append(outcome)
            else:
                outcomes[outcome].append(str(file))
                written += count
            if progress is not None:
                progress(done, len(files))
        return AddReport(
            added=tuple(outcomes["added"]),
            replaced=tuple(outcomes["replaced"]),
            unchanged=tuple(outcomes["unchanged"]),
            skipped=tuple(skipped),
            chunks=written,
        )

    def _known(self, tenant: str, path: str) -> tuple[str, str, str] | None:
        """``(sha256, chunking, last_modified)`` of a stored document, or ``None``."""
        row = self._conn.execute(
            "SELECT sha256, chunking, last_modified FROM documents WHERE tenant = ? AND path = ?",
            (tenant, path),
        ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]), str(row[2]))

    def _add_file(
        self, tenant: str, file: Path, *, chunk_tokens: int, overlap_tokens: int, chunking: str
    ) -> tuple[_Done | Skipped, int]:
        source = read_source(file)
        if isinstance(source, Skipped):
            return source, 0
        with self._reading():
            known = self._known(tenant, source.path)
        if known is not None and known[:2] == (source.sha256, chunking):
            return self._touch(tenant, source, chunking), 0
        parsed = parse_document(source.text, kind=source.kind)
        pieces = chunk_parsed(
            parsed,
            tokenizer=self.tokenizer,
            chunk_tokens=chunk_tokens,
            overlap_tokens=overlap_tokens,
        )
        check_budget("chunking a corpus document")
        if not pieces:
            return Skipped(path=source.path, reason="empty", detail="no text in it"), 0
        title = parsed.title or _title_of(source.path)
        vectors: list[bytes | None] = [None] * len(pieces)
        if self.embedder is not None:
            try:
                made = self.embedder.embed([embed_text(title, p.section, p.text) for p in pieces])
            except EmbedderError as exc:
                return Skipped(path=source.path, reason="embedder_failed", detail=str(exc)), 0
            vectors = [np.asarray(row, dtype=np.float32).tobytes() for row in made]
        check_budget("indexing a corpus document")
        with self._transaction():
            known = self._known(tenant, source.path)  # again: another writer may have been first
            if known is not None and known[:2] == (source.sha256, chunking):
                return "unchanged", 0
            self._delete_document(tenant, source.path)
            self._insert_document(
                tenant,
                source,
                title=title,
                chunking=chunking,
                headings=parsed.headings,
                pieces=pieces,
                vectors=vectors,
            )
            check_budget("indexing a corpus document")  # inside: past it, rolled back
            self._bump()
        return ("added" if known is None else "replaced"), len(pieces)

    def _touch(self, tenant: str, source: SourceFile, chunking: str) -> _Done:
        """An unchanged document: record a newer modification time, if any, and nothing
        else (chunks, ids and ``indexed_at`` stay)."""
        modified = format_time(source.last_modified)
        with self._reading():
            known = self._known(tenant, source.path)
        if known is None or known[:2] != (source.sha256, chunking) or known[2] == modified:
            return "unchanged"
        with self._transaction():
            self._conn.execute(
                "UPDATE documents SET last_modified = ? WHERE tenant = ? AND path = ?"
                " AND sha256 = ?",
                (modified, tenant, source.path, source.sha256),
            )
            self._bump()
        return "unchanged"

    def _insert_document(
        self,
        tenant: str,
        source: SourceFile,
        *,
        title: str,
        chunking: str,
        headings: Sequence[str],
        pieces: Sequence[Piece],
        vectors: Sequence[bytes | None],
    ) -> None:
        table = table_name(tenant)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(title, section, text,"
            " tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        self._conn.execute(
            "INSERT INTO documents (tenant, path, title, kind, sha256, chunking, last_modified,"
            " indexed_at, chunks, headings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tenant,
                source.path,
                title,
                source.kind,
                source.sha256,
                chunking,
                format_time(source.last_modified),
                format_time(self.clock.now()),
                len(pieces),
                json.dumps(list(headings), ensure_ascii=False),
            ),
        )
        vector_of = None if self.embedder is None else self.embedder.name
        for piece, vector in zip(pieces, vectors, strict=True):
            rowid = self._conn.execute(
                "INSERT INTO chunks (tenant, path, ord, chunk_id, section, text, tokens,"
                " char_start, char_end, is_table, is_code, vector, vector_of)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tenant,
                    source.path,
                    piece.index,
                    _chunk_id(tenant, source.path, piece),
                    piece.section,
                    piece.text,
                    piece.tokens,
                    piece.start,
                    piece.end,
                    int(piece.is_table),
                    int(piece.is_code),
                    vector,
                    None if vector is None else vector_of,
                ),
            ).lastrowid
            self._conn.execute(
                f"INSERT INTO {table} (rowid, title, section, text) VALUES (?, ?, ?, ?)",
                (rowid, title, piece.section, piece.text),
            )

    def _delete_document(self, tenant: str, path: str) -> int:
        """Delete a document and its chunks (inside a transaction); chunks deleted."""
        ids = [
            row[0]
            for row in self._conn.execute(
                "SELECT id FROM chunks WHERE tenant = ? AND path = ?", (tenant, path)
            )
        ]
        if ids:
            table = table_name(tenant)
            self._conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(i,) for i in ids])
            self._conn.execute("DELETE FROM chunks WHERE tenant = ? AND path = ?", (tenant, path))
        self._conn.execute("DELETE FROM documents WHERE tenant = ? AND path = ?", (tenant, path))
        return len(ids)

    def remove(self, tenant: str, path: Path | str) -> int:
        """Remove the document at ``path`` from ``tenant``'s corpus (or, for a directory,
        every document under it); how many chunks went (0: none was there)."""
        require_id(tenant, "tenant", InvalidInputError)
        target = str(absolute(path))
        under = target if target.endswith(os.sep) else target + os.sep
        with self._transaction():
            paths = [
                str(row[0])
                for row in self._conn.execute(
                    "SELECT path FROM documents WHERE tenant = ? AND (path = ?"
                    " OR substr(path, 1, ?) = ?)",
                    (tenant, target, len(under), under),
                )
            ]
            removed = sum(self._delete_document(tenant, p) for p in paths)
            if paths:
                self._bump()
        return removed

    # -- reading ----------------------------------------------------------------------------

    def documents(self, tenant: str) -> list[Document]:
        """``tenant``'s documents, by path."""
        require_id(tenant, "tenant", InvalidQueryError)
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT path, title, kind, last_modified, indexed_at, chunks, sha256"
                " FROM documents WHERE tenant = ? ORDER BY path",
                (tenant,),
            ).fetchall()
        return [
            Document(
                tenant=tenant,
                path=path,
                title=title,
                kind=_KINDS[kind],
                last_modified=parse_time(modified),
                indexed_at=parse_time(indexed),
                chunks=chunks,
                sha256=sha,
            )
            for path, title, kind, modified, indexed, chunks, sha in rows
        ]

    def chunks(self, tenant: str, path: Path | str) -> list[Chunk]:
        """The chunks of ``tenant``'s document at ``path``, in order."""
        require_id(tenant, "tenant", InvalidQueryError)
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d"
                " ON d.tenant = c.tenant AND d.path = c.path"
                " WHERE c.tenant = ? AND c.path = ? ORDER BY c.ord",
                (tenant, str(absolute(path))),
            ).fetchall()
        return [chunk_from_row(tenant, row) for row in rows]

    def entities(self, tenant: str) -> frozenset[str]:
        """The titles and section headings of ``tenant``'s documents, casefolded with
        whitespace collapsed: what a question can name to be routed to the corpus."""
        require_id(tenant, "tenant", InvalidQueryError)
        with self._reading() as conn:
            stamp = self._stamp
            cached = self._entities.get(tenant)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            names: set[str] = set()
            for title, headings in conn.execute(
                "SELECT title, headings FROM documents WHERE tenant = ?", (tenant,)
            ):
                for name in (title, *json.loads(headings)):
                    folded = re.sub(r"\s+", " ", str(name)).strip().casefold()
                    if any(ch.isalnum() for ch in folded):
                        names.add(folded)
            found = frozenset(names)
            self._entities[tenant] = (stamp, found)
            return found

    def search(
        self, query: str, *, tenant: str, k: int = 5, floor: float = DEFAULT_FLOOR
    ) -> list[CorpusHit]:
        """The ``k`` best chunks of ``tenant``'s corpus for ``query`` whose confidence is
        at least ``floor`` (see :class:`CorpusHit`), best first; ``[]`` when none is:
        nothing relevant, rather than the nearest chunk.

        Lexical candidates come from the tenant's own FTS5 table (BM25 over title,
        section and text; any of the query's words, stop words dropped), vector
        candidates from the tenant's own rows; both lists are fused by reciprocal rank.
        """
        check_search(query, tenant=tenant, k=k, floor=floor)
        terms = query_terms(query)[:MAX_TERMS]
        wanted = content_words(" ".join(terms))
        pool = max(4 * k, 20)
        with self._reading() as conn:
            ranked: dict[HitSource, list[int]] = {"lexical": lexical(conn, tenant, terms, pool)}
            cosines = self._cosines(tenant, query)
            if cosines:
                ranked["vector"] = sorted(cosines, key=lambda i: (-cosines[i], i))[:pool]
            fused, sources = fuse(ranked)
            if not fused:
                return []
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d"
                " ON d.tenant = c.tenant AND d.path = c.path"
                f" WHERE c.tenant = ? AND c.id IN ({', '.join('?' * len(fused))})",
                (tenant, *fused),
            ).fetchall()
        semantic = is_semantic(self.embedder)
        hits: list[tuple[int, CorpusHit]] = []
        for row in rows:
            rowid = int(row[0])
            chunk = chunk_from_row(tenant, row)
            sure = confidence(wanted, chunk, cosines.get(rowid, 0.0) if semantic else None)
            if sure >= floor:
                hit = CorpusHit(
                    chunk=chunk, score=fused[rowid], confidence=sure, sources=sources[rowid]
                )
                hits.append((rowid, hit))
        hits.sort(key=lambda item: (-item[1].score, -item[1].confidence, item[0]))
        return [hit for _, hit in hits[:k]]

    def _cosines(self, tenant: str, query: str) -> dict[int, float]:
        """The cosine of every chunk of ``tenant`` to ``query`` (``{}`` without an embedder,
        or when it fails: then :attr:`degraded` says why)."""
        self.degraded = None
        if self.embedder is None:
            return {}
        try:
            vectors = self._tenant_vectors(tenant, self.embedder)
            if not len(vectors.ids):
                return {}
            point = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        except EmbedderError as exc:
            self.degraded = str(exc)
            return {}
        scores = vectors.rows @ point
        return {int(i): float(s) for i, s in zip(vectors.ids, scores, strict=True)}

    def _tenant_vectors(self, tenant: str, embedder: Embedder) -> _Vectors:
        """``tenant``'s vectors of ``embedder``, made first for chunks that lack one (looked
        for only when something was written since they were last read)."""
        held = self._vectors.get(tenant)
        if held is not None and held.stamp == self._stamp:
            return held
        stale = self._conn.execute(
            "SELECT c.id, d.title, c.section, c.text FROM chunks c JOIN documents d"
            " ON d.tenant = c.tenant AND d.path = c.path"
            " WHERE c.tenant = ? AND (c.vector_of IS NULL OR c.vector_of != ?)",
            (tenant, embedder.name),
        ).fetchall()
        if stale:
            made = embedder.embed([embed_text(t, s, x) for _, t, s, x in stale])
            with self._transaction():
                self._conn.executemany(
                    "UPDATE chunks SET vector = ?, vector_of = ? WHERE id = ? AND text = ?",
                    [
                        (np.asarray(v, dtype=np.float32).tobytes(), embedder.name, row[0], row[3])
                        for row, v in zip(stale, made, strict=True)
                    ],
                )
                self._bump()
        stamp = self._stamp
        rows = self._conn.execute(
            "SELECT id, vector FROM chunks WHERE tenant = ? AND vector_of = ? ORDER BY id",
            (tenant, embedder.name),
        ).fetchall()
        matrix = np.zeros((len(rows), embedder.dimensions), dtype=np.float32)
        for n, (_, blob) in enumerate(rows):
            matrix[n] = np.frombuffer(blob, dtype=np.float32)
        held = _Vectors(
            stamp=stamp, ids=np.array([r[0] for r in rows], dtype=np.int64), rows=matrix
        )
        self._vectors[tenant] = held
        return held


def _tokenizer_name(tokenizer: Tokenizer) -> str:
    name = getattr(tokenizer, "name", None)
    return name if isinstance(name, str) else type(tokenizer).__name__
