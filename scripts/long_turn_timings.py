"""Timings of one long turn through memledger: ingest, process (rule extractor), index
sync, recall. A quick measurement, not a test: ``python scripts/long_turn_timings.py
[--minilm] [MB ...]`` (default 0.5 1 2 4). Prints seconds per stage for each size.
The index embeds with the hashing embedder unless ``--minilm`` asks for the default
(ONNX MiniLM), whose cost is about 0.1 s per passage of 160 words on two cores."""

from __future__ import annotations

import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from memledger import Actor, Memory, SourceEvent
from memledger.index.derived import default_index_path, open_index
from memledger.index.embedders import HashingEmbedder, default_embedder
from memledger.store import open_store
from memledger.testing import FrozenClock

WORDS = (
    "river stone cloud paper system memory engine table window light garden market"
    " harbour ledger signal copper meadow lantern orbit canvas velvet quarry timber"
    " compass falcon glacier hollow island jasmine kettle lagoon mirror needle orchard"
).split()
NAMES = ["Alice", "Bob", "Chen", "Dara", "Emil"]


def text_of(chars: int, *, seed: int = 7, phrase: str = "") -> str:
    """Varied generated sentences and paragraphs, ``phrase`` in the middle."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 22))]
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), rng.choice(NAMES))
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


def run(megabytes: float, *, minilm: bool) -> None:
    chars = int(megabytes * 1_000_000)
    phrase = "The zeppelin mechanic from Reykjavik repaired the quantum harmonica."
    text = text_of(chars, phrase=phrase)
    at = datetime(2026, 3, 1, 12, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "m.db")
        embedder = default_embedder() if minilm else HashingEmbedder()
        assert default_index_path(store).name == "m.db.index"
        memory = Memory(store, clock=FrozenClock(at), index=open_index(store, embedder=embedder))
        event = SourceEvent(
            tenant="acme", event_id="long-1", subject="user-1",
            actor=Actor(id="user-1", authenticated=True), channel="chat",
            occurred_at=at, text=text, metadata={"session": "s1", "speaker": "user-1"},
        )  # fmt: skip
        stages: dict[str, float] = {}
        start = time.perf_counter()
        memory.ingest(event)
        stages["ingest"] = time.perf_counter() - start
        start = time.perf_counter()
        memory.process()
        stages["process"] = time.perf_counter() - start
        start = time.perf_counter()
        memory.index.sync(memory.store)
        stages["sync"] = time.perf_counter() - start
        start = time.perf_counter()
        result = memory.recall("zeppelin mechanic quantum harmonica", tenant="acme", k=10)
        stages["recall"] = time.perf_counter() - start
        shown = result.items[0].passage if result.items else None
        memory.close()
    found = shown is not None and "zeppelin" in shown.text
    print(
        f"{megabytes:>4} MB ({len(text):,} chars): "
        + ", ".join(f"{k} {v:.2f}s" for k, v in stages.items())
        + f"; found the phrase: {found}"
    )


if __name__ == "__main__":
    minilm = "--minilm" in sys.argv
    for size in [float(a) for a in sys.argv[1:] if a != "--minilm"] or [0.5, 1, 2, 4]:
        run(size, minilm=minilm)
