"""What a retriever costs on a run of ``bench locomo``: ingest throughput, index size,
peak memory and, with growth checkpoints, search latency as the history grows.

:class:`Metered` wraps a retriever for :func:`memledger.eval.locomo.run`:

* ``prepare`` is timed (what a retriever does with a conversation's turns before its
  first question: ingest, extraction and indexing for ``memledger``, embedding for
  ``dense``) and its turns and tokens (approximate BPE, of ``speaker: text``) counted;
* after each conversation the retriever's ``footprint()`` (bytes on disk or in memory
  of what it built, where it can tell) is read; the last one is the run's size (the
  ``memledger`` store is shared by the conversations of a run, so it holds them all);
* with ``checkpoints`` (tokens, ascending), before a conversation is prepared whole it
  is prepared up to each checkpoint it exceeds (its first turns holding at most that many
  tokens) and every question of the conversation is timed there; a retriever that
  sees the turns it already holds (``memledger``, ``dense``) takes only the new ones, so
  this adds search time, not a second ingest. The harness's own timings are then the
  whole conversation's.

The peak resident set size is the process's (``getrusage``), read when the retriever's
run ends: it covers every retriever created or run before it in the same process.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol, runtime_checkable

from memledger.eval.locomo._data import Conversation, Dataset
from memledger.eval.locomo._harness import Closeable, Passages, Retriever, percentile
from memledger.tokens import ApproxBpeTokenizer


@runtime_checkable
class Footprint(Protocol):
    """A retriever that can tell the bytes of what it built (store, index, vectors)."""

    def footprint(self) -> int | None: ...


@dataclass(slots=True)
class Checkpoint:
    """Search latencies with each conversation's first ``tokens`` tokens ingested."""

    tokens: int
    conversations: int = 0
    turns: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "tokens": self.tokens,
            "conversations": self.conversations,
            "turns_mean": round(self.turns / self.conversations, 1) if self.conversations else 0,
            "questions": len(self.latencies_ms),
            "latency_ms": {
                "p50": round(percentile(self.latencies_ms, 50), 3),
                "p95": round(percentile(self.latencies_ms, 95), 3),
            },
        }


@dataclass(frozen=True, slots=True)
class Costs:
    """A retriever's costs over the conversations of a run (or of merged parts), as
    ``bench locomo`` prints and writes them."""

    conversations: int
    turns: int
    tokens: int
    prepare_seconds: float
    footprint: int | None
    peak_rss_mb: float
    checkpoints: tuple[Checkpoint, ...]

    def to_json(self) -> dict[str, object]:
        """``{"conversations", "turns", "tokens", "prepare_seconds", "turns_per_s",
        "tokens_per_s", "footprint_bytes", "peak_rss_mb", "growth": [...]}``."""
        seconds = self.prepare_seconds
        return {
            "conversations": self.conversations,
            "turns": self.turns,
            "tokens": self.tokens,
            "prepare_seconds": round(seconds, 6),
            "turns_per_s": round(self.turns / seconds, 2) if seconds else None,
            "tokens_per_s": round(self.tokens / seconds, 1) if seconds else None,
            "footprint_bytes": self.footprint,
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "growth": [c.to_json() for c in self.checkpoints if c.conversations],
        }

    def markdown_line(self, name: str) -> str:
        size = "" if self.footprint is None else f", {self.footprint / 1e6:,.1f} MB built"
        rate = self.turns / self.prepare_seconds if self.prepare_seconds else 0.0
        line = (
            f"{name}: prepared {self.turns:,} turns ({self.tokens:,} tokens) in "
            f"{self.prepare_seconds:,.1f} s ({rate:,.2f} turns/s){size}, "
            f"peak RSS {self.peak_rss_mb:,.0f} MiB"
        )
        for checkpoint in self.checkpoints:
            if checkpoint.conversations:
                body = checkpoint.to_json()
                latency = body["latency_ms"]
                assert isinstance(latency, dict)
                line += (
                    f"\n  at {checkpoint.tokens:,} tokens ({body['turns_mean']} turns): "
                    f"search p50 {latency['p50']:.2f} ms, p95 {latency['p95']:.2f} ms"
                )
        return line


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class Metered:
    """A retriever with its preparation timed and measured (see the module docstring)."""

    def __init__(
        self,
        inner: Retriever,
        *,
        dataset: Dataset,
        checkpoints: Sequence[int] = (),
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if list(checkpoints) != sorted(set(checkpoints)) or any(c < 1 for c in checkpoints):
            raise ValueError(f"checkpoints must be ascending positive counts, got {checkpoints}")
        self.inner = inner
        self._dataset = dataset
        self._clock = clock
        self._counter = ApproxBpeTokenizer()
        self.checkpoints = [Checkpoint(tokens) for tokens in checkpoints]
        self.prepare_seconds = 0.0
        self.turns = 0
        self.tokens = 0
        self.conversations = 0
        self.footprint: int | None = None
        self.peak_rss_mb = 0.0

    def prepare(self, conversation: Conversation, /) -> None:
        sizes = [self._counter.count(turn.document()) for turn in conversation.turns]
        asked = [
            q
            for q in self._dataset.questions
            if q.conversation == conversation.sample_id and q.evidence
        ]
        for checkpoint in self.checkpoints:
            if checkpoint.tokens >= sum(sizes):
                break
            held, count = 0, 0
            while count < len(sizes) and held + sizes[count] <= checkpoint.tokens:
                held += sizes[count]
                count += 1
            prefix = replace(conversation, turns=conversation.turns[:count])
            self._timed_prepare(prefix)
            checkpoint.conversations += 1
            checkpoint.turns += count
            now = prefix.last_session_at
            for question in asked:
                checkpoint.latencies_ms.append(self._search_ms(question.text, now))
        self._timed_prepare(conversation)
        self.conversations += 1
        self.turns += len(sizes)
        self.tokens += sum(sizes)
        if isinstance(self.inner, Footprint):
            self.footprint = self.inner.footprint()

    def _timed_prepare(self, conversation: Conversation) -> None:
        started = self._clock()
        self.inner.prepare(conversation)
        self.prepare_seconds += self._clock() - started

    def _search_ms(self, question: str, now: datetime) -> float:
        started = self._clock()
        self.inner.search(question, k=20, now=now)
        return (self._clock() - started) * 1000.0

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        return self.inner.search(question, k=k, now=now)

    def passage(self, event_id: str, /) -> str | None:
        return self.inner.passage(event_id) if isinstance(self.inner, Passages) else None

    def close(self) -> None:
        self.peak_rss_mb = peak_rss_mb()
        if isinstance(self.inner, Closeable):
            self.inner.close()

    def costs(self) -> Costs:
        """What was measured so far: the last footprint read, the process's peak RSS when
        the retriever was closed."""
        return Costs(
            conversations=self.conversations,
            turns=self.turns,
            tokens=self.tokens,
            prepare_seconds=self.prepare_seconds,
            footprint=self.footprint,
            peak_rss_mb=self.peak_rss_mb,
            checkpoints=tuple(self.checkpoints),
        )
