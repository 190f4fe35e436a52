"""LoCoMo retrieval benchmark: turn-level evidence recall@k over raw turns.

``load(path)`` reads ``locomo-dev.json``; ``run(retriever, dataset, name=...)``
drives any :class:`Retriever` and returns a :class:`Report`; retrievers are
found by name in a registry (``register_retriever``, ``create_retriever``).
Built-ins: ``bm25`` (pure Python, light stemming), ``bm25-fts5`` (SQLite
FTS5, Porter stemming), ``dense`` (all-MiniLM-L6-v2: the ``minilm`` extra) and
``dense-hashing`` (the character-hash embedder).
"""

from memledger.eval.locomo._bm25 import STOP_WORDS, Fts5Bm25, PythonBm25, light_stem
from memledger.eval.locomo._data import (
    ANSWERABLE,
    CATEGORIES,
    CATEGORY_BY_NUMBER,
    CategoryName,
    Conversation,
    Dataset,
    LocomoFormatError,
    Question,
    Turn,
    load,
    parse_evidence,
    parse_session_date,
)
from memledger.eval.locomo._harness import (
    GROUPS,
    Closeable,
    Group,
    QuestionResult,
    Report,
    Retriever,
    Tokenizer,
    percentile,
    run,
)
from memledger.eval.locomo._registry import (
    RetrieverFactory,
    RetrieverUnavailableError,
    UnknownRetrieverError,
    create_retriever,
    register_retriever,
    retriever_names,
)
from memledger.tokens import ApproxBpeTokenizer

__all__ = [
    "ANSWERABLE",
    "CATEGORIES",
    "CATEGORY_BY_NUMBER",
    "GROUPS",
    "STOP_WORDS",
    "ApproxBpeTokenizer",
    "CategoryName",
    "Closeable",
    "Conversation",
    "Dataset",
    "Fts5Bm25",
    "Group",
    "LocomoFormatError",
    "PythonBm25",
    "Question",
    "QuestionResult",
    "Report",
    "Retriever",
    "RetrieverFactory",
    "RetrieverUnavailableError",
    "Tokenizer",
    "Turn",
    "UnknownRetrieverError",
    "create_retriever",
    "light_stem",
    "load",
    "parse_evidence",
    "parse_session_date",
    "percentile",
    "register_retriever",
    "retriever_names",
    "run",
]
