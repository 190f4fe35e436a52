"""What both index backends share: the window constants, what a record contributes to
its entries (speaker, thread, standing instruction, a neighbour's lead), the status
and glance types, the lexical search both answer (:class:`LexicalSearch`: the query's
terms and checks, then the backend's match of a :class:`LexicalQuery`), who a query
can name (:class:`Names`, over the backend's book of names), a hit from a row
(:func:`hit`), a turn's neighbours in order (:func:`neighbour_offsets`), and the
checks of ``k``, ``ann_threshold`` and a vector query (:func:`query_vector`).

:mod:`memledger.index.derived` (SQLite) and :mod:`memledger.index.postgres` build on
this module and on :mod:`memledger.index._maintenance` (the feed, rebuild and
progress) and never on each other; :mod:`memledger.index.backends` picks one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from memledger.domain.records import MemoryRecord
from memledger.errors import EmbedderError, InvalidInputError, InvalidQueryError
from memledger.index._base import Embedder, Hit
from memledger.index._names import KnownNames
from memledger.index.lexical import query_terms

__all__ = [
    "INSTRUCTION_FAMILY",
    "WINDOW_AFTER",
    "WINDOW_BEFORE",
    "WINDOW_NEIGHBOUR_WORDS",
    "Glance",
    "IndexStatus",
    "LexicalQuery",
    "LexicalSearch",
    "Names",
    "Progress",
    "VectorPath",
    "check_ann_threshold",
    "check_k",
    "hit",
    "lead",
    "neighbour_offsets",
    "query_vector",
    "speaker",
    "standing",
    "thread",
]

WINDOW_BEFORE = 2
WINDOW_AFTER = 2
"""A turn's window document: its words and those of the turns just around it."""
WINDOW_NEIGHBOUR_WORDS = 40
"""How many words of each neighbouring turn a window holds (its start): a long turn
beside a short one (an assistant's answer beside the user's question) must not
drown the short turn's words in its window."""
INSTRUCTION_FAMILY = "instruction"
"""The family of the user's standing instructions and preferences (indexed as such)."""

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` while an index is (re)built."""

VectorPath = Literal["exact", "ann"]
"""How a vector search was served: an exact scan or the approximate index."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexStatus:
    cursor: int
    entries: int
    vectors: int
    embedder: str | None
    degraded: str | None
    """Why some entries have no vector (the embedder's last error), or ``None``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Glance:
    """What a read needs of the index before it searches, taken in one look: who a
    query can name (``names``), how far the tenant's feed has come (``cursor_of``)
    and why some entries have no vector (``degraded``)."""

    known: KnownNames
    cursor: int
    degraded: str | None

    @property
    def names(self) -> frozenset[str]:
        """Every name, of every namespace."""
        return self.known.every


@dataclass(frozen=True, slots=True, kw_only=True)
class LexicalQuery:
    """A lexical search as a backend matches it (:meth:`LexicalSearch.search`)."""

    terms: list[str]
    """The query's words without stop words, in order, each once (never empty)."""
    tenant: str
    k: int
    subjects: Sequence[str] | None
    windows: bool


class LexicalSearch(ABC):
    """The lexical search of an index: the query read into terms here, matched by the
    backend (:meth:`_match`)."""

    def search(
        self,
        query: str,
        *,
        tenant: str,
        k: int,
        subjects: Sequence[str] | None = None,
        windows: bool = False,
    ) -> list[Hit]:
        """The ``k`` best lexical entries of ``tenant`` (only its own are read), of
        ``subjects`` only when given, by BM25 with the statistics of the tenant, or of
        the subjects (so one subject's words never move another's scores).

        With ``windows=True`` conversation turns are matched together with the turns
        around them (:data:`WINDOW_BEFORE` before, :data:`WINDOW_AFTER` after), and
        only turns are found.
        """
        check_k(k)
        terms = query_terms(query)
        if not terms:
            return []
        return self._match(
            LexicalQuery(terms=terms, tenant=tenant, k=k, subjects=subjects, windows=windows)
        )

    @abstractmethod
    def _match(self, query: LexicalQuery) -> list[Hit]:
        """The ``query.k`` best entries holding any of ``query.terms``, best first, one
        per memory id (its best passage's)."""


class Names(ABC):
    """Who a query can name, from the book of names the backend keeps
    (:meth:`_known`, a :class:`~memledger.index._names.NameCache`)."""

    def names(
        self,
        tenant: str,
        *,
        subject: str | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> frozenset[str]:
        """The speakers and subjects of ``tenant``'s entries (of ``subject``'s only, when
        given): who a query can name; of the private namespaces only those ``visible``
        passes (:meth:`~memledger.index._names.KnownNames.visible_to`).

        Kept up to date from the entries changed since the last call (a name whose
        entries are all gone stays known until the index is rebuilt).
        """
        return self._known(tenant, subject).visible_to(visible)

    @abstractmethod
    def _known(self, tenant: str, subject: str | None) -> KnownNames:
        """The names of ``tenant``'s entries (of ``subject``'s), by namespace."""


def standing(record: MemoryRecord) -> str | None:
    """For a standing instruction or preference of the user (a record of family
    ``instruction``, :func:`memledger.write.extract.rules.instruction`), the requests
    it applies to ("" for all); else ``None``. The typed record, not the turn: it is
    current, correctable and revocable like any claim, and only the user's own turns
    set it (``Family.own_say``)."""
    if record.family != INSTRUCTION_FAMILY or record.kind not in ("procedure", "preference"):
        return None
    when = record.value.get("when") if isinstance(record.value, dict) else None
    return when if isinstance(when, str) else ""


def lead(text: str) -> str:
    """The first :data:`WINDOW_NEIGHBOUR_WORDS` words of a neighbour, for a window."""
    words = text.split(maxsplit=WINDOW_NEIGHBOUR_WORDS)
    return " ".join(words[:WINDOW_NEIGHBOUR_WORDS])


def speaker(record: MemoryRecord) -> str | None:
    """Who said a turn (an episode's speaker), else ``None``."""
    if record.kind == "episode" and isinstance(record.value, dict):
        said_by = record.value.get("speaker")
        return said_by if isinstance(said_by, str) else None
    return None


def thread(record: MemoryRecord) -> str | None:
    """The thread a turn belongs to: its session *within its subject*. Two subjects
    never share a thread (not even a session id, or the channel a turn without a
    session falls back to), so no window or neighbour crosses subjects."""
    session = record.session
    return None if session is None else f"{record.subject}\x1f{session}"


def check_k(k: object) -> None:
    """Refuse a ``k`` that is not a positive whole number."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidQueryError(f"k must be a positive whole number, got {k!r}")


def check_ann_threshold(value: object) -> None:
    """Refuse an ``ann_threshold`` that is neither ``None`` nor an integer >= 1."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidInputError(f"ann_threshold must be an integer >= 1 or None, got {value!r}")


def query_vector(embedder: Embedder | None, query: str, *, k: object) -> npt.NDArray[np.float32]:
    """``query``'s vector for a search of ``k`` hits (:func:`check_k`); raises
    :class:`~memledger.errors.EmbedderError` when there is no embedder or it fails."""
    check_k(k)
    if embedder is None:
        raise EmbedderError("this index has no embedder", reason="unavailable")
    vector: npt.NDArray[np.float32] = embedder.embed([query])[0]
    return vector


def hit(
    tenant: str,
    row: Sequence[object],
    score: float,
    text: object,
    span: Sequence[object] = (None, None),
) -> Hit:
    """A hit of ``tenant``'s from an entry's ``(memory_id, subject, family, kind,
    revision, generation)``, its score, text and passage span (``start, end``)."""
    memory_id, subject, family, kind, revision, generation = row
    start, end = span
    return Hit(
        tenant=tenant,
        memory_id=str(memory_id),
        subject=str(subject),
        family=str(family),
        kind=str(kind),
        revision=int(revision),  # type: ignore[call-overload]
        generation=int(generation),  # type: ignore[call-overload]
        score=score,
        text=str(text),
        span=None if start is None else (int(start), int(end)),  # type: ignore[call-overload]
    )


def neighbour_offsets(rows: Iterable[tuple[int, str, str, int]]) -> list[tuple[str, int]]:
    """One turn's neighbours, from ``(side, memory_id, at, id)`` rows (side -1 before it,
    1 after it), as ``(memory_id, offset)``: the nearest before first (-1), then the
    nearest after (1) onwards. Rows may come in any order (SQL does not promise a
    ``UNION ALL``'s)."""
    mine = list(rows)
    before = sorted((r for r in mine if r[0] < 0), key=lambda r: (r[2], r[3]))
    after = sorted((r for r in mine if r[0] > 0), key=lambda r: (r[2], r[3]))
    return [(r[1], -d) for d, r in enumerate(reversed(before), 1)] + [
        (r[1], d) for d, r in enumerate(after, 1)
    ]
