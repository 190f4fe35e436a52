"""Session memory in one SQLite file (WAL), beside but apart from the long-term store.

Writes run in ``BEGIN IMMEDIATE`` transactions and commit only when the whole
operation succeeded (the add, its compression and a scheduled compaction); any
exception rolls back. One connection, guarded by a lock, serves every thread.
``sqlite3`` errors are translated to :class:`~memledger.errors.StoreError` here
(:func:`memledger._sqlite.translated`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from memledger._files import private_file, sqlite_files, warn_loose
from memledger._sqlite import translated
from memledger.domain.records import (
    format_time,
    parse_time,
    require_aware,
    require_id,
    require_text,
)
from memledger.errors import InvalidInputError, MigrationError, StoreError
from memledger.ports import Clock, SystemClock, Tokenizer
from memledger.session._compress import compress_tool_output
from memledger.session._model import (
    TURN_ROLES,
    CompactionPolicy,
    Compression,
    ItemRole,
    Role,
    SessionItem,
    SessionView,
    Summarizer,
)
from memledger.session._summarize import ExtractiveSummarizer
from memledger.session._text import cut
from memledger.tokens import ApproxBpeTokenizer

BUSY_TIMEOUT_MS = 30_000

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE session_heads (
            tenant TEXT NOT NULL,
            session TEXT NOT NULL,
            last_seq INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (tenant, session)
        ) WITHOUT ROWID""",
        """CREATE TABLE session_items (
            tenant TEXT NOT NULL,
            session TEXT NOT NULL,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'summary')),
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            at TEXT NOT NULL,
            name TEXT,
            compression TEXT,
            covers_from INTEGER,
            covers_to INTEGER,
            PRIMARY KEY (tenant, session, seq),
            CHECK ((role = 'summary') = (covers_from IS NOT NULL AND covers_to IS NOT NULL))
        ) WITHOUT ROWID""",
        """CREATE UNIQUE INDEX session_items_one_summary
            ON session_items (tenant, session) WHERE role = 'summary'""",
    ),
)
"""Append-only: migration ``n`` is ``_MIGRATIONS[n - 1]``; the file's ``user_version``
says how many were applied."""

_ITEM_ROLES: dict[str, ItemRole] = {
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "summary": "summary",
}

_COLUMNS = "seq, role, text, tokens, at, name, compression, covers_from, covers_to"


def default_session_path(store_file: Path | str) -> Path:
    """``<store file>.sessions``: the session file beside a SQLite store's file."""
    return Path(f"{store_file}.sessions")


class SessionMemory:
    """Per-session working memory: the recent turns and tool results of each
    (tenant, session), with a rolling window and a running summary.

    Nothing here is ever written to the long-term store, and nothing here becomes
    long-term memory on its own: only the write pipeline (``Memory.ingest``) decides
    what survives a session, and :meth:`end` forgets the session. The file refuses
    to be a memledger store's own file.

    Compaction runs on a schedule (see :class:`CompactionPolicy`), inside the
    transaction of the add that reaches it: the oldest turns beyond the window are
    folded into the session's one summary item and deleted. Tool results over
    ``policy.tool_tokens`` are compressed on arrival (see :meth:`add_turn`).

    Thread-safe (one connection behind a lock); several processes may share the
    file (SQLite's write lock serialises them). Token counts are made with
    ``tokenizer`` when an item is written: reopen a file with the same tokenizer.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        tokenizer: Tokenizer | None = None,
        clock: Clock | None = None,
        policy: CompactionPolicy | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        if policy is not None and not isinstance(policy, CompactionPolicy):
            raise InvalidInputError(
                f"policy must be a CompactionPolicy, got {type(policy).__name__}"
            )
        self.path = Path(path)
        self.tokenizer: Tokenizer = tokenizer or ApproxBpeTokenizer()
        self.clock: Clock = clock or SystemClock()
        self.policy = policy or CompactionPolicy()
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer(tokenizer=self.tokenizer)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if not self.path.parent.is_dir():
            raise StoreError(f"cannot open {str(self.path)!r}: folder does not exist")
        try:
            private_file(self.path)  # owner-only, and so its -wal, -shm and -journal files
        except OSError as exc:
            raise StoreError(f"cannot create {str(self.path)!r}: {exc}") from exc
        with translated(f"open {str(self.path)!r}"):
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
            try:
                self._migrate(conn)
            except BaseException:
                conn.close()
                raise
        self._conn = conn
        warn_loose(sqlite_files(self.path), what=f"session memory {str(self.path)!r}")

    # -- lifecycle ------------------------------------------------------------------

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                str(row[0])
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                    " AND name NOT LIKE 'sqlite%'"
                )
            }
            if tables - {"session_heads", "session_items"}:
                what = "a memledger store" if "schema_migrations" in tables else "another database"
                raise InvalidInputError(
                    f"{str(self.path)!r} is {what}, not a session memory file: session "
                    "memory lives in a file of its own (see default_session_path)"
                )
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > len(_MIGRATIONS):
                raise MigrationError(
                    f"{str(self.path)!r} has session schema version {version}; this "
                    f"memledger knows up to {len(_MIGRATIONS)}: upgrade memledger"
                )
            for statements in _MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {len(_MIGRATIONS)}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SessionMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, translated("write"):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, translated("read"):
            conn = self._connection()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"session memory {str(self.path)!r} is closed")
        return self._conn

    # -- writes ---------------------------------------------------------------------

    def add_turn(
        self,
        tenant: str,
        session: str,
        *,
        role: Role,
        text: str,
        at: datetime | None = None,
        need: str | None = None,
        name: str | None = None,
    ) -> SessionItem:
        """Append a turn to the session and return it (compaction may follow, in the
        same transaction, when the schedule says so).

        ``role="tool"`` is a tool result; ``name`` (the tool's name) and ``need``
        (what the step that called the tool wants: its question or goal) are for tool
        results only. A tool result over ``policy.tool_tokens`` tokens is *compressed
        on arrival* to at most that: the lines (or JSON values) sharing the most
        content words with ``need`` are kept with the head (for JSON, the top-level
        shape), the rest is dropped, and ``SessionItem.compression`` records what was
        dropped. **The original text is not kept**, only its SHA-256 and size: a caller
        who may need it later must keep it elsewhere. Other turns are stored as given.

        ``at`` (aware; default: the clock) is when the turn happened. Bad input raises
        :class:`InvalidInputError` and writes nothing.
        """
        tenant, session = _ids(tenant, session)
        if not isinstance(role, str) or role not in TURN_ROLES:
            raise InvalidInputError(f"role must be one of {sorted(TURN_ROLES)}, got {role!r}")
        text = require_text(text, "text", InvalidInputError)
        if not text.strip():
            raise InvalidInputError("text must not be empty")
        if role != "tool" and (need is not None or name is not None):
            raise InvalidInputError(f"need and name are for tool results only, not role {role!r}")
        if need is not None:
            need = require_text(need, "need", InvalidInputError)
            if not need.strip():
                raise InvalidInputError("need must not be empty when given")
        if name is not None:
            name = _id(name, "name")
        moment = require_aware(self.clock.now() if at is None else at, "at", InvalidInputError)

        compression: Compression | None = None
        if role == "tool":
            text, compression = compress_tool_output(
                text, need=need, max_tokens=self.policy.tool_tokens, tokenizer=self.tokenizer
            )
        tokens = self.tokenizer.count(text)
        with self._write() as conn:
            row = conn.execute(
                "SELECT last_seq FROM session_heads WHERE tenant = ? AND session = ?",
                (tenant, session),
            ).fetchone()
            seq = 1 if row is None else int(row[0]) + 1
            item = SessionItem(
                tenant=tenant,
                session=session,
                seq=seq,
                role=role,
                text=text,
                tokens=tokens,
                at=moment,
                name=name,
                compression=compression,
            )
            conn.execute(
                "INSERT INTO session_heads VALUES (?, ?, ?, ?) ON CONFLICT (tenant, session)"
                " DO UPDATE SET last_seq = excluded.last_seq, updated_at = excluded.updated_at",
                (tenant, session, seq, format_time(self.clock.now())),
            )
            _insert(conn, item)
            unsummarized = _turn_count(conn, tenant, session)
            if unsummarized >= self.policy.window_turns + self.policy.every_turns:
                self._compact(conn, tenant, session, fold=unsummarized - self.policy.window_turns)
        return item

    def compact(self, tenant: str, session: str) -> SessionItem | None:
        """Fold every turn older than the window into the summary now, ahead of the
        schedule; returns the new summary, or ``None`` when no turn lies beyond the
        window. The schedule then counts again from the window."""
        tenant, session = _ids(tenant, session)
        with self._write() as conn:
            beyond = _turn_count(conn, tenant, session) - self.policy.window_turns
            if beyond <= 0:
                return None
            return self._compact(conn, tenant, session, fold=beyond)

    def _compact(
        self, conn: sqlite3.Connection, tenant: str, session: str, *, fold: int
    ) -> SessionItem:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM session_items WHERE tenant = ? AND session = ? ORDER BY seq",
            (tenant, session),
        ).fetchall()
        items = [_item(tenant, session, r) for r in rows]
        previous = next((i for i in items if i.role == "summary"), None)
        folded = [i for i in items if i.role != "summary"][:fold]
        limit = self.policy.summary_tokens
        text = self.summarizer.summarize(
            None if previous is None else previous.text, folded, max_tokens=limit
        )
        if not isinstance(text, str):
            raise TypeError(f"the summarizer returned {type(text).__name__}, not a string")
        text = cut(text.strip(), limit, self.tokenizer)
        first = folded[0].seq if previous is None or previous.covers is None else previous.covers[0]
        summary = SessionItem(
            tenant=tenant,
            session=session,
            seq=folded[-1].seq,
            role="summary",
            text=text,
            tokens=self.tokenizer.count(text),
            at=self.clock.now(),
            covers=(first, folded[-1].seq),
        )
        conn.execute(
            "DELETE FROM session_items WHERE tenant = ? AND session = ? AND seq <= ?",
            (tenant, session, folded[-1].seq),
        )
        _insert(conn, summary)
        return summary

    def end(self, tenant: str, session: str) -> None:
        """Forget the session: its turns, summary and numbering (a session started
        again under the same id counts from 1). Nothing of it becomes long-term
        memory; feed ``Memory.ingest`` before this what should. Unknown: a no-op."""
        tenant, session = _ids(tenant, session)
        with self._write() as conn:
            for table in ("session_items", "session_heads"):
                conn.execute(
                    f"DELETE FROM {table} WHERE tenant = ? AND session = ?", (tenant, session)
                )

    # -- reads ----------------------------------------------------------------------

    def view(self, tenant: str, session: str, *, budget_tokens: int | None = None) -> SessionView:
        """The session now: its summary (if any), then the turns after it, oldest first.

        With ``budget_tokens``, at most that many tokens: the summary first if it fits,
        then the newest turns that fit in what is left, stopping at the first that does
        not (a view never has a gap). An unknown session gives an empty view.
        """
        tenant, session = _ids(tenant, session)
        if budget_tokens is not None and (
            isinstance(budget_tokens, bool)
            or not isinstance(budget_tokens, int)
            or budget_tokens < 0
        ):
            raise InvalidInputError(
                f"budget_tokens must be a non-negative integer, got {budget_tokens!r}"
            )
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM session_items WHERE tenant = ? AND session = ?"
                " ORDER BY seq",
                (tenant, session),
            ).fetchall()
        items = [_item(tenant, session, r) for r in rows]
        summary = next((i for i in items if i.role == "summary"), None)
        if budget_tokens is None:
            return SessionView(
                items=tuple(items), summary=summary, tokens=sum(i.tokens for i in items)
            )
        return _budgeted(items, summary, budget_tokens)

    def sessions(self, tenant: str) -> list[str]:
        """The tenant's sessions that hold anything, sorted by id."""
        tenant = _id(tenant, "tenant")
        with self._read() as conn:
            rows = conn.execute(
                "SELECT session FROM session_heads WHERE tenant = ? ORDER BY session", (tenant,)
            ).fetchall()
        return [str(row[0]) for row in rows]


def _id(value: object, what: str) -> str:
    checked = require_id(value, what, InvalidInputError)
    if checked.endswith("\n"):  # require_id's pattern ends in "$", which admits a final "\n"
        raise InvalidInputError(f"{what} {checked!r} is not a valid identifier")
    return checked


def _ids(tenant: str, session: str) -> tuple[str, str]:
    return _id(tenant, "tenant"), _id(session, "session")


def _budgeted(
    items: Sequence[SessionItem], summary: SessionItem | None, budget: int
) -> SessionView:
    left = budget
    keep_summary = summary is not None and summary.tokens <= left
    if summary is not None and keep_summary:
        left -= summary.tokens
    turns = [i for i in items if i.role != "summary"]
    start = len(turns)
    while start > 0 and turns[start - 1].tokens <= left:
        start -= 1
        left -= turns[start].tokens
    kept = ([summary] if summary is not None and keep_summary else []) + turns[start:]
    return SessionView(
        items=tuple(kept),
        summary=summary if keep_summary else None,
        tokens=sum(i.tokens for i in kept),
        dropped_for_budget=len(items) - len(kept),
    )


def _turn_count(conn: sqlite3.Connection, tenant: str, session: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM session_items WHERE tenant = ? AND session = ? AND role != 'summary'",
        (tenant, session),
    ).fetchone()
    return int(row[0])


def _insert(conn: sqlite3.Connection, item: SessionItem) -> None:
    compression = None
    if item.compression is not None:
        c = item.compression
        compression = json.dumps(
            {
                "kept_tokens": c.kept_tokens,
                "dropped_tokens": c.dropped_tokens,
                "dropped": c.dropped,
                "original_sha256": c.original_sha256,
            },
            ensure_ascii=False,
        )
    conn.execute(
        f"INSERT INTO session_items (tenant, session, {_COLUMNS})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            item.tenant,
            item.session,
            item.seq,
            item.role,
            item.text,
            item.tokens,
            format_time(item.at),
            item.name,
            compression,
            None if item.covers is None else item.covers[0],
            None if item.covers is None else item.covers[1],
        ),
    )


def _item(tenant: str, session: str, row: tuple[Any, ...]) -> SessionItem:
    seq, role, text, tokens, at, name, compression, covers_from, covers_to = row
    found: Compression | None = None
    if compression is not None:
        data = json.loads(compression)
        found = Compression(
            kept_tokens=int(data["kept_tokens"]),
            dropped_tokens=int(data["dropped_tokens"]),
            dropped=str(data["dropped"]),
            original_sha256=str(data["original_sha256"]),
        )
    if role not in _ITEM_ROLES:
        raise StoreError(f"session file holds an unknown role {role!r}")
    return SessionItem(
        tenant=tenant,
        session=session,
        seq=int(seq),
        role=_ITEM_ROLES[role],
        text=str(text),
        tokens=int(tokens),
        at=parse_time(str(at)),
        name=None if name is None else str(name),
        compression=found,
        covers=None if covers_from is None else (int(covers_from), int(covers_to)),
    )
