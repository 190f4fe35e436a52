"""Session (working) memory: per session, the recent turns and tool results.

Separate from long-term memory: it lives in a file of its own
(:func:`default_session_path`), is never written to the long-term store, and is
forgotten when the session ends. Only the write pipeline (``Memory.ingest``)
decides what survives a session.

* :class:`SessionMemory` keeps each (tenant, session)'s turns in one SQLite file.
* Tool results over :attr:`CompactionPolicy.tool_tokens` are compressed on arrival
  (:func:`compress_tool_output`): what the step needs stays, the rest is dropped,
  and :class:`Compression` records what.
* History is compacted on a schedule, not when a window overflows: a rolling
  window of verbatim turns plus one summary (:class:`CompactionPolicy`), written
  by a :class:`Summarizer` (default :class:`ExtractiveSummarizer`).
* :meth:`SessionMemory.view` gives a :class:`SessionView`, optionally within a
  token budget.
"""

from memledger.session._compress import compress_tool_output
from memledger.session._model import (
    CompactionPolicy,
    Compression,
    ItemRole,
    Role,
    SessionItem,
    SessionView,
    Summarizer,
)
from memledger.session._sqlite import SessionMemory, default_session_path
from memledger.session._summarize import ExtractiveSummarizer

__all__ = [
    "CompactionPolicy",
    "Compression",
    "ExtractiveSummarizer",
    "ItemRole",
    "Role",
    "SessionItem",
    "SessionMemory",
    "SessionView",
    "Summarizer",
    "compress_tool_output",
    "default_session_path",
]
