"""``memledger bench context``: context packets on real conversations, against loading
the whole history.

Each conversation of a LoCoMo-format file (``../shared/data/locomo-dev.json``,
``../shared/data/beam-dev.json``) is fed through the write path as the ``memledger``
benchmark retriever does (one tenant per conversation, the rule extractor), then,
for up to ``questions`` of its questions, a packet is built three ways and timed
with ``perf_counter_ns``:

* ``cold``: the full read path (recall over the derived index, recheck, budget,
  render, trace stored);
* ``hot``: the hot tier only (the subject's current values, read from the hot
  cache: no index read);
* ``prepared``: a packet served from a :meth:`Memory.prepare` result made before
  the question (the prepare itself is not timed: it runs between turns).

Tokens are counted with :class:`memledger.tokens.ApproxBpeTokenizer`. "Whole
history" is every turn said before the question as ``speaker: text``: what a
long-context agent would send instead. Cost uses seed 001's price, $3 per
million input tokens, per call. Nothing is asserted about timings.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path

from memledger.eval.locomo._data import load
from memledger.eval.locomo._harness import percentile
from memledger.eval.locomo._memledger import MemledgerRetriever, _id
from memledger.eval.machine import describe
from memledger.index.embedders import Embedder
from memledger.read.hot import Tier
from memledger.read.packet import Packet
from memledger.tokens import ApproxBpeTokenizer

PRICE_PER_MILLION = 3.0
"""Dollars per million input tokens (seed 001's figure)."""

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Timing:
    p50_ms: float
    p95_ms: float


@dataclass(frozen=True, slots=True)
class ContextReport:
    corpus: str
    conversations: int
    packets: int
    budget: int
    cold: Timing
    hot: Timing
    prepared: Timing
    packet_tokens_mean: float
    packet_tokens_max: int
    history_tokens_mean: float
    history_tokens_max: int
    cost_per_call_packet: float
    cost_per_call_history: float
    machine: dict[str, str | int]

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _timed(build: Callable[..., Packet], tier: Tier, *, into: list[float]) -> Packet:
    started = time.perf_counter_ns()
    packet = build(tier=tier)
    into.append((time.perf_counter_ns() - started) / 1e6)
    return packet


def _timing(samples: Sequence[float]) -> Timing:
    return Timing(
        p50_ms=round(percentile(samples, 50), 3), p95_ms=round(percentile(samples, 95), 3)
    )


def run(
    path: Path,
    *,
    budget: int = 2000,
    questions: int = 20,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> ContextReport:
    """Build and time packets for ``questions`` questions of every conversation."""
    data = load(path)
    counter = ApproxBpeTokenizer()
    cold: list[float] = []
    hot: list[float] = []
    prepared: list[float] = []
    packet_tokens: list[int] = []
    history_tokens: list[int] = []
    conversations = 0
    with tempfile.TemporaryDirectory(prefix="memledger-bench-context-"):
        for conversation in data.conversations:
            asked = [q for q in data.questions if q.conversation == conversation.sample_id]
            asked = asked[:questions]
            if not asked:
                continue
            conversations += 1
            retriever = MemledgerRetriever(embedder=embedder)
            try:
                retriever.prepare(conversation)
                memory = retriever.memory
                tenant = _id(conversation.sample_id)
                now = conversation.last_session_at + timedelta(days=1)
                retriever.clock.set(max(retriever.clock.now(), now))
                history = "\n".join(f"{t.speaker}: {t.text}" for t in conversation.turns)
                whole = counter.count(history)
                for n, question in enumerate(asked):
                    build = partial(
                        memory.context,
                        question.text,
                        tenant=tenant,
                        subject="conversation",
                        budget=budget,
                    )
                    packet = _timed(build, "full", into=cold)
                    packet_tokens.append(packet.tokens)
                    history_tokens.append(whole)
                    memory.hot.current(
                        memory.reading, tenant=tenant, subject="conversation"
                    )  # warm
                    _timed(build, "hot", into=hot)
                    memory.prepare(question.text, tenant=tenant, subject="conversation")
                    _timed(build, "prepared", into=prepared)
                    if progress is not None:
                        progress(conversation.sample_id, n + 1, len(asked))
            finally:
                retriever.close()
    mean_packet = sum(packet_tokens) / max(1, len(packet_tokens))
    mean_history = sum(history_tokens) / max(1, len(history_tokens))
    return ContextReport(
        corpus=path.name,
        conversations=conversations,
        packets=len(cold),
        budget=budget,
        cold=_timing(cold),
        hot=_timing(hot),
        prepared=_timing(prepared),
        packet_tokens_mean=round(mean_packet, 1),
        packet_tokens_max=max(packet_tokens, default=0),
        history_tokens_mean=round(mean_history, 1),
        history_tokens_max=max(history_tokens, default=0),
        cost_per_call_packet=round(mean_packet * PRICE_PER_MILLION / 1e6, 6),
        cost_per_call_history=round(mean_history * PRICE_PER_MILLION / 1e6, 6),
        machine=describe(),
    )


def markdown(reports: Sequence[ContextReport]) -> str:
    """The reports side by side: timings per tier, tokens and cost per call."""
    lines = [
        "| corpus | packets | budget | cold p50 / p95 ms | hot p50 / p95 ms "
        "| prepared p50 / p95 ms | packet tokens (mean / max) | whole history tokens "
        "(mean / max) | $ per call: packet / history |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in reports:
        lines.append(
            f"| {r.corpus} | {r.packets} | {r.budget} | {r.cold.p50_ms:.1f} / {r.cold.p95_ms:.1f} "
            f"| {r.hot.p50_ms:.2f} / {r.hot.p95_ms:.2f} "
            f"| {r.prepared.p50_ms:.2f} / {r.prepared.p95_ms:.2f} "
            f"| {r.packet_tokens_mean:,.0f} / {r.packet_tokens_max:,} "
            f"| {r.history_tokens_mean:,.0f} / {r.history_tokens_max:,} "
            f"| {r.cost_per_call_packet:.5f} / {r.cost_per_call_history:.4f} |"
        )
    return "\n".join(lines)
