"""A test's own embedder in front of the hashing one: subclasses override ``embed``."""

from __future__ import annotations

from collections.abc import Sequence

from memledger.index.embedders import HashingEmbedder, Vectors


class HashingWrapper:
    """The hashing embedder under another name in a test: same name, same vectors."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed(texts)
