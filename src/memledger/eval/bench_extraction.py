"""``memledger bench extraction``: what an extractor makes of plain first-person turns.

Two figures (see :mod:`memledger.eval.extraction`): precision and recall on the
labelled turns, dev and held-out side by side (per attribute and voice in the JSON),
and LoCoMo observation coverage on a LoCoMo-shaped file when one is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memledger.eval.extraction._coverage import MAX_WORDS, MIN_COSINE, Coverage, coverage
from memledger.eval.extraction._labels import SPLITS, load, load_split
from memledger.eval.extraction._score import Summary, score, summarise
from memledger.index.embedders import Embedder
from memledger.ports import Extractor

__all__ = ["Report", "markdown", "run"]


@dataclass(frozen=True, slots=True)
class Report:
    extractor: str
    splits: dict[str, Summary]
    coverage: Coverage | None

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"extractor": self.extractor}
        for name, s in self.splits.items():
            body[name] = {
                "turns": s.turns,
                "labelled": s.labelled,
                "found": s.found,
                "right": s.right,
                "wrong": s.wrong,
                "outside_vocabulary": s.outside,
                "precision": round(s.precision, 4),
                "recall": round(s.recall, 4),
                "time_recall": round(s.time_recall, 4),
                "by_attribute": {
                    k: {"labelled": v[0], "found": v[1], "wrong": v[2]}
                    for k, v in s.by_attribute.items()
                },
                "by_voice": {
                    k: {"labelled": v[0], "found": v[1], "wrong": v[2]}
                    for k, v in s.by_voice.items()
                },
            }
        if self.coverage is not None:
            body["observation_coverage"] = {
                "observations": self.coverage.observations,
                "covered": self.coverage.covered,
                "share": round(self.coverage.share, 4),
                "max_words": MAX_WORDS,
                "min_cosine": MIN_COSINE,
            }
        return body


def run(
    extractor: Extractor,
    name: str,
    *,
    labelled: dict[str, Path] | None = None,
    locomo: Path | None = None,
    embedder: Embedder | None = None,
) -> Report:
    """Score ``extractor`` on the packaged labelled turns (or the files in
    ``labelled``, split name -> path) and, with ``locomo``, its observation coverage."""
    if labelled:
        turns = {split: load(path, split) for split, path in labelled.items()}
    else:
        turns = {split: load_split(split) for split in SPLITS}
    splits = {split: summarise(score(extractor, t)) for split, t in turns.items()}
    covered = None
    if locomo is not None:
        if embedder is None:
            raise ValueError("observation coverage needs an embedder")
        covered = coverage(locomo, extractor, embedder)
    return Report(extractor=name, splits=splits, coverage=covered)


def markdown(reports: list[Report]) -> str:
    """The reports side by side."""
    lines = [
        "| extractor | split | turns | labelled claims | precision | recall | wrong | time given |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in reports:
        for split, s in r.splits.items():
            lines.append(
                f"| {r.extractor} | {split} | {s.turns} | {s.labelled} | {s.precision:.3f} |"
                f" {s.recall:.3f} | {s.wrong} | {s.time_recall:.3f} |"
            )
    covered = [r for r in reports if r.coverage is not None]
    if covered:
        lines += [
            "",
            "| extractor | observations | covered | share |",
            "| --- | ---: | ---: | ---: |",
        ]
        for r in covered:
            assert r.coverage is not None
            c = r.coverage
            lines.append(f"| {r.extractor} | {c.observations} | {c.covered} | {c.share:.3f} |")
    return "\n".join(lines)
