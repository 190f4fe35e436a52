"""Text helpers shared by compression and summaries: content words and cutting to a
token limit. Pure."""

from __future__ import annotations

import re

from memledger.domain.text import stem
from memledger.ports import Tokenizer

ELLIPSIS = "…"

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves get got please let us show tell give find""".split()
)


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
