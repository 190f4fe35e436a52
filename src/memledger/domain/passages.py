"""The passage of a long turn that answers a question: what a model should be shown. Pure.

A recalled turn of a few sentences is shown whole. A long one (an assistant's
three-page answer, a user's pasted log) is shown as its best passage: the run of
consecutive sentences, at most ``words`` words, that covers the most of the
question's content words (on a tie the shortest, then the earliest; a single sentence
longer than that is cut to its first ``words`` words; a turn that holds none of
the question's words is shown by its first ``words`` words). Offsets are into the
original text, so a caller can quote exactly what was shown and point back to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

from memledger.domain.gates import content_words
from memledger.domain.text import sentences

_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    """``text[start:end]`` of a turn; ``whole`` when it is all of it."""

    start: int
    end: int
    text: str
    whole: bool


def _cut(text: str, start: int, end: int, words: int) -> int:
    """The end of the first ``words`` words of ``text[start:end]``."""
    found = list(_WORD.finditer(text, start, end))
    return end if len(found) <= words else found[words - 1].end()


def _better(
    best: tuple[int, int, int, int] | None, candidate: tuple[int, int, int, int]
) -> tuple[int, int, int, int]:
    """More of the question covered, then shorter, then earlier."""
    if best is None:
        return candidate
    return (
        candidate
        if (candidate[0], candidate[1], -candidate[2]) > (best[0], best[1], -best[2])
        else best
    )


def best_passage(text: str, question: str, *, words: int = 60) -> Passage:
    """The passage of ``text`` to show for ``question`` (see the module docstring)."""
    if len(_WORD.findall(text)) <= words:
        return Passage(start=0, end=len(text), text=text, whole=True)
    wanted = content_words(question)
    spans = [(s.start, s.end, len(_WORD.findall(s.text))) for s in sentences(text)]
    found = [content_words(text[start:end]) & wanted for start, end, _ in spans]
    # the best run starts and ends with a sentence holding some of the question's words:
    # without one at either end it covers as much and is longer, so only such runs
    # are weighed (and a sentence past the budget on its own, cut to its first words)
    holding = [n for n, covers in enumerate(found) if covers]
    before = [0, *accumulate(size for _, _, size in spans)]  # words before each sentence
    best: tuple[int, int, int, int] | None = None  # (covered, -length, start, end)
    for at, first in enumerate(holding):
        begin, end, size = spans[first]
        if size > words:  # one long sentence: its first words
            end = _cut(text, begin, end, words)
            covered = content_words(text[begin:end]) & wanted
            best = _better(best, (len(covered), -(end - begin), begin, end))
            continue
        covered = set[str]()
        for last in holding[at:]:
            if before[last + 1] - before[first] > words:
                break
            covered |= found[last]
            end = spans[last][1]
            best = _better(best, (len(covered), -(end - begin), begin, end))
    if best is None or best[0] == 0:  # nothing of the question in it: its first words
        end = _cut(text, 0, len(text), words)
        return Passage(start=0, end=end, text=text[:end], whole=False)
    _, _, start, end = best
    return Passage(start=start, end=end, text=text[start:end], whole=False)
