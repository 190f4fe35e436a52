"""Lexical search of the SQLite index: :meth:`SqliteLexical._match` (what
:meth:`~memledger.index._common.LexicalSearch.search` asks of it), and the FTS5 tables
and window documents it reads.

Each tenant has its own FTS5 tables (BM25 weighs terms by corpus statistics; a shared
table would let one tenant's documents change another's scores), made on first use
(:meth:`SqliteLexical._ensure`): ``fts_...``, one row of each entry's words, with a
token of its subject so that a subject filter is part of the match, and ``win_...``,
one row per turn with the :data:`~memledger.index._common.WINDOW_BEFORE` turns before
it and :data:`~memledger.index._common.WINDOW_AFTER` after it in its thread
(:meth:`SqliteLexical._rewindow`, called whenever a turn comes or goes; a separate
table because FTS5's BM25 normalises by the length of all columns; a neighbour lends
only its first :data:`~memledger.index._common.WINDOW_NEIGHBOUR_WORDS` words). The
queries themselves are :mod:`memledger.index._fts`'s.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from memledger.errors import StoreError
from memledger.index import _subject_bm25 as bm25
from memledger.index._base import Hit
from memledger.index._common import WINDOW_AFTER, WINDOW_BEFORE, LexicalQuery, LexicalSearch, lead
from memledger.index._fts import scope_token, search_subjects, search_tenant, table_name
from memledger.index._sqlite_base import SqliteIndexBase

__all__ = ["SqliteLexical"]


class SqliteLexical(SqliteIndexBase, LexicalSearch):
    """BM25 search over a tenant's FTS5 tables, and the writing of its windows."""

    def _match(self, query: LexicalQuery) -> list[Hit]:
        """Tenant-wide by FTS5's ``bm25()``, subject-scoped with the subjects' own
        statistics (:mod:`memledger.index._fts`)."""
        tenant, terms, k, subjects = query.tenant, query.terms, query.k, query.subjects
        table = table_name(tenant, "win" if query.windows else "fts")
        with self._lock:
            try:
                if subjects is None:
                    return search_tenant(self._conn, terms, tenant=tenant, k=k, table=table)
                return search_subjects(
                    self._conn, terms, tenant=tenant, k=k, subjects=subjects, table=table
                )
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []  # nothing of this tenant's has been indexed yet
                raise StoreError(f"index search failed: {exc}") from exc

    # -- writing --------------------------------------------------------------------------

    def _ensure(self, tenant: str, kind: str = "fts") -> str:
        table = table_name(tenant, kind)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
            "text, scope, tokenize = 'porter unicode61')"
        )
        return table

    def _around(self, tenant: str, entry_id: int, *, before: int, after: int) -> list[int]:
        """Entry ids of the ``before`` turns before and ``after`` turns after an entry in
        its thread (none when it has no thread)."""
        anchor = self._conn.execute(
            "SELECT thread, at FROM entries WHERE id = ? AND thread IS NOT NULL", (entry_id,)
        ).fetchone()
        if anchor is None:
            return []
        thread, at = anchor
        earlier = self._conn.execute(
            "SELECT id FROM entries WHERE tenant = ? AND thread = ? AND (at, id) < (?, ?)"
            " ORDER BY at DESC, id DESC LIMIT ?",
            (tenant, thread, at, entry_id, before),
        ).fetchall()
        later = self._conn.execute(
            "SELECT id FROM entries WHERE tenant = ? AND thread = ? AND (at, id) > (?, ?)"
            " ORDER BY at, id LIMIT ?",
            (tenant, thread, at, entry_id, after),
        ).fetchall()
        return [i for (i,) in reversed(earlier)] + [i for (i,) in later]

    def _rewindow(self, tenant: str, entry_ids: Iterable[int]) -> None:
        """Rewrite the window documents of these entries from the turns now around them."""
        table = self._ensure(tenant, "win")
        for entry_id in entry_ids:
            self._conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (entry_id,))
            row = self._conn.execute(
                "SELECT subject, text FROM entries WHERE id = ? AND thread IS NOT NULL",
                (entry_id,),
            ).fetchone()
            if row is None:
                continue
            around = self._around(tenant, entry_id, before=WINDOW_BEFORE, after=WINDOW_AFTER)
            texts = dict(
                self._conn.execute(
                    f"SELECT id, text FROM entries WHERE id IN ({', '.join('?' * len(around))})",
                    around,
                ).fetchall()
            )
            words = " ".join([row[1], *(lead(texts[i]) for i in around if i in texts)])
            self._conn.execute(
                f"INSERT INTO {table} (rowid, text, scope) VALUES (?, ?, ?)",
                (entry_id, words, scope_token(row[0])),
            )
            self._conn.execute(
                "UPDATE entries SET win_length = ? WHERE id = ?", (bm25.length(words), entry_id)
            )

    def _affected(self, tenant: str, entry_id: int) -> list[int]:
        """The entries whose windows hold this one: the turns after it that look back to
        it, and the turns before it that look ahead to it."""
        return self._around(tenant, entry_id, before=WINDOW_AFTER, after=WINDOW_BEFORE)
