"""Every route of the HTTP API as a :class:`Call`: what to send and how to read the answer.

Pure: no I/O, no clock, no client state. :class:`~memledger.client.Client` and
:class:`~memledger.client.AsyncClient` send the same calls; only the sending differs
(:mod:`memledger.client._methods` makes each call a method of both). Inputs are checked
here as far as the route would refuse them anyway for a reason the client can name
better (a naive datetime, a value that is not JSON); everything else is the server's to
judge. This module gathers them, by what they reach:

* :mod:`~memledger.client._requests`: :class:`Call` and :data:`Flow`, which the routes
  answer, the inputs they take (exported here with them) and the pieces a route
  builds its call from;
* :mod:`~memledger.client._memories`: the short path: adding chat messages, searching
  them, a user's memories, deleting one, a memory's history;
* :mod:`~memledger.client._events`: ingesting events, an event's status, forgetting
  one, the extraction jobs;
* :mod:`~memledger.client._changes`: erasure, the recorded changes and their undoing
  (rollback, compaction, consolidation), retention;
* :mod:`~memledger.client._reads`: recall, context packets, a family's views, a
  subject's records and families, the subjects, one memory (and its revocation);
* :mod:`~memledger.client._admin`: the review queue, API keys, claim families, who the
  key is, whether the service is ready;
* :mod:`~memledger.client._corpus`: context traces and the shared corpus.
"""

from __future__ import annotations

from memledger.client._admin import (
    accept,
    create_key,
    families_of,
    keys,
    me,
    ready,
    register_family,
    reject,
    reviews,
    revoke_key,
)
from memledger.client._changes import (
    change_log,
    compact,
    consolidate,
    erase,
    erasures,
    restore,
    retention,
    rollback,
    set_retention,
    undo,
)
from memledger.client._corpus import (
    add_document,
    documents,
    remove_document,
    replay,
    search_corpus,
    trace,
    traces,
)
from memledger.client._events import (
    event,
    event_body,
    forget,
    ingest,
    ingest_batch,
    jobs,
    process,
)
from memledger.client._memories import add, delete, get_all, search
from memledger.client._reads import (
    changes,
    context,
    current,
    families,
    get,
    history,
    recall,
    records,
    revoke,
    subjects,
    timeline,
)
from memledger.client._requests import Call, ClaimInput, ConsistencyInput, EventInput, Flow

__all__ = [
    "Call",
    "ClaimInput",
    "ConsistencyInput",
    "EventInput",
    "Flow",
    "accept",
    "add",
    "add_document",
    "change_log",
    "changes",
    "compact",
    "consolidate",
    "context",
    "create_key",
    "current",
    "delete",
    "documents",
    "erase",
    "erasures",
    "event",
    "event_body",
    "families",
    "families_of",
    "forget",
    "get",
    "get_all",
    "history",
    "ingest",
    "ingest_batch",
    "jobs",
    "keys",
    "me",
    "process",
    "ready",
    "recall",
    "records",
    "register_family",
    "reject",
    "remove_document",
    "replay",
    "restore",
    "retention",
    "reviews",
    "revoke",
    "revoke_key",
    "rollback",
    "search",
    "search_corpus",
    "set_retention",
    "subjects",
    "timeline",
    "trace",
    "traces",
    "undo",
]
