"""The lexical half of the derived index: SQLite FTS5 with BM25, in its own file.

Derived state, never the truth: it is fed from the canonical store's outbox
(tailed by sequence, with the cursor kept in the index file), may lag
(:meth:`LexicalIndex.lag`), and can be dropped and rebuilt at any time
(:meth:`LexicalIndex.rebuild`). Every entry carries tenant, subject, family,
kind, memory id, revision and generation, so the read path can recheck each
hit against the canonical store.

Each tenant has its own FTS5 table: BM25 weighs terms by corpus statistics,
and a shared table would let one tenant's documents change another tenant's
scores. Queries drop stop words (FTS5 has no stop-word list of its own; the
LoCoMo baseline needs them gone) and match any remaining term.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memledger.domain.records import JsonValue, MemoryRecord
from memledger.errors import InvalidQueryError, StoreError
from memledger.ports import Store

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)

_WORD = re.compile(r"[0-9a-z]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """One lexical candidate: what the index believed about a record, and its BM25 score
    (higher is better)."""

    tenant: str
    memory_id: str
    subject: str
    family: str
    kind: str
    revision: int
    generation: int
    score: float


def _value_text(value: JsonValue) -> str:
    if isinstance(value, dict):
        return " ".join(_value_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_value_text(v) for v in value)
    return "" if value is None or isinstance(value, bool) else str(value)


def entry_text(record: MemoryRecord) -> str:
    """What a record is found by: an episode's speaker and words, else statement and value."""
    if record.kind == "episode" and isinstance(record.value, dict):
        speaker = record.value.get("speaker")
        text = record.value.get("text")
        return f"{speaker}: {text}" if speaker else str(text)
    return f"{record.claim} {_value_text(record.value)}".strip()


def query_terms(query: str) -> list[str]:
    """The query's words without stop words, in order, each once."""
    return list(dict.fromkeys(w for w in _WORD.findall(query.casefold()) if w not in STOP_WORDS))


def _table(tenant: str) -> str:
    return "fts_" + hashlib.sha256(tenant.encode()).hexdigest()[:20]


class LexicalIndex:
    """A per-tenant FTS5 index over the records of one canonical store."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,"
                " memory_id TEXT NOT NULL, subject TEXT NOT NULL, family TEXT NOT NULL,"
                " kind TEXT NOT NULL, revision INTEGER NOT NULL, generation INTEGER NOT NULL,"
                " text TEXT NOT NULL, UNIQUE (tenant, memory_id))"
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the lexical index {str(self.path)!r}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- feeding --------------------------------------------------------------------------

    @property
    def cursor(self) -> int:
        """The last outbox sequence applied."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'cursor'").fetchone()
        return 0 if row is None else int(row[0])

    def lag(self, store: Store) -> int:
        """Outbox rows the index has not applied yet (0: caught up)."""
        with store.read() as unit:
            return max(0, unit.outbox_head() - self.cursor)

    def sync(self, store: Store, *, batch: int = 1000, limit: int | None = None) -> int:
        """Apply outbox rows after the cursor (all, or ``limit``); returns how many."""
        applied = 0
        while limit is None or applied < limit:
            size = batch if limit is None else min(batch, limit - applied)
            with store.read() as unit:
                rows = unit.outbox_after(self.cursor, limit=size)
                records = {
                    (r.tenant, r.memory_id): unit.get_record(r.tenant, r.memory_id)
                    for r in rows
                    if r.op == "upsert"
                }
            if not rows:
                break
            with self._lock, self._transaction():
                for row in rows:
                    record = records.get((row.tenant, row.memory_id))
                    if row.op == "upsert" and record is not None:
                        self._upsert(record, revision=row.revision, generation=row.generation)
                    elif row.op == "delete":
                        self._delete(row.tenant, row.memory_id, revision=row.revision)
                self._conn.execute(
                    "INSERT INTO meta VALUES ('cursor', ?) ON CONFLICT (key) DO UPDATE"
                    " SET value = excluded.value",
                    (str(rows[-1].seq),),
                )
            applied += len(rows)
        return applied

    def rebuild(self, store: Store) -> int:
        """Drop everything and replay the whole outbox."""
        with self._lock, self._transaction():
            tables = [
                row[0]
                for row in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'fts\\_%'"
                    " ESCAPE '\\' AND sql LIKE '%VIRTUAL TABLE%'"
                )
            ]
            for table in tables:
                self._conn.execute(f"DROP TABLE {table}")
            self._conn.execute("DELETE FROM entries")
            self._conn.execute("DELETE FROM meta WHERE key = 'cursor'")
        return self.sync(store)

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)

    def _ensure(self, tenant: str) -> str:
        table = _table(tenant)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
            "text, tokenize = 'porter unicode61')"
        )
        return table

    def _upsert(self, record: MemoryRecord, *, revision: int, generation: int) -> None:
        row = self._conn.execute(
            "SELECT id, revision FROM entries WHERE tenant = ? AND memory_id = ?",
            (record.tenant, record.memory_id),
        ).fetchone()
        if row is not None and row[1] > revision:
            return  # a newer revision is already indexed
        table = self._ensure(record.tenant)
        text = entry_text(record)
        if row is not None:
            self._conn.execute(
                "UPDATE entries SET revision = ?, generation = ?, text = ? WHERE id = ?",
                (revision, generation, text, row[0]),
            )
            self._conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row[0],))
            entry_id = row[0]
        else:
            entry_id = self._conn.execute(
                "INSERT INTO entries (tenant, memory_id, subject, family, kind, revision,"
                " generation, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.tenant,
                    record.memory_id,
                    record.subject,
                    record.family,
                    record.kind,
                    revision,
                    generation,
                    text,
                ),
            ).lastrowid
        self._conn.execute(f"INSERT INTO {table} (rowid, text) VALUES (?, ?)", (entry_id, text))

    def _delete(self, tenant: str, memory_id: str, *, revision: int) -> None:
        row = self._conn.execute(
            "SELECT id, revision FROM entries WHERE tenant = ? AND memory_id = ?",
            (tenant, memory_id),
        ).fetchone()
        if row is None or row[1] > revision:
            return
        self._conn.execute("DELETE FROM entries WHERE id = ?", (row[0],))
        self._conn.execute(f"DELETE FROM {self._ensure(tenant)} WHERE rowid = ?", (row[0],))

    # -- searching ------------------------------------------------------------------------

    def search(
        self, query: str, *, tenant: str, k: int, subjects: Sequence[str] | None = None
    ) -> list[Hit]:
        """The ``k`` best entries of ``tenant`` for ``query`` (only its own table is read)."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidQueryError(f"k must be a positive whole number, got {k!r}")
        terms = query_terms(query)
        if not terms:
            return []
        table = _table(tenant)
        exists = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        if exists is None:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        sql = (
            "SELECT e.memory_id, e.subject, e.family, e.kind, e.revision, e.generation,"
            f" bm25({table}) FROM {table} JOIN entries e ON e.id = {table}.rowid"
            f" WHERE {table} MATCH ? AND e.tenant = ?"
        )
        params: list[object] = [match, tenant]
        if subjects is not None:
            sql += f" AND e.subject IN ({', '.join('?' * len(subjects))})"
            params.extend(subjects)
        sql += f" ORDER BY bm25({table}) LIMIT ?"
        params.append(k)
        with self._lock:
            rows = self._conn.execute(sql, params).fetchall()
        return [
            Hit(
                tenant=tenant,
                memory_id=m,
                subject=s,
                family=f,
                kind=kd,
                revision=r,
                generation=g,
                score=-score,
            )
            for m, s, f, kd, r, g, score in rows
        ]


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
