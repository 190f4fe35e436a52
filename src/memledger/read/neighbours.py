"""Recall's third stage, :func:`lend`: conversation turns are read with their neighbours.

BM25 also runs over each turn's window (:mod:`memledger.read.candidates`), and a turn
near strongly matching turns of the same thread gains a share of their score (weights by
distance, ``context_after`` and ``context_before``), the neighbours joining as
candidates: an answer often sits one or two turns after the words of the question. Only
candidates that passed the recheck lend their score. A question whose evidence is the
turn that states each thing (one that gathers several of a kind, or asks when something
happened) lends only ``stated_context_weight`` of it; in a conversation with an
assistant a turn lends ``agent_context_weight`` of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memledger.domain.records import MemoryRecord
from memledger.index.backends import Index
from memledger.read.recall_settings import RecallSettings
from memledger.read.results import Source
from memledger.read.understand import Shape

__all__ = ["Near", "adjacency", "lend", "role_of"]

Near = Mapping[str, Sequence[tuple[str, int]]]
"""For each anchor, its neighbours in the thread with their offsets (-1 is just before)."""


def lend(
    index: Index,
    *,
    tenant: str,
    kept: Mapping[str, MemoryRecord],
    base: Mapping[str, float],
    fused: dict[str, float],
    sources: dict[str, set[Source]],
    shape: Shape,
    tuning: RecallSettings,
) -> Near:
    """Adds to ``fused`` each kept turn's share of its best anchors' ``base`` scores, the
    neighbours joining ``sources`` as ``"context"``; the neighbours read, by anchor.
    Only turns sit in a thread: a claim anchored here would only take a turn's place."""
    anchors = sorted(
        (m for m, r in kept.items() if r.kind == "episode"), key=lambda m: (-base[m], m)
    )
    window = max(len(tuning.context_after), len(tuning.context_before))
    lends = tuning.stated_context_weight if shape.gathers or shape.dates else 1.0
    near = index.neighbours(tenant, anchors[: tuning.context_anchors], window=window)
    for anchor, neighbours in near.items():
        for neighbour, offset in neighbours:
            weights = tuning.context_after if offset > 0 else tuning.context_before
            if abs(offset) > len(weights):
                continue
            share = lends * weights[abs(offset) - 1] * base[anchor]
            if role_of(kept[anchor]) is not None:  # a conversation with an assistant
                share *= tuning.agent_context_weight
            fused[neighbour] = fused.get(neighbour, 0.0) + share
            sources.setdefault(neighbour, set()).add("context")
    return near


def adjacency(near: Near) -> dict[str, set[str]]:
    """Who sits beside whom, both ways."""
    adjacent: dict[str, set[str]] = {}
    for anchor, neighbours in near.items():
        for neighbour, _ in neighbours:
            adjacent.setdefault(anchor, set()).add(neighbour)
            adjacent.setdefault(neighbour, set()).add(anchor)
    return adjacent


def role_of(record: MemoryRecord) -> str | None:
    """Who spoke a turn (``user``, ``assistant``, ``tool``), from its episode; ``None``
    for other records and for turns between peers."""
    role = record.value.get("role") if isinstance(record.value, dict) else None
    return role if isinstance(role, str) else None
