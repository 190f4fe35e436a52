"""A model-free embedder: signed feature hashing of words and character trigrams."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from hashlib import blake2b

import numpy as np

from memledger.errors import InvalidInputError
from memledger.index._base import (
    EmbedderBase,
    Vectors,
    check_dimensions,
    check_texts,
    normalise_rows,
)

__all__ = ["HashingEmbedder"]

VERSION = "1"
"""Version of the feature scheme; bump it whenever a vector could change."""

_WORD = re.compile(r"\w+")
_MIN_DIMENSIONS = 16
_MAX_DIMENSIONS = 1 << 16


def features(text: str, *, word_weight: float = 1.0) -> dict[str, float]:
    """The weighted features of ``text``: words (``"w:lyon"``) and padded character
    trigrams of each word (``"c: ly"``, ``"c:lyo"``, ...), sublinear term frequency
    ``1 + log(count)``. Words are NFKC-folded and casefolded Unicode ``\\w+`` runs."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    counts: Counter[str] = Counter()
    for word in words:
        counts["w:" + word] += 1
        padded = f" {word} "
        counts.update("c:" + padded[i : i + 3] for i in range(len(padded) - 2))
    return {
        feature: (1.0 + math.log(count)) * (word_weight if feature[0] == "w" else 1.0)
        for feature, count in counts.items()
    }


@lru_cache(maxsize=1 << 17)
def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    """Column and sign of ``feature``: blake2b, so the same in every process."""
    digest = int.from_bytes(blake2b(feature.encode(), digest_size=8).digest(), "little")
    return (digest >> 1) % dimensions, 1.0 if digest & 1 else -1.0


class HashingEmbedder(EmbedderBase):
    """Deterministic, dependency-free (numpy only) and always available.

    Each text becomes the signed feature hash of its words and character
    trigrams (see :func:`features`) into ``dimensions`` columns, L2-normalised.
    It captures spelling overlap, not meaning: "moved to Lyon" is close to
    "lives in Lyon" (shared word) and "Lyons", far from "relocated to France".
    A text without any word character gives the zero row. Thread-safe.
    """

    def __init__(self, *, dimensions: int = 384, word_weight: float = 1.0) -> None:
        check_dimensions(dimensions)
        if not _MIN_DIMENSIONS <= dimensions <= _MAX_DIMENSIONS:
            raise InvalidInputError(
                f"dimensions must be between {_MIN_DIMENSIONS} and {_MAX_DIMENSIONS}, "
                f"got {dimensions!r}"
            )
        if (
            isinstance(word_weight, bool)
            or not isinstance(word_weight, int | float)
            or not 0 < word_weight < math.inf
        ):
            raise InvalidInputError(f"word_weight must be a positive number, got {word_weight!r}")
        self._dimensions = dimensions
        self._word_weight = float(word_weight)
        weight = "" if self._word_weight == 1.0 else f"w{self._word_weight:g}"
        self._name = f"hashing:char3+word{weight}:{dimensions}:v{VERSION}"

    def __repr__(self) -> str:
        """``HashingEmbedder(name=...)``, for a subclass too: its vectors are these."""
        return f"HashingEmbedder(name={self._name!r})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        matrix = np.zeros((len(items), self._dimensions), dtype=np.float32)
        for row, text in enumerate(items):
            weighted = features(text, word_weight=self._word_weight)
            if not weighted:
                continue
            columns = np.empty(len(weighted), dtype=np.intp)
            values = np.empty(len(weighted), dtype=np.float32)
            for i, (feature, weight) in enumerate(weighted.items()):
                column, sign = _slot(feature, self._dimensions)
                columns[i] = column
                values[i] = sign * weight
            np.add.at(matrix[row], columns, values)
        if not items:
            return matrix
        return normalise_rows(matrix, dimensions=self._dimensions, source=repr(self))
