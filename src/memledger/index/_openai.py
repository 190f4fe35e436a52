"""An embedder for any OpenAI-compatible ``/embeddings`` endpoint.

httpx is an optional dependency (the ``llm`` extra); importing this module
never needs it, constructing an :class:`OpenAIEmbedder` without it raises a
plain :class:`ImportError` that names the extra.

Failures raise :class:`~memledger.errors.EmbedderError` with a ``reason``:

=========================  ===================================================
reason                     cause
=========================  ===================================================
``endpoint_unreachable``   connection refused, DNS failure, connection dropped
``timeout``                no answer within ``timeout`` seconds
``http_<code>``            a non-2xx status; the message quotes the body's start
``invalid_json``           body not JSON, no ``data`` list, not one embedding per
                           input with indices ``0..n-1``, a non-number value
``dimension_mismatch``     a vector whose length is not ``dimensions``
=========================  ===================================================

The API key is sent as ``Authorization: Bearer ...`` and never appears in a
message or ``repr``; it is masked out of quoted response bodies.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NoReturn

import numpy as np
from pydantic import BaseModel, ConfigDict

from memledger._openai_http import Endpoint, EndpointClient, excerpt, validate_body
from memledger.errors import EmbedderError
from memledger.index._base import (
    EmbedderBase,
    Vectors,
    check_dimensions,
    check_texts,
    normalise_rows,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["VERSION", "FailureReason", "OpenAIEmbedder"]

VERSION = "1"
"""Version of this adapter (request building and answer parsing), part of ``name``."""

FailureReason = Literal["endpoint_unreachable", "timeout", "invalid_json", "dimension_mismatch"]
"""The fixed ``EmbedderError.reason`` values; a non-2xx status gives ``"http_<code>"``."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")

    index: int
    embedding: list[float] | str


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    data: list[_Item]


class OpenAIEmbedder(EndpointClient, EmbedderBase):
    """Embeds texts by posting them to ``{base_url}/embeddings`` in batches.

    ``dimensions`` is the vector size the model gives (1536 for OpenAI's
    ``text-embedding-3-small``, 768 for ``nomic-embed-text``); every answer is
    checked against it. With ``request_dimensions=True`` it is also sent as
    the request's ``dimensions`` field, for models that can shorten their
    vectors. At most ``batch_size`` texts go in one request. ``timeout``
    bounds connecting and each wait for data, in seconds. Pass ``client`` to
    reuse an ``httpx.Client``; it stays the caller's to close. Otherwise the
    embedder owns one: :meth:`close` it or use the embedder as a context manager.
    Rows are re-normalised, so servers that return unnormalised vectors work too.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimensions: int,
        api_key: str | None = None,
        request_dimensions: bool = False,
        batch_size: int = 128,
        timeout: float = 20.0,
        client: httpx.Client | None = None,
    ) -> None:
        check_dimensions(dimensions)
        check_dimensions(batch_size, what="batch_size")
        self._endpoint = Endpoint(
            base_url=base_url,
            path="/embeddings",
            model=model,
            api_key=api_key,
            timeout=timeout,
            client=client,
            owner="OpenAIEmbedder",
        )
        self._dimensions = dimensions
        self._request_dimensions = bool(request_dimensions)
        self._batch_size = batch_size
        self._name = f"openai:{model}:{dimensions}:v{VERSION}"

    def request_body(self, texts: Sequence[str]) -> dict[str, object]:
        """The JSON body posted for one batch (no credentials in it)."""
        body: dict[str, object] = {
            "model": self._endpoint.model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self._request_dimensions:
            body["dimensions"] = self._dimensions
        return body

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        batches = [
            self._embed_batch(items[start : start + self._batch_size])
            for start in range(0, len(items), self._batch_size)
        ]
        return batches[0] if len(batches) == 1 else np.concatenate(batches)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        answer = validate_body(
            self._endpoint.post(self.request_body(texts), fail=self._fail),
            _Answer,
            what="an embeddings list",
            shown=self._endpoint.shown,
            fail=self._fail,
        )
        if sorted(item.index for item in answer.data) != list(range(len(texts))):
            self._fail(
                f"{self._endpoint.shown!r} answered {len(answer.data)} embeddings with indices "
                f"{excerpt(str([item.index for item in answer.data]))} "
                f"for {len(texts)} inputs",
                reason="invalid_json",
            )
        rows = [self._vector(item) for item in sorted(answer.data, key=lambda i: i.index)]
        for index, row in enumerate(rows):
            if row.shape != (self._dimensions,):
                self._fail(
                    f"{self._endpoint.shown!r} answered a vector of {row.shape[0]} dimensions "
                    f"for input {index}, expected {self._dimensions} "
                    f"(model {self._endpoint.model!r}; is 'dimensions' right?)",
                    reason="dimension_mismatch",
                )
        try:
            return normalise_rows(np.stack(rows), dimensions=self._dimensions, source=repr(self))
        except EmbedderError as exc:
            self._fail(str(exc), reason=exc.reason)

    # -- answer ---------------------------------------------------------------------

    def _vector(self, item: _Item) -> Vectors:
        if isinstance(item.embedding, list):
            return np.asarray(item.embedding, dtype=np.float32)
        try:  # encoding_format "base64": little-endian float32
            raw: bytes | None = base64.b64decode(item.embedding, validate=True)
        except (binascii.Error, ValueError):
            raw = None
        if raw is None or len(raw) % 4:
            self._fail(
                f"embedding {item.index} from {self._endpoint.shown!r} is neither a list of "
                f"numbers nor base64 float32",
                reason="invalid_json",
            )
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)

    def _fail(self, message: str, *, reason: str) -> NoReturn:
        """Raise ``EmbedderError``; ``reason`` is a ``FailureReason`` or ``http_<code>``."""
        raise EmbedderError(self._endpoint.mask(message), reason=reason) from None
