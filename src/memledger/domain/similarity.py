"""Text similarity without a model: cosine of character-trigram counts.

Robust to inflection and small edits ("Fridays" vs "Friday"), symmetric, in
``[0, 1]``, and 1.0 exactly for texts equal after normalisation. Embedding
similarity, when an embedder is configured, is combined with it by the caller.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Casefolded words separated by single spaces; punctuation dropped."""
    return _NON_WORD.sub(" ", text.casefold()).strip()


@lru_cache(maxsize=4096)
def trigrams(text: str) -> Counter[str]:
    """Character trigrams of the normalised text, each word padded with spaces."""
    grams: Counter[str] = Counter()
    for word in normalise(text).split():
        padded = f"  {word} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return grams


def cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    dot = sum(count * large[gram] for gram, count in small.items())
    norm = math.sqrt(sum(c * c for c in a.values())) * math.sqrt(sum(c * c for c in b.values()))
    return min(1.0, dot / norm)


def similarity(a: str, b: str) -> float:
    """Trigram cosine of two texts; 1.0 when they normalise to the same words."""
    if normalise(a) == normalise(b):
        return 1.0 if normalise(a) else 0.0
    return cosine(trigrams(a), trigrams(b))
