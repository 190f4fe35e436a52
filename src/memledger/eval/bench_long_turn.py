"""``memledger bench long-turn``: one long turn (a pasted document) through memledger,
stage by stage: ingest, process (the rule extractor), index sync (its passages) and a
recall by a phrase from its middle; seconds per stage for each size, and whether the
passage shown holds the phrase.

The text is varied generated sentences, paragraphs and lines, with the phrase in the
middle. The index embeds with the hashing embedder unless ``minilm`` asks for the
default (ONNX MiniLM), whose cost is about 0.1 s per passage of 160 words on two cores.
Every size runs in a scratch store of its own; costs are meant to grow in proportion
to the text.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memledger.domain.records import Actor, SourceEvent
from memledger.index.backends import open_index
from memledger.index.embedders import HashingEmbedder, default_embedder
from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock

__all__ = ["PHRASE", "Timing", "markdown", "run", "text_of"]

PHRASE = "The zeppelin mechanic from Reykjavik repaired the quantum harmonica."
QUERY = "zeppelin mechanic quantum harmonica"
_WORDS = (
    "river stone cloud paper system memory engine table window light garden market"
    " harbour ledger signal copper meadow lantern orbit canvas velvet quarry timber"
    " compass falcon glacier hollow island jasmine kettle lagoon mirror needle orchard"
).split()
_NAMES = ["Alice", "Bob", "Chen", "Dara", "Emil"]


def text_of(chars: int, *, seed: int = 7, phrase: str = "") -> str:
    """``chars`` characters of varied generated sentences, ``phrase`` in the middle."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 22))]
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), rng.choice(_NAMES))
        if rng.random() < 0.1:
            words.insert(0, f"line {size}:")
        sentence = " ".join(words).capitalize() + rng.choice([".", ".", "!", "?"])
        sep = "\n\n" if rng.random() < 0.15 else ("\n" if rng.random() < 0.1 else " ")
        parts.append(sentence + sep)
        size += len(sentence) + len(sep)
        if phrase and size >= chars // 2:
            parts.append(phrase + " ")
            size += len(phrase) + 1
            phrase = ""
    return "".join(parts)[:chars]


@dataclass(frozen=True, slots=True)
class Timing:
    """One size: its characters, seconds per stage, and whether the phrase was shown."""

    chars: int
    seconds: dict[str, float]
    found: bool
    passage_words: int

    def to_json(self) -> dict[str, object]:
        return {
            "chars": self.chars,
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "found": self.found,
            "passage_words": self.passage_words,
        }


def run(chars: int, *, minilm: bool = False) -> Timing:
    """One turn of ``chars`` characters through a scratch SQLite store."""
    text = text_of(chars, phrase=PHRASE)
    at = datetime(2026, 3, 1, 12, tzinfo=UTC)
    with tempfile.TemporaryDirectory(prefix="memledger-long-turn-") as folder:
        store = open_store(Path(folder) / "m.db")
        embedder = default_embedder() if minilm else HashingEmbedder()
        memory = Memory(store, clock=FrozenClock(at), index=open_index(store, embedder=embedder))
        event = SourceEvent(
            tenant="acme",
            event_id="long-1",
            subject="user-1",
            actor=Actor(id="user-1", authenticated=True),
            channel="chat",
            occurred_at=at,
            text=text,
            metadata={"session": "s1"},
        )
        seconds: dict[str, float] = {}
        try:
            for stage, step in (
                ("ingest", lambda: memory.ingest(event)),
                ("process", lambda: memory.process()),
                ("sync", lambda: memory.index.sync(memory.store)),
            ):
                start = time.perf_counter()
                step()
                seconds[stage] = time.perf_counter() - start
            start = time.perf_counter()
            result = memory.recall(QUERY, tenant="acme", k=10)
            seconds["recall"] = time.perf_counter() - start
        finally:
            memory.close()
    shown = result.items[0].passage if result.items else None
    return Timing(
        chars=len(text),
        seconds=seconds,
        found=shown is not None and "zeppelin" in shown.text,
        passage_words=0 if shown is None else len(shown.text.split()),
    )


def markdown(timings: list[Timing]) -> str:
    rows = [
        "| turn (characters) | ingest s | process s | index sync s | recall s | phrase shown |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for t in timings:
        s = t.seconds
        rows.append(
            f"| {t.chars:,} | {s['ingest']:.2f} | {s['process']:.2f} | {s['sync']:.2f} "
            f"| {s['recall']:.2f} | {'yes' if t.found else 'no'} ({t.passage_words} words) |"
        )
    return "\n".join(rows)
