"""The tokens of SQLite FTS5's ``porter unicode61`` tokenizer, computed in Python.

The PostgreSQL index (:mod:`memledger.index.postgres`) scores with the same BM25
as the SQLite index's FTS5 tables, so it must see the same tokens; PostgreSQL's
own parsers do not give them (``to_tsvector('english', ...)`` drops stop words
and stems with Snowball's "porter2"; ``'simple'`` keeps ``e.g`` and URLs whole).
Measured on the 5,266 turns of the two dev corpora
(``docs/design/postgres-index.md``): nltk's Porter stemmer in Martin Porter's own
mode stems every one of their 12,566 distinct words as FTS5 does.

* ``unicode61``: a token is a run of letters and digits (``_`` and punctuation
  separate), lower-cased, with the diacritics of Latin letters removed;
* ``porter``: tokens of 3 to 64 bytes are stemmed (FTS5 passes shorter and longer
  ones through). A token that is not ASCII after folding is kept as it is: FTS5's
  Porter steps only ever strip ASCII suffixes, which such a token seldom ends in.

Pure, and cached per word: a corpus repeats its words.
"""

from __future__ import annotations

import functools
import re
import unicodedata

try:
    from nltk.stem.porter import PorterStemmer  # type: ignore[import-untyped]
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise ImportError(
        "the PostgreSQL index needs the postgres extra: pip install 'memledger[postgres]'"
    ) from exc

__all__ = ["STEMMER_VERSION", "stem", "tokens"]

STEMMER_VERSION = "porter-martin:unicode61:v1"
"""Names this tokenizer in the index's meta row: a change rebuilds the index."""

_TOKEN = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
_STEMMER = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)


def _fold(word: str) -> str:
    """Lower-cased, with combining marks removed from what decomposes into them."""
    lowered = word.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFD", lowered)
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
    )


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """One folded word as FTS5's ``porter`` tokenizer leaves it."""
    if not word.isascii() or not 3 <= len(word) <= 64:
        return word
    return str(_STEMMER.stem(word, to_lowercase=False))


def tokens(text: str) -> list[str]:
    """The ``porter unicode61`` tokens of ``text``, in order."""
    return [stem(w) for w in (_fold(t) for t in _TOKEN.findall(text)) if w]
