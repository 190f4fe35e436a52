"""The parts of a ``bench locomo`` run (``--parts DIR``): one JSON file per conversation
and retriever, holding all that the run's report is computed from.

A part is written whole or not at all (:func:`memledger._files.write_private`: a
hidden scratch file in the same folder, then ``os.replace``), only once its conversation
is done, so a run killed at any moment leaves complete parts and at most a hidden
``.tmp`` file, which nothing reads. Its name is ``conversation-007.bm25.json`` (the
1-based position of the conversation in the input file, then the retriever); it holds:

* ``run`` (:class:`RunKey`): what every part of one report shares, the input file (its
  size and the sha256 of its bytes), ``ks``, the ``--growth`` checkpoints, the recall
  settings of the ``memledger`` retrievers, the kind of store and memledger's version
  and commit. Parts with another ``run`` are never merged together: reading them
  raises :class:`PartsError` naming the file and what differs;
* ``questions``: each question asked, with the fields recall is scored on (category,
  evidence, the turns of an update or a contradiction) and its outcome: the distinct
  turns returned, best first, the tokens of the top 10 and the search latency;
* ``costs``: the conversation's preparation time, turns, tokens, footprint, the
  process's peak RSS, and each growth checkpoint's raw latencies.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memledger._files import write_private
from memledger.errors import InvalidInputError
from memledger.eval.locomo._costs import Checkpoint, Costs
from memledger.eval.locomo._data import CATEGORIES, Question
from memledger.eval.locomo._harness import QuestionResult

FORMAT = "memledger-locomo-part/1"
_NAME = re.compile(r"conversation-(\d+)\.([A-Za-z0-9._+-]+)\.json")
_RETRIEVER = re.compile(r"[A-Za-z0-9._+-]+")


class PartsError(InvalidInputError):
    """A part that cannot be used: unreadable, misnamed, or made by another run."""


@dataclass(frozen=True, slots=True)
class RunKey:
    """What every part of one report shares (see the module docstring)."""

    input_bytes: int
    input_sha256: str
    ks: tuple[int, ...]
    growth: tuple[int, ...]
    recall_settings: dict[str, object]
    """The JSON object of the ``memledger`` retrievers' :class:`RecallSettings`."""
    store: str
    """``sqlite`` or ``postgresql``."""
    version: str
    commit: str
    """The git commit memledger ran from (``+dirty`` with changes), ``""`` outside one."""

    def to_json(self) -> dict[str, object]:
        return {
            "input": {"bytes": self.input_bytes, "sha256": self.input_sha256},
            "ks": list(self.ks),
            "growth": list(self.growth),
            "recall_settings": self.recall_settings,
            "store": self.store,
            "memledger": {"version": self.version, "commit": self.commit},
        }

    @classmethod
    def from_json(cls, body: Any) -> RunKey:
        return cls(
            input_bytes=int(body["input"]["bytes"]),
            input_sha256=str(body["input"]["sha256"]),
            ks=tuple(int(k) for k in body["ks"]),
            growth=tuple(int(g) for g in body["growth"]),
            recall_settings=dict(body["recall_settings"]),
            store=str(body["store"]),
            version=str(body["memledger"]["version"]),
            commit=str(body["memledger"]["commit"]),
        )

    def differences(self, other: RunKey) -> list[str]:
        """What ``other`` has otherwise, as ``"ks [1, 5] (here [1, 5, 10])"`` phrases."""
        mine, theirs = self.to_json(), other.to_json()
        return [
            f"{name} {theirs[name]} (here {mine[name]})"
            for name in mine
            if mine[name] != theirs[name]
        ]


def input_identity(path: Path) -> tuple[int, str]:
    """The size of a file and the sha256 of its bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return path.stat().st_size, digest.hexdigest()


def check_retriever_name(name: str) -> None:
    """A retriever's name goes into a part's file name: letters, digits and ``._+-``."""
    if not _RETRIEVER.fullmatch(name):
        raise PartsError(
            f"retriever {name!r} cannot name a part file (letters, digits and . _ + - only)"
        )


def part_path(directory: Path, position: int, retriever: str) -> Path:
    return directory / f"conversation-{position:03d}.{retriever}.json"


@dataclass(frozen=True, slots=True)
class Part:
    """One conversation (by its 1-based ``position`` in the input file) run with one
    retriever."""

    key: RunKey
    position: int
    sample_id: str
    conversation_turns: int
    retriever: str
    rank: int
    """The retriever's place in the ``--retriever`` list it was run with: the order of a
    merged report."""
    results: tuple[QuestionResult, ...]
    costs: Costs

    def to_json(self) -> dict[str, object]:
        costs = self.costs
        return {
            "format": FORMAT,
            "run": self.key.to_json(),
            "conversation": {
                "position": self.position,
                "sample_id": self.sample_id,
                "turns": self.conversation_turns,
            },
            "retriever": self.retriever,
            "rank": self.rank,
            "questions": [_result_json(r) for r in self.results],
            "costs": {
                "conversations": costs.conversations,
                "turns": costs.turns,
                "tokens": costs.tokens,
                "prepare_seconds": costs.prepare_seconds,
                "footprint_bytes": costs.footprint,
                "peak_rss_mb": costs.peak_rss_mb,
                "growth": [
                    {
                        "tokens": c.tokens,
                        "conversations": c.conversations,
                        "turns": c.turns,
                        "latencies_ms": c.latencies_ms,
                    }
                    for c in costs.checkpoints
                ],
            },
        }

    @classmethod
    def from_json(cls, body: Any) -> Part:
        if body.get("format") != FORMAT:
            raise ValueError(f"format {body.get('format')!r}, not {FORMAT!r}")
        conversation = body["conversation"]
        sample_id = str(conversation["sample_id"])
        costs = body["costs"]
        footprint = costs["footprint_bytes"]
        return cls(
            key=RunKey.from_json(body["run"]),
            position=int(conversation["position"]),
            sample_id=sample_id,
            conversation_turns=int(conversation["turns"]),
            retriever=str(body["retriever"]),
            rank=int(body["rank"]),
            results=tuple(_result(item, sample_id) for item in body["questions"]),
            costs=Costs(
                conversations=int(costs["conversations"]),
                turns=int(costs["turns"]),
                tokens=int(costs["tokens"]),
                prepare_seconds=float(costs["prepare_seconds"]),
                footprint=None if footprint is None else int(footprint),
                peak_rss_mb=float(costs["peak_rss_mb"]),
                checkpoints=tuple(
                    Checkpoint(
                        tokens=int(c["tokens"]),
                        conversations=int(c["conversations"]),
                        turns=int(c["turns"]),
                        latencies_ms=[float(v) for v in c["latencies_ms"]],
                    )
                    for c in costs["growth"]
                ),
            ),
        )


def _result_json(result: QuestionResult) -> dict[str, object]:
    question = result.question
    return {
        "index": question.index,
        "text": question.text,
        "category": question.category,
        "evidence": list(question.evidence),
        "original": list(question.original),
        "updated": list(question.updated),
        "sides": [list(side) for side in question.sides],
        "ranked": list(result.ranked),
        "tokens_top10": result.tokens_top10,
        "latency_ms": result.latency_ms,
    }


def _result(item: Any, sample_id: str) -> QuestionResult:
    category = item["category"]
    if category not in CATEGORIES:
        raise ValueError(f"category {category!r}")
    question = Question(
        conversation=sample_id,
        index=int(item["index"]),
        text=str(item["text"]),
        answer=None,
        category=category,
        evidence=tuple(str(e) for e in item["evidence"]),
        dropped_evidence=(),
        original=tuple(str(e) for e in item["original"]),
        updated=tuple(str(e) for e in item["updated"]),
        sides=tuple(tuple(str(e) for e in side) for side in item["sides"]),
    )
    return QuestionResult(
        question=question,
        ranked=tuple(str(e) for e in item["ranked"]),
        latency_ms=float(item["latency_ms"]),
        tokens_top10=int(item["tokens_top10"]),
    )


def write_part(directory: Path, part: Part) -> Path:
    path = part_path(directory, part.position, part.retriever)
    write_private(path, json.dumps(part.to_json(), indent=1) + "\n")
    return path


def read_part(path: Path) -> Part:
    """The part in ``path``; :class:`PartsError` naming it when it is not one, or when its
    content disagrees with its name."""
    try:
        part = Part.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PartsError(f"{str(path)!r} is not a part of bench locomo: {exc}") from None
    if path.name != part_path(path.parent, part.position, part.retriever).name:
        raise PartsError(
            f"{str(path)!r} holds conversation {part.position} of retriever "
            f"{part.retriever!r}, which is not what its name says"
        )
    return part


def read_parts(directory: Path) -> list[Part]:
    """Every part in ``directory`` (files named as parts are; others are not read),
    sorted by retriever and position."""
    if not directory.is_dir():
        raise PartsError(f"no folder of parts at {str(directory)!r}")
    paths = sorted(p for p in directory.iterdir() if _NAME.fullmatch(p.name) and p.is_file())
    return sorted((read_part(p) for p in paths), key=lambda p: (p.retriever, p.position))


def check_same(parts: Sequence[Part], directory: Path, key: RunKey | None = None) -> RunKey | None:
    """The one :class:`RunKey` of ``parts`` (``key`` when given); :class:`PartsError`
    naming the first part made by another run."""
    for part in parts:
        if key is None:
            key = part.key
        elif part.key != key:
            path = part_path(directory, part.position, part.retriever)
            raise PartsError(
                f"{str(path)!r} was made by another run: "
                + "; ".join(key.differences(part.key))
                + ". Parts of different runs are never merged: use another folder, or the "
                "same file, settings and memledger commit"
            )
    return key
