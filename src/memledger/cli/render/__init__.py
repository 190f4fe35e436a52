"""Human output of the CLI: rich tables. Machine output (``--json``) is :mod:`memledger.wire`.

Every cell is plain :class:`rich.text.Text`, so memory text that looks like rich
markup (``[bold]``) or emoji codes is printed as it is.

A command module's renderers live in the module of the same name: ``_memories``
(what an add remembered, search results, a user's memories, a memory's history),
``_writes`` (receipts, the change log, freshness, erasures, retention, quotas),
``_reads`` (values, timelines, history, changes, records, reviews, jobs, counters,
recall, packets, replays, traces), ``_work`` (worker reports, re-derivations),
``_admin`` (keys, families, the review queue, possible updates) and ``_corpus``; ``_base``
holds the console, JSON output, the progress bar, cells and tables. Every renderer
takes the console first and prints to it.
"""

from memledger.cli.render._admin import families, keys, possible_updates, review_queue
from memledger.cli.render._base import PIPE_WIDTH, make_console, print_json, progress_bar
from memledger.cli.render._corpus import corpus_hits, corpus_report, documents
from memledger.cli.render._memories import added, found, listed, memory_history
from memledger.cli.render._reads import (
    changes,
    counters,
    current,
    history,
    jobs,
    packet,
    recall,
    record,
    replay,
    reviews,
    timeline,
    traces,
)
from memledger.cli.render._work import rederivation, work_report
from memledger.cli.render._writes import (
    change_log,
    compacted,
    consolidated,
    erasure,
    erasures,
    forgotten,
    freshness,
    quotas,
    receipts,
    retention,
    revocation,
    rolled_back,
    undone,
)

__all__ = [
    "PIPE_WIDTH",
    "added",
    "change_log",
    "changes",
    "compacted",
    "consolidated",
    "corpus_hits",
    "corpus_report",
    "counters",
    "current",
    "documents",
    "erasure",
    "erasures",
    "families",
    "forgotten",
    "found",
    "freshness",
    "history",
    "jobs",
    "keys",
    "listed",
    "make_console",
    "memory_history",
    "packet",
    "possible_updates",
    "print_json",
    "progress_bar",
    "quotas",
    "recall",
    "receipts",
    "record",
    "rederivation",
    "replay",
    "retention",
    "review_queue",
    "reviews",
    "revocation",
    "rolled_back",
    "timeline",
    "traces",
    "undone",
    "work_report",
]
