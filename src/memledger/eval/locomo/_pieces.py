"""A ``bench locomo`` run in pieces: which conversations (``--conversations 1-5,9``),
each conversation with each retriever run on its own into a part (``--parts DIR``), and
the parts merged into the report one run over the same conversations gives.

Each (conversation, retriever) is run by a fresh retriever, so a part depends on its
conversation and the run's settings alone, never on which conversations ran before it
in the same process; the recall, token and latency figures of a merged report are those
of one run over the same conversations (the ``memledger`` retriever keeps each
conversation in a tenant of its own, with its own index tables). Costs merge as: turns,
tokens, preparation time and footprint summed (each part's footprint is what its
conversation built on its own), turns/s and tokens/s from the sums, the peak RSS the
largest of the parts', growth latencies pooled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memledger.errors import InvalidInputError
from memledger.eval.locomo._costs import Checkpoint, Costs, Metered
from memledger.eval.locomo._data import Dataset
from memledger.eval.locomo._harness import Report, Retriever, run
from memledger.eval.locomo._parts import (
    Part,
    RunKey,
    check_same,
    part_path,
    read_part,
    write_part,
)

_ITEM = re.compile(r"(\d+)(?:-(\d+))?")


def positions(spec: str, count: int) -> list[int]:
    """The 1-based positions ``spec`` names (``"1-5,9,12-14"``), ascending and distinct,
    each at most ``count``; :class:`InvalidInputError` for anything else."""
    chosen: set[int] = set()
    for item in spec.split(","):
        match = _ITEM.fullmatch(item.strip())
        if match is None:
            raise InvalidInputError(
                f"--conversations takes 1-based positions and ranges such as 1-5,9,12-14, "
                f"got {spec!r}"
            )
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if first < 1 or last < first:
            raise InvalidInputError(
                f"--conversations: {item.strip()!r} is not a range of positions from 1 up"
            )
        if last > count:
            raise InvalidInputError(
                f"--conversations: position {last} is past the file's {count} conversations"
            )
        chosen.update(range(first, last + 1))
    return sorted(chosen)


def pick(dataset: Dataset, chosen: Sequence[int]) -> Dataset:
    """The conversations at ``chosen`` positions (1-based) and their questions."""
    kept = tuple(dataset.conversations[p - 1] for p in chosen)
    ids = {c.sample_id for c in kept}
    return Dataset(
        conversations=kept, questions=tuple(q for q in dataset.questions if q.conversation in ids)
    )


Progress = Callable[[str, int, int], None]
"""Called with (what runs, e.g. ``"bm25 3"``, questions done, questions in all)."""


def run_parts(
    names: Sequence[str],
    dataset: Dataset,
    *,
    chosen: Sequence[int],
    directory: Path,
    key: RunKey,
    create: Callable[[str], Retriever],
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Run each retriever of ``names`` (by ``create``) over each conversation at
    ``chosen`` positions whose part is not in ``directory`` yet, writing its part when
    it is done; ``(parts written, parts found and skipped)``. A part found that was made
    by another run is a :class:`~memledger.eval.locomo._parts.PartsError`."""
    written = skipped = 0
    for rank, name in enumerate(names):
        for position in chosen:
            path = part_path(directory, position, name)
            if path.exists():
                check_same([read_part(path)], directory, key)
                skipped += 1
                continue
            one = pick(dataset, (position,))
            metered = Metered(create(name), dataset=one, checkpoints=key.growth)

            def report(done: int, total: int, what: str = f"{name} {position}") -> None:
                if progress is not None:
                    progress(what, done, total)

            scored = run(metered, one, name=name, ks=key.ks, progress=report)
            conversation = one.conversations[0]
            part = Part(
                key=key,
                position=position,
                sample_id=conversation.sample_id,
                conversation_turns=len(conversation.turns),
                retriever=name,
                rank=rank,
                results=scored.results,
                costs=metered.costs(),
            )
            write_part(directory, part)
            written += 1
    return written, skipped


@dataclass(frozen=True, slots=True)
class Merged:
    """Parts merged: one report and its costs per retriever (in the order of the
    ``--retriever`` list they were run with), and the conversations they cover."""

    reports: tuple[Report, ...]
    costs: tuple[Costs, ...]
    conversations: int
    turns: int


def merge(parts: Sequence[Part], directory: Path, *, order: Sequence[str] | None = None) -> Merged:
    """One report per retriever over its parts, by position (see the module docstring),
    the retrievers in ``order`` (default: as they were run);
    :class:`~memledger.eval.locomo._parts.PartsError` when the parts are of different
    runs."""
    key = check_same(parts, directory)
    if key is None:
        raise InvalidInputError(f"no parts in {str(directory)!r}")
    ranks: dict[str, int] = {}
    for part in parts:
        ranks[part.retriever] = min(ranks.get(part.retriever, part.rank), part.rank)
    if order is None:
        order = sorted(ranks, key=lambda name: (ranks[name], name))
    else:
        order = [name for name in order if name in ranks]
    reports: list[Report] = []
    costs: list[Costs] = []
    for name in order:
        mine = sorted((p for p in parts if p.retriever == name), key=lambda p: p.position)
        reports.append(
            Report(retriever=name, ks=key.ks, results=tuple(r for p in mine for r in p.results))
        )
        costs.append(_costs([p.costs for p in mine]))
    turns = {p.position: p.conversation_turns for p in parts}
    return Merged(
        reports=tuple(reports),
        costs=tuple(costs),
        conversations=len(turns),
        turns=sum(turns.values()),
    )


def _costs(parts: Sequence[Costs]) -> Costs:
    footprints = [c.footprint for c in parts]
    checkpoints = [
        Checkpoint(
            tokens=each[0].tokens,
            conversations=sum(c.conversations for c in each),
            turns=sum(c.turns for c in each),
            latencies_ms=[v for c in each for v in c.latencies_ms],
        )
        for each in zip(*(c.checkpoints for c in parts), strict=True)
    ]
    return Costs(
        conversations=sum(c.conversations for c in parts),
        turns=sum(c.turns for c in parts),
        tokens=sum(c.tokens for c in parts),
        prepare_seconds=sum(c.prepare_seconds for c in parts),
        footprint=None if None in footprints else sum(f for f in footprints if f is not None),
        peak_rss_mb=max(c.peak_rss_mb for c in parts),
        checkpoints=tuple(checkpoints),
    )


def missing(parts: Sequence[Part], expect: int) -> dict[str, list[int]]:
    """Per retriever found, the positions 1 to ``expect`` it has no part for."""
    held: dict[str, set[int]] = {}
    for part in parts:
        held.setdefault(part.retriever, set()).add(part.position)
    gaps = {name: [p for p in range(1, expect + 1) if p not in done] for name, done in held.items()}
    return {name: gap for name, gap in sorted(gaps.items()) if gap}
