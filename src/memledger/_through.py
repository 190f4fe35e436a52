"""How the :class:`~memledger.Memory` facade delegates: :func:`through` makes a method
that hands one of the facade's port bundles (``reading``, ``writing``) to the function
that owns the behaviour, with the function's own signature and docstring, typed for
the caller as the function is."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["through"]

P = ParamSpec("P")
T = TypeVar("T")


def through(
    ports: str, function: Callable[Concatenate[Any, P], T]
) -> Callable[Concatenate[Any, P], T]:
    """A method calling ``function(self.<ports>, *args, **kwargs)``: ``Memory.current =
    through("reading", ledger.current)`` answers ``memory.current(subject, family,
    tenant=...)`` with ``ledger.current(memory.reading, subject, family, tenant=...)``.
    ``help()`` and :func:`inspect.signature` show the function's parameters, its
    first (the ports) as ``self``; the port bundle's name is kept as ``__through__``."""

    @functools.wraps(function)
    def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return function(getattr(self, ports), *args, **kwargs)

    signature = inspect.signature(function)
    first, *rest = signature.parameters.values()
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first.replace(name="self", annotation=inspect.Parameter.empty), *rest]
    )
    method.__through__ = ports  # type: ignore[attr-defined]
    return method
