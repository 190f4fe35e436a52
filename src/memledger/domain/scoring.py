"""Scores of memory over time: confidence accumulation and the two decay curves.

Confidence accumulation. The first explicit mention of a claim is worth 0.65;
each *independent* repetition (another source event) raises it with
diminishing returns toward 0.90, reaching about 0.82 after five mentions::

    confidence(n) = 0.65 + 0.25 * (1 - exp(-(n - 1) / 3.5))

    n      1     2     3     5     10
    conf  0.650 0.712 0.759 0.820 0.881

Decay. Both curves are functions of ``t``, the time since a memory was last
*touched*: stated (its valid-time start), stated again (a mention) or handed out
by a read (an access); see :mod:`memledger.read.access`.

* :func:`down_weight`, the ranking weight of every memory:
  ``0.3 + 0.7 * exp(-t / tau)``. 1.0 when touched now, never below 0.3: an old
  memory ranks lower, it is never dropped, and one touch lifts it back.
* :func:`decayed_confidence`, the confidence of a memory of a *volatile* kind or
  family (working memory by default): ``c * 0.5 ** (t / half_life)``, halving
  every ``half_life``. Below recall's ``min_confidence`` it is left out of recall
  as ``faded``; it stays in the store, its views and its history, and a new
  statement of it (a mention) touches it again.

    t / half_life   0     1     2     3     4
    0.65 * decay  0.650 0.325 0.163 0.081 0.041

Neither deletes anything: erasing is TTL's and retention's job
(:mod:`memledger.write.erase`).
"""

from __future__ import annotations

import math

FIRST_MENTION = 0.65
CEILING = 0.90
PACE = 3.5
FLOOR = 0.3
"""The least :func:`down_weight`: an old memory keeps 30% of its score."""


def confidence(mentions: int, *, first: float = FIRST_MENTION) -> float:
    """Confidence after ``mentions`` independent statements of a claim (``mentions >= 1``).

    ``first`` is the confidence the first statement carried; repetitions close
    the gap to the ceiling along the same curve, never lowering it.
    """
    if mentions < 1:
        raise ValueError(f"mentions must be at least 1, got {mentions}")
    ceiling = max(CEILING, first)
    return first + (ceiling - first) * (1 - math.exp(-(mentions - 1) / PACE))


def down_weight(days: float, *, tau_days: float) -> float:
    """``0.3 + 0.7 * exp(-t / tau)`` for ``t = days`` since the last touch: 1.0 when new,
    never below 0.3 (a time before the touch counts as 0)."""
    return FLOOR + (1 - FLOOR) * math.exp(-max(0.0, days) / tau_days)


def decayed_confidence(confidence: float, days: float, *, half_life_days: float) -> float:
    """``confidence * 0.5 ** (t / half_life)`` for ``t = days`` since the last touch."""
    return confidence * math.pow(0.5, max(0.0, days) / half_life_days)
