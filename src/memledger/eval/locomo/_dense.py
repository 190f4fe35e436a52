"""The ``dense`` baselines: cosine of turn and question embeddings.

Imported only when a dense retriever is asked for (see :mod:`._registry`): it
needs numpy and an embedder of :mod:`memledger.index.embedders` (the port
:class:`memledger.index.Embedder`: unit-norm rows, so a dot product is a cosine).
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from memledger.eval.locomo._data import Conversation
from memledger.index.embedders import Embedder, Vectors


class DenseRetriever:
    """Ranks the turns of the prepared conversation by cosine with the question."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._ids: list[str] = []
        self._sample_id = ""
        self._vectors: Vectors = np.zeros((0, embedder.dimensions), dtype=np.float32)

    def prepare(self, conversation: Conversation, /) -> None:
        """Embed the turns; a longer prefix of the conversation last prepared (same ids
        first) has only its new turns embedded."""
        ids = [turn.event_id for turn in conversation.turns]
        same = conversation.sample_id == self._sample_id and ids[: len(self._ids)] == self._ids
        held = len(self._ids) if same else 0
        new = [turn.document() for turn in conversation.turns[held:]]
        fresh = self.embedder.embed(new) if new else self._vectors[:0]
        self._vectors = np.concatenate([self._vectors[:held], fresh]) if held else fresh
        self._ids = ids
        self._sample_id = conversation.sample_id

    def footprint(self) -> int:
        """Bytes of the prepared conversation's vectors."""
        return int(self._vectors.nbytes)

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        if not self._ids:
            return []
        query = self.embedder.embed([question])[0]
        scores = self._vectors @ query
        order = np.argsort(-scores, kind="stable")[:k]
        return [self._ids[int(i)] for i in order]
