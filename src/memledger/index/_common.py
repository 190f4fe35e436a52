"""What both index backends share: the window constants, what a record contributes to
its entries (speaker, thread, standing instruction, a neighbour's lead), the status
and glance types, and the check of ``k``.

:mod:`memledger.index.derived` (SQLite) and :mod:`memledger.index.postgres` build on
this module and never on each other; :mod:`memledger.index.backends` picks one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from memledger.domain.records import MemoryRecord
from memledger.errors import InvalidQueryError
from memledger.index._names import KnownNames

__all__ = [
    "INSTRUCTION_FAMILY",
    "WINDOW_AFTER",
    "WINDOW_BEFORE",
    "WINDOW_NEIGHBOUR_WORDS",
    "Glance",
    "IndexStatus",
    "Progress",
    "VectorPath",
    "check_k",
    "lead",
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
