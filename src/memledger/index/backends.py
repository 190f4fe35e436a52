"""Which derived index a store's reads use: :func:`open_index` and the :data:`Index`
both backends satisfy.

For a SQLite store a :class:`~memledger.index.derived.DerivedIndex` in a file beside
it; for a PostgreSQL store a :class:`~memledger.index.postgres.PostgresIndex` in the
store's own database (imported only then: its driver is the ``postgres`` extra).
What a search hands back, :class:`Hit` and :class:`Glance`, is the same from both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from memledger.index._ann import ANN_THRESHOLD
from memledger.index._base import Embedder, Hit
from memledger.index._common import Glance
from memledger.index.derived import DerivedIndex, default_index_path
from memledger.ports import Store

if TYPE_CHECKING:
    from memledger.index.postgres import PostgresIndex

__all__ = ["Glance", "Hit", "Index", "open_index"]

Index: TypeAlias = "DerivedIndex | PostgresIndex"
"""What the read path searches: the SQLite index file or the PostgreSQL index."""


def open_index(
    store: Store,
    *,
    embedder: Embedder | None = None,
    ann_threshold: int | None = ANN_THRESHOLD,
) -> Index:
    """The derived index a store's reads use: for a SQLite store a
    :class:`~memledger.index.derived.DerivedIndex` in ``<store file>.index``; for a
    PostgreSQL store a :class:`~memledger.index.postgres.PostgresIndex` in the store's
    own database, shared by every process that opens it."""
    if store.url.startswith(("postgresql://", "postgres://")):
        from memledger.index.postgres import PostgresIndex

        return PostgresIndex(store, embedder=embedder, ann_threshold=ann_threshold)
    return DerivedIndex(default_index_path(store), embedder=embedder, ann_threshold=ann_threshold)
