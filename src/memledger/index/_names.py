"""Who a query can name: the speakers and subjects of a tenant's entries, kept per
namespace, so that a name said only in another agent's private namespace counts only
for a key that may read it (DESIGN.md invariant 13: the names of a namespace the key
may not see are as absent as its records).

A name is in the book of each namespace it occurs in: the shared namespace (``None``)
or the private namespace of the entry's subject (:func:`memledger.domain.keys.
namespace_of`); a subject is a name of its own namespace, a speaker of the namespace
of the subject it spoke in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from memledger.domain.keys import namespace_of

__all__ = ["KnownNames", "NameCache"]


@dataclass(frozen=True, slots=True, eq=False)
class KnownNames:
    """A tenant's (or subject's) names, by the namespace they occur in."""

    shared: frozenset[str] = frozenset()
    private: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Private namespace -> the names that occur in its entries."""
    every: frozenset[str] = frozenset()
    """Every name of every namespace (what a key that reads them all may name)."""
    _views: dict[frozenset[str], frozenset[str]] = field(default_factory=dict)

    def visible_to(self, visible: Callable[[str], bool] | None) -> frozenset[str]:
        """The names a reader may name: those of the shared namespace and of each private
        namespace ``visible`` passes (a subject -> bool test, as
        :meth:`~memledger.domain.keys.Principal.may_read`; ``None``: every namespace).
        The same set object while the book is unchanged, so a cache keyed on it holds."""
        if visible is None:
            return self.every
        seen = frozenset(ns for ns in self.private if visible(ns))
        view = self._views.get(seen)
        if view is None:
            view = self.shared.union(*(self.private[ns] for ns in seen))
            self._views[seen] = view
        return view


def _book(known: Mapping[str | None, set[str]]) -> KnownNames:
    private = {ns: frozenset(names) for ns, names in known.items() if ns is not None}
    shared = frozenset(known.get(None, ()))
    return KnownNames(shared=shared, private=private, every=shared.union(*private.values()))


class NameCache:
    """The names of a tenant's entries (or of one subject's), held per index handle and
    brought up to date from the entries changed since the last look (entries carry the
    stamp of their last change). A name whose entries are all gone stays known until a
    rebuild moves the epoch."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[int, int, KnownNames]] = {}
        self._guard = threading.Lock()

    def clear(self) -> None:
        with self._guard:
            self._held.clear()

    def get(
        self,
        tenant: str,
        subject: str | None,
        *,
        epoch: int,
        stamp: int,
        changed: Callable[[int], Iterable[tuple[str | None, str]]],
    ) -> KnownNames:
        """The names as of ``(epoch, stamp)``; ``changed(since)`` gives ``(speaker,
        subject)`` of the entries changed after stamp ``since`` (-1: all)."""
        key = tenant if subject is None else f"{tenant}\x1f{subject}"
        with self._guard:
            cached = self._held.get(key)
        if cached is not None and cached[:2] == (epoch, stamp):
            return cached[2]
        since = cached[1] if cached is not None and cached[0] == epoch else -1
        known: dict[str | None, set[str]] = {}
        if since >= 0 and cached is not None:
            known[None] = set(cached[2].shared)
            known.update((ns, set(names)) for ns, names in cached[2].private.items())
        grew = False
        for speaker, owner in changed(since):
            names = known.setdefault(namespace_of(owner), set())
            for name in (owner, speaker):
                if name is not None and name not in names:
                    names.add(name)
                    grew = True
        found = cached[2] if not grew and since >= 0 and cached is not None else _book(known)
        with self._guard:
            self._held[key] = (epoch, stamp, found)
        return found
