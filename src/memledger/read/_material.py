"""Relevance of long material's paragraphs to a request, in one cheap pass.

A paragraph's relevance is the share of the request's content words
(:func:`memledger.domain.gates.content_words`) it holds. Only the words that can
stem to one of them are looked at: a stem, or the stem less its last letter (the
``-ies`` to ``-y`` case), begins every word that stems to it, so a scan for those
beginnings finds them all and the share is the one the paragraph's whole set of
content words gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memledger.domain.gates import content_word


def shares(request_words: frozenset[str], paragraphs: Sequence[str]) -> list[float]:
    """For each paragraph, the share of ``request_words`` (content words) it holds."""
    if not request_words:
        return [0.0] * len(paragraphs)
    heads = sorted({word[:-1] for word in request_words})
    words = re.compile(r"(?<![0-9a-z])(?:" + "|".join(map(re.escape, heads)) + r")[0-9a-z]*")
    out: list[float] = []
    for paragraph in paragraphs:
        found = {content_word(w) for w in set(words.findall(paragraph.casefold()))}
        out.append(len(request_words & found) / len(request_words))
    return out
