"""SQLite's errors as memledger's, at the edge of every SQLite file it opens that
answers with store errors (the canonical store, session memory).

:func:`translated` wraps a block: a lock or busy timeout becomes
:class:`~memledger.errors.StoreLockedError` (nothing was written, try again), any
other ``sqlite3`` error :class:`~memledger.errors.StoreError`; none escapes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from memledger.errors import StoreError, StoreLockedError


@contextmanager
def translated(what: str) -> Iterator[None]:
    """``sqlite3`` errors raised in the block as store errors naming ``what`` was done."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreLockedError(f"SQLite {what} gave up waiting for the lock: {exc}") from exc
        raise StoreError(f"SQLite {what} failed: {exc}") from exc
    except sqlite3.Error as exc:
        raise StoreError(f"SQLite {what} failed: {exc}") from exc
