"""Observation coverage: how many of LoCoMo's generated facts about a speaker the
extractor states as a claim from the turn they were drawn from.

LoCoMo's ``observation`` field lists, per session and speaker, short facts written
by its authors' model, each with the turn it came from ("Caroline attended an LGBTQ
support group recently", ``D1:3``). An observation is *covered* when the extractor,
given that turn as the speaker's, proposes a claim (not an episode) whose statement
has at most :data:`MAX_WORDS` words, is not a copy of the turn, and has MiniLM cosine
at least :data:`MIN_COSINE` with the observation. Statements are compared as the
speaker's ("Is vegetarian" as "Caroline is vegetarian"). The benchmark reads the
observations; the retrieval benchmark never does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memledger.domain.records import Actor, SourceEvent
from memledger.index.embedders import Embedder
from memledger.ports import Extractor

__all__ = ["MAX_WORDS", "MIN_COSINE", "Coverage", "as_said_by", "coverage"]

MAX_WORDS = 25
MIN_COSINE = 0.6


@dataclass(frozen=True, slots=True)
class Coverage:
    observations: int
    covered: int
    turns_with_claims: int
    examples: tuple[tuple[str, str, float], ...]
    """(observation, statement, cosine) of some covered observations."""

    @property
    def share(self) -> float:
        return self.covered / self.observations if self.observations else 0.0


def as_said_by(speaker: str, statement: str) -> str:
    """A claim's statement as a sentence about its speaker: "Is vegetarian" -> "Caroline
    is vegetarian"; "Sister: works as a nurse" -> "Caroline's sister works as a nurse"."""
    person, sep, rest = statement.partition(": ")
    if sep and person and person[:1].isupper() and len(person.split()) <= 3:
        return f"{speaker}'s {person.lower()} {rest}"
    return f"{speaker} {statement[:1].lower()}{statement[1:]}"


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _copy(statement: str, turn: str) -> bool:
    said, source = _words(statement), _words(turn)
    if said == source:
        return True
    return len(source) > 8 and len(set(source) - set(said)) <= len(source) // 10


def coverage(
    path: Path | str, extractor: Extractor, embedder: Embedder, *, examples: int = 5
) -> Coverage:
    """Observation coverage of ``extractor`` on the LoCoMo-shaped file at ``path``."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    observations = 0
    pairs: list[tuple[int, str, str]] = []  # (observation index, observation, statement)
    texts: list[str] = []
    turns_with_claims = 0
    for sample in samples:
        turns = {
            turn["dia_id"]: turn
            for key, session in sample["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for turn in session
        }
        for per_speaker in sample.get("observation", {}).values():
            for speaker, facts in per_speaker.items():
                for fact in facts:
                    text, dia = fact[0], fact[1] if len(fact) > 1 else None
                    turn = turns.get(dia) if isinstance(dia, str) else None
                    if turn is None or turn.get("speaker") != speaker or not isinstance(dia, str):
                        continue
                    index = observations
                    observations += 1
                    claims = extractor.extract(_event(speaker, turn["text"], dia)).claims
                    stated = [
                        as_said_by(speaker, c.statement)
                        for c in claims
                        if c.kind != "episode"
                        and len(c.statement.split()) <= MAX_WORDS
                        and not _copy(c.statement, turn["text"])
                    ]
                    turns_with_claims += bool(stated)
                    for statement in stated:
                        pairs.append((index, text, statement))
                        texts.extend((text, statement))
    covered: dict[int, tuple[str, str, float]] = {}
    if pairs:
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        for n, (index, text, statement) in enumerate(pairs):
            cosine = float(np.dot(vectors[2 * n], vectors[2 * n + 1]))
            best = covered.get(index)
            if cosine >= MIN_COSINE and (best is None or cosine > best[2]):
                covered[index] = (text, statement, cosine)
    shown: Sequence[tuple[str, str, float]] = sorted(covered.values(), key=lambda e: -e[2])
    return Coverage(
        observations=observations,
        covered=len(covered),
        turns_with_claims=turns_with_claims,
        examples=tuple(shown[:examples]),
    )


def _event(speaker: str, text: str, dia: str) -> SourceEvent:
    return SourceEvent(
        tenant="bench",
        event_id=f"obs-{dia}",
        subject=speaker.lower(),
        actor=Actor(id=speaker.lower(), authenticated=True),
        channel="chat",
        occurred_at=datetime(2023, 5, 8, 12, 0, tzinfo=UTC),
        text=text,
        role="user",
    )
