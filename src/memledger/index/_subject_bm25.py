"""BM25 over one subject's documents, with that subject's statistics only.

A tenant's FTS5 table holds every subject's entries, and FTS5's ``bm25()``
takes its statistics (document count, average length, how many documents hold
a term) from the whole table: one subject's words would move another subject's
scores. A subject-scoped search therefore scores the subject's matches here,
with the same formula and constants as FTS5 (``k1 = 1.2``, ``b = 0.75``, an IDF
of ``ln((N - n + 0.5) / (n + 0.5))`` floored at ``1e-6``, a document's length
counted over its text and its one scope token) but with ``N``, ``n`` and the
average length of the subject's documents. For a tenant with one subject the
scores equal FTS5's. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

K1 = 1.2
B = 0.75
MARK_OPEN = "\x01"
MARK_CLOSE = "\x02"
"""The markers ``highlight()`` is asked to put around each matched token."""

_TOKEN = re.compile(r"[^\W_]+")


def length(text: str) -> int:
    """A document's length as FTS5's ``unicode61`` tokenizer counts it, plus the one
    token of its scope column."""
    return len(_TOKEN.findall(text)) + 1


def idf(documents: int, holding: int) -> float:
    value = math.log((documents - holding + 0.5) / (holding + 0.5))
    return value if value > 0 else 1e-6


def score(
    frequencies: Mapping[str, int],
    *,
    size: int,
    average: float,
    weights: Mapping[str, float],
) -> float:
    """BM25 of one document: ``frequencies`` of each query term in it, its length
    ``size``, the average length, and each term's IDF in ``weights``."""
    norm = K1 * (1 - B + B * size / average)
    return sum(weights[t] * (f * (K1 + 1.0)) / (f + norm) for t, f in frequencies.items() if f)
