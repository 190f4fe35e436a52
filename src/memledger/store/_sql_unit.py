"""One transaction of a SQL store: the unit-of-work primitives, and how domain values
are laid out in rows. See :class:`memledger.ports.UnitOfWork`.

Written once for both SQL backends in SQLite's dialect (``?`` parameters, ``INSERT OR
IGNORE``, ``INDEXED BY`` hints): the SQLite store runs it as it is, the PostgreSQL
store through a connection that translates those three
(:mod:`memledger.store.postgres`) and overrides the few primitives whose locking
differs. The stores, their connections, locks and migrations are in
:mod:`memledger.store.sqlite` and :mod:`memledger.store.postgres`.

:class:`SqlUnit` is composed of one mixin a concern, each in its own module (the
class docstring lists them); :func:`outbox_row` is the values of one outbox row.
"""

from __future__ import annotations

from memledger.store._sql_erasure import ErasureRows
from memledger.store._sql_jobs import JobRows
from memledger.store._sql_ledger import LedgerRows
from memledger.store._sql_records import RecordRows, outbox_row
from memledger.store._sql_revocations import RevocationRows
from memledger.store._sql_service import ServiceRows
from memledger.store._sql_traces import TraceRows

__all__ = ["SqlUnit", "outbox_row"]


class SqlUnit(
    ErasureRows,
    RecordRows,
    LedgerRows,
    RevocationRows,
    TraceRows,
    JobRows,
    ServiceRows,
):
    """One transaction on one connection. See :class:`memledger.ports.UnitOfWork`.

    Every method lives in the module of its concern, on the shared base of
    :mod:`~memledger.store._sql_base` (the connection, ``_write``, ``_one``,
    ``savepoint``, ``_chunks``; subclasses set ``_integrity_errors`` and
    ``_arrival``):

    * :mod:`~memledger.store._sql_ledger`: events, outcomes, family slots, history,
      subjects (``get_event``, ``lock_family``, ``add_history``, ``subjects`` ...);
    * :mod:`~memledger.store._sql_records`: records, compactions, the outbox,
      mentions, counters (``insert_record``, ``close_record``, ``add_outbox`` ...);
    * :mod:`~memledger.store._sql_erasure`: accesses, erasure, tombstones, retention
      (``record_accesses``, ``erase_events``, ``set_retention`` ...);
    * :mod:`~memledger.store._sql_revocations`: revoked sources, the revocation
      log, forgotten events, recorded changes, records by extractor
      (``add_revocation``, ``forget_event``, ``put_change`` ...);
    * :mod:`~memledger.store._sql_traces`: context traces and gate decisions
      (``put_trace``, ``scrub_traces``, ``put_decision`` ...);
    * :mod:`~memledger.store._sql_jobs`: jobs, the queue's state, quotas
      (``add_job``, ``claim_jobs``, ``queue_state``, ``set_quotas`` ...);
    * :mod:`~memledger.store._sql_service`: API keys, registered families, the
      review queue (``add_key``, ``register_family``, ``add_review`` ...).
    """
