"""Text helpers shared by compression and summaries: content words and cutting to a
token limit. Pure."""

from __future__ import annotations

import re

from memledger.domain.text import ENGLISH_STOP_WORDS, stem
from memledger.ports import Tokenizer

ELLIPSIS = "…"

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[^\W_]+")
_STOP = ENGLISH_STOP_WORDS | frozenset("get got please let us show tell give find".split())


def content_words(text: str) -> frozenset[str]:
    """The stemmed content words of ``text``: camelCase and snake_case split, folded to
    lower case, stop words and single letters left out (``"invoiceTotal"`` and
    ``"invoice totals"`` both give ``{"invoic", "total"}``)."""
    words: set[str] = set()
    for raw in _WORD.findall(_CAMEL.sub(" ", text)):
        word = raw.casefold()
        if word in _STOP or (len(word) < 2 and not word.isdigit()):
            continue
        words.add(stem(word))
    return frozenset(words)


def cut(text: str, max_tokens: int, tokenizer: Tokenizer) -> str:
    """``text`` if it has at most ``max_tokens`` tokens, else its longest prefix (found
    by bisection) that, with ``…`` appended, does ("" when not even ``…`` fits)."""
    if tokenizer.count(text) <= max_tokens:
        return text
    if tokenizer.count(ELLIPSIS) > max_tokens:
        return ""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if tokenizer.count(text[:middle].rstrip() + ELLIPSIS) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip() + ELLIPSIS
