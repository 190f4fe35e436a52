"""``memledger bench ingest``: real turns of a LoCoMo-shaped file through the write path
and the index, stage by stage.

Each conversation's turns (its first ``turns``, or all) go into a scratch SQLite store
as ``bench locomo``'s ``memledger`` retriever feeds them (its
:func:`~memledger.eval.locomo._memledger.source_events`), one stage after another, each
timed:

* ``ingest``: :meth:`Memory.ingest` of each turn (the ledger row, the job, the commit);
* ``extract``: :meth:`Memory.process` with the rule extractor (claims, the episode);
* ``embed``: the index's embedder calls during the sync (records and passages);
* ``index``: the rest of the sync: passages cut, lexical rows, vectors and windows
  written.

Turns per second and tokens per second (approximate BPE, of the turn's text) are given
per stage and end to end, with the count and approximate tokens of what was embedded.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memledger.eval.locomo import Conversation, load
from memledger.eval.locomo._memledger import TICK, source_events
from memledger.index.backends import open_index
from memledger.index.embedders import Embedder, Vectors
from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.tokens import ApproxBpeTokenizer
from memledger.write.extract.rules import RuleExtractor

__all__ = ["STAGES", "Report", "markdown", "run"]

STAGES = ("ingest", "extract", "embed", "index")


class _Timed:
    """An embedder whose calls are timed and counted (the vectors are the inner one's)."""

    def __init__(self, inner: Embedder, clock: Callable[[], float]) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.seconds = 0.0
        self.texts = 0
        self.tokens = 0
        self._clock = clock
        self._counter = ApproxBpeTokenizer()

    def embed(self, texts: Sequence[str]) -> Vectors:
        started = self._clock()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += self._clock() - started
            self.texts += len(texts)
            self.tokens += sum(self._counter.count(text) for text in texts)


@dataclass(slots=True)
class Report:
    """Seconds per stage over every conversation run, and what went through."""

    embedder: str
    conversations: int = 0
    turns: int = 0
    tokens: int = 0
    embedded_texts: int = 0
    embedded_tokens: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def to_json(self) -> dict[str, object]:
        def rates(seconds: float) -> dict[str, float | None]:
            return {
                "seconds": round(seconds, 3),
                "turns_per_s": round(self.turns / seconds, 2) if seconds else None,
                "tokens_per_s": round(self.tokens / seconds, 1) if seconds else None,
            }

        return {
            "embedder": self.embedder,
            "conversations": self.conversations,
            "turns": self.turns,
            "tokens": self.tokens,
            "embedded_texts": self.embedded_texts,
            "embedded_tokens": self.embedded_tokens,
            "stages": {stage: rates(self.seconds[stage]) for stage in STAGES},
            "total": rates(self.total),
        }


def run(
    path: str | Path,
    *,
    embedder: Embedder | None,
    conversations: int | None = None,
    turns: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Report:
    """Feed the first ``conversations`` conversations of ``path`` (their first ``turns``
    turns each, or all) stage by stage; each in a scratch store of its own."""
    dataset = load(path)
    if conversations is not None:
        dataset = dataset.limit(conversations)
    timed = None if embedder is None else _Timed(embedder, clock)
    report = Report(embedder="none" if embedder is None else embedder.name)
    counter = ApproxBpeTokenizer()
    for conversation in dataset.conversations:
        cut = conversation.turns if turns is None else conversation.turns[:turns]
        _feed(
            Conversation(conversation.sample_id, conversation.speakers, cut), timed, report, clock
        )
        report.conversations += 1
        report.turns += len(cut)
        report.tokens += sum(counter.count(turn.text) for turn in cut)
    if timed is not None:
        report.embedded_texts, report.embedded_tokens = timed.texts, timed.tokens
    return report


def _feed(
    conversation: Conversation,
    embedder: _Timed | None,
    report: Report,
    clock: Callable[[], float],
) -> None:
    with tempfile.TemporaryDirectory(prefix="memledger-ingest-") as folder:
        store = open_store(Path(folder) / "ingest.db")
        index = open_index(store, embedder=embedder)
        clock_of = FrozenClock(datetime(2000, 1, 1, tzinfo=UTC))
        memory = Memory(store, clock=clock_of, index=index)
        try:
            events = source_events(conversation)
            started = clock()
            for event in events:
                clock_of.set(max(clock_of.now() + TICK, event.occurred_at))
                memory.ingest(event)
            extracting = clock()
            memory.process(extractor=RuleExtractor(), tenant=events[0].tenant if events else "x")
            syncing = clock()
            embedded = 0.0 if embedder is None else embedder.seconds
            index.sync(store)
            done = clock()
            embed = 0.0 if embedder is None else embedder.seconds - embedded
            report.seconds["ingest"] += extracting - started
            report.seconds["extract"] += syncing - extracting
            report.seconds["embed"] += embed
            report.seconds["index"] += done - syncing - embed
        finally:
            index.close()
            memory.close()


def markdown(report: Report) -> str:
    body = report.to_json()
    stages = body["stages"]
    assert isinstance(stages, dict)
    lines = [
        f"memledger bench ingest: {report.conversations} conversations, {report.turns:,} turns, "
        f"{report.tokens:,} tokens (approx.), embedder {report.embedder}, "
        f"{report.embedded_texts:,} texts embedded ({report.embedded_tokens:,} tokens)",
        "",
        "| stage | seconds | turns/s | tokens/s | share |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    total = report.total or 1.0
    for stage in (*STAGES, "total"):
        row = body["total"] if stage == "total" else stages[stage]
        assert isinstance(row, dict)
        seconds = float(row["seconds"])
        lines.append(
            f"| {stage} | {seconds:,.2f} | {row['turns_per_s'] or 0:,.2f} "
            f"| {row['tokens_per_s'] or 0:,.0f} | {seconds / total:.0%} |"
        )
    return "\n".join(lines)
