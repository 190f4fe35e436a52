"""Scores of the write path: confidence accumulation.

One documented curve: the first explicit mention of a claim is worth 0.65;
each *independent* repetition (another source event) raises it with
diminishing returns toward 0.90, reaching about 0.82 after five mentions::

    confidence(n) = 0.65 + 0.25 * (1 - exp(-(n - 1) / 3.5))

    n      1     2     3     5     10
    conf  0.650 0.712 0.759 0.820 0.881
"""

from __future__ import annotations

import math

FIRST_MENTION = 0.65
CEILING = 0.90
PACE = 3.5


def confidence(mentions: int, *, first: float = FIRST_MENTION) -> float:
    """Confidence after ``mentions`` independent statements of a claim (``mentions >= 1``).

    ``first`` is the confidence the first statement carried; repetitions close
    the gap to the ceiling along the same curve, never lowering it.
    """
    if mentions < 1:
        raise ValueError(f"mentions must be at least 1, got {mentions}")
    ceiling = max(CEILING, first)
    return first + (ceiling - first) * (1 - math.exp(-(mentions - 1) / PACE))
