"""A time budget for the work of one request, checked cooperatively.

An edge (the HTTP API, per request) opens a budget with :func:`within`; the expensive
paths below it (context assembly over supplied material, corpus chunking and
indexing, recall) call :func:`check` between their steps and before they commit, so
that work past its budget stops with :class:`~memledger.errors.WorkBudgetExceededError`
and nothing of it is written. Outside a budget :func:`check` does nothing: library
callers are never stopped.

The budget lives in a :class:`contextvars.ContextVar`, so it follows the request into
the worker thread that runs it and never leaks into another request.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from memledger.errors import InvalidInputError, WorkBudgetExceededError

__all__ = ["Budget", "check", "check_seconds", "within"]


@dataclass(slots=True)
class Budget:
    """An open work budget, as :func:`within` yields it."""

    seconds: float
    ends: float
    """``time.monotonic()`` past which the work stops."""
    spent: bool = False
    """Whether :func:`check` found it spent (and stopped the work)."""


_CURRENT: ContextVar[Budget | None] = ContextVar("memledger_work_budget", default=None)


def check_seconds(seconds: object, name: str = "request_seconds") -> float:
    """``seconds`` as a time budget (a finite number > 0), else :class:`InvalidInputError`."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds <= 0
    ):
        raise InvalidInputError(f"{name} must be a number of seconds > 0, got {seconds!r}")
    return float(seconds)


@contextmanager
def within(seconds: float) -> Iterator[Budget]:
    """Run the block under a budget of ``seconds`` (a budget already open and ending
    sooner stays in force); yields the budget in force."""
    seconds = check_seconds(seconds)
    ends = time.monotonic() + seconds
    outer = _CURRENT.get()
    if outer is not None and outer.ends <= ends:
        yield outer
        return
    budget = Budget(seconds=seconds, ends=ends)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def check(what: str) -> None:
    """Raise :class:`WorkBudgetExceededError` if the open budget is spent (``what``: the
    work, for the message); nothing when no budget is open."""
    budget = _CURRENT.get()
    if budget is not None and time.monotonic() > budget.ends:
        budget.spent = True
        raise WorkBudgetExceededError(
            f"{what} did not finish within this server's work budget of {budget.seconds:g} s "
            "per request; it stopped before writing anything. Send less (shorter material, "
            "a smaller document) or ask the operator for a larger budget."
        )
