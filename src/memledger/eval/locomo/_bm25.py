"""The lexical baseline: Okapi BM25 over ``"speaker: text [caption]"``.

Two implementations of one ranking (k1 = 1.2, b = 0.75; the query's distinct
terms, less :data:`STOP_WORDS`, OR-ed), each over the turns of the question's
own conversation:

* ``bm25`` (:class:`PythonBm25`): pure Python, lowercase ``[a-z0-9]+`` words,
  :data:`STOP_WORDS` dropped from turns and questions, :func:`light_stem`,
  Lucene's non-negative idf ``log(1 + (N - n + 0.5) / (n + 0.5))``. This is
  the one that reproduces the data README's figure (recall@10 0.604 on
  categories 1-4); without stop words it gives 0.557, stemming off 0.584.
* ``bm25-fts5`` (:class:`Fts5Bm25`): SQLite FTS5 in an in-memory database,
  ``tokenize='porter unicode61'``, ranked by ``bm25()`` (k1 and b built in,
  idf ``log((N - n + 0.5) / (n + 0.5))`` floored near zero). Stop words are
  dropped from the query only, so they still count in turn lengths. The full
  Porter stemmer conflates more than the light one: 0.616 at k=10 (0.568
  without the stop words).

Ties are broken by turn order, so runs are deterministic.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter
from datetime import datetime

from memledger.eval.locomo._data import Conversation

_WORD = re.compile(r"[a-z0-9]+")

STOP_WORDS: frozenset[str] = frozenset(
    """a an the and or but if of to in on at for with by from as is are was were be been being
    do does did have has had i you he she it we they me him her them my your his its our their
    this that these those what which who whom when where why how not no so than too very can
    will just don t s about into over after before up down out""".split()
)
"""English function words (79), dropped from questions (and, in ``bm25``, from turns)."""


class Fts5Bm25:
    """BM25 by SQLite FTS5 (porter stemmer) in a private in-memory database.

    FTS5's ``bm25()`` has k1 = 1.2 and b = 0.75 built in.
    """

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:")
        self._db.execute("CREATE VIRTUAL TABLE turns USING fts5(doc, tokenize='porter unicode61')")
        self._ids: list[str] = []

    def prepare(self, conversation: Conversation, /) -> None:
        with self._db:
            self._db.execute("DELETE FROM turns")
            self._ids = [turn.event_id for turn in conversation.turns]
            self._db.executemany(
                "INSERT INTO turns(rowid, doc) VALUES (?, ?)",
                [(i, turn.document()) for i, turn in enumerate(conversation.turns)],
            )

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        terms = dict.fromkeys(w for w in _WORD.findall(question.lower()) if w not in STOP_WORDS)
        if not terms:
            return []
        query = " OR ".join(f'"{term}"' for term in terms)
        rows = self._db.execute(
            "SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns), rowid LIMIT ?",
            (query, k),
        ).fetchall()
        return [self._ids[rowid] for (rowid,) in rows]

    def close(self) -> None:
        self._db.close()


class PythonBm25:
    """BM25 in pure Python: stop words dropped, :func:`light_stem`, Lucene idf."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._ids: list[str] = []
        self._docs: list[Counter[str]] = []
        self._lengths: list[int] = []
        self._df: Counter[str] = Counter()
        self._avgdl = 0.0

    def prepare(self, conversation: Conversation, /) -> None:
        self._ids = [turn.event_id for turn in conversation.turns]
        self._docs = [Counter(analyse(turn.document())) for turn in conversation.turns]
        self._lengths = [sum(doc.values()) for doc in self._docs]
        self._df = Counter(term for doc in self._docs for term in doc)
        self._avgdl = sum(self._lengths) / max(len(self._docs), 1)

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        n = len(self._docs)
        terms = dict.fromkeys(analyse(question))
        scores: dict[int, float] = {}
        for term in terms:
            df = self._df.get(term, 0)
            if not df:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for i, doc in enumerate(self._docs):
                tf = doc.get(term, 0)
                if tf:
                    norm = self.k1 * (1.0 - self.b + self.b * self._lengths[i] / self._avgdl)
                    scores[i] = scores.get(i, 0.0) + idf * tf * (self.k1 + 1.0) / (tf + norm)
        ranked = sorted(scores, key=lambda i: (-scores[i], i))
        return [self._ids[i] for i in ranked[:k]]


def analyse(text: str) -> list[str]:
    """Lowercase words, less :data:`STOP_WORDS`, each through :func:`light_stem`."""
    return [light_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def light_stem(word: str) -> str:
    """Strip one common English suffix: -ies/-es/-s, -ing, -ed, -ly (words of 4+ letters)."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    for suffix in ("ing", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
