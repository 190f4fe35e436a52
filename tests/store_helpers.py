"""Stores as an older release left them, for the upgrade tests: ``old_sqlite_store``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memledger.store import sqlite as sqlite_store


@contextmanager
def old_sqlite_store(path: Path, version: int) -> Iterator[sqlite3.Connection]:
    """A SQLite store at ``path`` made by its first ``version`` migrations only, open as a
    plain connection for the test to write that release's rows; committed and closed on
    leaving, so that the next open of the store upgrades it."""
    original = sqlite_store.load_migrations
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite_store, "load_migrations", lambda: original()[:version])
        sqlite_store.SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    try:
        yield conn
        conn.commit()
    finally:
        conn.close()
