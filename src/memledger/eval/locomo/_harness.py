"""The harness: one :class:`Retriever` contract, one scoring, every retriever.

For each conversation the harness calls ``prepare(conversation)`` once, then
``search(question, k=max(ks), now=...)`` for each of its questions that has
evidence (questions without evidence cannot score recall and are skipped).
``now`` is the date of the conversation's last session: LoCoMo dates no
question, and every question is asked after the whole conversation.

A question's recall at k is the fraction of its evidence turns among the first
k *distinct* event ids returned (duplicates are dropped by the harness, so a
retriever cannot score twice with one id). Recall@k is averaged per category,
over categories 1-4 (``overall_1_4``) and over every question with evidence
(``overall``, adversarial questions included).

Where the file marks which turn stated an old value and which changed it
(:attr:`Question.is_update`) and the turns of each side of a contradiction,
:meth:`Report.updates` scores whether what is true now ranks above what it replaced:

* ``updated_recall_10``: the share of the changing turns in the top 10, averaged;
* ``update_order``: of the questions with a turn of each in the top 10, the share
  whose best-ranked changing turn is above every turn of the old value;
* ``strict_update_success``: the share of all update questions with a changing turn
  in the top 10 above every turn of the old value (one not in the top 10 counts as
  below);
* ``both_sides_recall_10``: the share of contradiction questions whose top 10 holds
  a turn of each side.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from memledger.eval.locomo._data import (
    ANSWERABLE,
    CATEGORIES,
    CategoryName,
    Conversation,
    Dataset,
    Question,
)
from memledger.ports import Tokenizer as TokenizerPort
from memledger.tokens import ApproxBpeTokenizer

Group = CategoryName | Literal["overall_1_4", "overall"]
GROUPS: tuple[Group, ...] = (*CATEGORIES, "overall_1_4", "overall")


class Retriever(Protocol):
    """What the harness drives. Built fresh for each run by a registered factory."""

    def prepare(self, conversation: Conversation, /) -> None:
        """Take the turns of one conversation (ingest them anywhere); forget the previous one."""
        ...

    def search(self, question: str, /, *, k: int, now: datetime) -> list[str]:
        """Up to ``k`` distinct event ids (``dia_id``) of the prepared conversation, best first."""
        ...


@runtime_checkable
class Closeable(Protocol):
    """A retriever that holds resources may also have ``close()``; the harness calls it."""

    def close(self) -> None: ...


@runtime_checkable
class Passages(Protocol):
    """A retriever that shows a long turn as a passage says which, for the last search;
    the harness then counts the passage's tokens instead of the whole turn's."""

    def passage(self, event_id: str, /) -> str | None: ...


Tokenizer = TokenizerPort
"""What the harness counts a shown turn's tokens with (the project's port)."""


@dataclass(frozen=True, slots=True)
class QuestionResult:
    question: Question
    ranked: tuple[str, ...]
    """Distinct event ids returned, best first (at most max k)."""
    latency_ms: float
    tokens_top10: int

    def recall_at(self, k: int) -> float:
        top = set(self.ranked[:k])
        return sum(1 for event_id in self.question.evidence if event_id in top) / len(
            self.question.evidence
        )

    def rank(self, event_ids: Iterable[str], k: int = 10) -> int | None:
        """The best (0-based) rank of any of ``event_ids`` in the top ``k``, if any."""
        ranks = [self.ranked.index(e) for e in event_ids if e in self.ranked[:k]]
        return min(ranks) if ranks else None


@dataclass(frozen=True, slots=True)
class Report:
    retriever: str
    ks: tuple[int, ...]
    results: tuple[QuestionResult, ...]

    @property
    def questions(self) -> int:
        return len(self.results)

    def members(self, group: Group) -> list[QuestionResult]:
        if group == "overall":
            return list(self.results)
        if group == "overall_1_4":
            return [r for r in self.results if r.question.category in ANSWERABLE]
        return [r for r in self.results if r.question.category == group]

    def recall(self) -> dict[Group, dict[int, float]]:
        """Mean recall@k per group; a group without questions is left out."""
        out: dict[Group, dict[int, float]] = {}
        for group in GROUPS:
            members = self.members(group)
            if members:
                out[group] = {k: _mean(r.recall_at(k) for r in members) for k in self.ks}
        return out

    def updates(self) -> dict[str, float | int]:
        """What is true now against what it replaced (see the module docstring); the
        counts of questions each figure is over are given beside it."""
        asked = [r for r in self.results if r.question.is_update]
        both: list[bool] = []
        strict: list[bool] = []
        for result in asked:
            new, old = result.rank(result.question.updated), result.rank(result.question.original)
            if new is not None and old is not None:
                both.append(new < old)
            strict.append(new is not None and (old is None or new < old))
        sided = [r for r in self.results if len(r.question.sides) >= 2]
        covered = [all(r.rank(side) is not None for side in r.question.sides) for r in sided]
        return {
            "update_questions": len(asked),
            "updated_recall_10": _mean(
                sum(1 for e in r.question.updated if e in r.ranked[:10]) / len(r.question.updated)
                for r in asked
            ),
            "both_in_top_10": len(both),
            "update_order": _mean(float(b) for b in both),
            "strict_update_success": _mean(float(s) for s in strict),
            "contradiction_questions": len(sided),
            "both_sides_recall_10": _mean(float(c) for c in covered),
        }

    def counts(self) -> dict[Group, int]:
        return {group: len(self.members(group)) for group in GROUPS}

    @property
    def tokens_top10_mean(self) -> float:
        return _mean(r.tokens_top10 for r in self.results)

    def latency_ms(self) -> dict[Literal["p50", "p95"], float]:
        samples = [r.latency_ms for r in self.results]
        return {"p50": percentile(samples, 50), "p95": percentile(samples, 95)}

    def to_json(self) -> dict[str, object]:
        """``{"retriever", "questions", "recall": {group: {"k": float}}, ...}``."""
        return {
            "retriever": self.retriever,
            "questions": self.questions,
            "questions_per_group": dict(self.counts()),
            "recall": {
                group: {str(k): round(value, 4) for k, value in by_k.items()}
                for group, by_k in self.recall().items()
            },
            "tokens_top10_mean": round(self.tokens_top10_mean, 1),
            "updates": {
                name: value if isinstance(value, int) else round(value, 4)
                for name, value in self.updates().items()
            },
            "latency_ms": {name: round(v, 3) for name, v in self.latency_ms().items()},
        }


Progress = Callable[[int, int], None]
"""Called with (questions done, questions in all)."""


def run(
    retriever: Retriever,
    dataset: Dataset,
    *,
    name: str,
    ks: Sequence[int] = (1, 5, 10, 20),
    tokenizer: Tokenizer | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Report:
    """Drive ``retriever`` over every conversation of ``dataset`` and score it."""
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive, got {list(ks)!r}")
    ks = tuple(sorted(set(ks)))
    depth = max(*ks, 10)
    counter = tokenizer or ApproxBpeTokenizer()
    scored = [q for q in dataset.questions if q.evidence]
    results: list[QuestionResult] = []
    try:
        for conversation in dataset.conversations:
            asked = [q for q in scored if q.conversation == conversation.sample_id]
            if not asked:
                continue
            retriever.prepare(conversation)
            texts = {turn.event_id: turn.document() for turn in conversation.turns}
            now = conversation.last_session_at
            for question in asked:
                started = clock()
                answer = retriever.search(question.text, k=depth, now=now)
                elapsed = (clock() - started) * 1000.0
                ranked = distinct(answer)[:depth]
                tokens = sum(
                    counter.count(_shown(retriever, event_id, texts)) for event_id in ranked[:10]
                )
                results.append(
                    QuestionResult(
                        question=question,
                        ranked=tuple(ranked),
                        latency_ms=elapsed,
                        tokens_top10=tokens,
                    )
                )
                if progress is not None:
                    progress(len(results), len(scored))
    finally:
        if isinstance(retriever, Closeable):
            retriever.close()
    return Report(retriever=name, ks=ks, results=tuple(results))


def _shown(retriever: Retriever, event_id: str, texts: dict[str, str]) -> str:
    """What the retriever would put in front of a model for this turn."""
    if isinstance(retriever, Passages):
        passage = retriever.passage(event_id)
        if passage is not None:
            return passage
    return texts.get(event_id, "")


def distinct(ids: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for event_id in ids:
        if event_id not in seen:
            seen.add(event_id)
            out.append(event_id)
    return out


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default); ``0.0`` for no samples."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0
