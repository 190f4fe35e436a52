"""Canonical stores. ``open_store(url)`` picks a backend from a URL."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from memledger.errors import InvalidInputError
from memledger.ports import Store

DEFAULT_URL = "sqlite:///memledger.db"

Failpoint = Callable[[str], None]
"""Called with a step name before every write statement; tests raise from it to inject crashes."""


def open_store(
    url: str | Path | None = None,
    *,
    failpoint: Failpoint | None = None,
    create: bool = True,
    replicas: Sequence[str] = (),
    replica_wait: float = 1.0,
    stale: Literal["primary", "fail"] = "primary",
) -> Store:
    """Open the store a URL names: ``sqlite:///relative.db``, ``sqlite:////abs/path.db``,
    a plain file path, or ``None`` for ``./memledger.db``; ``postgresql://...`` (or
    ``postgres://``) for a PostgreSQL database (the ``postgres`` extra). With
    ``create=False`` a missing store raises :class:`StoreNotFoundError` instead of
    being created. ``replicas``, ``replica_wait`` and ``stale``: read replicas of a
    PostgreSQL store (:class:`~memledger.store.postgres.PostgresStore`)."""
    from memledger.store.sqlite import SQLiteStore

    def sqlite(path: Path) -> Store:
        if replicas:
            raise InvalidInputError("read replicas need a PostgreSQL store (postgresql://...)")
        return SQLiteStore(path, failpoint=failpoint, create=create)

    if url is None:
        url = DEFAULT_URL
    if isinstance(url, Path):
        return sqlite(url)
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        if parts.netloc:
            raise InvalidInputError(
                f"store URL {url!r} has a host; use sqlite:///relative.db or sqlite:////abs.db"
            )
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if not path:
            raise InvalidInputError(f"store URL {url!r} names no file")
        return sqlite(Path(path))
    if parts.scheme in ("postgresql", "postgres"):
        try:
            from memledger.store.postgres import PostgresStore
        except ImportError as exc:
            raise InvalidInputError(str(exc)) from exc
        return PostgresStore(
            url,
            failpoint=failpoint,
            create=create,
            replicas=replicas,
            replica_wait=replica_wait,
            stale=stale,
        )
    if parts.scheme in ("", "file") and "://" not in url:
        return sqlite(Path(url))
    raise InvalidInputError(
        f"unsupported store URL {url!r}; expected sqlite:///path.db or postgresql://..."
    )
