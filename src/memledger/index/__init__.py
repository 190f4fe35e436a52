"""Indexes for the read path: the embedders that turn texts into vectors.

:mod:`memledger.index.embedders` holds the :class:`~memledger.index.embedders.Embedder`
port and its implementations (all-MiniLM-L6-v2 on onnxruntime, the default; the
same model on torch; hashing; an OpenAI-compatible endpoint; an LRU cache around
any of them). The index is derived state: it is
rebuilt from the canonical records, never read as the truth.
"""
