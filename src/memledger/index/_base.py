"""The embedder port and what every implementation shares: :class:`EmbedderBase` (its
``name``, ``dimensions`` and ``repr``), :func:`check_texts`, :func:`check_dimensions`
and :func:`normalise_rows`; and :class:`Hit`, what a search returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from memledger.errors import EmbedderError, InvalidInputError

__all__ = [
    "Embedder",
    "EmbedderBase",
    "Hit",
    "Vectors",
    "check_dimensions",
    "check_texts",
    "normalise_rows",
]

Vectors: TypeAlias = npt.NDArray[np.float32]
"""A ``(n, dimensions)`` float32 matrix, one L2-normalised row per text."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose dot product is their cosine similarity.

    ``name`` identifies the vector space: ``"<family>:<model>:<dimensions>:v<version>"``
    (``"hashing:char3+word:384:v1"``, ``"minilm:all-MiniLM-L6-v2:384:v1.0.0"``).
    Vectors are comparable only between embedders with the same name; an index
    records it next to every vector and re-embeds when it changes.

    ``embed`` returns a C-contiguous float32 array of shape
    ``(len(texts), dimensions)``, row ``i`` for ``texts[i]``, each row of unit
    L2 norm, or all zeros when the text has nothing to embed (the hashing
    embedder on an empty or punctuation-only text). An empty ``texts`` gives
    shape ``(0, dimensions)``. Batching is the embedder's business: callers may
    pass any number of texts. Failures raise
    :class:`~memledger.errors.EmbedderError`; a bare ``str`` instead of a
    sequence of texts raises :class:`~memledger.errors.InvalidInputError`.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


class EmbedderBase:
    """The ``name`` and ``dimensions`` of an embedder (set as ``_name`` and
    ``_dimensions`` when it is built), and a ``repr`` naming its class and name."""

    _name: str
    _dimensions: int

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r})"


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, or ``InvalidInputError`` if it is not a sequence of strings."""
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
        raise InvalidInputError(
            f"texts must be a sequence of strings (a list or tuple), got {type(texts).__name__!r}"
        )
    items = list(texts)
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise InvalidInputError(f"texts[{index}] must be a string, got {type(text).__name__!r}")
    return items


def check_dimensions(dimensions: object, *, what: str = "dimensions") -> int:
    """A positive ``int`` or ``InvalidInputError``."""
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise InvalidInputError(f"{what} must be a positive integer, got {dimensions!r}")
    return dimensions


def normalise_rows(matrix: npt.ArrayLike, *, dimensions: int, source: str) -> Vectors:
    """``matrix`` as C-contiguous float32 with unit rows (zero rows stay zero).

    Raises ``EmbedderError`` (``dimension_mismatch``) when the rows do not have
    ``dimensions`` entries, (``invalid_json``) when a value is not finite;
    ``source`` names the embedder in the message.
    """
    array = np.array(matrix, dtype=np.float32, copy=True, ndmin=2)
    if array.ndim != 2 or array.shape[1] != dimensions:
        raise EmbedderError(
            f"{source} gave vectors of shape {array.shape!r}, expected {dimensions} columns",
            reason="dimension_mismatch",
        )
    if not np.isfinite(array).all():
        raise EmbedderError(
            f"{source} gave a vector with NaN or infinite values", reason="invalid_json"
        )
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    np.divide(array, norms, out=array, where=norms > 0)
    return np.ascontiguousarray(array, dtype=np.float32)


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """One candidate: what the index believed about a record, and its score.

    Lexical hits score by BM25 (higher is better); vector hits by their cosine
    similarity to the query above the median of the entries searched (how much
    nearer than a typical entry), with the raw ``cosine`` alongside.
    """

    tenant: str
    memory_id: str
    subject: str
    family: str
    kind: str
    revision: int
    generation: int
    score: float
    text: str
    """The text the index holds for the entry (what it was found by)."""
    cosine: float | None = None
    span: tuple[int, int] | None = None
    """For a long turn, the ``(start, end)`` offsets into its text of the passage that
    matched (:mod:`memledger.index.passages`); ``None`` for an entry held whole."""
