"""How an error that found several problems in its input tells them: each at its place
(:func:`place`: ``claims[0].kind``), every one up to :data:`SHOWN`, then how many more
were found (:func:`listing`); the problems themselves, as data, are the error's
:attr:`~memledger.errors.InvalidInputError.faults` (:func:`with_faults`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, TypeVar

from memledger.errors import Fault, InvalidInputError

__all__ = ["SHOWN", "listing", "names", "place", "with_faults"]

SHOWN: Final = 10
"""Problems a message names; past them it says how many more there are."""

E = TypeVar("E", bound=InvalidInputError)


def place(loc: Sequence[str | int], *, empty: str = "the input") -> str:
    """A place in JSON input as a message names it: ``("claims", 0, "kind")`` is
    ``claims[0].kind``; ``()`` is ``empty``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or empty


def listing(problems: Sequence[str]) -> str:
    """``problems`` joined by ``"; "``: the first :data:`SHOWN`, then
    ``(and N more not shown)`` when there are more."""
    shown = "; ".join(problems[:SHOWN])
    more = len(problems) - SHOWN
    return shown + (f" (and {more} more not shown)" if more > 0 else "")


def names(fields: Sequence[str], *, last: str = "and") -> str:
    """Field names as a message lists them: ```a`, `b` and `c```."""
    quoted = [f"`{name}`" for name in fields]
    if len(quoted) < 2:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} {last} {quoted[-1]}"


def with_faults(error: E, faults: Iterable[Fault]) -> E:
    """``error``, holding ``faults`` (every problem found, not only those its message
    names)."""
    error.faults = tuple(faults)
    return error
